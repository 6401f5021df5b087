//! [`FakeHost`]: the host an engine meets in its tests, with every service predictable.

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ctxhost_sdk::{
    EngineError, EngineSetup, ErrorKind, HostBackend, HostServices, LogLevel, ModelInfo,
    SummarizeRequest, Summary,
};
use serde_json::Value;
use tempfile::TempDir;

use crate::tokens;

/// The summarizer name [`Answer::Digest`] and [`Answer::Text`] report.
pub const FAKE_SUMMARIZER: &str = "fake";

/// A summarizer answered with a function of the request.
pub type AnswerFn = dyn Fn(&SummarizeRequest) -> Result<Summary, EngineError> + Send + Sync;

/// What the fake summarizer answers to one `summarize` call.
#[derive(Clone)]
pub enum Answer {
    /// [`digest`] of the request: deterministic, within the request's `max_tokens`. The
    /// default answer.
    Digest,
    /// This text, from the [`FAKE_SUMMARIZER`].
    Text(String),
    /// This error, as a failing summarizer (a timeout, an HTTP 500, no summarizer configured)
    /// reaches the engine.
    Error(ErrorKind, String),
    /// Whatever the function returns. It may block (to play a hung summarizer) or count calls.
    With(Arc<AnswerFn>),
}

impl Answer {
    /// [`Answer::Text`].
    pub fn text(text: impl Into<String>) -> Self {
        Answer::Text(text.into())
    }

    /// [`Answer::Error`].
    pub fn error(kind: ErrorKind, message: impl Into<String>) -> Self {
        Answer::Error(kind, message.into())
    }

    /// [`Answer::With`].
    pub fn with(
        answer: impl Fn(&SummarizeRequest) -> Result<Summary, EngineError> + Send + Sync + 'static,
    ) -> Self {
        Answer::With(Arc::new(answer))
    }

    fn answer(&self, request: &SummarizeRequest) -> Result<Summary, EngineError> {
        match self {
            Answer::Digest => Ok(digest(request)),
            Answer::Text(text) => Ok(Summary {
                text: text.clone(),
                summarizer: FAKE_SUMMARIZER.to_string(),
                fallback_reason: None,
            }),
            Answer::Error(kind, message) => Err(EngineError::new(*kind, message.clone())),
            Answer::With(answer) => answer(request),
        }
    }
}

impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Digest => f.write_str("Digest"),
            Answer::Text(text) => f.debug_tuple("Text").field(text).finish(),
            Answer::Error(kind, message) => {
                f.debug_tuple("Error").field(kind).field(message).finish()
            }
            Answer::With(_) => f.write_str("With(..)"),
        }
    }
}

/// The default summary: `summary: ` followed by the request's content with its whitespace
/// collapsed, the whole cut to `2 × max_tokens` characters (at least 8), so it always fits
/// the request's budget under the fake counter. Named [`FAKE_SUMMARIZER`].
pub fn digest(request: &SummarizeRequest) -> Summary {
    let chars = (request.max_tokens as usize).saturating_mul(2).max(8);
    let flat = request
        .content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    Summary {
        text: format!("summary: {flat}").chars().take(chars).collect(),
        summarizer: FAKE_SUMMARIZER.to_string(),
        fallback_reason: None,
    }
}

/// One line an engine logged through [`HostServices::log`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// The engine name the line was logged under.
    pub engine: String,
    /// Its severity.
    pub level: LogLevel,
    /// Its text.
    pub message: String,
}

/// Builds a [`FakeHost`]; start with [`FakeHost::builder`].
#[derive(Debug)]
pub struct FakeHostBuilder {
    engine: String,
    config: Value,
    model: ModelInfo,
    data_dir: Option<PathBuf>,
    script: VecDeque<Answer>,
    default_answer: Answer,
}

impl FakeHostBuilder {
    /// The engine's config section (`plugins.<engine>` of `config.yaml`, as JSON). Default:
    /// null, which [`HostServices::config_as`] reads as `{}`.
    pub fn config(mut self, config: Value) -> Self {
        self.config = config;
        self
    }

    /// The model's name. Default: `test-model`.
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model.name = name.into();
        self
    }

    /// The model's context window in tokens. Default: 8,000.
    pub fn context_length(mut self, tokens: u64) -> Self {
        self.model.context_length = tokens;
        self
    }

    /// Uses `dir` as the engine's data directory instead of a fresh temporary one (to reopen
    /// the files an earlier engine left, say). The caller keeps it alive.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// Queues `answer` for the next `summarize` call not answered by an earlier queued one.
    pub fn answer(mut self, answer: Answer) -> Self {
        self.script.push_back(answer);
        self
    }

    /// Queues several answers, in order.
    pub fn script(mut self, answers: impl IntoIterator<Item = Answer>) -> Self {
        self.script.extend(answers);
        self
    }

    /// What `summarize` answers once the queue is empty. Default: [`Answer::Digest`].
    pub fn default_answer(mut self, answer: Answer) -> Self {
        self.default_answer = answer;
        self
    }

    /// The host, with its data directory created.
    ///
    /// # Panics
    /// When no temporary directory can be created: a test cannot go on without one.
    pub fn build(self) -> FakeHost {
        let (data_dir, temporary) = match self.data_dir {
            Some(dir) => (dir, None),
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("ctxhost-fake-host-")
                    .tempdir()
                    .unwrap_or_else(|error| {
                        panic!("the fake host cannot create its data directory: {error}")
                    });
                (dir.path().to_path_buf(), Some(dir))
            }
        };
        let backend = Arc::new(Backend {
            _data_dir: temporary,
            state: Mutex::new(State {
                script: self.script,
                default_answer: self.default_answer,
                requests: Vec::new(),
                logs: Vec::new(),
            }),
            calls: AtomicUsize::new(0),
        });
        FakeHost {
            backend,
            setup: EngineSetup {
                engine: self.engine,
                data_dir,
                config: self.config,
                model: self.model,
            },
        }
    }
}

