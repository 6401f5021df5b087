//! `anthropic-beta`: the client's betas go upstream untouched; `serve.anthropic.betas` adds the
//! ones the config names for the request's model (Claude Code behind a custom base URL drops
//! the 1M-context beta, for one), and a beta that widens the model's window widens the
//! session's window with it.

use axum::http::{HeaderMap, HeaderValue};
use ctxhost_config::serve::AnthropicSettings;

pub const HEADER: &str = "anthropic-beta";

/// Betas that change a model's context window, and the window they give.
const WINDOWS: &[(&str, u64)] = &[("context-1m-2025-08-07", 1_000_000)];

/// The betas a request carries: every `anthropic-beta` line, comma-separated.
fn carried(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|b| b.trim().to_string())
        .filter(|b| !b.is_empty())
        .collect()
}

/// Adds the configured betas for `model` that the request does not carry yet (after the
/// client's, whose own value is left as it came); returns the window the betas it now carries
/// give the model, if any does.
pub fn apply(headers: &mut HeaderMap, model: &str, settings: &AnthropicSettings) -> Option<u64> {
    let mut betas = carried(headers);
    let added: Vec<&str> = settings
        .betas
        .iter()
        .filter(|b| b.applies_to(model))
        .map(|b| b.name())
        .filter(|name| !betas.iter().any(|carried| carried == name))
        .collect();
    if !added.is_empty() {
        let mut value = headers
            .get_all(HEADER)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(",");
        for name in &added {
            if !value.is_empty() {
                value.push(',');
            }
            value.push_str(name);
            betas.push(name.to_string());
        }
        // The names were checked when the config was read: a valid header value.
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HEADER, value);
        }
    }
    betas
        .iter()
        .filter_map(|name| {
            let configured = settings
                .betas
                .iter()
                .filter(|b| b.name() == name && b.applies_to(model))
                .find_map(|b| b.window());
            configured.or_else(|| WINDOWS.iter().find(|(n, _)| n == name).map(|(_, w)| *w))
        })
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_config::serve::AnthropicBeta;

    fn settings() -> AnthropicSettings {
        AnthropicSettings {
            betas: vec![
                AnthropicBeta::ForModels {
                    beta: "context-1m-2025-08-07".into(),
                    models: vec!["claude-sonnet-4*".into(), "claude-opus-4*".into()],
                    window: None,
                },
                AnthropicBeta::Always("extra-1".into()),
            ],
            ..AnthropicSettings::default()
        }
    }

    #[test]
    fn configured_betas_follow_the_clients_and_widen_the_window() {
        let mut headers = HeaderMap::new();
        headers.insert(HEADER, HeaderValue::from_static("a-1, b-2,extra-1"));
        let window = apply(&mut headers, "claude-sonnet-4-5", &settings());
        assert_eq!(headers[HEADER], "a-1, b-2,extra-1,context-1m-2025-08-07");
        assert_eq!(window, Some(1_000_000));
        let mut headers = HeaderMap::new();
        assert_eq!(apply(&mut headers, "claude-haiku-4-5", &settings()), None);
        assert_eq!(headers[HEADER], "extra-1");
    }

    #[test]
    fn the_clients_own_betas_are_untouched_when_nothing_is_added() {
        let mut headers = HeaderMap::new();
        headers.append(
            HEADER,
            HeaderValue::from_static("x-1 , context-1m-2025-08-07"),
        );
        let window = apply(&mut headers, "claude-x", &AnthropicSettings::default());
        assert_eq!(headers[HEADER], "x-1 , context-1m-2025-08-07");
        assert_eq!(window, Some(1_000_000));
    }
}
