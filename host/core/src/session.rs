//! Sessions: the one way to run an engine, for every `ctxhost` command and for a program that
//! embeds the host.
//!
//! A [`Session`] is an id and the engine instance serving it, opened by
//! [`Engines::open_session`](crate::Engines::open_session): the engine is resolved once, the
//! built-in compressor stands by, every operation runs on the blocking pool (engines are
//! synchronous and some block on the host's summarizer), every compression's output is checked,
//! and an engine that fails hands the session to the standby. Nothing here is specific to one
//! engine: what an engine did comes back as the SDK's typed [`CompressionReport`].

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use ctxhost_protocol::Op;
use ctxhost_sdk::contract::{self, OutputViolation};
use ctxhost_sdk::{
    CompressOptions, CompressionReport, ContextEngine, EngineError, EngineStatus, ErrorKind,
    Message, Recalled, SelectRequest, SessionInfo, SessionStart, Usage,
};
use serde_json::Value;

use crate::services::HostServicesImpl;
use crate::source::{EngineSource, Warning};
use crate::tool_set::ToolSet;
use crate::written::{WrittenRecord, WrittenRecordError};
use ctxhost_config::BUILT_IN_ENGINE;
use ctxhost_summarizer::usage::SummarizerUsage;

/// Where an engine keeps its state for a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EngineState {
    /// Under `$CTXHOST_HOME/data/<engine>/`: what the session stores outlives the process.
    #[default]
    Persistent,
    /// In a temporary directory the session owns and removes: a replay that starts fresh every
    /// time, so the same command gives the same report.
    Temporary,
}

/// How strictly the engine's name must resolve.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Resolution {
    /// The name comes from the config: an engine that is missing or cannot start falls back to
    /// the built-in compressor, with a warning (the design's resolution order).
    #[default]
    FallBack,
    /// The user named the engine on purpose (`--engine NAME`): anything but that engine is an
    /// error.
    Strict,
}

/// How to open a session.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// The session's id, handed to the engine (`on_session_start`) and keying its state.
    pub id: String,
    /// Where the engine keeps its state.
    pub state: EngineState,
    /// What to do when the engine does not resolve.
    pub resolution: Resolution,
    /// The model and its window, when not the config's `model.name` / `model.context_length`
    /// (the gateway takes them from each request).
    pub model: Option<(String, u64)>,
    /// Where a plugin engine runs, over its configured or default isolation.
    pub isolation: Option<ctxhost_config::plugin_host::Isolation>,
    /// The session keeps which messages its engines wrote ([`WrittenRecord`]), for a host that
    /// keeps no session records of its own.
    pub record_written: bool,
}

impl SessionOptions {
    /// A persistent session that falls back to the compressor, as the config asks.
    pub fn new(id: impl Into<String>) -> Self {
        SessionOptions {
            id: id.into(),
            ..SessionOptions::default()
        }
    }

    /// Keeps the engine's state in a temporary directory, removed with the session.
    pub fn temporary(mut self) -> Self {
        self.state = EngineState::Temporary;
        self
    }

    /// Refuses to fall back: the named engine or an error.
    pub fn strict(mut self) -> Self {
        self.resolution = Resolution::Strict;
        self
    }

    /// For a host that keeps no session records of its own (a command run once per round on
    /// the previous output, an embedding a resumed agent starts again): the session keeps
    /// which messages its engines wrote, under `$CTXHOST_HOME/written/` ([`WrittenRecord`]),
    /// so a later process on the same session tells the engine its own summary
    /// ([`Session::recognize_written`]). Only for a persistent state.
    pub fn recording_written(mut self) -> Self {
        self.record_written = true;
        self
    }

    /// Runs a plugin engine in a child process whatever its config says (`plugins doctor`).
    pub fn isolated(mut self) -> Self {
        self.isolation = Some(ctxhost_config::plugin_host::Isolation::Process);
        self
    }

    /// Runs the session for `model` with a window of `context_length` tokens instead of the
    /// config's model.
    pub fn model(mut self, model: impl Into<String>, context_length: u64) -> Self {
        self.model = Some((model.into(), context_length));
        self
    }
}

