//! [`LcmEngine`]: the `ContextEngine` contract and the plugin glue around the store.

use std::collections::HashSet;
use std::time::Duration;

use ctxhost_sdk::{
    sequence, CompressOptions, CompressionReport, ContextEngine, ContextSelection, EngineError,
    EnginePlugin, HostServices, Manifest, Message, SelectRequest, SessionInfo, SessionStart,
    TokenTracker,
};
use serde_json::{json, Value};

use crate::assemble::assemble;
use crate::compaction::{self, Budget, Compactor, Report};
use crate::context;
use crate::held::Held;
use crate::ingest::{ingest, Ingested};
use crate::ops;
use crate::recall::{self, FactsRead, LastRecall};
use crate::settings::Settings;
use crate::telemetry::compression_report;
use crate::tools::{self, ToolContext};
use ctxhost_lcm_store::SessionLock;
use ctxhost_lcm_store::Store;

/// The name users put in `context.engine`.
pub const NAME: &str = "lcm";
/// The database file under the engine's data directory.
pub const DATABASE_FILE: &str = "lcm.sqlite";
/// The session used before the host announces one.
pub const DEFAULT_SESSION: &str = "default";

/// Lossless context management: every message kept verbatim, summaries in the model's view,
/// tools to search and recover anything.
pub struct LcmEngine {
    services: HostServices,
    settings: Settings,
    tracker: TokenTracker,
    store: Store,
    session_id: String,
    /// The conversation row the session writes to (a reset starts a new one).
    conv: i64,
    /// Tokens of the head (system prompt) at the last call, for `status`.
    head_tokens: u64,
    /// Telemetry of the last `compress` call.
    last_report: Option<Report>,
    /// The lock of the session this engine writes, taken at its first write (or when the
    /// session starts) and held until the engine moves to another session or is dropped.
    lock: Option<SessionLock>,
    /// The last selection `select_context` made, for a request that asks nothing new.
    last_recall: Option<LastRecall>,
    /// The standing facts recall read for the last requests, by text.
    facts_read: FactsRead,
    /// What each summary's span holds, read once for the engine's life: a summary and the
    /// messages under it never change once written (its id derives from its sources).
    held: Held,
}

