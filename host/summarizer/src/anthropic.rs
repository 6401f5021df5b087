//! The Anthropic Messages API client.

use ctxhost_sdk::{EngineError, SummarizeRequest, Summary};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};

use crate::client::{LlmClient, Wire};
use crate::usage::SummarizerUsage;
use crate::Summarizer;
use ctxhost_config::summarizer::{SettingsError, SummarizerSettings};

/// The API version this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A summarizer speaking Anthropic's Messages API (`POST {base_url}/messages`).
pub struct AnthropicSummarizer {
    client: LlmClient,
}

impl AnthropicSummarizer {
    pub fn new(
        settings: &SummarizerSettings,
        runtime: tokio::runtime::Handle,
    ) -> Result<Self, SettingsError> {
        Ok(AnthropicSummarizer {
            client: LlmClient::new(settings, runtime, Messages.path())?,
        })
    }
}

impl Summarizer for AnthropicSummarizer {
    fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, EngineError> {
        self.client.summarize(&Messages, request)
    }

    fn describe(&self) -> String {
        self.client.describe()
    }

    fn usage(&self) -> SummarizerUsage {
        self.client.usage()
    }
}

struct Messages;

impl Wire for Messages {
    fn path(&self) -> &'static str {
        "/messages"
    }

    fn headers(&self, key: Option<&str>) -> Result<HeaderMap, String> {
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            let value = HeaderValue::from_str(key)
                .map_err(|_| "holds characters that cannot go in an HTTP header".to_string())?;
            headers.insert("x-api-key", value);
        }
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        Ok(headers)
    }

    fn body(&self, model: &str, system: &str, user: &str, max_tokens: u64) -> Value {
        json!({
            "model": model,
            "system": system,
            "messages": [{"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "temperature": 0,
        })
    }

    fn usage(&self, body: &Value) -> SummarizerUsage {
        SummarizerUsage::of_anthropic_message(body)
    }

    fn answer(&self, body: &Value) -> Result<String, String> {
        if body.get("type").and_then(Value::as_str) == Some("error") {
            let message = body
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("no message");
            return Err(format!("answered with an error ({message})"));
        }
        let blocks = body
            .get("content")
            .and_then(Value::as_array)
            .ok_or("answered without content")?;
        let text = blocks
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("");
        if text.trim().is_empty() {
            let reason = body
                .get("stop_reason")
                .and_then(Value::as_str)
                .unwrap_or("none");
            return Err(format!(
                "answered with an empty summary (stop_reason {reason})"
            ));
        }
        Ok(text)
    }
}