/// An engine operation that did not give an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The engine returned an error.
    #[error("engine '{engine}' failed in {op}: {error}")]
    Failed {
        engine: String,
        op: String,
        error: EngineError,
    },
    /// The engine panicked; its state can no longer be trusted.
    #[error("engine '{engine}' panicked in {op}: {message}")]
    Panicked {
        engine: String,
        op: String,
        message: String,
    },
    /// `compress` returned something that breaks the output contract's structure.
    #[error("engine '{engine}' returned an invalid context: {violation}")]
    InvalidOutput {
        engine: String,
        violation: OutputViolation,
    },
    /// The engine has no such operation.
    #[error("engine '{engine}' has no operation '{op}'")]
    Unsupported { engine: String, op: String },
}

impl SessionError {
    /// The engine the error is about.
    pub fn engine(&self) -> &str {
        match self {
            SessionError::Failed { engine, .. }
            | SessionError::Panicked { engine, .. }
            | SessionError::InvalidOutput { engine, .. }
            | SessionError::Unsupported { engine, .. } => engine,
        }
    }
}

/// The session left the engine it started with for the standby compressor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    /// The engine that failed.
    pub from: String,
    /// Why.
    pub reason: SessionError,
}

/// What one request's recall gave ([`Session::recall`]).
#[derive(Debug, Clone)]
pub struct Recall {
    /// What to send: the engine's selection, or the request as it was.
    pub messages: Arc<Vec<Message>>,
    /// What the engine brought back, in order.
    pub recalled: Vec<Recalled>,
    /// Set when the engine failed; `messages` is then the request.
    pub error: Option<SessionError>,
}

/// What one compression gave.
#[derive(Debug, Clone)]
pub struct Compression {
    /// The context the model sees from now on: the engine's output, or the input unchanged when
    /// the engine failed.
    pub messages: Arc<Vec<Message>>,
    /// The engine that was asked.
    pub engine: String,
    /// Set when the engine failed; `messages` is then the input.
    pub error: Option<SessionError>,
    /// What the engine reports about it (`None` when it failed or reports nothing).
    pub report: Option<CompressionReport>,
    /// Set when the session's record of what its engines wrote could not be kept (see
    /// [`SessionOptions::recording_written`]): a later process reads this output's summary as
    /// a turn.
    pub record_error: Option<WrittenRecordError>,
}

type SharedEngine = Arc<Mutex<Box<dyn ContextEngine>>>;

struct Slot {
    name: String,
    engine: SharedEngine,
}

impl Slot {
    fn new(name: &str, engine: Box<dyn ContextEngine>) -> Self {
        Slot {
            name: name.to_string(),
            engine: Arc::new(Mutex::new(engine)),
        }
    }
}

/// A running engine serving one session. See the crate docs for an agent loop.
pub struct Session {
    id: String,
    requested: String,
    source: EngineSource,
    version: String,
    warnings: Vec<Warning>,
    active: Slot,
    standby: Option<Slot>,
    fallback: Option<Fallback>,
    services: Arc<HostServicesImpl>,
    model: String,
    context_length: u64,
    /// Messages this session's engines wrote (in an output, not in its input) that are still
    /// in the context: the output contract's newest-user-message rule does not protect them.
    written: Vec<Message>,
    /// Messages of any role the host knows this session's engines wrote in an earlier life of
    /// the session (a restart, another process or gateway), still in the context: told to the
    /// engine with each compression, so it folds its own summary instead of reading it as a
    /// turn.
    earlier: Vec<Message>,
    /// What this session's engines wrote, kept across processes when the host asked for it.
    record: Option<WrittenRecord>,
    /// The active engine answered `select_context` with Unsupported: it is not asked again.
    selects_nothing: bool,
    /// Keeps a temporary state directory alive as long as the session.
    _state: Option<tempfile::TempDir>,
}