impl LcmEngine {
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    fn tool_context(&self) -> ToolContext<'_> {
        ToolContext {
            store: &self.store,
            conv: self.conv,
            services: &self.services,
            settings: &self.settings,
        }
    }

    /// Holds the session's lock, taking it if needed: every write goes through here, so two
    /// processes never write one session at once.
    fn lock_session(&mut self) -> Result<(), EngineError> {
        if self
            .lock
            .as_ref()
            .is_some_and(|lock| lock.session_id() == self.session_id)
        {
            return Ok(());
        }
        self.lock = None;
        self.lock = Some(SessionLock::acquire_for(
            &self.store,
            self.services.data_dir(),
            &self.session_id,
            Duration::from_millis(self.settings.session_lock_wait_ms),
        )?);
        Ok(())
    }

    /// Takes the session's lock if it is free now (or already held); never waits.
    fn lock_session_now(&mut self) -> bool {
        if self
            .lock
            .as_ref()
            .is_some_and(|lock| lock.session_id() == self.session_id)
        {
            return true;
        }
        match SessionLock::acquire_for(
            &self.store,
            self.services.data_dir(),
            &self.session_id,
            Duration::ZERO,
        ) {
            Ok(lock) => {
                self.lock = Some(lock);
                true
            }
            Err(_) => false,
        }
    }

    /// The lock of another session than this engine's, held while the caller writes it.
    fn lock_other(&self, session_id: &str) -> Result<SessionLock, EngineError> {
        SessionLock::acquire_for(
            &self.store,
            self.services.data_dir(),
            session_id,
            Duration::from_millis(self.settings.session_lock_wait_ms),
        )
    }

    /// Stores what is new in `messages` and makes what they are the conversation's context
    /// list. The caller holds the conversation's session lock.
    fn ingest(&mut self, conv: i64, messages: &[Message]) -> Result<Ingested, EngineError> {
        let ingested = ingest(&mut self.store, conv, &self.services, messages)?;
        self.store.set_context(conv, &ingested.context)?;
        Ok(ingested)
    }

    /// Runs a write of this engine's session under its lock. On SQLite the lock stays until
    /// the engine moves to another session; on PostgreSQL, where gateways on several machines
    /// take turns on one session, it is let go after each write.
    fn writing<T>(
        &mut self,
        write: impl FnOnce(&mut Self) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        self.lock_session()?;
        let outcome = write(self);
        if matches!(self.store, Store::Postgres(_)) {
            self.lock = None;
        }
        outcome
    }

    fn compress_locked(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        let ingested = self.ingest(self.conv, messages)?;
        let head = &messages[..sequence::head_len(messages)];
        self.head_tokens = self.services.count_messages_tokens(head);
        let mut entries = context::load(&self.store, self.conv)?;
        let tokens = self.head_tokens + context::tokens(&entries);
        let threshold = self.tracker.threshold_tokens();
        let over = self.tracker.context_length > 0
            && (tokens >= threshold || options.current_tokens.is_some_and(|t| t >= threshold));
        let mut report = Report {
            session_id: self.session_id.clone(),
            messages_ingested: ingested.stored,
            tokens_before: tokens,
            tokens_after: tokens,
            messages_before: messages.len(),
            messages_after: messages.len(),
            stopped: crate::compaction::StopReason::NotNeeded,
            ..Report::default()
        };
        let compact = options.force || over;
        if compact {
            // A caller's size (`target_tokens`) replaces the engine's target, spent in the
            // order of `ctxhost_sdk::budget` (see `Budget::sized`).
            let budget = Budget {
                head_tokens: self.head_tokens,
                context_length: self.tracker.context_length,
                threshold_tokens: threshold,
                target_tokens: options
                    .target_tokens
                    .unwrap_or_else(|| self.target_tokens()),
                sized: options.target_tokens.is_some(),
            };
            let mut compactor = Compactor {
                store: &mut self.store,
                services: &self.services,
                settings: &self.settings,
                conv: self.conv,
                memory: options
                    .memory_context
                    .as_deref()
                    .filter(|memory| !memory.trim().is_empty()),
                room: None,
                stored: HashSet::new(),
                held: &mut self.held,
            };
            compactor.run(
                &mut entries,
                budget,
                options.force,
                options.focus_topic.as_deref(),
                &mut report,
            )?;
            self.services.debug(&format!(
                "lcm: {} → {} tokens in {} passes ({} leaf, {} condensed), escalation {}, stopped: {}",
                report.tokens_before,
                report.tokens_after,
                report.passes,
                report.leaf_summaries,
                report.condensed_summaries,
                report.escalation_level,
                report.stopped
            ));
        }
        let mut view = assemble(head, &entries, &self.services);
        if compact && self.grew(messages, &view) {
            // A summary block has a frame (id, depth, what it covers, how to expand it): over
            // little to summarise it costs more than what it replaced. The context goes back
            // unchanged (the no-op answer), the store's context list with it; the summaries
            // written stay stored, for a later compression over the same messages to reuse.
            self.services.debug(&format!(
                "lcm: the compacted view ({} tokens) would be larger than the context ({}); \
                 returned unchanged",
                report.tokens_after, report.tokens_before
            ));
            self.store.set_context(self.conv, &ingested.context)?;
            view = messages.to_vec();
            report.tokens_after = report.tokens_before;
            report.stopped = crate::compaction::StopReason::WouldGrow;
        } else if compact && report.passes > 0 {
            self.tracker.compression_count += 1;
        }
        report.messages_after = view.len();
        if compact {
            self.store
                .record_compaction(self.conv, &serde_json::to_value(&report)?)?;
        }
        self.last_report = Some(report);
        Ok(view)
    }

    /// Whether `view` costs more tokens than `messages`, counted as the host counts them.
    fn grew(&self, messages: &[Message], view: &[Message]) -> bool {
        view != messages
            && self.services.count_messages_tokens(view)
                > self.services.count_messages_tokens(messages)
    }

    fn has_content_to_compress_locked(
        &mut self,
        messages: &[Message],
    ) -> Result<bool, EngineError> {
        self.ingest(self.conv, messages)?;
        let entries = context::load(&self.store, self.conv)?;
        let tail =
            compaction::fresh_tail_start(&entries, &self.settings, self.tracker.context_length);
        Ok(
            compaction::leaf_chunk(&entries, 0..tail, self.settings.leaf_chunk_tokens).is_some()
                || compaction::condensable(
                    &entries,
                    tail,
                    2,
                    self.settings.condensed_min_fanout,
                    true,
                )
                .is_some(),
        )
    }

    fn target_tokens(&self) -> u64 {
        (self.tracker.context_length as f64 * self.settings.target_ratio) as u64
    }
}

