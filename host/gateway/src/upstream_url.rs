//! `serve.upstream` checked against `serve.listen` when the gateway starts: a URL that cannot
//! work is refused with the fix, one that probably will not is warned about. Today's mistakes: the base URL without its version
//! segment (every request a 404), an endpoint instead of the base URL, the gateway's own
//! address (every request would loop back into it).

use std::net::{IpAddr, SocketAddr};

use ctxhost_redacted_url::RedactedUrl;

/// Providers whose API lives under a version segment the base URL must include.
const VERSIONED_HOSTS: &[&str] = &["api.openai.com", "api.anthropic.com"];

/// An upstream URL that cannot work.
#[derive(Debug, thiserror::Error)]
#[error("serve.upstream {url}: {problem}")]
pub struct UpstreamUrlError {
    /// Shown masked.
    pub url: String,
    pub problem: String,
}

/// Checks `upstream` against the address the gateway listens on; the warnings worth logging
/// when it is usable.
pub fn check(upstream: &str, listen: SocketAddr) -> Result<Vec<String>, UpstreamUrlError> {
    let shown = RedactedUrl::new(upstream).to_string();
    let refuse = |problem: String| UpstreamUrlError {
        url: shown.clone(),
        problem,
    };
    let url = url::Url::parse(upstream).map_err(|e| refuse(format!("not a URL ({e})")))?;
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let port = url.port_or_known_default().unwrap_or(0);
    if is_this_gateway(&host, port, listen) {
        return Err(refuse(format!(
            "is this gateway itself (it listens on {listen}): every request would come back \
             to it. Point serve.upstream at the provider (such as https://api.openai.com/v1)"
        )));
    }
    let segments: Vec<&str> = url
        .path_segments()
        .map(|s| s.filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let base = |segments: &[&str]| {
        let mut fixed = url.clone();
        fixed.set_path(&segments.join("/"));
        fixed.set_query(None);
        RedactedUrl::new(fixed.as_str().trim_end_matches('/').to_string()).to_string()
    };
    let path = segments.join("/");
    // Every wire's endpoints; the longest that fits (`chat/completions` before `completions`).
    if let Some(endpoint) = ctxhost_gateway_wire::endpoints()
        .into_iter()
        .filter(|e| path == *e || path.ends_with(&format!("/{e}")))
        .max_by_key(|e| e.len())
    {
        let kept = &segments[..segments.len() - endpoint.split('/').count()];
        return Err(refuse(format!(
            "names an endpoint (/{endpoint}), not the provider's base URL: the gateway appends \
             the endpoint itself. Use {}",
            base(kept)
        )));
    }
    if let Some(at) = segments
        .windows(2)
        .position(|pair| is_version(pair[0]) && pair[0] == pair[1])
    {
        let mut kept = segments.clone();
        kept.remove(at);
        return Err(refuse(format!(
            "repeats its version segment (/{0}/{0}). Use {1}",
            segments[at],
            base(&kept)
        )));
    }
    if segments.iter().any(|s| is_version(s)) {
        return Ok(Vec::new());
    }
    if VERSIONED_HOSTS.contains(&host.as_str()) {
        let mut fixed = segments.clone();
        fixed.push("v1");
        return Err(refuse(format!(
            "has no version segment: requests would go to {}/messages or /chat/completions \
             and get 404. Use {}",
            base(&segments),
            base(&fixed)
        )));
    }
    if segments.is_empty() {
        let mut fixed = segments.clone();
        fixed.push("v1");
        return Ok(vec![format!(
            "serve.upstream {shown} has no version segment: requests go to \
             {shown}/chat/completions (and /messages, /responses); most providers serve them \
             under a version, as {}",
            base(&fixed)
        )]);
    }
    Ok(Vec::new())
}

/// `v1`, `v2`, `v1beta`, `v1alpha2`.
fn is_version(segment: &str) -> bool {
    let Some(rest) = segment.strip_prefix('v') else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && {
        let tail = &rest[digits..];
        tail.is_empty() || tail.starts_with("beta") || tail.starts_with("alpha")
    }
}

/// Whether `host:port` reaches the gateway listening on `listen`: the same port, on the same
/// address or on a name for this machine the gateway answers on.
fn is_this_gateway(host: &str, port: u16, listen: SocketAddr) -> bool {
    if port != listen.port() {
        return false;
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let local = host == "localhost" || host.ends_with(".localhost");
    let ip = host.parse::<IpAddr>().ok();
    if ip == Some(listen.ip()) {
        return true;
    }
    let loopback = local || ip.is_some_and(|ip| ip.is_loopback() || ip.is_unspecified());
    loopback && (listen.ip().is_loopback() || listen.ip().is_unspecified())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listen() -> SocketAddr {
        "127.0.0.1:8787".parse().unwrap()
    }

    #[test]
    fn usable_urls_pass_quietly() {
        for url in [
            "https://api.openai.com/v1",
            "https://api.anthropic.com/v1/",
            "https://openrouter.ai/api/v1",
            "https://generativelanguage.googleapis.com/v1beta/openai",
            "http://127.0.0.1:11434/v1",
            "http://localhost:8788/v1",
        ] {
            assert_eq!(check(url, listen()).unwrap(), Vec::<String>::new(), "{url}");
        }
    }

    #[test]
    fn a_known_provider_without_its_version_is_refused_with_the_fix() {
        let error = check("https://api.anthropic.com", listen())
            .unwrap_err()
            .to_string();
        assert!(
            error.ends_with("Use https://api.anthropic.com/v1"),
            "{error}"
        );
        let error = check("https://api.openai.com/v1/chat/completions", listen())
            .unwrap_err()
            .to_string();
        assert!(error.ends_with("Use https://api.openai.com/v1"), "{error}");
        // Every wire's endpoints, the longest that fits taken off.
        let error = check("http://127.0.0.1:9000/v1/messages/count_tokens", listen())
            .unwrap_err()
            .to_string();
        assert!(error.ends_with("Use http://127.0.0.1:9000/v1"), "{error}");
        let error = check("https://api.openai.com/v1/v1", listen())
            .unwrap_err()
            .to_string();
        assert!(error.ends_with("Use https://api.openai.com/v1"), "{error}");
    }

    #[test]
    fn another_host_without_a_version_is_warned_about() {
        let warnings = check("http://127.0.0.1:9000", listen()).unwrap();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("http://127.0.0.1:9000/v1"),
            "{warnings:?}"
        );
    }

    #[test]
    fn the_gateways_own_address_is_refused_under_any_of_its_names() {
        for url in [
            "http://127.0.0.1:8787/v1",
            "http://localhost:8787/v1",
            "http://0.0.0.0:8787/v1",
            "http://[::1]:8787/v1",
        ] {
            let error = check(url, listen()).unwrap_err().to_string();
            assert!(error.contains("is this gateway itself"), "{url}: {error}");
        }
        let open: SocketAddr = "0.0.0.0:8787".parse().unwrap();
        assert!(check("http://127.0.0.1:8787/v1", open).is_err());
        assert!(check("http://127.0.0.1:8788/v1", listen()).is_ok());
        assert!(check("http://10.1.2.3:8787/v1", listen()).is_ok());
    }
}