/// The parts [`Engines::open_session`](crate::Engines::open_session) assembles.
pub(crate) struct Parts {
    pub id: String,
    pub requested: String,
    pub name: String,
    pub source: EngineSource,
    pub version: String,
    pub warnings: Vec<Warning>,
    pub engine: Box<dyn ContextEngine>,
    pub standby: Option<Box<dyn ContextEngine>>,
    pub services: Arc<HostServicesImpl>,
    pub model: String,
    pub context_length: u64,
    pub state: Option<tempfile::TempDir>,
    pub record: Option<WrittenRecord>,
}

impl Session {
    pub(crate) fn from_parts(parts: Parts) -> Self {
        Session {
            id: parts.id,
            requested: parts.requested,
            source: parts.source,
            version: parts.version,
            warnings: parts.warnings,
            active: Slot::new(&parts.name, parts.engine),
            standby: parts
                .standby
                .map(|engine| Slot::new(BUILT_IN_ENGINE, engine)),
            fallback: None,
            services: parts.services,
            model: parts.model,
            context_length: parts.context_length,
            written: Vec::new(),
            earlier: Vec::new(),
            record: parts.record,
            selects_nothing: false,
            _state: parts.state,
        }
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The engine that was asked for (`context.engine` or `--engine`).
    pub fn requested(&self) -> &str {
        &self.requested
    }

    /// The engine serving the session now.
    pub fn engine(&self) -> &str {
        &self.active.name
    }

    /// Where the engine the session started with came from.
    pub fn source(&self) -> &EngineSource {
        &self.source
    }

    /// The version of the engine the session started with.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// What resolution had to say (the engine asked for was not found, could not start, ...).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Set once a failure handed the session to the standby compressor.
    pub fn fallback(&self) -> Option<&Fallback> {
        self.fallback.as_ref()
    }

    /// The model's window, in tokens.
    pub fn context_length(&self) -> u64 {
        self.context_length
    }

    /// The model the session runs for.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Tells the engine the model (or its usable window) changed (`update_model`).
    pub async fn update_model(
        &mut self,
        model: String,
        context_length: u64,
    ) -> Result<(), SessionError> {
        self.model = model.clone();
        self.context_length = context_length;
        self.call(Op::UpdateModel, move |e| {
            e.update_model(&model, context_length)
        })
        .await
    }

    /// Tokens `messages` cost in a prompt, with the host's counter (cached per message).
    pub fn count(&self, messages: &[Message]) -> u64 {
        self.services.tokens().count_messages(messages)
    }

    /// Tokens one message costs in a prompt.
    pub fn count_message(&self, message: &Message) -> u64 {
        self.services.tokens().count_message(message)
    }

    /// What the host's summarizer has used so far: a running total over every session its
    /// services serve, so two readings bracket this session's calls only where nothing else
    /// summarizes meanwhile (a replay).
    pub fn summarizer_usage(&self) -> SummarizerUsage {
        self.services.summarizer_usage()
    }

    /// Tells the engine the session begins (`on_session_start`).
    pub async fn begin(&mut self) -> Result<(), SessionError> {
        let start = SessionStart {
            session_id: self.id.clone(),
            model: Some(self.model.clone()),
            context_length: Some(self.context_length),
        };
        self.call(Op::OnSessionStart, move |e| e.on_session_start(&start))
            .await
    }

    /// Tells the engine the session ends, with the context as it stands.
    pub async fn end(&mut self, messages: Arc<Vec<Message>>) -> Result<(), SessionError> {
        let id = self.id.clone();
        self.call(Op::OnSessionEnd, move |e| e.on_session_end(&id, &messages))
            .await
    }

    /// Tells the engine the conversation starts over (`on_session_reset`: a new conversation in
    /// the same session, as an agent's `/new` or `/reset`).
    pub async fn reset(&mut self) -> Result<(), SessionError> {
        self.call(Op::OnSessionReset, |e| e.on_session_reset())
            .await
    }

    /// Records what the provider reported for the last model call.
    pub async fn record_usage(&mut self, usage: Usage) -> Result<(), SessionError> {
        self.call(Op::UpdateFromResponse, move |e| {
            e.update_from_response(&usage)
        })
        .await
    }

    /// Whether to compress, given the prompt tokens of the last call.
    pub async fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, SessionError> {
        self.call(Op::ShouldCompress, move |e| {
            e.should_compress(prompt_tokens)
        })
        .await
    }

    /// The engine's cheap check before a call, from local counts.
    pub async fn should_compress_preflight(
        &mut self,
        messages: Arc<Vec<Message>>,
    ) -> Result<bool, SessionError> {
        self.call(Op::ShouldCompressPreflight, move |e| {
            e.should_compress_preflight(&messages)
        })
        .await
    }

    /// Compresses `messages`. Never loses the conversation: when the engine fails, panics or
    /// breaks the output contract, the input comes back unchanged with the reason, and the
    /// session moves to the standby compressor.
    pub async fn compress(
        &mut self,
        messages: Arc<Vec<Message>>,
        options: CompressOptions,
    ) -> Compression {
        let engine = self.active.name.clone();
        if let Some(record) = &self.record {
            let mine: Vec<Message> = record.among(&messages).into_iter().cloned().collect();
            self.recognize_written(&mine);
        }
        let input = messages.clone();
        let earlier = self.earlier.clone();
        let started = std::time::Instant::now();
        let result = self
            .call(Op::Compress, move |e| {
                tell_earlier(e, &earlier);
                e.compress(&input, &options)
            })
            .await;
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        let error = match result {
            Ok(output) => match self.check(&messages, &output) {
                Ok(()) => {
                    self.remember_written(&messages, &output);
                    let record_error = self.record.as_mut().and_then(|record| {
                        record.update(&messages, &output);
                        record.save(&self.id).err()
                    });
                    let mut report = self.last_compression().await;
                    // Engines that do not time themselves get the host's measure.
                    if let Some(report) = report.as_mut().filter(|r| r.elapsed_ms == 0.0) {
                        report.elapsed_ms = elapsed_ms;
                    }
                    return Compression {
                        messages: Arc::new(output),
                        engine,
                        error: None,
                        report,
                        record_error,
                    };
                }
                Err(violation) => SessionError::InvalidOutput {
                    engine: engine.clone(),
                    violation,
                },
            },
            Err(error) => error,
        };
        // A failed compression retires the engine: the next one would likely fail the same way,
        // and the conversation must keep fitting. Not one cut short by another session's call.
        self.fall_back(error.clone());
        Compression {
            messages,
            engine,
            error: Some(error),
            report: None,
            record_error: None,
        }
    }

    /// The whole output contract, on every compression: the structure (valid UTF-8, no
    /// shadowed field, a valid sequence, not empty, system prompt first, known roles), the
    /// newest user message kept, no growth in tokens, and the turn in progress ending the
    /// output unchanged. A user message this session's
    /// engines wrote (a summary between head and tail) is theirs to fold into the next one;
    /// so is a summary of the built-in compressor's from before this session (a transcript
    /// compressed earlier), which it recognises as its own.
    fn check(&self, input: &[Message], output: &[Message]) -> Result<(), OutputViolation> {
        check_output(&self.services, &self.written, input, output)
    }

    /// Records the user messages an accepted compression wrote (only user messages matter to
    /// the contract), forgetting those that left the context.
    fn remember_written(&mut self, input: &[Message], output: &[Message]) {
        self.written.retain(|message| output.contains(message));
        self.earlier.retain(|message| output.contains(message));
        for message in output.iter().filter(|m| m.is_user()) {
            if !self.written.contains(message) && !input.contains(message) {
                self.written.push(message.clone());
            }
        }
    }

    /// Takes `messages` as written by this session's engines in an earlier life of the session
    /// (before a restart, or in another process sharing its store): a caller that knows its
    /// client never sent them says so, and the output contract treats them as the engine's
    /// own, as it does what this session saw them write.
    ///
    /// The engine hears of them with its next compression
    /// ([`ContextEngine::recognize_written`]), so a summary it wrote is folded into the next
    /// one rather than read as a turn.
    pub fn recognize_written<'a>(&mut self, messages: impl IntoIterator<Item = &'a Message>) {
        for message in messages {
            if message.is_user() && !self.written.contains(message) {
                self.written.push(message.clone());
            }
            if !self.earlier.contains(message) {
                self.earlier.push(message.clone());
            }
        }
    }

