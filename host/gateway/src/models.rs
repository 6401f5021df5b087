//! Context windows of known models, so a session's window follows the request's `model`.

use std::collections::BTreeMap;

use ctxhost_config::serve::ModelSetting;

/// Known windows, by model-name prefix (the longest matching prefix wins). Provider prefixes
/// such as `openai/` (OpenRouter's naming) are ignored.
const KNOWN: &[(&str, u64)] = &[
    ("gpt-3.5-turbo", 16_385),
    ("gpt-4", 8_192),
    ("gpt-4-32k", 32_768),
    ("gpt-4-turbo", 128_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("codex-mini", 200_000),
    ("claude-", 200_000),
    ("gemini-", 1_048_576),
    ("gemini-1.5-pro", 2_097_152),
    ("deepseek-", 128_000),
    ("llama-3", 128_000),
    ("llama3", 128_000),
    ("qwen", 131_072),
    ("mistral-large", 128_000),
    ("kimi-k2", 262_144),
    ("grok-4", 256_000),
];

/// The config's own model: `model.name` and `model.context_length`.
pub struct ConfiguredModel<'a> {
    pub name: &'a str,
    pub context_length: u64,
}

/// The window for `model`: `serve.models` first (exact name), then `model.context_length` when
/// `model` is the config's `model.name`, then the table, then `model.context_length` (then
/// only a fallback, said by the `true` beside it: nothing names this model).
pub fn window_of(
    model: &str,
    overrides: &BTreeMap<String, ModelSetting>,
    configured: &ConfiguredModel<'_>,
) -> (u64, bool) {
    if let Some(window) = overrides.get(model).and_then(ModelSetting::window) {
        return (window, false);
    }
    if model == configured.name {
        return (configured.context_length, false);
    }
    let bare = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    KNOWN
        .iter()
        .filter(|(prefix, _)| bare.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| (*window, false))
        .unwrap_or((configured.context_length, true))
}

/// Models whose window was guessed, each warned about once.
#[derive(Default)]
pub struct GuessedWindows {
    warned: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl GuessedWindows {
    /// Warns, the first time only, that `model`'s window is the fallback `window`.
    pub fn warn_once(&self, model: &str, window: u64) {
        let first = self
            .warned
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(model.to_string());
        if first {
            tracing::warn!(
                model,
                "model `{model}` has no known context window: using model.context_length \
                 ({window} tokens); set serve.models.{model} to its window"
            );
        }
    }
}

/// The window the engine gets: the model's, less the room the request keeps for its answer
/// (`max_tokens` / `max_completion_tokens`), but never under a quarter of the model's window.
pub fn usable_window(window: u64, output_budget: Option<u64>) -> u64 {
    let budget = output_budget.unwrap_or(0);
    window.saturating_sub(budget).max(window / 4).max(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_and_overrides_win() {
        let none = BTreeMap::new();
        let config = ConfiguredModel {
            name: "gpt-4o",
            context_length: 32_000,
        };
        assert_eq!(window_of("gpt-4o-mini", &none, &config).0, 128_000);
        assert_eq!(window_of("gpt-4.1-nano", &none, &config).0, 1_047_576);
        assert_eq!(window_of("gpt-4-0613", &none, &config).0, 8_192);
        assert_eq!(
            window_of("anthropic/claude-sonnet-4", &none, &config).0,
            200_000
        );
        assert_eq!(window_of("my-local-model", &none, &config).0, 32_000);
        assert_eq!(window_of("my-local-model", &none, &config), (32_000, true));
        assert_eq!(window_of("gpt-4o-mini", &none, &config), (128_000, false));
        // The config's own model keeps the window the config gives it.
        assert_eq!(window_of("gpt-4o", &none, &config).0, 32_000);
        let overrides = BTreeMap::from([("gpt-4o".to_string(), ModelSetting::Window(64_000))]);
        assert_eq!(window_of("gpt-4o", &overrides, &config).0, 64_000);
    }

    #[test]
    fn the_output_budget_is_kept_free() {
        assert_eq!(usable_window(128_000, Some(28_000)), 100_000);
        assert_eq!(usable_window(128_000, None), 128_000);
        assert_eq!(usable_window(128_000, Some(200_000)), 32_000);
    }
}
