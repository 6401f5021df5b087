//! What the LLM summarizers share: the request built from a [`SummarizeRequest`], fitted to
//! the summary model's window, sent with retries on the host's runtime, and the answer checked
//! (and given back the standing facts it dropped).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use ctxhost_offline_summary::carry;
use ctxhost_redacted_url::RedactedUrl;
use ctxhost_sdk::{EngineError, ErrorKind, SummarizeRequest, Summary};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::fit::{fit_request, fit_summary};
use crate::prompt::{clean_answer, framing_tokens, system_prompt, user_prompt};
use crate::retry::{with_retries, Failure, RetryPolicy};
use crate::transport::{garbage, http_client, KeySource, Post};
use crate::usage::SummarizerUsage;
use ctxhost_config::summarizer::{SettingsError, SummarizerSettings};
use ctxhost_offline_summary::budget::estimate_tokens;

/// One provider's wire format.
pub(crate) trait Wire: Send + Sync {
    /// The endpoint under the base URL, e.g. `/chat/completions`.
    fn path(&self) -> &'static str;
    /// Auth and protocol headers for `key`.
    fn headers(&self, key: Option<&str>) -> Result<HeaderMap, String>;
    /// The request body.
    fn body(&self, model: &str, system: &str, user: &str, max_tokens: u64) -> Value;
    /// The summary text in a response body, or what is wrong with the body.
    fn answer(&self, body: &Value) -> Result<String, String>;
    /// The tokens a response body says the call used.
    fn usage(&self, body: &Value) -> SummarizerUsage;
}

/// An LLM endpoint and how to reach it.
pub(crate) struct LlmClient {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
    url: RedactedUrl,
    model: String,
    key: KeySource,
    timeout: Duration,
    /// Bound on one summary, retries included.
    deadline: Duration,
    policy: RetryPolicy,
    window: u64,
    description: String,
    /// What every answer so far used.
    used: Mutex<SummarizerUsage>,
}

impl LlmClient {
    /// A client for validated `settings`, posting to `{base_url}{path}`.
    pub fn new(
        settings: &SummarizerSettings,
        runtime: tokio::runtime::Handle,
        path: &str,
    ) -> Result<Self, SettingsError> {
        settings.validate()?;
        let base = settings.effective_base_url().ok_or_else(|| {
            SettingsError::invalid(
                "base_url",
                format!("required when provider is {}", settings.provider),
            )
        })?;
        let model = settings.model.clone().ok_or_else(|| {
            SettingsError::invalid(
                "model",
                format!("required when provider is {}", settings.provider),
            )
        })?;
        let timeout = Duration::from_secs_f64(settings.timeout);
        let description = settings.describe();
        Ok(LlmClient {
            http: http_client(timeout)?,
            runtime,
            url: RedactedUrl::new(format!("{base}{path}")),
            model,
            key: KeySource {
                env: settings.effective_api_key_env(),
                owner: description.clone(),
            },
            timeout,
            deadline: Duration::from_secs_f64(settings.deadline),
            policy: RetryPolicy::new(settings.max_retries),
            window: settings.effective_context_length(),
            description,
            used: Mutex::default(),
        })
    }

    pub fn describe(&self) -> String {
        self.description.clone()
    }

    /// What every answer so far used.
    pub fn usage(&self) -> SummarizerUsage {
        *self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Summarizes on the host's runtime; called from a blocking thread.
    pub fn summarize(
        &self,
        wire: &dyn Wire,
        request: &SummarizeRequest,
    ) -> Result<Summary, EngineError> {
        let key = self.key.read()?;
        let headers = wire.headers(key.as_deref()).map_err(|why| {
            EngineError::new(
                ErrorKind::NotConfigured,
                format!(
                    "${}: {why}",
                    self.key.env.as_deref().unwrap_or("the API key")
                ),
            )
        })?;
        let system = system_prompt(request);
        let fixed = estimate_tokens(&system) + framing_tokens(request, request.max_tokens.max(1));
        let fitted = fit_request(
            fixed,
            &request.content,
            request.previous_summary.as_deref(),
            request.max_tokens,
            self.window,
        )?;
        let user = user_prompt(
            &fitted.content,
            fitted.previous_summary.as_deref(),
            request.focus_topic.as_deref(),
            fitted.max_tokens,
        );
        let body = wire.body(&self.model, &system, &user, fitted.max_tokens);
        let post = Post {
            client: &self.http,
            url: &self.url,
            headers,
            body: &body,
            timeout: self.timeout,
            key_env: self.key.env.as_deref(),
            model: &self.model,
        };
        let post = &post;
        let url = &self.url;
        let deadline = self.deadline;
        let text = self.runtime.block_on(async move {
            let attempts = with_retries(self.policy, move |_| async move {
                let answer = post.send().await?;
                // Billed whatever is made of it.
                *self.used.lock().unwrap_or_else(PoisonError::into_inner) += wire.usage(&answer);
                let text = wire
                    .answer(&answer)
                    .map_err(|what| garbage(url, &what, &answer))?;
                let text = clean_answer(&text);
                if text.is_empty() {
                    return Err(Failure::fatal(EngineError::new(
                        ErrorKind::Unavailable,
                        format!("the summary model at {url} answered with an empty summary"),
                    )));
                }
                Ok(text)
            });
            tokio::time::timeout(deadline, attempts)
                .await
                .unwrap_or_else(|_| {
                    Err(EngineError::new(
                        ErrorKind::Unavailable,
                        format!(
                            "the summary model at {url} gave no usable answer within {}s \
                             (auxiliary.compression.deadline)",
                            deadline.as_secs_f64()
                        ),
                    ))
                })
        })?;
        // The model may have dropped a standing rule or value: it comes back.
        let text = carry::restore(&text, &carry::expected(request), request.shape);
        // Over what was asked (the model's own count, or the facts put back): cut by the
        // budget order, so the standing facts are the last to go.
        let text = fit_summary(&text, request.max_tokens).into_owned();
        Ok(Summary {
            text,
            summarizer: self.description.clone(),
            fallback_reason: None,
        })
    }
}
