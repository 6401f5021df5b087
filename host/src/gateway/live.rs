//! Sessions held in memory: each is the host's [`Session`] (the engine instance) with the
//! record the gateway keeps about it. A request locks its session for its whole exchange, so
//! one session's turns never interleave while different sessions run in parallel.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_sdk::{CompressOptions, Message, Usage};
use serde_json::Value;
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::store::{Claim, Coordination, LeaseKind, StoreError};

use super::conversation::Continuity;
use super::error::{ErrorKind, GatewayError};
use super::metrics::Metric;
use super::record::{
    unix_now, unix_now_ms, CompressionOutcome, CompressionRecord, SessionKey, SessionRecord,
    Trigger,
};
use super::Gateway;
use crate::session::{Session, SessionError, SessionOptions};

/// A session in memory.
pub struct Live {
    pub session: Session,
    pub record: SessionRecord,
    /// The engine's tool schemas (OpenAI function format), fetched once.
    pub tool_schemas: Vec<Value>,
    pub tool_names: HashSet<String>,
    /// A compression being prepared in the background.
    pub(super) pending: Option<super::background::Pending>,
    /// Usage reported while the engine was busy preparing a compression, for it afterwards.
    queued_usage: Vec<Usage>,
}

/// The slot of one session: empty until its first request opens it.
pub type Slot = Arc<Mutex<Option<Live>>>;

/// A session held for one request: in this gateway by its slot's lock, and among gateways on
/// one database by its turn lease, let go (after the slot) when this is dropped.
pub struct SessionGuard {
    guard: OwnedMutexGuard<Option<Live>>,
    lease: Option<(Arc<Coordination>, super::store::Lease)>,
}

impl std::ops::Deref for SessionGuard {
    type Target = Option<Live>;
    fn deref(&self) -> &Option<Live> {
        &self.guard
    }
}

impl std::ops::DerefMut for SessionGuard {
    fn deref_mut(&mut self) -> &mut Option<Live> {
        &mut self.guard
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        let Some((coordination, lease)) = self.lease.take() else {
            return;
        };
        let Some(key) = self.guard.as_ref().map(|live| live.record.key.clone()) else {
            // Never opened: the lease was claimed under the key the request named.
            return coordination.forget(lease);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(error) = coordination.release(&key, &lease).await {
                        // It lapses on its own once the heartbeat stops renewing it.
                        tracing::warn!(session = %key.name, "cannot let go of the session's lease: {error}");
                    }
                });
            }
            Err(_) => coordination.forget(lease),
        }
    }
}

/// One session held in memory.
struct Entry {
    slot: Slot,
    /// When it was last asked for (the eviction clock).
    used: u64,
    /// Its record as of its last finished exchange: what the sessions endpoints show while the
    /// save of that exchange may still be under way.
    published: Option<Arc<SessionRecord>>,
}

/// Sessions by key, with when each was last asked for.
#[derive(Default)]
pub struct LiveSessions {
    entries: std::sync::Mutex<HashMap<SessionKey, Entry>>,
    clock: std::sync::atomic::AtomicU64,
}

impl LiveSessions {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The slot of `key` (created empty when new). Over `cap` sessions, the least recently used
    /// ones that no request holds leave memory (their state is in the store; they reopen on
    /// their next request); they are returned to be dropped off the async runtime.
    fn slot(&self, key: &SessionKey, cap: usize) -> (Slot, Vec<Slot>) {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.entries();
        if let Some(entry) = entries.get_mut(key) {
            entry.used = now;
            return (entry.slot.clone(), Vec::new());
        }
        let slot: Slot = Arc::default();
        entries.insert(
            key.clone(),
            Entry {
                slot: slot.clone(),
                used: now,
                published: None,
            },
        );
        let mut evicted = Vec::new();
        if entries.len() > cap {
            // A slot nobody else holds has no request in flight and no save pending.
            let mut idle: Vec<(u64, SessionKey)> = entries
                .iter()
                .filter(|(_, entry)| Arc::strong_count(&entry.slot) == 1)
                .map(|(key, entry)| (entry.used, key.clone()))
                .collect();
            idle.sort();
            let excess = entries.len() - cap;
            for (_, key) in idle.into_iter().take(excess) {
                if let Some(entry) = entries.remove(&key) {
                    evicted.push(entry.slot);
                }
            }
        }
        (slot, evicted)
    }

