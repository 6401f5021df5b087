//! Compressions prepared in the background, so no turn waits for a summarizer: a request that
//! brings its session near the threshold (the engine would compress with
//! `serve.compression.margin` of the window more), or past it, starts a compression of what it
//! sends, and goes upstream without waiting for it. A later request takes the result in (the
//! new view, then the messages that came since) once it is ready; only a request whose last
//! view plus what is new would not fit the window waits for it (at most
//! `serve.compression.wait_seconds`, then until it is done). While one is being prepared the
//! engine is busy, so nothing else asks it: usage is queued for it and tools wait.
//!
//! With several gateways on one database, the one preparing a compression holds the session's
//! compression lease (the store's `LeaseKind::Compaction`) and, once done, keeps the result in the database; whichever gateway serves
//! the next request takes it in from there (or waits for it as above). One that finds the lease
//! lapsed with no result knows its preparer died, and goes on as if none had been started.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_sdk::{CompressOptions, Message};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use ctxhost_sdk::CompressionReport;

use super::record::PendingInfo;
use super::record::{unix_now, unix_now_ms, CompressionOutcome, CompressionRecord, Trigger};
use super::session::live::{Live, Pending, Task};
use super::store::{random_u64, Claim, LeaseKind, PreparedState};
use super::turn::plan::Standing;
use super::turn::Turn;
use ctxhost_core::session::DetachedCompression;
use ctxhost_metrics::Metric;

/// A compression prepared in the background as the gateway that takes it in sees it (kept in
/// the database, as JSON, for the other gateways).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreparedView {
    pub id: u64,
    pub base: usize,
    pub view_version: u64,
    pub tokens_before: u64,
    pub messages_before: usize,
    pub engine: String,
    /// The new view (empty when it failed).
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<CompressionReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    pub started_at_ms: u64,
    pub finished_at_ms: u64,
}

impl Live {
    /// Waits for the compression being prepared, at most `bound` (`None`: until it is done);
    /// true when there is none left running.
    pub(super) async fn settle_pending(&mut self, bound: Option<Duration>) -> bool {
        let Some(pending) = self.pending.as_mut() else {
            return true;
        };
        let Task::Running(result) = &mut pending.task else {
            return true;
        };
        let received = match bound {
            Some(bound) => match tokio::time::timeout(bound, &mut *result).await {
                Ok(received) => received,
                Err(_) => return false,
            },
            None => result.await,
        };
        self.settled(received.ok());
        true
    }

    /// Takes the compression being prepared as done if it is, without waiting.
    pub(super) fn settle_finished(&mut self) {
        let Some(pending) = self.pending.as_mut() else {
            return;
        };
        let Task::Running(result) = &mut pending.task else {
            return;
        };
        match result.try_recv() {
            Err(oneshot::error::TryRecvError::Empty) => {}
            received => self.settled(received.ok()),
        }
    }

    /// The compression being prepared is done with `detached`; `None`: its task died (the
    /// runtime is going away), so there is nothing to take in.
    fn settled(&mut self, detached: Option<DetachedCompression>) {
        match (detached, self.pending.as_mut()) {
            (Some(detached), Some(pending)) => pending.task = Task::Done(Box::new(detached)),
            _ => {
                self.pending = None;
                self.record.pending = None;
            }
        }
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
}

impl Turn {
    /// Starts compressing `upstream` (what this request sends, standing for the whole lineage
    /// so far) in the background, the session being at `standing`; with a shared database,
    /// only if this gateway gets the session's compression lease. False when none was started.
    pub(super) async fn start_pending(
        &mut self,
        upstream: Arc<Vec<Message>>,
        standing: Standing,
    ) -> bool {
        let key = self.guard.record.key.clone();
        let lease = match &self.gateway.coordination {
            Some(coordination) => match coordination.claim(&key, LeaseKind::Compaction).await {
                Ok(Claim::Granted { lease, .. }) => Some((coordination.clone(), lease)),
                Ok(Claim::Held { holder }) => {
                    tracing::info!(session = %key.name, holder, "another gateway is compressing this session");
                    return false;
                }
                Err(error) => {
                    tracing::warn!(session = %key.name, "cannot start a compression in the background: {error}");
                    return false;
                }
            },
            None => None,
        };
        let tokens_before = self.guard.session.count(&upstream);
        let messages_before = upstream.len();
        let future = self.guard.session.compress_detached(
            upstream,
            // Ahead of the engine's own threshold by design: asked for, not to be declined.
            CompressOptions {
                current_tokens: Some(tokens_before),
                force: true,
                ..CompressOptions::default()
            },
        );
        let id = random_u64() >> 1;
        let base = self.guard.record.conversation.lineage_len();
        let view_version = self.guard.record.conversation.view_version();
        let started_at_ms = unix_now_ms();
        let replica = lease.as_ref().map(|_| self.gateway.replica.clone());
        self.guard.record.pending = Some(PendingInfo {
            id,
            replica: replica.clone(),
            request: self.guard.record.stats.requests,
            base_messages: base,
            started_at: unix_now(),
        });
        self.gateway
            .metrics
            .add(Metric::BackgroundCompressionsStarted, &[], 1);
        if standing == Standing::Crossing {
            tracing::info!(
                session = %key.name,
                tokens_before,
                "past the threshold: preparing a compression in the background"
            );
        } else {
            tracing::info!(
                session = %key.name,
                tokens_before,
                "near the threshold: preparing a compression in the background"
            );
        }
        let (ready, result) = oneshot::channel();
        self.guard.pending = Some(Pending {
            id,
            base,
            view_version,
            tokens_before,
            messages_before,
            started_at_ms,
            task: Task::Running(result),
        });
        tokio::spawn(async move {
            let detached = future.await;
            if let Some((coordination, lease)) = lease {
                // Kept for whichever gateway serves the session next.
                let prepared = PreparedView::of(
                    &detached,
                    id,
                    base,
                    view_version,
                    (tokens_before, messages_before),
                    replica,
                    started_at_ms,
                );
                let json = serde_json::to_string(&prepared).unwrap_or_default();
                if let Err(error) = coordination.put_prepared(&key, id, &json, &lease).await {
                    tracing::warn!(session = %key.name, "cannot keep the prepared compression for the other gateways: {error}");
                    coordination.forget(lease);
                }
            }
            // Handed over before it is said to be ready: a request that comes once the line
            // is out takes it in (the session may be gone meanwhile: nothing to hand it to).
            let _ = ready.send(detached);
            tracing::info!(session = %key.name, "a compression prepared in the background is ready");
        });
        true
    }

