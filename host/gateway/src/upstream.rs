//! The client side toward the model provider: one pooled HTTP client, headers forwarded but
//! for hop-by-hop ones, no redirects, bounded connect and idle time, bounded bodies.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use bytes::Bytes;
use ctxhost_redacted_url::RedactedUrl;
use ctxhost_summarizer::{read_capped, redirect_of, CappedReadError};

use super::relay_path::RelayPath;
use ctxhost_config::serve::ServeSettings;
use ctxhost_gateway_wire::error::{ErrorKind, GatewayError};
use ctxhost_gateway_wire::KeyHeader;

/// Request headers never forwarded: hop-by-hop ones (RFC 9110 §7.6.1; besides those the
/// request's `Connection` names), those the client library recomputes, and the gateway's own.
const DROPPED_REQUEST: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    // The gateway reads the bodies it relays: ask for them uncompressed.
    "accept-encoding",
];

/// Response headers never relayed: hop-by-hop ones (besides those the response's `Connection`
/// names), and the body's framing (the gateway re-frames every body).
const DROPPED_RESPONSE: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-connection",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "trailer",
    "upgrade",
];

/// The header names `headers`' `Connection` lists (lowercased): hop-by-hop ones of that
/// message, for its connection alone.
fn named_by_connection(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(axum::http::header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect()
}

/// The provider, as the gateway reaches it.
pub struct Upstream {
    client: reqwest::Client,
    /// Shown masked in every message (a 502 body goes to every client); exposed only to send.
    base: RedactedUrl,
    /// `serve.upstream_key_env`'s key: sent instead of the client's credential.
    key: Option<String>,
    /// `serve.forward_cookies`.
    forward_cookies: bool,
}

impl Upstream {
    pub fn new(settings: &ServeSettings, key: Option<String>) -> Result<Self, reqwest::Error> {
        let limits = &settings.limits;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs_f64(limits.connect_timeout_seconds))
            .read_timeout(Duration::from_secs_f64(limits.idle_timeout_seconds))
            .pool_idle_timeout(Duration::from_secs(90))
            .build()?;
        Ok(Upstream {
            client,
            base: RedactedUrl::new(settings.upstream.trim_end_matches('/')),
            key,
            forward_cookies: settings.forward_cookies,
        })
    }

    /// Whether the gateway sends its own key (so a client's bearer token is not a provider key).
    pub fn holds_key(&self) -> bool {
        self.key.is_some()
    }

    /// Sends `method base/path?query` with the client's headers and `body` (JSON); waits for
    /// the response headers.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        query: Option<&str>,
        headers: &HeaderMap,
        body: Option<Bytes>,
    ) -> Result<reqwest::Response, GatewayError> {
        let request = self.request(method, path, query, headers);
        let request = match body {
            Some(body) => request
                .header(axum::http::header::CONTENT_TYPE, "application/json")
                .body(body),
            None => request,
        };
        self.exchange(request, path).await
    }

    /// Sends `method base/path?query` with the client's headers (its content type included)
    /// and its body streamed as it arrives; waits for the response headers. `path` is checked
    /// to stay under the base path (the key goes with it).
    pub async fn relay(
        &self,
        method: Method,
        path: &RelayPath,
        query: Option<&str>,
        headers: &HeaderMap,
        body: reqwest::Body,
    ) -> Result<reqwest::Response, GatewayError> {
        let path = path.as_str();
        let request = self.request(method, path, query, headers).body(body);
        self.exchange(request, path).await
    }

    /// The request to `base/path?query` with the client's headers as forwarded.
    fn request(
        &self,
        method: Method,
        path: &str,
        query: Option<&str>,
        headers: &HeaderMap,
    ) -> reqwest::RequestBuilder {
        let mut url = format!("{}/{}", self.base.expose(), path.trim_start_matches('/'));
        if let Some(query) = query.filter(|q| !q.is_empty()) {
            url.push('?');
            url.push_str(query);
        }
        let mut forwarded = HeaderMap::new();
        let hop_by_hop = named_by_connection(headers);
        for (name, value) in headers {
            let lower = name.as_str();
            if DROPPED_REQUEST.contains(&lower)
                || hop_by_hop.iter().any(|named| named == lower)
                || lower.starts_with("x-ctxhost-")
                || (lower == "cookie" && !self.forward_cookies)
            {
                continue;
            }
            if self.key.is_some() && (lower == "authorization" || lower == "x-api-key") {
                continue;
            }
            forwarded.append(name.clone(), value.clone());
        }
        if let Some(key) = &self.key {
            let (name, value) = match ctxhost_gateway_wire::key_header(path) {
                KeyHeader::Named(name) => (HeaderName::from_static(name), key.clone()),
                KeyHeader::Bearer => (axum::http::header::AUTHORIZATION, format!("Bearer {key}")),
            };
            if let Ok(value) = HeaderValue::from_str(&value) {
                forwarded.insert(name, value);
            }
        }
        self.client.request(method, &url).headers(forwarded)
    }

    /// Sends `request` and takes its response headers in; `path` is what it asked for.
    async fn exchange(
        &self,
        request: reqwest::RequestBuilder,
        path: &str,
    ) -> Result<reqwest::Response, GatewayError> {
        let response = request
            .send()
            .await
            .map_err(|error| describe(&error, &self.base))?;
        if response.status() == reqwest::StatusCode::NOT_FOUND && is_endpoint(path) {
            // The provider has these: a 404 means the base URL is not where they live.
            tracing::warn!(
                "the upstream answered 404 Not Found for {}/{}: serve.upstream must be the \
                 provider's base URL up to and including its version segment (such as \
                 https://api.openai.com/v1 or https://api.anthropic.com/v1)",
                self.base,
                path.trim_start_matches('/')
            );
        }
        // A redirect is never followed, nor handed to the client to follow with its key.
        if let Some(target) = redirect_of(&response) {
            return Err(GatewayError::new(
                ErrorKind::BadGateway,
                format!(
                    "the upstream redirected ({}) to {}; ctxhost serve follows no \
                     redirects: set serve.upstream to the final URL",
                    response.status().as_u16(),
                    RedactedUrl::new(target)
                ),
            ));
        }
        Ok(response)
    }
}

