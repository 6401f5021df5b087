//! Compressions prepared in the background, so no turn waits for a summarizer: a request that
//! brings its session near the threshold (the engine would compress with
//! `serve.compaction.margin` of the window more) starts a compression of what it sends, and
//! goes upstream without waiting for it. A later request
//! takes the result in (the new view, then the messages that came since) once it is ready,
//! waiting for it at most `serve.compaction.wait_seconds`, and past that only when the last
//! view plus what is new would not fit the window. While one is being prepared the engine is
//! busy, so nothing else asks it: usage is queued for it and tools wait.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_sdk::{CompressOptions, Message};
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use super::live::Live;
use super::record::{unix_now, CompressionRecord, Trigger};
use super::Gateway;
use crate::session::DetachedCompression;

/// A compression being prepared for a session.
pub struct Pending {
    /// How many lineage messages its input stood for.
    base: usize,
    /// The view it started from: a newer one (a new lineage) makes its result stale.
    view_version: u64,
    tokens_before: u64,
    messages_before: usize,
    started: Instant,
    task: Task,
}

enum Task {
    Running(JoinHandle<DetachedCompression>),
    Done(Box<DetachedCompression>),
}

/// What the session's status shows of a compression being prepared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingInfo {
    /// The request (1-based) that started it.
    pub request: u64,
    /// The lineage messages it stands for.
    pub base_messages: usize,
    /// Unix seconds.
    pub started_at: u64,
}

impl Live {
    /// Starts compressing `upstream` (what this request sends, standing for the whole lineage
    /// so far) in the background.
    pub(super) fn start_pending(&mut self, gateway: &Gateway, upstream: Arc<Vec<Message>>) {
        let tokens_before = self.session.count(&upstream);
        let messages_before = upstream.len();
        let future = self.session.compress_detached(
            upstream,
            // Ahead of the engine's own threshold by design: asked for, not to be declined.
            CompressOptions {
                current_tokens: Some(tokens_before),
                force: true,
                ..CompressOptions::default()
            },
        );
        let base = self.record.conversation.lineage_len();
        let name = self.record.key.name.clone();
        self.record.pending = Some(PendingInfo {
            request: self.record.stats.requests,
            base_messages: base,
            started_at: unix_now(),
        });
        gateway
            .metrics
            .add("ctxhost_background_compressions_started_total", &[], 1);
        tracing::info!(
            session = %self.record.key.name,
            tokens_before,
            "near the threshold: preparing a compression in the background"
        );
        self.pending = Some(Pending {
            base,
            view_version: self.record.conversation.view_version(),
            tokens_before,
            messages_before,
            started: Instant::now(),
            task: Task::Running(tokio::spawn(async move {
                let detached = future.await;
                tracing::info!(session = %name, "a compression prepared in the background is ready");
                detached
            })),
        });
    }

    /// Waits for the compression being prepared, at most `bound` (`None`: until it is done);
    /// true when there is none left running.
    pub(super) async fn settle_pending(&mut self, bound: Option<Duration>) -> bool {
        let Some(pending) = self.pending.as_mut() else {
            return true;
        };
        let Task::Running(handle) = &mut pending.task else {
            return true;
        };
        let joined = match bound {
            Some(bound) => match tokio::time::timeout(bound, &mut *handle).await {
                Ok(joined) => joined,
                Err(_) => return false,
            },
            None => handle.await,
        };
        match joined {
            Ok(detached) => pending.task = Task::Done(Box::new(detached)),
            // The task itself died (the runtime is going away): nothing to take in.
            Err(_) => {
                self.pending = None;
                self.record.pending = None;
            }
        }
        true
    }

    /// Whether a compression is still being prepared (the engine is busy with it).
    pub(super) fn preparing(&self) -> bool {
        matches!(
            self.pending,
            Some(Pending {
                task: Task::Running(_),
                ..
            })
        )
    }

    /// Takes in a compression prepared in the background once it is done: the view it made
    /// replaces the session's (unless a new lineage started meanwhile), and `history` goes
    /// upstream as that view plus what came after its base. Returns the new upstream, or
    /// `None` when there is nothing to take in or it failed (the line says why).
    pub(super) fn take_pending(
        &mut self,
        gateway: &Gateway,
        history: &[Message],
        engine_error: &mut Option<String>,
    ) -> Option<Vec<Message>> {
        let pending = self.pending.take_if(|p| matches!(p.task, Task::Done(_)))?;
        self.record.pending = None;
        let Task::Done(detached) = pending.task else {
            return None;
        };
        let compression = self.session.absorb(*detached);
        let stale = pending.view_version != self.record.conversation.view_version();
        let tokens_after = self.session.count(&compression.messages);
        let outcome = match (&compression.error, stale) {
            (Some(error), _) => {
                *engine_error = Some(self.failed(gateway, error));
                "failed"
            }
            (None, true) => "stale",
            // The engine found nothing to compress yet.
            (None, false) if tokens_after >= pending.tokens_before => "unchanged",
            (None, false) => "ok",
        };
        gateway.metrics.add(
            "ctxhost_compressions_total",
            &[("engine", &compression.engine), ("outcome", outcome)],
            1,
        );
        tracing::info!(
            session = %self.record.key.name,
            engine = %compression.engine,
            tokens_before = pending.tokens_before,
            tokens_after,
            outcome,
            "compression prepared in the background taken in"
        );
        if outcome == "unchanged" {
            return None;
        }
        self.record.compressions.push(CompressionRecord {
            request: self.record.stats.requests,
            trigger: Trigger::Background,
            engine: compression.engine.clone(),
            tokens_before: pending.tokens_before,
            tokens_after,
            messages_before: pending.messages_before,
            messages_after: compression.messages.len(),
            elapsed_ms: pending.started.elapsed().as_secs_f64() * 1000.0,
            error: compression.error.as_ref().map(ToString::to_string),
            report: compression.report.clone(),
            deferred: false,
        });
        if outcome != "ok" {
            return None;
        }
        self.record.stats.background_compressions += 1;
        self.record
            .conversation
            .compressed_at(pending.base, compression.messages.to_vec());
        Some(self.record.conversation.upstream(history))
    }
}
