//! One HTTP attempt shared by the LLM clients: API keys from the environment, the POST, and
//! turning every way it can go wrong into a clear [`Failure`].

use std::time::Duration;

use ctxhost_redacted_url::RedactedUrl;
use ctxhost_sdk::{EngineError, ErrorKind};
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::Value;

use crate::retry::Failure;
use ctxhost_config::summarizer::SettingsError;
use ctxhost_offline_summary::budget::truncate_bytes;

/// Where a client's API key comes from: an environment variable, read at call time so that
/// the host starts (and falls back) even when it is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySource {
    /// The variable's name, when the provider uses a key.
    pub env: Option<String>,
    /// The summarizer's description, for messages.
    pub owner: String,
}

impl KeySource {
    /// The key, `None` when no variable is named (a keyless custom endpoint).
    pub fn read(&self) -> Result<Option<String>, EngineError> {
        let Some(name) = &self.env else {
            return Ok(None);
        };
        match std::env::var(name) {
            Ok(value) if !value.trim().is_empty() => Ok(Some(value.trim().to_string())),
            Ok(_) => Err(EngineError::new(
                ErrorKind::NotConfigured,
                format!(
                    "${name} is empty: the summarizer {} reads its API key from it \
                     (auxiliary.compression.api_key_env)",
                    self.owner
                ),
            )),
            Err(_) => Err(EngineError::new(
                ErrorKind::NotConfigured,
                format!(
                    "${name} is not set: the summarizer {} reads its API key from it \
                     (auxiliary.compression.api_key_env)",
                    self.owner
                ),
            )),
        }
    }
}

/// Where a redirecting answer points (`None` for any other answer). The host's HTTP clients
/// follow no redirects: a redirect would carry the caller's key to another origin.
pub fn redirect_of(response: &reqwest::Response) -> Option<String> {
    response.status().is_redirection().then(|| {
        response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("nowhere")
            .to_string()
    })
}

/// Why a capped read stopped.
#[derive(Debug)]
pub enum CappedReadError {
    /// The body went past the cap.
    TooLarge,
    /// The connection failed mid-body.
    Transport(reqwest::Error),
}

