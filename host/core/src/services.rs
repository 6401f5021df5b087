//! The host's implementation of the services engines receive: token counting, the summarizer
//! (with its failure ladder) and a log sink.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ctxhost_config::summarizer::DEFAULT_COOLDOWN_SECS;
use ctxhost_offline_summary::OfflineSummarizer;
use ctxhost_redact::redact;
use ctxhost_sdk::{EngineError, HostBackend, LogLevel, SummarizeRequest, Summary};
use ctxhost_summarizer::usage::SummarizerUsage;
use ctxhost_summarizer::Summarizer;

use ctxhost_tokens::TokenCounter;

/// Where engine log lines go: to `tracing` when the program logs through it (`ctxhost serve`),
/// else to stderr. Nothing is kept: a long-running gateway would hold every line forever.
#[derive(Clone)]
pub struct LogSink {
    min_level: LogLevel,
}

impl LogSink {
    /// Warnings and errors are logged; info and debug too with `verbose`.
    pub fn stderr(verbose: bool) -> Self {
        LogSink {
            min_level: if verbose {
                LogLevel::Debug
            } else {
                LogLevel::Warn
            },
        }
    }

    pub fn log(&self, engine: &str, level: LogLevel, message: &str) {
        if level < self.min_level {
            return;
        }
        if !tracing::dispatcher::has_been_set() {
            let _ = writeln!(std::io::stderr().lock(), "[{engine}] {level}: {message}");
            return;
        }
        match level {
            LogLevel::Debug => tracing::debug!(engine, "{message}"),
            LogLevel::Info => tracing::info!(engine, "{message}"),
            LogLevel::Warn => tracing::warn!(engine, "{message}"),
            LogLevel::Error => tracing::error!(engine, "{message}"),
        }
    }
}

/// The `summarize` service, one failure ladder for every engine: the configured summarizer
/// first; when it fails or answers unusably, the offline summary, with the reason in
/// [`Summary::fallback_reason`]. After a failure the configured summarizer rests for the
/// cool-down (the offline summary answers meanwhile), so a dead endpoint is not retried on every
/// compression of every engine; the first call after the cool-down tries it again. The offline
/// summarizer itself cannot fail, so with it configured there is never a fallback.
///
/// Secrets are redacted from everything an engine sends before any summarizer sees it, and from
/// every answer, whatever the engine did itself.
pub struct SummarizeService {
    configured: Arc<dyn Summarizer>,
    cooldown: Duration,
    cooling: Mutex<Option<Cooling>>,
    log: LogSink,
}

/// The configured summarizer's last failure, while it rests.
struct Cooling {
    until: Instant,
    /// What went wrong, one line.
    what: String,
}

impl SummarizeService {
    /// The ladder over `configured`, resting `cooldown` after a failure (zero: never rests).
    pub fn new(configured: Arc<dyn Summarizer>, cooldown: Duration, log: LogSink) -> Self {
        SummarizeService {
            configured,
            cooldown,
            cooling: Mutex::new(None),
            log,
        }
    }

    /// The configured summarizer, e.g. `offline` or `openai:gpt-4o-mini`.
    pub fn describe(&self) -> String {
        self.configured.describe()
    }

    /// What the configured summarizer's model calls have used so far (the offline fallback
    /// calls none).
    pub fn usage(&self) -> SummarizerUsage {
        self.configured.usage()
    }

    /// A summary, always: the configured summarizer's, or the offline one saying why not.
    pub fn summarize(&self, request: &SummarizeRequest) -> Summary {
        let request = SummarizeRequest {
            instructions: redact(&request.instructions).into_owned(),
            content: redact(&request.content).into_owned(),
            max_tokens: request.max_tokens,
            focus_topic: request
                .focus_topic
                .as_deref()
                .map(|t| redact(t).into_owned()),
            previous_summary: request
                .previous_summary
                .as_deref()
                .map(|s| redact(s).into_owned()),
            shape: request.shape,
        };
        let mut summary = self.ladder(&request);
        summary.text = redact(&summary.text).into_owned();
        summary.fallback_reason = summary.fallback_reason.map(|r| redact(&r).into_owned());
        summary
    }

