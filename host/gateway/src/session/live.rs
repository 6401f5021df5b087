//! A session in memory: the host's [`Session`] (the engine instance) with the record the
//! gateway keeps about it, opened from the store (or new) on its first request. What holds it
//! and decides for it is in [`super::session`].

use std::sync::Arc;

use ctxhost_sdk::{Message, Usage};

use tokio::sync::oneshot;

use crate::conversation::Continuity;
use crate::record::{SessionKey, SessionRecord};
use crate::Gateway;
use ctxhost_core::session::DetachedCompression;
use ctxhost_core::session::{Session, SessionError, SessionOptions};
use ctxhost_core::tool_set::ToolSet;
use ctxhost_gateway_wire::error::{ErrorKind, GatewayError};
use ctxhost_metrics::Metric;

/// A session in memory.
pub struct Live {
    pub session: Session,
    pub record: SessionRecord,
    /// The engine's tools (OpenAI function schemas), fetched once, shared between sessions.
    pub tools: Arc<ToolSet>,
    /// A compression being prepared in the background.
    pub(crate) pending: Option<Pending>,
    /// Usage reported while the engine was busy preparing a compression, for it afterwards.
    pub(crate) queued_usage: Vec<Usage>,
    /// What its calls cost, and would have with no engine.
    pub(crate) costs: ctxhost_costs::session::SessionCosts,
    /// Its model's price, resolved once (again when the model changes).
    pub(crate) price: ctxhost_costs::price::SessionPrice,
}

/// What preparing a turn gave: the messages to send upstream and what happened on the way.
pub struct Prepared {
    pub upstream: Vec<Message>,
    pub continuity: Continuity,
    pub compressed: bool,
    /// An engine failure met while preparing (the request goes on without it).
    pub engine_error: Option<String>,
    /// The tokens of `upstream` when they are over the window even after compressing.
    pub over_window: Option<u64>,
}

impl Gateway {
    pub(super) async fn open(
        self: &Arc<Self>,
        key: &SessionKey,
        model: &str,
        window: u64,
    ) -> Result<Live, GatewayError> {
        let stored = self
            .store
            .load(key)
            .await
            .map_err(|e| GatewayError::new(ErrorKind::Internal, e.to_string()))?;
        // A stored session resumes with the model and window it had.
        let (model, window) = stored
            .as_ref()
            .map(|r| (r.model.clone(), r.context_length))
            .unwrap_or((model.to_string(), window));
        let options = SessionOptions::new(key.engine_session()).model(model, window);
        let gateway = self.clone();
        // Starting the engine blocks (it may load a plugin).
        let session = tokio::task::spawn_blocking(move || {
            gateway.engines.open_session(&gateway.engine, options)
        })
        .await
        .map_err(|e| GatewayError::new(ErrorKind::Internal, e.to_string()))?;
        let mut session = session.map_err(|error| {
            GatewayError::new(
                ErrorKind::Internal,
                format!("cannot start engine '{}': {error}", self.engine),
            )
        })?;
        for warning in session.warnings() {
            tracing::warn!(session = %key.name, "{}", warning.summary);
        }
        if let Err(error) = session.begin().await {
            self.engine_failed(&error);
        }
        let tools = session.tool_set().await.unwrap_or_else(|error| {
            self.engine_failed(&error);
            ToolSet::none()
        });
        let record = match stored {
            Some(record) => record,
            None => SessionRecord::new(
                key.clone(),
                session.engine().to_string(),
                session.model().to_string(),
                session.context_length(),
            ),
        };
        let mut record = record;
        // Summaries the engine wrote before a restart (or on another gateway) are its own to
        // fold again: the output contract's newest-user-message rule is not about them.
        session.recognize_written(record.conversation.unsent());
        if self.coordination.is_none() {
            // A compression being prepared when the gateway stopped is gone with it (with a
            // shared database, another gateway may be preparing it: `prepare` finds out).
            record.pending = None;
        }
        Ok(Live {
            session,
            record,
            tools,
            pending: None,
            queued_usage: Vec::new(),
            costs: Default::default(),
            price: Default::default(),
        })
    }

    /// Counts and logs an engine operation that failed; the request goes on.
    pub fn engine_failed(&self, error: &SessionError) {
        tracing::warn!(engine = error.engine(), "{error}");
        self.metrics
            .add(Metric::EngineFailures, &[("engine", error.engine())], 1);
    }
}

/// A compression being prepared for a session.
pub(crate) struct Pending {
    /// Names it in the session's record and in the database.
    pub(crate) id: u64,
    /// How many lineage messages its input stood for.
    pub(crate) base: usize,
    /// The view it started from: a newer one (a new lineage) makes its result stale.
    pub(crate) view_version: u64,
    pub(crate) tokens_before: u64,
    pub(crate) messages_before: usize,
    pub(crate) started_at_ms: u64,
    pub(crate) task: Task,
}

pub(crate) enum Task {
    /// Its result, handed over by the task that prepares it once it is done.
    Running(oneshot::Receiver<DetachedCompression>),
    Done(Box<DetachedCompression>),
}