impl EnginePlugin for LcmEngine {
    fn manifest() -> Manifest {
        let d = Settings::default();
        Manifest::new(
            NAME,
            env!("CARGO_PKG_VERSION"),
            "Lossless context: every message kept in SQLite, older turns replaced by a DAG of \
             summaries, with tools to search and recover anything.",
        )
        .capability("tools")
        .capability("persistent")
        .capability("summarizer")
        .config_key(
            "threshold",
            &d.threshold.to_string(),
            "Compact when the context reaches this fraction of the window.",
        )
        .config_key(
            "target_ratio",
            &d.target_ratio.to_string(),
            "Compaction stops once the context is at or under this fraction of the window.",
        )
        .config_key(
            "fresh_tail_count",
            &d.fresh_tail_count.to_string(),
            "The newest raw messages that are never summarized.",
        )
        .config_key(
            "fresh_tail_max_ratio",
            &d.fresh_tail_max_ratio.to_string(),
            "The protected tail never holds more than this fraction of the window.",
        )
        .config_key(
            "leaf_chunk_tokens",
            &d.leaf_chunk_tokens.to_string(),
            "Most source tokens summarized into one leaf summary.",
        )
        .config_key(
            "leaf_summary_tokens",
            &d.leaf_summary_tokens.to_string(),
            "Size asked of a leaf summary, in tokens.",
        )
        .config_key(
            "condensed_min_fanout",
            &d.condensed_min_fanout.to_string(),
            "Summaries of one depth merged into one condensed summary.",
        )
        .config_key(
            "condensed_summary_tokens",
            &d.condensed_summary_tokens.to_string(),
            "Size asked of a condensed summary, in tokens.",
        )
        .config_key(
            "max_summary_blocks",
            &d.max_summary_blocks.to_string(),
            "Most summary blocks in the model's view; beyond it the oldest are condensed.",
        )
        .config_key(
            "max_passes",
            &d.max_passes.to_string(),
            "Most summarization passes per compress call.",
        )
        .config_key(
            "deadline_ms",
            &d.deadline_ms.to_string(),
            "Wall-clock limit of one compress call, in milliseconds.",
        )
        .config_key(
            "summarizer_timeout_ms",
            &d.summarizer_timeout_ms.to_string(),
            "Longest wait for one summarizer answer, in milliseconds.",
        )
        .config_key(
            "expand_max_tokens",
            &d.expand_max_tokens.to_string(),
            "Default page size of lcm_expand, in tokens.",
        )
        .config_key(
            "busy_timeout_ms",
            &d.busy_timeout_ms.to_string(),
            "How long to wait for a database locked by another process.",
        )
        .config_key(
            "store",
            "",
            "Where the store lives: a SQLite file (default lcm.sqlite in the engine's data \
             directory; a relative path is taken from there) or a postgres:// URL.",
        )
        .config_key(
            "session_lock_wait_ms",
            &d.session_lock_wait_ms.to_string(),
            "How long a second writer of a session waits for the first to finish.",
        )
    }