    /// The engine's report of its last compression.
    async fn last_compression(&mut self) -> Option<CompressionReport> {
        self.call(Op::LastCompression, |e| e.last_compression())
            .await
            .ok()
            .flatten()
    }

    /// What to send for one request: `messages` with what the engine recalls for their newest
    /// user message ([`ContextEngine::select_context`]), within `window` (the answer's room
    /// already out of it) less what `messages` cost. Never fails the request: an engine without
    /// the operation (asked once) or one that fails or breaks the selection's contract leaves
    /// `messages` as they are, the latter logged and with the reason; unlike a failed
    /// compression it never retires the engine.
    pub async fn recall(&mut self, messages: Arc<Vec<Message>>, window: u64) -> Recall {
        let unchanged = |messages, error| Recall {
            messages,
            recalled: Vec::new(),
            error,
        };
        if self.selects_nothing {
            return unchanged(messages, None);
        }
        let request = SelectRequest {
            incoming: messages.iter().rev().find(|m| m.is_user()).cloned(),
            budget_tokens: window.saturating_sub(self.count(&messages)),
        };
        let selected = self.select_context(messages.clone(), request).await;
        match selected {
            Ok(selection) => Recall {
                messages: Arc::new(selection.messages),
                recalled: selection.recalled,
                error: None,
            },
            Err(SessionError::Unsupported { .. }) => {
                self.selects_nothing = true;
                unchanged(messages, None)
            }
            Err(error) => {
                tracing::warn!(session = %self.id, "{error}; the request goes without recall");
                unchanged(messages, Some(error))
            }
        }
    }