/// A host for tests: hands an engine [`HostServices`] whose every service is predictable, and
/// records what the engine asked of it.
///
/// - tokens: the one rule of [`crate::tokens`] (a character count divided by four, rounded
///   up);
/// - `summarize`: a script of [`Answer`]s, then a default answer ([`digest`] unless set);
///   every request is recorded ([`requests`](Self::requests));
/// - logs: every line is captured ([`logs`](Self::logs));
/// - data directory: a fresh temporary directory that lives as long as the host or any
///   services it handed out, whichever is last;
/// - any other host service answers [`ErrorKind::Unsupported`].
///
/// Cloning gives another handle on the same host.
#[derive(Clone)]
pub struct FakeHost {
    backend: Arc<Backend>,
    setup: EngineSetup,
}

impl FakeHost {
    /// A host for engine `engine` (the name used in its config section and logs).
    pub fn builder(engine: impl Into<String>) -> FakeHostBuilder {
        FakeHostBuilder {
            engine: engine.into(),
            config: Value::Null,
            model: ModelInfo {
                name: "test-model".to_string(),
                context_length: 8_000,
            },
            data_dir: None,
            script: VecDeque::new(),
            default_answer: Answer::Digest,
        }
    }

    /// A host for engine `engine` with every default.
    pub fn new(engine: impl Into<String>) -> FakeHost {
        Self::builder(engine).build()
    }

    /// The services to build an engine with (`EnginePlugin::create(host.services())`). Every
    /// call shares this host's data directory, script and records.
    pub fn services(&self) -> HostServices {
        HostServices::new(self.backend.clone(), self.setup.clone())
    }

    /// The host side of the services, for a host that builds the engine itself, such as one
    /// loading it from its cdylib: `library.instantiate(host.backend(), host.setup().clone())`.
    pub fn backend(&self) -> Arc<dyn HostBackend> {
        self.backend.clone()
    }

    /// The construction-time facts the services carry.
    pub fn setup(&self) -> &EngineSetup {
        &self.setup
    }

    /// The engine's data directory.
    pub fn data_dir(&self) -> &Path {
        &self.setup.data_dir
    }

    /// Queues `answer` for a later `summarize` call, after the ones already queued.
    pub fn push_answer(&self, answer: Answer) {
        self.backend.state().script.push_back(answer);
    }

    /// Replaces the answer given once the queue is empty.
    pub fn set_default_answer(&self, answer: Answer) {
        self.backend.state().default_answer = answer;
    }

    /// How many times the engine called `summarize`.
    pub fn summarize_calls(&self) -> usize {
        self.backend.calls.load(Ordering::SeqCst)
    }

    /// Every `summarize` request so far, oldest first.
    pub fn requests(&self) -> Vec<SummarizeRequest> {
        self.backend.state().requests.clone()
    }

    /// Every `summarize` request so far, forgetting them.
    pub fn take_requests(&self) -> Vec<SummarizeRequest> {
        std::mem::take(&mut self.backend.state().requests)
    }

    /// Every line logged so far, oldest first.
    pub fn logs(&self) -> Vec<LogLine> {
        self.backend.state().logs.clone()
    }

    /// Every line logged so far, forgetting them.
    pub fn take_logs(&self) -> Vec<LogLine> {
        std::mem::take(&mut self.backend.state().logs)
    }

    /// Tokens in `text` under the host's rule ([`tokens::count_text`]).
    pub fn count_tokens(&self, text: &str) -> u64 {
        tokens::count_text(text)
    }
}

impl fmt::Debug for FakeHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeHost")
            .field("setup", &self.setup)
            .finish_non_exhaustive()
    }
}

struct State {
    script: VecDeque<Answer>,
    default_answer: Answer,
    requests: Vec<SummarizeRequest>,
    logs: Vec<LogLine>,
}

struct Backend {
    /// Deleted when the last handle (host or services) goes.
    _data_dir: Option<TempDir>,
    state: Mutex<State>,
    calls: AtomicUsize,
}

impl Backend {
    /// The records stay readable after a panicking test thread poisoned the lock.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn summarize(&self, request: SummarizeRequest) -> Result<Summary, EngineError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = {
            let mut state = self.state();
            state.requests.push(request.clone());
            let next = state.script.pop_front();
            next.unwrap_or_else(|| state.default_answer.clone())
        };
        // Answered outside the lock: an answer may block, and the test may look meanwhile.
        answer.answer(&request)
    }
}

impl HostBackend for Backend {
    fn count_tokens(&self, text: &str) -> u64 {
        tokens::count_text(text)
    }

    fn log(&self, engine: &str, level: LogLevel, message: &str) {
        self.state().logs.push(LogLine {
            engine: engine.to_string(),
            level,
            message: message.to_string(),
        });
    }

    fn call(&self, service: &str, payload: &str) -> Result<String, EngineError> {
        match service {
            "summarize" => {
                let request: SummarizeRequest = serde_json::from_str(payload)?;
                let summary = self.summarize(request)?;
                Ok(serde_json::to_string(&summary)?)
            }
            other => Err(EngineError::unsupported(other)),
        }
    }
}
