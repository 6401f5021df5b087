//! The `ContextEngine` trait: what every engine, built in or plugged in, implements.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::EngineError;
use crate::message::Message;
use crate::selection::{ContextSelection, SelectRequest};
use crate::telemetry::{CompressionReport, SessionInfo};

/// Token usage reported by the model provider after a call. The first three fields are always
/// present; the others only when the provider reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt the model read: the context an engine keeps under its threshold.
    pub prompt_tokens: u64,
    /// Tokens the model wrote.
    pub completion_tokens: u64,
    /// Prompt and completion together, as the provider counted them.
    pub total_tokens: u64,
    /// Prompt tokens served from the provider's prompt cache (part of `prompt_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Prompt tokens written to the provider's prompt cache (part of `prompt_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Of `cache_write_tokens`, those written to a 1-hour cache (Anthropic's
    /// `cache_creation.ephemeral_1h_input_tokens`), when the provider splits them; the rest
    /// went to the 5-minute one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h_tokens: Option<u64>,
    /// Completion tokens spent on reasoning the client does not see (part of
    /// `completion_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

/// How a compression was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompressOptions {
    /// The host's current measure of the context, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_tokens: Option<u64>,
    /// A topic to preserve in priority (a manual `/compress <focus>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus_topic: Option<String>,
    /// The user asked for it: bypass any engine-owned cool-down.
    #[serde(default)]
    pub force: bool,
    /// Text from memory providers to fold into a handoff summary. Reference material, never
    /// instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_context: Option<String>,
    /// Make the output fit this many tokens (the host's counter): the engine sizes what it
    /// protects and what it writes to it, instead of its own target. A size the engine cannot
    /// reach (a head or a newest message larger than it) is not an error: it does what it can.
    /// It travels in the options' JSON, so plugins built before it read it as absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_tokens: Option<u64>,
}

/// A session beginning, as [`ContextEngine::on_session_start`] receives it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionStart {
    /// The session's id; later calls for the same conversation carry the same id.
    pub session_id: String,
    /// The model the session talks to, when the host knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// That model's context window, in tokens, when the host knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_length: Option<u64>,
}

/// What an engine reports for display and logging ([`ContextEngine::status`]);
/// [`TokenTracker::status`] fills it for engines that keep one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineStatus {
    /// Prompt tokens of the last model call.
    pub last_prompt_tokens: u64,
    /// The prompt size, in tokens, at which the engine compresses.
    pub threshold_tokens: u64,
    /// The model's context window, in tokens.
    pub context_length: u64,
    /// `last_prompt_tokens` as a percentage of `context_length` (0 to 100).
    pub usage_percent: f64,
    /// Compressions done in this session.
    pub compression_count: u64,
    /// Anything engine-specific (store sizes, summary counts, ...).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
}

/// A context engine: decides when the conversation has outgrown the window and what the model
/// sees instead.
///
/// Only [`name`](Self::name) and [`compress`](Self::compress) are required; every other
/// operation has the default Hermes Agent gives it. An engine that keeps a [`TokenTracker`]
/// hands it out through [`tracker`](Self::tracker), and the defaults do the host's bookkeeping
/// with it: [`update_from_response`](Self::update_from_response) records the usage,
/// [`should_compress`](Self::should_compress) compares with its threshold,
/// [`on_session_start`](Self::on_session_start) and [`update_model`](Self::update_model) set its
/// window, [`on_session_reset`](Self::on_session_reset) resets it and [`status`](Self::status)
/// reports it (with [`status_details`](Self::status_details)). An engine that overrides one of
/// these does the tracker's part itself. Without a tracker, `should_compress` and `status`
/// answer [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported): write them.
///
/// Errors never take the host down: it reports them and keeps the conversation it had.
pub trait ContextEngine: Send {
    /// Short identifier, as used in `context.engine`.
    fn name(&self) -> &str;

    /// The engine's token bookkeeping, if it keeps one; the defaults above keep it. Not an
    /// operation: the host never asks for it, the engine's own defaults do.
    fn tracker(&mut self) -> Option<&mut TokenTracker> {
        None
    }

    /// Called after every model call with the usage the provider reported. By default the
    /// tracker records it.
    fn update_from_response(&mut self, usage: &Usage) -> Result<(), EngineError> {
        if let Some(tracker) = self.tracker() {
            tracker.record_usage(usage);
        }
        Ok(())
    }