    /// The engine's `select_context` as it answers (`Unsupported` when it has none), its
    /// selection checked against the contract (a broken one is the engine's failure).
    pub async fn select_context(
        &mut self,
        messages: Arc<Vec<Message>>,
        request: SelectRequest,
    ) -> Result<ctxhost_sdk::ContextSelection, SessionError> {
        let input = messages.clone();
        self.call(Op::SelectContext, move |e| {
            e.select_context(&input, &request)
        })
        .await
        .and_then(|selection| {
            selection
                .check(&messages)
                .map(|()| selection)
                .map_err(|violation| SessionError::Failed {
                    engine: self.active.name.clone(),
                    op: Op::SelectContext.name().to_string(),
                    error: EngineError::failed(violation.to_string()),
                })
        })
    }

    /// The engine's status (every engine has one).
    pub async fn status(&mut self) -> Result<EngineStatus, SessionError> {
        self.call(Op::Status, |e| e.status()).await
    }

    /// The JSON schemas of the tools the engine gives the agent.
    pub async fn tool_schemas(&mut self) -> Result<Vec<Value>, SessionError> {
        self.call(Op::ToolSchemas, |e| e.tool_schemas()).await
    }

    /// [`tool_schemas`](Self::tool_schemas), shared with every session offering the same.
    pub async fn tool_set(&mut self) -> Result<Arc<ToolSet>, SessionError> {
        self.tool_schemas().await.map(ToolSet::shared)
    }

    /// Runs one of the engine's tools; the answer is the text for the model.
    pub async fn call_tool(&mut self, name: String, args: Value) -> Result<String, SessionError> {
        self.call(Op::HandleToolCall, move |e| {
            e.handle_tool_call(&name, &args)
        })
        .await
    }

    /// Every session the engine keeps state for; `Unsupported` when it keeps none.
    pub async fn list_sessions(&mut self) -> Result<Vec<SessionInfo>, SessionError> {
        self.call(Op::Sessions, |e| e.sessions()).await
    }

    /// What the engine holds for session `id` (`None`: nothing); `Unsupported` when it keeps no
    /// state.
    pub async fn session_info(&mut self, id: String) -> Result<Option<SessionInfo>, SessionError> {
        self.call(Op::Session, move |e| e.session(&id)).await
    }