    /// Records `record` as its session's latest state.
    fn publish(&self, record: Arc<SessionRecord>) {
        if let Some(entry) = self.entries().get_mut(&record.key) {
            entry.published = Some(record);
        }
    }

    /// The latest state of `key` if it is in memory.
    pub fn published(&self, key: &SessionKey) -> Option<Arc<SessionRecord>> {
        self.entries().get(key).and_then(|e| e.published.clone())
    }

    /// The latest states of the sessions of `credential` in memory.
    pub fn published_of(&self, credential: &str) -> Vec<Arc<SessionRecord>> {
        self.entries()
            .iter()
            .filter(|(key, _)| key.credential == credential)
            .filter_map(|(_, e)| e.published.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What preparing a turn gave: the messages to send upstream and what happened on the way.
pub struct Prepared {
    pub upstream: Vec<Message>,
    pub continuity: Continuity,
    pub compressed: bool,
    /// An engine failure met while preparing (the request goes on without it).
    pub engine_error: Option<String>,
}

impl Gateway {
    /// The session `key`, locked for this request (and, with a shared database, leased from
    /// the other gateways); opened (from the store, or new) on first use, and read again when
    /// another gateway saved it since.
    pub async fn session(
        self: &Arc<Self>,
        key: &SessionKey,
        model: &str,
        window: u64,
    ) -> Result<SessionGuard, GatewayError> {
        let cap = self.settings.limits.max_live_sessions.max(1);
        let (slot, evicted) = self.live.slot(key, cap);
        if !evicted.is_empty() {
            // Engines may take a while to close (a plugin flushing its store).
            tokio::task::spawn_blocking(move || drop(evicted));
        }
        self.metrics
            .live_sessions
            .store(self.live.len() as u64, Ordering::Relaxed);
        let guard = slot.lock_owned().await;
        let (lease, stored_revision) = match &self.coordination {
            Some(coordination) => {
                let (lease, revision) = self.claim_turn(coordination, key).await?;
                (Some((coordination.clone(), lease)), revision)
            }
            None => (None, None),
        };
        let mut guard = SessionGuard { guard, lease };
        if guard.is_none() {
            *guard = Some(self.open(key, model, window).await?);
        } else if let Some(live) = guard.as_mut() {
            // Saved by another gateway since this one last read or wrote it.
            if stored_revision.is_some_and(|stored| stored != live.record.revision) {
                self.reload(live).await?;
            }
        }
        Ok(guard)
    }

    /// Waits for the session's turn lease, up to `serve.database.lease_wait_seconds`.
    async fn claim_turn(
        &self,
        coordination: &Coordination,
        key: &SessionKey,
    ) -> Result<(super::store::Lease, Option<u64>), GatewayError> {
        let wait = Duration::from_secs_f64(self.settings.database.lease_wait_seconds);
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(5);
        loop {
            match coordination.claim(key, LeaseKind::Turn).await {
                Ok(Claim::Granted {
                    lease,
                    stored_revision,
                }) => return Ok((lease, stored_revision)),
                Ok(Claim::Held { holder }) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(GatewayError::new(
                            ErrorKind::SessionBusy,
                            format!(
                                "session {} is held by gateway {holder} for longer than \
                                 serve.database.lease_wait_seconds ({}s): try again",
                                key.name,
                                wait.as_secs_f64()
                            ),
                        ));
                    }
                    tokio::time::sleep(pause.min(left)).await;
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                Err(error) => return Err(store_unavailable(&error)),
            }
        }
    }

    /// Takes in the record another gateway saved since this one last read or wrote it; a
    /// compression this gateway was preparing is kept only if the record still names it.
    async fn reload(&self, live: &mut Live) -> Result<(), GatewayError> {
        let store = self.store.clone();
        let key = live.record.key.clone();
        let stored = tokio::task::spawn_blocking(move || store.load(&key))
            .await
            .map_err(|e| GatewayError::new(ErrorKind::Internal, e.to_string()))?
            .map_err(|e| store_unavailable(&e))?;
        let Some(stored) = stored else {
            return Ok(());
        };
        if stored.pending.is_none() || stored.pending != live.record.pending {
            live.pending = None;
        }
        live.record = stored;
        live.session
            .recognize_written(live.record.conversation.unsent());
        self.metrics.add(Metric::SessionReloads, &[], 1);
        Ok(())
    }

    async fn open(
        self: &Arc<Self>,
        key: &SessionKey,
        model: &str,
        window: u64,
    ) -> Result<Live, GatewayError> {
        let gateway = self.clone();
        let owned_key = key.clone();
        let (model, window) = (model.to_string(), window);
        // Loading the record and starting the engine (which may load a plugin) both block.
        let (stored, session) = tokio::task::spawn_blocking(move || {
            let stored = gateway.store.load(&owned_key)?;
            // A stored session resumes with the model and window it had.
            let (model, window) = stored
                .as_ref()
                .map(|r| (r.model.clone(), r.context_length))
                .unwrap_or((model, window));
            let options = SessionOptions::new(owned_key.engine_session()).model(model, window);
            let session = gateway.engines.open_session(&gateway.engine, options);
            Ok::<_, super::store::StoreError>((stored, session))
        })
        .await
        .map_err(|e| GatewayError::new(ErrorKind::Internal, e.to_string()))?
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
        let tool_schemas = match session.tool_schemas().await {
            Ok(schemas) => schemas,
            Err(error) => {
                self.engine_failed(&error);
                Vec::new()
            }
        };
        let tool_names = tool_schemas
            .iter()
            .filter_map(|s| s["function"]["name"].as_str().map(str::to_string))
            .collect();
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
            tool_schemas,
            tool_names,
            pending: None,
            queued_usage: Vec::new(),
        })
    }

