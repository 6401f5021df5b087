//! The OpenAI chat-completions client: OpenAI, OpenRouter and any compatible server (vLLM,
//! llama.cpp server, Ollama) as `custom`.

use ctxhost_sdk::{EngineError, SummarizeRequest, Summary};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use serde_json::{json, Value};

use crate::client::{LlmClient, Wire};
use crate::usage::SummarizerUsage;
use crate::Summarizer;
use ctxhost_config::summarizer::{Provider, SettingsError, SummarizerSettings};

/// A summarizer speaking OpenAI chat completions (`POST {base_url}/chat/completions`).
pub struct OpenAiSummarizer {
    client: LlmClient,
    wire: ChatCompletions,
}

impl OpenAiSummarizer {
    pub fn new(
        settings: &SummarizerSettings,
        runtime: tokio::runtime::Handle,
    ) -> Result<Self, SettingsError> {
        let wire = ChatCompletions {
            openrouter: settings.provider == Provider::Openrouter,
        };
        Ok(OpenAiSummarizer {
            client: LlmClient::new(settings, runtime, wire.path())?,
            wire,
        })
    }
}

impl Summarizer for OpenAiSummarizer {
    fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, EngineError> {
        self.client.summarize(&self.wire, request)
    }

    fn describe(&self) -> String {
        self.client.describe()
    }

    fn usage(&self) -> SummarizerUsage {
        self.client.usage()
    }
}

struct ChatCompletions {
    openrouter: bool,
}

impl Wire for ChatCompletions {
    fn path(&self) -> &'static str {
        "/chat/completions"
    }

    fn headers(&self, key: Option<&str>) -> Result<HeaderMap, String> {
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            let value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| "holds characters that cannot go in an HTTP header".to_string())?;
            headers.insert(AUTHORIZATION, value);
        }
        if self.openrouter {
            headers.insert("x-title", HeaderValue::from_static("ctxhost"));
        }
        Ok(headers)
    }

    fn body(&self, model: &str, system: &str, user: &str, max_tokens: u64) -> Value {
        json!({
            "model": model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "max_tokens": max_tokens,
            "temperature": 0,
            "stream": false,
        })
    }

    fn usage(&self, body: &Value) -> SummarizerUsage {
        SummarizerUsage::of_chat_completion(body)
    }

    fn answer(&self, body: &Value) -> Result<String, String> {
        if let Some(error) = body.get("error").filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(format!("answered with an error ({message})"));
        }
        let choice = body
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or("answered without choices")?;
        let content = choice.get("message").and_then(|m| m.get("content"));
        let text = match content {
            Some(Value::String(text)) => text.clone(),
            // Some servers send content parts.
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str).or(part.as_str()))
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        };
        if text.trim().is_empty() {
            let reason = choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .unwrap_or("none");
            return Err(format!(
                "answered with an empty summary (finish_reason {reason})"
            ));
        }
        Ok(text)
    }
}