    /// Takes in a compression prepared in the background once it is done: the view it made
    /// replaces the session's (unless a new lineage started meanwhile), and `history` goes
    /// upstream as that view plus what came after its base. Returns the new upstream, or
    /// `None` when there is nothing to take in or it failed (the line says why).
    pub(super) fn take_pending(
        &mut self,
        history: &[Message],
        engine_error: &mut Option<String>,
    ) -> Option<Vec<Message>> {
        let pending = self
            .guard
            .pending
            .take_if(|p| matches!(p.task, Task::Done(_)))?;
        let Task::Done(detached) = pending.task else {
            return None;
        };
        let prepared = PreparedView::of(
            &detached,
            pending.id,
            pending.base,
            pending.view_version,
            (pending.tokens_before, pending.messages_before),
            self.guard
                .record
                .pending
                .as_ref()
                .and_then(|p| p.replica.clone()),
            pending.started_at_ms,
        );
        let compression = self.guard.session.absorb(*detached);
        if let Some(error) = &compression.error {
            *engine_error = Some(self.failed(error));
        }
        self.discard_prepared(pending.id);
        self.apply_prepared(prepared, history)
    }

    /// Takes in a compression another gateway prepared (or one this gateway started before it
    /// restarted), waiting for it as for one of its own: only when the request `waits` (its
    /// last view would not fit), at most the bound, then until it is ready or its preparer is
    /// gone. `None` when there is none, it is not ready, or it failed; the record stops naming
    /// it once it is taken in or its preparer is gone.
    pub(super) async fn take_shared_pending(
        &mut self,
        history: &[Message],
        waits: bool,
        engine_error: &mut Option<String>,
    ) -> Option<Vec<Message>> {
        let coordination = self.gateway.coordination.clone()?;
        let id = self.guard.record.pending.as_ref()?.id;
        let key = self.guard.record.key.clone();
        let wait_seconds = self.gateway.settings.compression.wait_seconds;
        let mut bound = Some(Instant::now() + Duration::from_secs_f64(wait_seconds));
        let mut waited = false;
        let mut pause = Duration::from_millis(10);
        let json = loop {
            match coordination.prepared(&key, id).await {
                Ok(PreparedState::Ready(json)) => break json,
                Ok(PreparedState::Gone) => {
                    tracing::info!(session = %key.name, "the gateway preparing a compression is gone: going on without it");
                    self.guard.record.pending = None;
                    return None;
                }
                Ok(PreparedState::Running) if !waits => return None,
                Ok(PreparedState::Running) => {
                    if !waited {
                        waited = true;
                        self.guard.record.stats.turns_waited += 1;
                    }
                    if bound.is_some_and(|bound| Instant::now() >= bound) {
                        bound = None;
                        tracing::info!(
                            session = %key.name,
                            wait_seconds,
                            "the request does not fit the window without the compression being prepared: waiting on for it"
                        );
                    }
                }
                Err(error) => {
                    tracing::warn!(session = %key.name, "cannot look up the compression being prepared: {error}");
                    return None;
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        };
        let prepared: PreparedView = match serde_json::from_str(&json) {
            Ok(prepared) => prepared,
            Err(error) => {
                tracing::warn!(session = %key.name, "a prepared compression does not read back: {error}");
                self.guard.record.pending = None;
                return None;
            }
        };
        if let Some(error) = &prepared.error {
            self.guard.record.stats.engine_failures += 1;
            *engine_error = Some(error.clone());
        }
        self.discard_prepared(id);
        self.apply_prepared(prepared, history)
    }

    /// Whether the record names a compression prepared where this gateway cannot wait on it
    /// directly (another gateway, or before a restart).
    pub(super) fn shared_pending(&self) -> bool {
        self.guard.pending.is_none()
            && self.guard.record.pending.is_some()
            && self.gateway.coordination.is_some()
    }

    /// Forgets a prepared compression in the shared database once taken in.
    fn discard_prepared(&self, id: u64) {
        if let Some(coordination) = self.gateway.coordination.clone() {
            let key = self.guard.record.key.clone();
            tokio::spawn(async move {
                if let Err(error) = coordination.discard_prepared(&key, id).await {
                    tracing::debug!(session = %key.name, "cannot discard a prepared compression: {error}");
                }
            });
        }
    }

    /// Applies a prepared compression to the session: see [`Live::take_pending`].
    fn apply_prepared(
        &mut self,
        prepared: PreparedView,
        history: &[Message],
    ) -> Option<Vec<Message>> {
        self.guard.record.pending = None;
        let stale = prepared.view_version != self.guard.record.conversation.view_version()
            || prepared.base > self.guard.record.conversation.lineage_len();
        let tokens_after = if prepared.error.is_some() {
            prepared.tokens_before
        } else {
            self.guard.session.count(&prepared.messages)
        };
        let outcome = match (&prepared.error, stale) {
            (Some(_), _) => CompressionOutcome::Failed,
            (None, true) => CompressionOutcome::Stale,
            // The engine found nothing to compress yet.
            (None, false) if tokens_after >= prepared.tokens_before => {
                CompressionOutcome::Unchanged
            }
            (None, false) => CompressionOutcome::Ok,
        };
        self.gateway.metrics.add(
            Metric::Compressions,
            &[("engine", &prepared.engine), ("outcome", outcome.as_str())],
            1,
        );
        if outcome == CompressionOutcome::Unchanged {
            // As on a request: not a compression.
            let min_saved = self.gateway.settings.cache.min_tokens_saved;
            self.guard
                .record
                .defer_unchanged(prepared.tokens_before, min_saved);
            tracing::info!(
                session = %self.guard.record.key.name,
                engine = %prepared.engine,
                tokens_before = prepared.tokens_before,
                "the compression prepared in the background changed nothing: not applied, not \
                 asked again until the history grows"
            );
            return None;
        }
        tracing::info!(
            session = %self.guard.record.key.name,
            engine = %prepared.engine,
            tokens_before = prepared.tokens_before,
            tokens_after,
            %outcome,
            "compression prepared in the background taken in"
        );
        let request = self.guard.record.stats.requests;
        self.guard.record.compressions.push(CompressionRecord {
            request,
            trigger: Trigger::Background,
            engine: prepared.engine.clone(),
            tokens_before: prepared.tokens_before,
            tokens_after,
            messages_before: prepared.messages_before,
            messages_after: if prepared.error.is_some() {
                prepared.messages_before
            } else {
                prepared.messages.len()
            },
            elapsed_ms: prepared
                .finished_at_ms
                .saturating_sub(prepared.started_at_ms) as f64,
            error: prepared.error.clone(),
            report: prepared.report.clone(),
            deferred: false,
            replica: prepared.replica.clone(),
            started_at_ms: prepared.started_at_ms,
            finished_at_ms: prepared.finished_at_ms,
        });
        if outcome != CompressionOutcome::Ok {
            return None;
        }
        self.guard.record.stats.background_compressions += 1;
        self.guard
            .record
            .conversation
            .compressed_at(prepared.base, prepared.messages);
        Some(self.guard.record.conversation.upstream(history))
    }
}

impl PreparedView {
    fn of(
        detached: &DetachedCompression,
        id: u64,
        base: usize,
        view_version: u64,
        (tokens_before, messages_before): (u64, usize),
        replica: Option<String>,
        started_at_ms: u64,
    ) -> Self {
        let (messages, report, error) = match detached.outcome() {
            Ok((messages, report)) => (messages.to_vec(), report.cloned(), None),
            Err(error) => (Vec::new(), None, Some(error.to_string())),
        };
        PreparedView {
            id,
            base,
            view_version,
            tokens_before,
            messages_before,
            engine: detached.engine().to_string(),
            messages,
            error,
            report,
            replica,
            started_at_ms,
            finished_at_ms: unix_now_ms(),
        }
    }
}