    /// Counts and logs an engine operation that failed; the request goes on.
    pub fn engine_failed(&self, error: &SessionError) {
        tracing::warn!(engine = error.engine(), "{error}");
        self.metrics
            .add(Metric::EngineFailures, &[("engine", error.engine())], 1);
    }

    /// Saves a session's record once its answer is on its way: a failure is logged and counted,
    /// never put in place of the answer.
    pub async fn save(&self, record: &mut SessionRecord) {
        let published = self.publish(record);
        if !self.save_published(published).await {
            record.revision = 0;
        }
    }

    /// Saves the session's record after its answer has gone out, then releases the session:
    /// its next request waits for the save, so saves of one session land in order and a
    /// session leaves memory only once saved. The sessions endpoints see the record at once;
    /// shutdown waits for these saves.
    pub fn save_then_release(self: &Arc<Self>, mut guard: SessionGuard) {
        let Some(record) = guard.as_mut().map(|live| self.publish(&mut live.record)) else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let gateway = self.clone();
                let save = async move {
                    if !gateway.save_published(record).await {
                        // Read again from the store on its next request.
                        if let Some(live) = guard.as_mut() {
                            live.record.revision = 0;
                        }
                    }
                    drop(guard);
                };
                self.saves.spawn_on(save, &runtime);
            }
            // Released outside the runtime (it is going away): saved here and now.
            Err(_) => {
                if let Err(error) = self.store.save(&record) {
                    tracing::error!(session = %record.key.name, "cannot save the session: {error}");
                }
            }
        }
    }

    /// Saves a session's record (on the blocking pool); the sessions endpoints see it at once.
    pub async fn persist(&self, record: &mut SessionRecord) -> Result<(), GatewayError> {
        let published = self.publish(record);
        let written = self.write(published).await;
        if written.is_err() {
            record.revision = 0;
        }
        written
    }

    /// The record as it is about to be saved, at its next revision.
    fn publish(&self, record: &mut SessionRecord) -> Arc<SessionRecord> {
        record.revision += 1;
        let record = Arc::new(record.clone());
        self.live.publish(record.clone());
        record
    }

    /// Writes a record whose answer has gone out, logging and counting a failure; false when it
    /// was not written. A database that is away is tried again, for up to
    /// `serve.database.retry_seconds`: the client already has its answer, so the turn is not
    /// given up at the first failure.
    async fn save_published(&self, record: Arc<SessionRecord>) -> bool {
        let name = record.key.name.clone();
        let bound = Duration::from_secs_f64(self.settings.database.retry_seconds);
        let started = Instant::now();
        let mut pause = Duration::from_millis(25);
        loop {
            match self.write(record.clone()).await {
                Ok(()) => return true,
                Err(error)
                    if error.kind == ErrorKind::StoreUnavailable
                        && self.coordination.is_some()
                        && started.elapsed() + pause < bound =>
                {
                    tracing::warn!(session = %name, "cannot save the session yet, trying again: {error}");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                Err(error) => {
                    tracing::error!(session = %name, "cannot save the session: {error}");
                    self.metrics.add(Metric::StoreErrors, &[], 1);
                    return false;
                }
            }
        }
    }

    async fn write(&self, record: Arc<SessionRecord>) -> Result<(), GatewayError> {
        let store = self.store.clone();
        let written = tokio::task::spawn_blocking(move || store.save(&record))
            .await
            .map_err(|e| GatewayError::new(ErrorKind::Internal, e.to_string()))?;
        match written {
            Ok(()) => Ok(()),
            Err(error @ StoreError::Conflict { .. }) => {
                self.metrics.add(Metric::StoreConflicts, &[], 1);
                Err(GatewayError::new(ErrorKind::SessionBusy, error.to_string()))
            }
            Err(error) => Err(store_unavailable(&error)),
        }
    }
}