    /// Deletes what the engine holds for session `id`; `false` when it held nothing.
    pub async fn delete_session(&mut self, id: String) -> Result<bool, SessionError> {
        self.call(Op::DeleteSession, move |e| e.delete_session(&id))
            .await
    }

    /// An engine-specific operation (`ctxhost engine OP`).
    pub async fn invoke(&mut self, op: String, payload: Value) -> Result<Value, SessionError> {
        let name = op.clone();
        // Labelled by the engine's own operation, which is what the user asked for.
        self.call_labelled(op, move |e| e.invoke(&name, &payload))
            .await
    }

    /// Runs `body`, the trait method of `op`, on the active engine; see
    /// [`Self::call_labelled`]. A per-turn check that timed out retires the engine: it would
    /// hold every turn as long again.
    async fn call<T, F>(&mut self, op: Op, body: F) -> Result<T, SessionError>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn ContextEngine) -> Result<T, EngineError> + Send + 'static,
    {
        let result = self.call_labelled(op.name().to_string(), body).await;
        if let Err(error @ SessionError::Failed { error: cause, .. }) = &result {
            if cause.kind() == ErrorKind::TimedOut && ctxhost_isolation::is_check(op) {
                self.fall_back(error.clone());
            }
        }
        result
    }

    /// Runs `body` on the active engine off the async scheduler: the one place engines leave
    /// the async runtime. A panic retires the engine; an operation the engine does not have is
    /// [`SessionError::Unsupported`]. Errors name the operation `label`.
    async fn call_labelled<T, F>(&mut self, label: String, body: F) -> Result<T, SessionError>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn ContextEngine) -> Result<T, EngineError> + Send + 'static,
    {
        let engine = self.active.engine.clone();
        let run = move || {
            let mut guard = match engine.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            catch_unwind(AssertUnwindSafe(|| body(guard.as_mut())))
        };
        // On a multi-threaded runtime the call runs in place: the worker's other tasks move to
        // another thread, and no thread has to wake up before or after it (on an idle machine
        // those two wake-ups were most of what the gateway added to a request).
        let multi_threaded = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let outcome = if multi_threaded {
            Ok(tokio::task::block_in_place(run))
        } else {
            tokio::task::spawn_blocking(run).await
        };
        let name = self.active.name.clone();
        match settle(outcome, &name, label) {
            Ok(value) => Ok(value),
            Err(error) => {
                if matches!(error, SessionError::Panicked { .. }) {
                    self.fall_back(error.clone());
                }
                Err(error)
            }
        }
    }

    /// Starts compressing `messages` apart from the session (in the background): the future
    /// owns what it needs, so the session stays usable for what does not reach the engine;
    /// anything that does waits until the compression is done. Take the outcome back with
    /// [`Session::absorb`].
    pub fn compress_detached(
        &self,
        messages: Arc<Vec<Message>>,
        options: CompressOptions,
    ) -> impl std::future::Future<Output = DetachedCompression> + Send + 'static {
        let engine = self.active.engine.clone();
        let name = self.active.name.clone();
        let services = self.services.clone();
        let written = self.written.clone();
        let earlier = self.earlier.clone();
        async move {
            let input = messages.clone();
            let started = std::time::Instant::now();
            let outcome = tokio::task::spawn_blocking(move || {
                let mut guard = match engine.lock() {
                    Ok(guard) => guard,
                    Err(poisoned) => poisoned.into_inner(),
                };
                catch_unwind(AssertUnwindSafe(|| {
                    tell_earlier(guard.as_mut(), &earlier);
                    let output = guard.compress(&input, &options)?;
                    Ok((output, guard.last_compression().ok().flatten()))
                }))
            })
            .await;
            let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            let result = settle(outcome, &name, Op::Compress.name().to_string()).and_then(
                |(output, mut report)| {
                    check_output(&services, &written, &messages, &output).map_err(|violation| {
                        SessionError::InvalidOutput {
                            engine: name.clone(),
                            violation,
                        }
                    })?;
                    if let Some(report) = report.as_mut().filter(|r| r.elapsed_ms == 0.0) {
                        report.elapsed_ms = elapsed_ms;
                    }
                    Ok((output, report))
                },
            );
            DetachedCompression {
                input: messages,
                engine: name,
                result,
            }
        }
    }

    /// Takes back a compression made apart: as [`Session::compress`] would have ended (a
    /// failure retires the engine for the standby compressor).
    pub fn absorb(&mut self, detached: DetachedCompression) -> Compression {
        match detached.result {
            Ok((output, report)) => {
                self.remember_written(&detached.input, &output);
                Compression {
                    messages: Arc::new(output),
                    engine: detached.engine,
                    error: None,
                    report,
                    record_error: None,
                }
            }
            Err(error) => {
                self.fall_back(error.clone());
                Compression {
                    messages: detached.input,
                    engine: detached.engine,
                    error: Some(error),
                    report: None,
                    record_error: None,
                }
            }
        }
    }

    /// Hands the session to the standby compressor for `reason`; not for a call that was
    /// only interrupted ([`ErrorKind::Interrupted`]: the engine reopens at the next call).
    fn fall_back(&mut self, reason: SessionError) {
        if let SessionError::Failed { error, .. } = &reason {
            if error.kind() == ErrorKind::Interrupted {
                return;
            }
        }
        if let Some(standby) = self.standby.take() {
            let from = std::mem::replace(&mut self.active, standby);
            self.fallback = Some(Fallback {
                from: from.name,
                reason,
            });
        }
    }
}