    /// Whether to compress now, given the prompt tokens of the last call. By default, whether
    /// they reach the tracker's threshold.
    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        match self.tracker() {
            Some(tracker) => Ok(tracker.over_threshold(prompt_tokens)),
            None => Err(EngineError::unsupported("should_compress")),
        }
    }

    /// A cheap check before a call, from local estimates. Defaults to "no".
    fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        let _ = messages;
        Ok(false)
    }

    /// Returns the list the model should see instead of `messages`. Called when
    /// [`should_compress`](Self::should_compress) said yes, or when the user asks
    /// (`options.force`).
    ///
    /// The output contract, the same for every engine: the list is a valid chat sequence
    /// ([`sequence::validate`](crate::sequence::validate): system prompt first, every tool call
    /// answered right after it, no result without its call); it is non-empty when the input was;
    /// it keeps the system prompt and the newest user message; it uses only known roles; no
    /// unknown field shadows a core one; and it is no larger than the input. A list that breaks
    /// it is an engine failure: the host keeps the conversation it had.
    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError>;

    /// Whether anything in `messages` could be compacted (lets `/compress` say "nothing to do").
    fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        let _ = messages;
        Ok(true)
    }

    /// Called when a session begins, before its first turn: load or create its state. By
    /// default the tracker takes the session's window, when the host knows it.
    fn on_session_start(&mut self, session: &SessionStart) -> Result<(), EngineError> {
        if let Some(tracker) = self.tracker() {
            tracker.start_session(session);
        }
        Ok(())
    }

    /// Called at a real session boundary (not per turn): flush state, close stores.
    fn on_session_end(
        &mut self,
        session_id: &str,
        messages: &[Message],
    ) -> Result<(), EngineError> {
        let _ = (session_id, messages);
        Ok(())
    }

    /// Called on `/new` or `/reset`: forget per-session state. By default the tracker forgets
    /// its counts.
    fn on_session_reset(&mut self) -> Result<(), EngineError> {
        if let Some(tracker) = self.tracker() {
            tracker.reset();
        }
        Ok(())
    }

    /// JSON schemas (OpenAI function format) of the tools this engine gives the agent.
    fn tool_schemas(&mut self) -> Result<Vec<Value>, EngineError> {
        Ok(Vec::new())
    }

    /// Runs one of this engine's tools; the answer is a JSON string for the agent.
    fn handle_tool_call(&mut self, name: &str, args: &Value) -> Result<String, EngineError> {
        let _ = args;
        Err(EngineError::unknown_tool(name))
    }

    /// Where the engine stands now (tokens, threshold, compressions), for display and logging.
    /// By default the tracker's figures, with [`status_details`](Self::status_details).
    fn status(&mut self) -> Result<EngineStatus, EngineError> {
        let details = self.status_details()?;
        match self.tracker() {
            Some(tracker) => Ok(EngineStatus {
                details,
                ..tracker.status()
            }),
            None => Err(EngineError::unsupported("status")),
        }
    }

    /// What the default [`status`](Self::status) reports beside the tracker's figures (store
    /// sizes, settings, ...); nothing by default. Not an operation: `status` carries it.
    fn status_details(&mut self) -> Result<Value, EngineError> {
        Ok(Value::Null)
    }

    /// The user switched models: recompute budgets from the new window. By default the tracker
    /// takes it.
    fn update_model(&mut self, model: &str, context_length: u64) -> Result<(), EngineError> {
        let _ = model;
        if let Some(tracker) = self.tracker() {
            tracker.set_context_length(context_length);
        }
        Ok(())
    }

    /// What the last [`compress`](Self::compress) did, for reports (`ctxhost run`). `None`
    /// before the first compression, and by default.
    fn last_compression(&mut self) -> Result<Option<CompressionReport>, EngineError> {
        Ok(None)
    }

    /// The sessions this engine keeps state for (`ctxhost sessions list`). Engines without
    /// state between runs keep the default, which says so ([`ErrorKind::Unsupported`]).
    ///
    /// [`ErrorKind::Unsupported`]: crate::ErrorKind::Unsupported
    fn sessions(&mut self) -> Result<Vec<SessionInfo>, EngineError> {
        Err(EngineError::unsupported("sessions"))
    }

    /// One session's state (`ctxhost sessions show ID`); `None` when the engine holds nothing
    /// for that id.
    fn session(&mut self, session_id: &str) -> Result<Option<SessionInfo>, EngineError> {
        let _ = session_id;
        Err(EngineError::unsupported("session"))
    }

    /// Forgets everything held for one session (`ctxhost sessions delete ID`); `false` when
    /// there was nothing to delete.
    fn delete_session(&mut self, session_id: &str) -> Result<bool, EngineError> {
        let _ = session_id;
        Err(EngineError::unsupported("delete_session"))
    }

    /// Per request, before the host sends `messages` (the view and what followed it) to the
    /// model: the same messages with what the engine holds elsewhere and the newest message
    /// needs brought back, within `request.budget_tokens`, each recalled message opening with
    /// [`Recalled::marker_line`](crate::Recalled::marker_line). Optional: by default it is
    /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) and the host sends `messages`
    /// as they are. Answer the same selection while nothing relevant changed, so the
    /// provider's prompt cache holds.
    fn select_context(
        &mut self,
        messages: &[Message],
        request: &SelectRequest,
    ) -> Result<ContextSelection, EngineError> {
        let _ = (messages, request);
        Err(EngineError::unsupported("select_context"))
    }

    /// Engine-specific operations (`status`, `doctor`, `backup`, ...) that the host reaches
    /// generically, e.g. from `ctxhost engine <op>`.
    fn invoke(&mut self, op: &str, payload: &Value) -> Result<Value, EngineError> {
        let _ = payload;
        Err(EngineError::unsupported(op))
    }

    /// The host's word that `messages`, found in the context it will send next, are this
    /// engine's own output from an earlier life of the session (another process, a restart,
    /// another gateway): a summary it wrote is to be folded into the next one like one it
    /// remembers, not read as a turn. The host says so only of messages it knows its client
    /// never sent, so a turn dressed as a summary is never among them. Optional: an engine
    /// that knows its output by other means (its own store) ignores it, as the default does.
    fn recognize_written(&mut self, messages: &[Message]) -> Result<(), EngineError> {
        let _ = messages;
        Ok(())
    }
}