/// A store failure as the client sees it: the request can be retried.
fn store_unavailable(error: &StoreError) -> GatewayError {
    GatewayError::new(
        ErrorKind::StoreUnavailable,
        format!("{error}: retry the request"),
    )
}

impl Live {
    /// Counts and logs a failed engine operation against the session; returns its line.
    pub(super) fn failed(
        &mut self,
        gateway: &Gateway,
        error: &crate::session::SessionError,
    ) -> String {
        self.record.stats.engine_failures += 1;
        gateway.engine_failed(error);
        error.to_string()
    }

    /// Takes in the client's history and decides what goes upstream: the view plus what is
    /// new, compressed first when the engine says so (`should_compress` on the last call's
    /// prompt tokens, else `should_compress_preflight` on what would be sent).
    pub async fn prepare(
        &mut self,
        gateway: &Gateway,
        history: &[Message],
        model: &str,
        window: u64,
    ) -> Prepared {
        let mut engine_error = None;
        let (continuity, upstream) = self.record.conversation.advance(history);
        // Shared with the engine calls below, not copied for each.
        let mut upstream = Arc::new(upstream);
        self.record.stats.requests += 1;
        let received = self.session.count(history);
        self.record.stats.tokens_received += received;
        gateway.metrics.add(Metric::TokensReceived, &[], received);
        if continuity == Continuity::Diverged {
            self.record.stats.new_lineages += 1;
            self.record.compress_next = false;
            gateway.metrics.add(Metric::NewLineages, &[], 1);
            tracing::info!(
                session = %self.record.key.name,
                messages = history.len(),
                "the client's history does not extend the session's lineage: starting a new lineage"
            );
        }
        let mut compressed = false;
        if self.pending.is_some() {
            // A compression prepared in the background: waited for up to the bound, and past
            // it only when the last view plus what is new would not fit.
            let bound = Duration::from_secs_f64(gateway.settings.compaction.wait_seconds);
            if !self.settle_pending(Some(bound)).await && self.session.count(&upstream) > window {
                self.settle_pending(None).await;
            }
            if let Some(taken) = self.take_pending(gateway, history, &mut engine_error) {
                upstream = Arc::new(taken);
                compressed = true;
            }
        } else if self.shared_pending(gateway) {
            let fits = self.session.count(&upstream) <= window;
            if let Some(taken) = self
                .take_shared_pending(gateway, history, fits, &mut engine_error)
                .await
            {
                upstream = Arc::new(taken);
                compressed = true;
            }
            if self.record.pending.is_some() {
                // Still being prepared by another gateway: no second compression of the
                // session meanwhile.
                return self.prepared(upstream, continuity, compressed, engine_error);
            }
        }
        if self.preparing() {
            // Still being prepared: the last view goes up as it is, and the busy engine is not
            // asked anything more.
            return self.prepared(upstream, continuity, compressed, engine_error);
        }
        if model != self.record.model || window != self.record.context_length {
            self.record.model = model.to_string();
            self.record.context_length = window;
            if let Err(error) = self.session.update_model(model.to_string(), window).await {
                engine_error = Some(self.failed(gateway, &error));
            }
        }
        for usage in std::mem::take(&mut self.queued_usage) {
            if let Err(error) = self.session.record_usage(usage).await {
                engine_error = Some(self.failed(gateway, &error));
            }
        }
        let trigger = if self.record.compress_next {
            Some(Trigger::Threshold)
        } else {
            match self
                .session
                .should_compress_preflight(upstream.clone())
                .await
            {
                Ok(true) => Some(Trigger::Preflight),
                Ok(false) => None,
                Err(error) => {
                    engine_error = Some(self.failed(gateway, &error));
                    None
                }
            }
        };
        // Counted once here: the deferral, the compression and the near check below share it
        // (the upstream only changes if a compression is applied).
        let tokens = self.session.count(&upstream);
        // A compression deferred for saving too little waits until the history has grown.
        let trigger = trigger.filter(|_| {
            let deferred_until = self.record.deferred_until_tokens;
            let waits = deferred_until > 0 && tokens < deferred_until && tokens <= window;
            if waits {
                self.record.compress_next = false;
            }
            !waits
        });
        if let Some(trigger) = trigger {
            self.record.compress_next = false;
            let tokens_before = tokens;
            let messages_before = upstream.len();
            let started = Instant::now();
            let started_at_ms = unix_now_ms();
            let compression = self
                .session
                .compress(
                    upstream.clone(),
                    CompressOptions {
                        current_tokens: Some(tokens_before),
                        ..CompressOptions::default()
                    },
                )
                .await;
            let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            let min_saved = gateway.settings.cache.min_tokens_saved;
            let saves_too_little = || {
                let saved = tokens_before.saturating_sub(self.session.count(&compression.messages));
                min_saved > 0 && saved < min_saved && tokens_before <= window
            };
            let outcome = match &compression.error {
                // Not worth a cold cache: the view stays until the history grows by min_saved.
                None if saves_too_little() => {
                    self.record.deferred_until_tokens = tokens_before + min_saved;
                    self.record.stats.compressions_deferred += 1;
                    gateway.metrics.add(Metric::CompressionsDeferred, &[], 1);
                    CompressionOutcome::Deferred
                }
                None => {
                    upstream = compression.messages.clone();
                    self.record.conversation.compressed(upstream.to_vec());
                    self.record.deferred_until_tokens = 0;
                    compressed = true;
                    CompressionOutcome::Ok
                }
                Some(error) => {
                    engine_error = Some(self.failed(gateway, error));
                    CompressionOutcome::Failed
                }
            };
            gateway.metrics.add(
                Metric::Compressions,
                &[
                    ("engine", &compression.engine),
                    ("outcome", outcome.as_str()),
                ],
                1,
            );
            let tokens_after = self.session.count(&upstream);
            tracing::info!(
                session = %self.record.key.name,
                engine = %compression.engine,
                tokens_before,
                tokens_after,
                elapsed_ms,
                "compressed"
            );
            self.record.compressions.push(CompressionRecord {
                request: self.record.stats.requests,
                trigger,
                engine: compression.engine.clone(),
                tokens_before,
                tokens_after,
                messages_before,
                messages_after: upstream.len(),
                elapsed_ms,
                error: compression.error.as_ref().map(ToString::to_string),
                report: compression.report.clone(),
                deferred: outcome == CompressionOutcome::Deferred,
                replica: gateway
                    .coordination
                    .as_ref()
                    .map(|_| gateway.replica.clone()),
                started_at_ms,
                finished_at_ms: unix_now_ms(),
            });
        }
        // Near the threshold (the engine would compress with `margin` more tokens) and not
        // compressed now: the next compression is prepared while this request is answered.
        let settings = &gateway.settings.compaction;
        if !compressed && settings.background && continuity != Continuity::Diverged {
            let margin = (settings.margin * window as f64) as u64;
            // Not again before the context has regrown by half the margin since the last
            // compression: each one changes the view, and with it the provider's cache.
            let regrown = self
                .record
                .compressions
                .iter()
                .rev()
                .find(|c| c.error.is_none() && !c.deferred)
                .is_none_or(|last| tokens >= last.tokens_after + margin / 2);
            if margin > 0
                && regrown
                && matches!(
                    self.session.should_compress(tokens + margin).await,
                    Ok(true)
                )
            {
                self.start_pending(gateway, upstream.clone()).await;
            }
        }
        self.prepared(upstream, continuity, compressed, engine_error)
    }