/// Whether `path` is a route every provider of its API has: its 404 means the base URL is not
/// where the provider's routes live.
fn is_endpoint(path: &str) -> bool {
    ctxhost_gateway_wire::base_routes().contains(&path.trim_start_matches('/'))
}

/// One line for a failed upstream exchange.
pub fn describe(error: &reqwest::Error, base: &RedactedUrl) -> GatewayError {
    let mut source: Option<&dyn std::error::Error> = Some(error);
    let mut detail = String::new();
    while let Some(cause) = source {
        detail = cause.to_string();
        source = cause.source();
    }
    if error.is_timeout() {
        GatewayError::new(
            ErrorKind::UpstreamTimeout,
            format!("the upstream {base} did not answer in time ({detail})"),
        )
    } else if error.is_connect() {
        GatewayError::new(
            ErrorKind::BadGateway,
            format!("cannot reach the upstream {base}: {detail}"),
        )
    } else {
        GatewayError::new(
            ErrorKind::BadGateway,
            format!("the exchange with the upstream {base} failed: {detail}"),
        )
    }
}

/// The response headers worth relaying to the client.
pub fn relayed_headers(upstream: &reqwest::header::HeaderMap) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let hop_by_hop = named_by_connection(upstream);
    for (name, value) in upstream {
        let lower = name.as_str();
        if DROPPED_RESPONSE.contains(&lower) || hop_by_hop.iter().any(|named| named == lower) {
            continue;
        }
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_str().as_bytes()),
            HeaderValue::from_bytes(value.as_bytes()),
        ) {
            headers.append(name, value);
        }
    }
    headers
}

/// Reads a whole body, refusing one over `limit` bytes.
pub async fn read_body(response: reqwest::Response, limit: u64) -> Result<Bytes, GatewayError> {
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    read_capped(response, cap)
        .await
        .map(Bytes::from)
        .map_err(|error| match error {
            CappedReadError::TooLarge => GatewayError::new(
                ErrorKind::BadGateway,
                format!(
                    "the upstream's response is over serve.limits.max_response_bytes ({limit} bytes)"
                ),
            ),
            CappedReadError::Transport(error) => {
                let kind = if error.is_timeout() {
                    ErrorKind::UpstreamTimeout
                } else {
                    ErrorKind::BadGateway
                };
                GatewayError::new(kind, format!("the upstream's answer broke off: {error}"))
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_header_its_connection_names_is_not_relayed() {
        let mut upstream = reqwest::header::HeaderMap::new();
        upstream.insert("connection", HeaderValue::from_static("close, X-Hop"));
        upstream.insert("x-hop", HeaderValue::from_static("1"));
        upstream.insert("proxy-authenticate", HeaderValue::from_static("Basic"));
        upstream.insert("x-request-id", HeaderValue::from_static("req-1"));
        let relayed = relayed_headers(&upstream);
        let names: Vec<&str> = relayed.keys().map(|name| name.as_str()).collect();
        assert_eq!(names, ["x-request-id"]);
    }
}