/// The token bookkeeping every engine needs, with Hermes' default behaviour: keep one in an
/// engine and hand it out through [`ContextEngine::tracker`]; the trait's defaults keep it.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenTracker {
    /// Prompt tokens of the last model call.
    pub last_prompt_tokens: u64,
    /// Completion tokens of the last model call.
    pub last_completion_tokens: u64,
    /// Total tokens of the last model call.
    pub last_total_tokens: u64,
    /// The model's context window, in tokens.
    pub context_length: u64,
    /// Fraction of the window at which compression fires: 0.75 fires at three quarters (a
    /// fraction despite its name, which is Hermes').
    pub threshold_percent: f64,
    /// Compressions done since the last reset; the engine increments it.
    pub compression_count: u64,
}

impl TokenTracker {
    /// A tracker for a `context_length`-token window that fires at `threshold_percent` of it
    /// (a fraction: 0.75 is three quarters).
    pub fn new(context_length: u64, threshold_percent: f64) -> Self {
        TokenTracker {
            last_prompt_tokens: 0,
            last_completion_tokens: 0,
            last_total_tokens: 0,
            context_length,
            threshold_percent,
            compression_count: 0,
        }
    }

    /// The prompt size, in tokens, at which compression fires.
    pub fn threshold_tokens(&self) -> u64 {
        (self.context_length as f64 * self.threshold_percent) as u64
    }

    /// Keeps the last call's counts ([`ContextEngine::update_from_response`]'s default).
    pub fn record_usage(&mut self, usage: &Usage) {
        self.last_prompt_tokens = usage.prompt_tokens;
        self.last_completion_tokens = usage.completion_tokens;
        self.last_total_tokens = usage.total_tokens;
    }

    /// True when `prompt_tokens` reach the threshold; never with an unknown (zero) window.
    pub fn over_threshold(&self, prompt_tokens: u64) -> bool {
        self.context_length > 0 && prompt_tokens >= self.threshold_tokens()
    }

    /// The model changed ([`ContextEngine::update_model`]'s default).
    pub fn set_context_length(&mut self, context_length: u64) {
        self.context_length = context_length;
    }

    /// A session began: its window, when the host knows it
    /// ([`ContextEngine::on_session_start`]'s default).
    pub fn start_session(&mut self, session: &SessionStart) {
        if let Some(context_length) = session.context_length {
            self.set_context_length(context_length);
        }
    }

    /// Forgets the last call and the compression count, keeping the window and threshold
    /// ([`ContextEngine::on_session_reset`]'s default).
    pub fn reset(&mut self) {
        self.last_prompt_tokens = 0;
        self.last_completion_tokens = 0;
        self.last_total_tokens = 0;
        self.compression_count = 0;
    }

    /// The [`EngineStatus`] these counts give, with no engine-specific details.
    pub fn status(&self) -> EngineStatus {
        let usage_percent = if self.context_length == 0 {
            0.0
        } else {
            (self.last_prompt_tokens as f64 / self.context_length as f64 * 100.0).min(100.0)
        };
        EngineStatus {
            last_prompt_tokens: self.last_prompt_tokens,
            threshold_tokens: self.threshold_tokens(),
            context_length: self.context_length,
            usage_percent,
            compression_count: self.compression_count,
            details: Value::Null,
        }
    }
}