    fn prepared(
        &mut self,
        upstream: Arc<Vec<Message>>,
        continuity: Continuity,
        compressed: bool,
        engine_error: Option<String>,
    ) -> Prepared {
        self.record.engine = self.session.engine().to_string();
        self.record.updated_at = unix_now();
        Prepared {
            upstream: Arc::try_unwrap(upstream).unwrap_or_else(|shared| shared.to_vec()),
            continuity,
            compressed,
            engine_error,
        }
    }

    /// Records one model call: its prompt (what was sent) and its usage (reported, else
    /// counted).
    pub async fn called(
        &mut self,
        gateway: &Gateway,
        sent: &[Message],
        reply: Option<&Message>,
        reported: Option<Usage>,
    ) {
        let prompt_tokens = self.session.count(sent);
        self.record.stats.upstream_calls += 1;
        self.record.stats.tokens_sent += prompt_tokens;
        self.record.stats.peak_prompt_tokens =
            self.record.stats.peak_prompt_tokens.max(prompt_tokens);
        gateway.metrics.add(Metric::TokensSent, &[], prompt_tokens);
        if let Some(reported) = &reported {
            let stats = &mut self.record.stats;
            stats.reported_prompt_tokens += reported.prompt_tokens;
            let read = reported.cache_read_tokens.unwrap_or(0);
            let write = reported.cache_write_tokens.unwrap_or(0);
            stats.cache_read_tokens += read;
            stats.cache_write_tokens += write;
            gateway.metrics.add(Metric::CacheReadTokens, &[], read);
            gateway.metrics.add(Metric::CacheWriteTokens, &[], write);
        }
        let usage = reported.unwrap_or_else(|| {
            let completion_tokens = reply.map(|m| self.session.count_message(m)).unwrap_or(0);
            Usage {
                prompt_tokens,
                completion_tokens,
                total_tokens: prompt_tokens + completion_tokens,
                ..Usage::default()
            }
        });
        self.record.last_prompt_tokens = usage.prompt_tokens;
        if self.preparing() {
            self.queued_usage.push(usage);
        } else if let Err(error) = self.session.record_usage(usage).await {
            self.failed(gateway, &error);
        }
    }