    fn create(services: HostServices) -> Result<Self, EngineError> {
        // Fail here, at load time, so a bad setting or an unusable database is reported before
        // the session starts (the host then keeps its built-in compressor).
        let settings: Settings = services.settings()?;
        let location = settings.location(services.data_dir())?;
        // A database that does not open leaves the engine up, for `doctor` to say what is wrong
        // and how to restore it; every other call fails with the reason (the host then keeps
        // the conversation with its built-in compressor).
        let mut store =
            Store::open_or_unusable(&location, Duration::from_millis(settings.busy_timeout_ms));
        for notice in store.tightened() {
            services.warn(notice);
        }
        let conv = match store.unusable() {
            Some(why) => {
                services.warn(&format!("{why}; run `ctxhost engine doctor`"));
                0
            }
            None => store.current_conversation(DEFAULT_SESSION)?,
        };
        let tracker = TokenTracker::new(services.model().context_length, settings.threshold);
        Ok(LcmEngine {
            services,
            settings,
            tracker,
            store,
            session_id: DEFAULT_SESSION.to_string(),
            conv,
            head_tokens: 0,
            last_report: None,
            lock: None,
            last_recall: None,
            facts_read: FactsRead::default(),
            held: Held::default(),
        })
    }

    /// The same checks as [`create`](Self::create), without opening the store (which would
    /// create its directory and file).
    fn validate_settings(services: &HostServices) -> Result<(), EngineError> {
        services.settings::<Settings>().map(drop)
    }
}

impl ContextEngine for LcmEngine {
    fn name(&self) -> &str {
        NAME
    }

    fn tracker(&mut self) -> Option<&mut TokenTracker> {
        Some(&mut self.tracker)
    }

    fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        // Stored (and so searchable by lcm_grep) as they arrive, not only once a compression
        // runs: a session that never compresses is still searchable. Ingest is idempotent and
        // stores only what is new. Only when the session is free now: while another process
        // writes it, storing waits for the next compression, which waits for the lock and says
        // in one line why it cannot have it.
        if self.lock_session_now() {
            let _ = self.writing(|engine| engine.ingest(engine.conv, messages).map(drop));
        }
        let tokens = self.services.count_messages_tokens(messages);
        Ok(self.tracker.over_threshold(tokens))
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        self.writing(|engine| engine.compress_locked(messages, options))
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        self.writing(|engine| engine.has_content_to_compress_locked(messages))
    }

    fn on_session_start(&mut self, session: &SessionStart) -> Result<(), EngineError> {
        self.tracker.start_session(session);
        let id = if session.session_id.is_empty() {
            DEFAULT_SESSION
        } else {
            session.session_id.as_str()
        };
        if id != self.session_id && self.store.unusable().is_none() {
            self.conv = self.store.current_conversation(id)?;
            self.session_id = id.to_string();
            self.last_report = None;
            // The previous session's lock goes; this one's is taken at the first write, so
            // reading a session another process writes (its status, its tools) never waits.
            self.lock = None;
        }
        Ok(())
    }

    fn on_session_end(
        &mut self,
        session_id: &str,
        messages: &[Message],
    ) -> Result<(), EngineError> {
        // Store whatever arrived since the last compress; nothing is summarized here.
        if session_id.is_empty() || session_id == self.session_id {
            self.writing(|engine| engine.ingest(engine.conv, messages))?;
        } else {
            let _lock = self.lock_other(session_id)?;
            let conv = self.store.current_conversation(session_id)?;
            self.ingest(conv, messages)?;
        }
        Ok(())
    }

    fn on_session_reset(&mut self) -> Result<(), EngineError> {
        // `/new` or `/reset`: the old conversation stays stored; the session starts afresh.
        self.writing(|engine| {
            engine.tracker.reset();
            engine.conv = engine.store.new_conversation(&engine.session_id)?;
            engine.last_report = None;
            Ok(())
        })
    }

    /// Reads the store only: no lock, and what the request holds that is not stored yet is
    /// stored by the next preflight or compression.
    fn select_context(
        &mut self,
        messages: &[Message],
        request: &SelectRequest,
    ) -> Result<ContextSelection, EngineError> {
        if let Some(why) = self.store.unusable() {
            return Err(EngineError::failed(why.to_string()));
        }
        recall::select(
            &self.store,
            self.conv,
            &self.services,
            messages,
            request,
            &mut self.last_recall,
            &mut self.facts_read,
        )
    }

    fn tool_schemas(&mut self) -> Result<Vec<Value>, EngineError> {
        Ok(tools::schemas())
    }

    fn handle_tool_call(&mut self, name: &str, args: &Value) -> Result<String, EngineError> {
        tools::call(&self.tool_context(), name, args)
            .unwrap_or_else(|| Err(EngineError::unknown_tool(name)))
    }

    fn status_details(&mut self) -> Result<Value, EngineError> {
        let stats = self.store.stats(self.conv)?;
        Ok(json!({
            "session_id": self.session_id,
            "messages": stats.messages,
            "summaries": stats.summaries_by_depth.iter().map(|(_, count, _)| count).sum::<u64>(),
            "context_items": stats.context_messages + stats.context_summaries,
            "database": self.store.location(),
        }))
    }

    /// The last `compress` call of this engine; before any, the session's last compaction as
    /// stored (so it survives a restart of the host).
    fn last_compression(&mut self) -> Result<Option<CompressionReport>, EngineError> {
        if let Some(report) = &self.last_report {
            return Ok(Some(compression_report(report)));
        }
        let Some(stored) = self.store.last_compaction(self.conv)? else {
            return Ok(None);
        };
        let report: Report = serde_json::from_value(stored).map_err(|e| {
            self.store
                .error(ctxhost_lcm_store::StoreError::Corrupt(format!(
                    "compaction report: {e}"
                )))
        })?;
        Ok(Some(compression_report(&report)))
    }

    fn sessions(&mut self) -> Result<Vec<SessionInfo>, EngineError> {
        self.store.sessions()
    }

    fn session(&mut self, session_id: &str) -> Result<Option<SessionInfo>, EngineError> {
        self.store.session(session_id)
    }

    fn delete_session(&mut self, session_id: &str) -> Result<bool, EngineError> {
        // Never under a writer's feet: the session's lock first.
        if session_id == self.session_id {
            return self.writing(|engine| {
                let deleted = engine.store.delete_session(session_id)?;
                // This engine's own session: it goes on in a fresh conversation, as after a
                // reset.
                engine.tracker.reset();
                engine.conv = engine.store.new_conversation(&engine.session_id)?;
                engine.last_report = None;
                Ok(deleted)
            });
        }
        let _lock = self.lock_other(session_id)?;
        self.store.delete_session(session_id)
    }

    fn invoke(&mut self, op: &str, payload: &Value) -> Result<Value, EngineError> {
        match op {
            "status" => ops::status(&self.store, self.conv, &self.session_id, self.head_tokens),
            "doctor" => ops::doctor(&mut self.store, payload),
            "backup" => ops::backup(&self.store, payload),
            "migrate_session" => ops::migrate_session(
                &self.store,
                payload,
                Duration::from_millis(self.settings.session_lock_wait_ms),
            ),
            "last_compaction" | "last_compression" => match &self.last_report {
                Some(report) => Ok(serde_json::to_value(report)?),
                None => Ok(self
                    .store
                    .last_compaction(self.conv)?
                    .unwrap_or(Value::Null)),
            },
            other => Err(EngineError::unsupported(other)),
        }
    }
}