    fn ladder(&self, request: &SummarizeRequest) -> Summary {
        let reason = match self.resting() {
            Some(reason) => reason,
            None => match self.configured.summarize(request) {
                Ok(summary) if !summary.text.trim().is_empty() => {
                    self.set_cooling(None);
                    return summary;
                }
                Ok(_) => self.failed("answered with an empty summary".to_string()),
                Err(error) => self.failed(error.to_string()),
            },
        };
        Summary {
            fallback_reason: Some(reason),
            ..OfflineSummarizer.summary(request)
        }
    }

    /// Why the configured summarizer is not asked now, while it rests after a failure.
    fn resting(&self) -> Option<String> {
        let cooling = self.cooling.lock().unwrap_or_else(PoisonError::into_inner);
        let cooling = cooling.as_ref()?;
        let left = cooling.until.checked_duration_since(Instant::now())?;
        Some(format!(
            "summarizer {} is resting for {}s after a failure: {}",
            self.configured.describe(),
            left.as_secs_f64().ceil(),
            cooling.what
        ))
    }

    /// Records a failure (starting the cool-down) and returns the fallback reason.
    fn failed(&self, what: String) -> String {
        let what = one_line(&what);
        let reason = format!("summarizer {} failed: {what}", self.configured.describe());
        let meanwhile = if self.cooldown.is_zero() {
            "the offline summary answers this call".to_string()
        } else {
            format!(
                "the offline summary answers for the next {}s",
                self.cooldown.as_secs()
            )
        };
        self.log
            .log("host", LogLevel::Warn, &format!("{reason}; {meanwhile}"));
        let until = Instant::now().checked_add(self.cooldown);
        self.set_cooling(until.map(|until| Cooling { until, what }));
        reason
    }

    fn set_cooling(&self, cooling: Option<Cooling>) {
        *self.cooling.lock().unwrap_or_else(PoisonError::into_inner) = cooling;
    }
}

/// `text` on one line (a fallback reason is one line of a report).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The backend behind every engine's `HostServices`.
pub struct HostServicesImpl {
    tokens: TokenCounter,
    log: LogSink,
    summarize: SummarizeService,
}

impl HostServicesImpl {
    /// `summarizer` is the configured one (`None`: the offline summarizer, the default); it
    /// rests [`DEFAULT_COOLDOWN_SECS`] after a failure unless
    /// [`with_summarizer_cooldown`](Self::with_summarizer_cooldown) says otherwise.
    pub fn new(
        tokens: TokenCounter,
        log: LogSink,
        summarizer: Option<Arc<dyn Summarizer>>,
    ) -> Self {
        let configured = summarizer.unwrap_or_else(|| Arc::new(OfflineSummarizer));
        let cooldown = Duration::from_secs(DEFAULT_COOLDOWN_SECS);
        HostServicesImpl {
            summarize: SummarizeService::new(configured, cooldown, log.clone()),
            tokens,
            log,
        }
    }

    /// How long the configured summarizer rests after a failure
    /// (`auxiliary.compression.cooldown_seconds`).
    pub fn with_summarizer_cooldown(mut self, cooldown: Duration) -> Self {
        self.summarize.cooldown = cooldown;
        self
    }

    pub fn tokens(&self) -> &TokenCounter {
        &self.tokens
    }

    pub fn log_sink(&self) -> &LogSink {
        &self.log
    }

    /// What answers `summarize` first, e.g. `offline` or `openai:gpt-4o-mini`.
    pub fn summarizer(&self) -> String {
        self.summarize.describe()
    }

    /// What the summarizer's model calls have used so far, for every engine and session
    /// these services serve (a running total).
    pub fn summarizer_usage(&self) -> SummarizerUsage {
        self.summarize.usage()
    }
}

impl HostBackend for HostServicesImpl {
    fn count_tokens(&self, text: &str) -> u64 {
        self.tokens.count(text)
    }

    fn log(&self, engine: &str, level: LogLevel, message: &str) {
        self.log.log(engine, level, message);
    }

    fn call(&self, service: &str, payload: &str) -> Result<String, EngineError> {
        match service {
            "summarize" => {
                let request: SummarizeRequest = serde_json::from_str(payload)?;
                let summary = HostBackend::summarize(self, &request)?;
                serde_json::to_string(&summary).map_err(|e| EngineError::failed(e.to_string()))
            }
            other => Err(EngineError::unsupported(other)),
        }
    }

    fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, EngineError> {
        Ok(self.summarize.summarize(request))
    }
}