    /// After the last call of a request: asks the engine whether the next one must compress.
    pub async fn finished(&mut self, gateway: &Gateway) {
        if self.pending.is_some() {
            // One is being prepared (or ready): the next request takes it in.
            self.record.engine = self.session.engine().to_string();
            self.record.updated_at = unix_now();
            return;
        }
        match self
            .session
            .should_compress(self.record.last_prompt_tokens)
            .await
        {
            Ok(yes) => self.record.compress_next = yes,
            Err(error) => {
                self.failed(gateway, &error);
            }
        }
        self.record.engine = self.session.engine().to_string();
        self.record.updated_at = unix_now();
    }

    /// Runs one of the engine's tools for the model; a failure becomes the tool's answer.
    pub async fn run_tool(&mut self, gateway: &Gateway, name: &str, arguments: &str) -> String {
        // The engine answers once it is done preparing a compression.
        self.settle_pending(None).await;
        let args: Value = serde_json::from_str(arguments)
            .unwrap_or_else(|_| Value::String(arguments.to_string()));
        self.record.stats.engine_tool_calls += 1;
        gateway
            .metrics
            .add(Metric::EngineToolCalls, &[("tool", name)], 1);
        match self.session.call_tool(name.to_string(), args).await {
            Ok(answer) => answer,
            Err(error) => format!("error: {}", self.failed(gateway, &error)),
        }
    }
}