/// A compression made apart from its session ([`Session::compress_detached`]).
pub struct DetachedCompression {
    input: Arc<Vec<Message>>,
    engine: String,
    result: Result<(Vec<Message>, Option<CompressionReport>), SessionError>,
}

impl DetachedCompression {
    /// The engine that was asked.
    pub fn engine(&self) -> &str {
        &self.engine
    }

    /// What it made (checked against the output contract), with its report, or why it failed.
    pub fn outcome(&self) -> Result<(&[Message], Option<&CompressionReport>), &SessionError> {
        match &self.result {
            Ok((output, report)) => Ok((output, report.as_ref())),
            Err(error) => Err(error),
        }
    }
}

/// Tells `engine` which messages of the context it wrote in an earlier life of the session
/// (before it compresses). Its answer changes nothing: an engine that cannot take it in (one
/// built before the operation) compresses as it would have.
fn tell_earlier(engine: &mut dyn ContextEngine, earlier: &[Message]) {
    if !earlier.is_empty() {
        if let Err(error) = engine.recognize_written(earlier) {
            tracing::debug!(engine = engine.name(), "recognize_written: {error}");
        }
    }
}

/// The output contract as the host enforces it on every compression (see `Session::check`).
fn check_output(
    services: &HostServicesImpl,
    written: &[Message],
    input: &[Message],
    output: &[Message],
) -> Result<(), OutputViolation> {
    let written_by_engine = |message: &Message| {
        written.contains(message) || ctxhost_compressor::is_own_summary(message)
    };
    contract::check_structure(input, output)?;
    contract::check_newest_user(input, output, written_by_engine)?;
    contract::check_size(input, output, |list| services.tokens().count_messages(list))?;
    contract::check_turn_in_progress(input, output, written_by_engine)
}

/// An engine call's outcome, off the runtime and through `catch_unwind`, as a typed result.
fn settle<T>(
    outcome: Result<std::thread::Result<Result<T, EngineError>>, tokio::task::JoinError>,
    name: &str,
    op: String,
) -> Result<T, SessionError> {
    let name = name.to_string();
    match outcome {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(error))) if error.kind() == ErrorKind::Panicked => Err(SessionError::Panicked {
            engine: name,
            op,
            message: error.message().to_string(),
        }),
        Ok(Ok(Err(error))) if error.is_unsupported() => {
            Err(SessionError::Unsupported { engine: name, op })
        }
        Ok(Ok(Err(error))) => Err(SessionError::Failed {
            engine: name,
            op,
            error,
        }),
        Ok(Err(_)) | Err(_) => Err(SessionError::Panicked {
            engine: name,
            op,
            message: "the engine panicked".to_string(),
        }),
    }
}