/// Reads a whole body, stopping (without reading further) once it would pass `limit` bytes.
pub async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, CappedReadError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(CappedReadError::Transport)? {
        if body.len() + chunk.len() > limit {
            return Err(CappedReadError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The largest answer a summarizer may send: a summary is a few thousand tokens.
pub const MAX_ANSWER_BYTES: usize = 8 << 20;

/// The reqwest client every LLM summarizer uses.
pub fn http_client(timeout: Duration) -> Result<reqwest::Client, SettingsError> {
    reqwest::Client::builder()
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        // A redirect would carry the key to another origin: none is followed.
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("ctxhost/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| SettingsError::Client(error.to_string()))
}

/// A POST of a JSON body to an LLM endpoint.
pub struct Post<'a> {
    pub client: &'a reqwest::Client,
    /// Shown masked in every message; exposed only to send the request.
    pub url: &'a RedactedUrl,
    pub headers: HeaderMap,
    pub body: &'a Value,
    pub timeout: Duration,
    /// The key's variable, named in auth errors.
    pub key_env: Option<&'a str>,
    pub model: &'a str,
}

impl Post<'_> {
    /// Sends once; a 2xx with a JSON body is the answer, everything else is a [`Failure`].
    pub async fn send(&self) -> Result<Value, Failure> {
        let response = self
            .client
            .post(self.url.expose())
            .headers(self.headers.clone())
            .timeout(self.timeout)
            .json(self.body)
            .send()
            .await
            .map_err(|error| self.transport_failure(&error))?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        if let Some(target) = redirect_of(&response) {
            return Err(Failure::fatal(EngineError::new(
                ErrorKind::Unavailable,
                format!(
                    "the summary model at {} redirected ({}) to {}; redirects are not \
                     followed (the key would go with them): set auxiliary.compression.base_url \
                     to the final URL",
                    self.url,
                    status.as_u16(),
                    RedactedUrl::new(target)
                ),
            )));
        }
        let body = self.read_limited(response).await?;
        if !status.is_success() {
            return Err(self.status_failure(status, &body, retry_after));
        }
        serde_json::from_slice(&body).map_err(|_| {
            Failure::fatal(EngineError::new(
                ErrorKind::Unavailable,
                format!(
                    "the summary model at {} answered with something that is not JSON: {}",
                    self.url,
                    excerpt(&body)
                ),
            ))
        })
    }

    /// The body, refused past [`MAX_ANSWER_BYTES`] so an endless answer cannot exhaust memory.
    async fn read_limited(&self, response: reqwest::Response) -> Result<Vec<u8>, Failure> {
        read_capped(response, MAX_ANSWER_BYTES)
            .await
            .map_err(|error| match error {
                CappedReadError::Transport(error) => self.transport_failure(&error),
                CappedReadError::TooLarge => Failure::fatal(EngineError::new(
                    ErrorKind::Unavailable,
                    format!(
                        "the summary model at {} answered with more than {} MiB; the answer \
                         was cut off",
                        self.url,
                        MAX_ANSWER_BYTES >> 20
                    ),
                )),
            })
    }

    fn transport_failure(&self, error: &reqwest::Error) -> Failure {
        let message = if error.is_timeout() {
            format!(
                "the summary model at {} timed out after {}s (auxiliary.compression.timeout)",
                self.url,
                self.timeout.as_secs_f64()
            )
        } else if error.is_connect() {
            format!(
                "cannot connect to the summary model at {}: {}",
                self.url,
                root_cause(error)
            )
        } else {
            format!(
                "the request to the summary model at {} failed: {}",
                self.url,
                root_cause(error)
            )
        };
        Failure::transient(EngineError::new(ErrorKind::Unavailable, message), None)
    }

    fn status_failure(
        &self,
        status: StatusCode,
        body: &[u8],
        retry_after: Option<Duration>,
    ) -> Failure {
        let detail = error_detail(body);
        let code = status.as_u16();
        match code {
            401 | 403 => {
                let hint = match self.key_env {
                    Some(name) => format!("check ${name}"),
                    None => "the endpoint wants an API key: name the variable holding it in \
                             auxiliary.compression.api_key_env"
                        .to_string(),
                };
                Failure::fatal(EngineError::failed(format!(
                    "auth failed (HTTP {code}): {hint}{detail}"
                )))
            }
            404 => {
                let hint = if self.url.expose().contains("/v1/") {
                    String::new()
                } else {
                    " (does auxiliary.compression.base_url need a /v1 suffix?)".to_string()
                };
                Failure::fatal(EngineError::failed(format!(
                    "model or endpoint not found: {} (model {}){hint}{detail}",
                    self.url, self.model
                )))
            }
            408 | 425 | 429 | 500..=599 => Failure::transient(
                EngineError::new(
                    ErrorKind::Unavailable,
                    format!(
                        "the summary model at {} answered HTTP {status}{detail}",
                        self.url
                    ),
                ),
                retry_after,
            ),
            _ => Failure::fatal(EngineError::failed(format!(
                "the summary model at {} rejected the request (HTTP {status}){detail}",
                self.url
            ))),
        }
    }
}

/// The innermost cause of a reqwest error, which names what actually went wrong.
fn root_cause(error: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = error;
    while let Some(next) = source.source() {
        source = next;
    }
    source.to_string()
}

/// `Retry-After` in seconds (or OpenAI's `retry-after-ms`); HTTP dates are ignored.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let read = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    let seconds = read("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| read("retry-after"))?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(3600.0)))
}

/// The server's own error message, when the body carries one: `: <message>`.
fn error_detail(body: &[u8]) -> String {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|value| {
            let error = value.get("error")?;
            error
                .get("message")
                .and_then(Value::as_str)
                .or_else(|| error.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    if message.is_empty() {
        String::new()
    } else {
        format!(": {}", truncate_bytes(&single_line(&message), 300))
    }
}

fn single_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The start of a body, for messages.
pub fn excerpt(body: &[u8]) -> String {
    let text = single_line(&String::from_utf8_lossy(body));
    if text.is_empty() {
        "(empty body)".to_string()
    } else {
        format!("{:?}", truncate_bytes(&text, 200))
    }
}

/// An answer that parsed as JSON but holds no summary.
pub fn garbage(url: &RedactedUrl, what: &str, body: &Value) -> Failure {
    Failure::fatal(EngineError::new(
        ErrorKind::Unavailable,
        format!(
            "the summary model at {url} {what}: {}",
            excerpt(body.to_string().as_bytes())
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&date), None);
    }

    #[test]
    fn error_detail_prefers_the_servers_message() {
        assert_eq!(
            error_detail(br#"{"error":{"message":"Invalid key","type":"auth"}}"#),
            ": Invalid key"
        );
        assert_eq!(error_detail(b""), "");
        assert_eq!(error_detail(b"oops\n  here"), ": oops here");
    }
}
