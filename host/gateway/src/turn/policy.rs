//! The compression policy of a turn: what goes upstream (the view plus what is new), when the
//! engine compresses first (`should_compress` on the last call's prompt tokens, else
//! `should_compress_preflight`), when a compression is not worth a cold prompt cache, when one
//! is prepared in the background and when a request waits for one ([`TurnPlan`]), and what
//! each model call reports to the engine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_sdk::{CompressOptions, Message, Usage};
use serde_json::Value;

use super::plan::{Policy, Standing, TurnPlan};
use super::set_header;
use super::AnsweredBy;
use super::Turn;
use crate::conversation::{Continuity, Resumed};
use crate::engine_check::ENGINE_ERROR_HEADER;
use crate::record::{unix_now, unix_now_ms, CompressionOutcome, CompressionRecord, Trigger};
use crate::session::live::Prepared;
use ctxhost_core::session::SessionError;
use ctxhost_costs::policy::COLD_CACHE_TARGET_RATIO;
use ctxhost_costs::session::{micro, Billed};
use ctxhost_metrics::Metric;

/// A turn's upstream while it is being prepared.
struct Draft {
    /// Shared with the engine calls, not copied for each.
    upstream: Arc<Vec<Message>>,
    continuity: Continuity,
    compressed: bool,
    /// An engine failure met on the way (the request goes on without it).
    engine_error: Option<String>,
}

/// What share of its context the answer to an agent's compaction keeps (one in this many
/// tokens): the agents compact to a small fraction of their window.
const AGENT_COMPACTION_SHARE: u64 = 4;

impl Turn {
    /// Takes in the client's history and decides what goes upstream: the view plus what is
    /// new, compressed first only when that would not fit (or compressions run on requests).
    /// `resumed`: where the history takes up the gateway's handoff; `agent`: the request is the
    /// agent's own compaction (one owner: the engine compresses to answer it, or not at all).
    pub async fn prepare(
        &mut self,
        history: &[Message],
        model: &str,
        window: u64,
        resumed: Option<Resumed>,
        agent: Option<AnsweredBy>,
    ) -> Prepared {
        let mut draft = self.take_in(history, resumed);
        match agent {
            Some(AnsweredBy::Upstream) => return self.prepared(draft),
            // The answer stands for the whole history: one being prepared is finished first.
            Some(AnsweredBy::Engine) => {
                self.guard.settle_pending(None).await;
            }
            None => {}
        }
        if !self.take_prepared(history, window, &mut draft).await {
            return self.prepared(draft);
        }
        self.catch_up(model, window, &mut draft).await;
        let trigger = match agent {
            Some(_) => Some(Trigger::Client),
            None => self.trigger(&mut draft).await,
        };
        // Counted once here: the deferral, the plan and the compression share it (the upstream
        // only changes if a compression is applied).
        let tokens = self.guard.session.count(&draft.upstream);
        // What the provider's own context management covers is its own (`ProviderContext`);
        // the agent's own compaction request is the engine's to answer whatever it says.
        let trigger = trigger.filter(|t| {
            *t == Trigger::Client || self.provider_context.leaves_to_engine(*t, tokens, window)
        });
        let asked = trigger;
        let trigger = match agent {
            None if !self.provider_context.manages() => {
                self.weigh_cache(trigger, tokens, window).await
            }
            _ => trigger,
        };
        // Held on a warm cache: nothing is prepared for it either.
        let held = asked.is_some() && trigger.is_none();
        if agent.is_some() {
            // The agent asked for its compaction: the engine compresses now to answer it, and
            // nothing is prepared for a next request it stands for.
            if let Some(trigger) = trigger {
                self.compress(trigger, tokens, window, &mut draft).await;
            }
            return self.prepared(draft);
        }
        let crossing = trigger.filter(|_| !self.deferred(tokens, window));
        let standing = match crossing {
            Some(Trigger::ColdCache) => Standing::CacheExpired,
            Some(_) => Standing::Crossing,
            None if !held && self.near(&mut draft, tokens, window).await => Standing::Near,
            None => Standing::Below,
        };
        let plan = TurnPlan::decide(standing, tokens <= window, self.policy());
        if plan.waits() {
            self.guard.record.stats.turns_waited += 1;
        }
        match (plan, crossing) {
            (TurnPlan::SendView, _) => {}
            (TurnPlan::SendViewAndPrepare, _) => {
                // The compression this request crossed into is the one being prepared.
                self.guard.record.compress_next = false;
                self.start_pending(draft.upstream.clone(), standing).await;
            }
            (TurnPlan::WaitThenSend, Some(trigger)) => {
                self.guard.record.compress_next = false;
                if self.start_pending(draft.upstream.clone(), standing).await {
                    self.wait_then_take(history, &mut draft).await;
                } else {
                    self.compress(trigger, tokens, window, &mut draft).await;
                }
            }
            (TurnPlan::CompressNow, Some(trigger)) => {
                self.compress(trigger, tokens, window, &mut draft).await;
            }
            // Only a crossing request waits here (one finding a compression being prepared
            // waited in `take_prepared`).
            (TurnPlan::WaitThenSend | TurnPlan::CompressNow, None) => {}
        }
        let mut sent = if draft.compressed {
            self.guard.session.count(&draft.upstream)
        } else {
            tokens
        };
        // What the engine recalls goes too (not while it prepares a compression: it is busy).
        if !self.guard.preparing() {
            let live = &mut *self.guard;
            let recall = live.session.recall(draft.upstream.clone(), window).await;
            live.record.took_recall(recall.recalled);
            let items = live.record.last_recalled.len() as u64;
            self.gateway.metrics.add(Metric::RecalledItems, &[], items);
            sent += live.record.last_recalled_tokens();
            draft.upstream = recall.messages;
        }
        let mut prepared = self.prepared(draft);
        prepared.over_window = (sent > window).then_some(sent);
        prepared
    }

    /// What the plan follows, from the settings.
    fn policy(&self) -> Policy {
        let settings = &self.gateway.settings;
        Policy {
            background: settings.compression.background,
            weighs_saving: settings.cache.min_tokens_saved > 0,
        }
    }

    /// The client's history against the session's lineage: the view plus what is new.
    fn take_in(&mut self, history: &[Message], resumed: Option<Resumed>) -> Draft {
        let live = &mut *self.guard;
        let departure = live.record.conversation.departure(history);
        let (continuity, upstream) = live.record.conversation.advance(history, resumed);
        live.record.stats.requests += 1;
        let received = live.session.count(history);
        live.record.stats.tokens_received += received;
        live.costs
            .history(received, continuity != Continuity::Diverged);
        let metrics = &self.gateway.metrics;
        metrics.add(Metric::TokensReceived, &[], received);
        if continuity == Continuity::Diverged {
            live.record.stats.new_lineages += 1;
            live.record.compress_next = false;
            metrics.add(Metric::NewLineages, &[], 1);
            let (at, role, lineage) = departure
                .clone()
                .map(|d| (d.at, d.role.unwrap_or_else(|| "none".into()), d.lineage))
                .unwrap_or_default();
            tracing::warn!(
                session = %live.record.key.name,
                messages = history.len(),
                differs_at = at,
                role = %role,
                lineage,
                "the client's history does not extend the session's lineage (its message \
                 `differs_at` is not the lineage's, and does not take up an older point of it \
                 with a new prompt): starting a new lineage"
            );
        }
        if continuity == Continuity::Rewound {
            tracing::info!(
                session = %live.record.key.name,
                messages = history.len(),
                from = departure.as_ref().map(|d| d.at).unwrap_or_default(),
                "the client's history takes up an older point of the session's lineage (a \
                 session resumed from an earlier prompt): the lineage continues from there"
            );
        }
        if continuity == Continuity::Compacted {
            tracing::info!(
                session = %live.record.key.name,
                messages = history.len(),
                "the agent compacted its history around the gateway's handoff: the lineage continues"
            );
        }
        Draft {
            upstream: Arc::new(upstream),
            continuity,
            compressed: false,
            engine_error: None,
        }
    }

    /// Takes in a compression prepared in the background, if one is ready. One still being
    /// prepared is waited for only when the last view plus what is new would not fit (at most
    /// `serve.compression.wait_seconds`, then until it is done); otherwise the request goes on
    /// at once. False when one is still being prepared: the upstream goes as it is, and the
    /// busy engine (or the session, on another gateway) is asked nothing more.
    async fn take_prepared(&mut self, history: &[Message], window: u64, draft: &mut Draft) -> bool {
        if self.guard.pending.is_some() {
            self.guard.settle_finished();
            let fits = self.guard.session.count(&draft.upstream) <= window;
            let standing = if self.guard.preparing() {
                Standing::Preparing
            } else {
                Standing::Below
            };
            if TurnPlan::decide(standing, fits, self.policy()).waits() {
                self.guard.record.stats.turns_waited += 1;
                self.wait_then_take(history, draft).await;
            } else if let Some(taken) = self.take_pending(history, &mut draft.engine_error) {
                draft.upstream = Arc::new(taken);
                draft.compressed = true;
            }
        } else if self.shared_pending() {
            let fits = self.guard.session.count(&draft.upstream) <= window;
            let waits = TurnPlan::decide(Standing::Preparing, fits, self.policy()).waits();
            if let Some(taken) = self
                .take_shared_pending(history, waits, &mut draft.engine_error)
                .await
            {
                draft.upstream = Arc::new(taken);
                draft.compressed = true;
            }
            if self.guard.record.pending.is_some() {
                return false;
            }
        }
        !self.guard.preparing()
    }

    /// Waits for the compression being prepared on this gateway (what the request would send
    /// does not fit without it), then takes it in: at most `serve.compression.wait_seconds`,
    /// then on, as a synchronous compression would (the engine, busy with this one, can do
    /// nothing sooner).
    async fn wait_then_take(&mut self, history: &[Message], draft: &mut Draft) {
        let wait_seconds = self.gateway.settings.compression.wait_seconds;
        let live = &mut *self.guard;
        if !live
            .settle_pending(Some(Duration::from_secs_f64(wait_seconds)))
            .await
        {
            tracing::info!(
                session = %live.record.key.name,
                wait_seconds,
                "the request does not fit the window without the compression being prepared: waiting on for it"
            );
            live.settle_pending(None).await;
        }
        if let Some(taken) = self.take_pending(history, &mut draft.engine_error) {
            draft.upstream = Arc::new(taken);
            draft.compressed = true;
        }
    }

    /// Tells the engine what changed while it was busy: the model and window, the usage queued.
    async fn catch_up(&mut self, model: &str, window: u64, draft: &mut Draft) {
        let record = &mut self.guard.record;
        if model != record.model || window != record.context_length {
            record.model = model.to_string();
            record.context_length = window;
            if let Err(error) = self
                .guard
                .session
                .update_model(model.to_string(), window)
                .await
            {
                draft.engine_error = Some(self.failed(&error));
            }
        }
        for usage in std::mem::take(&mut self.guard.queued_usage) {
            if let Err(error) = self.guard.session.record_usage(usage).await {
                draft.engine_error = Some(self.failed(&error));
            }
        }
    }

    /// Why the engine compresses now, if it does.
    async fn trigger(&mut self, draft: &mut Draft) -> Option<Trigger> {
        if self.guard.record.compress_next {
            return Some(Trigger::Threshold);
        }
        let asked = self
            .guard
            .session
            .should_compress_preflight(draft.upstream.clone())
            .await;
        match asked {
            Ok(true) => Some(Trigger::Preflight),
            Ok(false) => None,
            Err(error) => {
                draft.engine_error = Some(self.failed(&error));
                None
            }
        }
    }

    /// A compression deferred for saving too little waits until the history has grown (or
    /// would not fit).
    fn deferred(&mut self, tokens: u64, window: u64) -> bool {
        let record = &mut self.guard.record;
        let until = record.deferred_until_tokens;
        let waits = until > 0 && tokens < until && tokens <= window;
        if waits {
            record.compress_next = false;
        }
        waits
    }

    /// Compresses the upstream now; applied unless it saves less than
    /// `serve.cache.min_tokens_saved` (not worth a cold cache while the history still fits).
    async fn compress(
        &mut self,
        trigger: Trigger,
        tokens_before: u64,
        window: u64,
        draft: &mut Draft,
    ) {
        self.guard.record.compress_next = false;
        let messages_before = draft.upstream.len();
        let started = Instant::now();
        let started_at_ms = unix_now_ms();
        // The agent asked to compact: under the engine's own threshold it would keep the view
        // as it is, and the agent, finding its context no smaller, would ask again each turn.
        // It is compressed now, to a quarter of what it was.
        let asked = trigger == Trigger::Client;
        let early = trigger == Trigger::ColdCache;
        let target_tokens = match trigger {
            Trigger::Client => Some(tokens_before / AGENT_COMPACTION_SHARE),
            // Early on a cold cache, below the engine's own threshold (where its protected
            // head and tail may cover everything): to what a compression is expected to leave.
            Trigger::ColdCache => Some((tokens_before as f64 * COLD_CACHE_TARGET_RATIO) as u64),
            _ => None,
        };
        let options = CompressOptions {
            current_tokens: Some(tokens_before),
            force: asked || early,
            target_tokens,
            ..CompressOptions::default()
        };
        let compression = self
            .guard
            .session
            .compress(draft.upstream.clone(), options)
            .await;
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        let gateway = self.gateway.clone();
        let min_saved = gateway.settings.cache.min_tokens_saved;
        let saved = tokens_before.saturating_sub(self.guard.session.count(&compression.messages));
        // The agent's own compaction is answered from a view that covers everything.
        let saves_too_little = trigger != Trigger::Client
            && trigger != Trigger::ColdCache
            && min_saved > 0
            && saved < min_saved
            && tokens_before <= window;
        // The engine found nothing to compress: not a compression.
        let unchanged = compression.error.is_none() && *compression.messages == *draft.upstream;
        let outcome = match &compression.error {
            None if unchanged => {
                self.guard.record.defer_unchanged(tokens_before, min_saved);
                CompressionOutcome::Unchanged
            }
            None if saves_too_little => {
                let record = &mut self.guard.record;
                record.deferred_until_tokens = tokens_before + min_saved;
                record.stats.compressions_deferred += 1;
                gateway.metrics.add(Metric::CompressionsDeferred, &[], 1);
                CompressionOutcome::Deferred
            }
            None => {
                draft.upstream = compression.messages.clone();
                let record = &mut self.guard.record;
                record.conversation.compressed(draft.upstream.to_vec());
                record.deferred_until_tokens = 0;
                draft.compressed = true;
                CompressionOutcome::Ok
            }
            Some(error) => {
                draft.engine_error = Some(self.failed(error));
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
        let live = &mut *self.guard;
        if outcome == CompressionOutcome::Unchanged {
            tracing::info!(
                session = %live.record.key.name,
                engine = %compression.engine,
                tokens_before,
                "the engine's compression changed nothing: not applied, not asked again until \
                 the history grows"
            );
            return;
        }
        let tokens_after = live.session.count(&draft.upstream);
        tracing::info!(
            session = %live.record.key.name,
            engine = %compression.engine,
            tokens_before,
            tokens_after,
            elapsed_ms,
            "compressed"
        );
        let request = live.record.stats.requests;
        live.record.compressions.push(CompressionRecord {
            request,
            trigger,
            engine: compression.engine.clone(),
            tokens_before,
            tokens_after,
            messages_before,
            messages_after: draft.upstream.len(),
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

    /// Whether the session is near the threshold (the engine would compress with
    /// `serve.compression.margin` of the window more), so the next compression is prepared in
    /// the background while this request is answered.
    async fn near(&mut self, draft: &mut Draft, tokens: u64, window: u64) -> bool {
        let settings = &self.gateway.settings.compression;
        if draft.compressed
            || !settings.background
            || draft.continuity == Continuity::Diverged
            || self.provider_context.manages()
            // The last one changed nothing: not again before the history has grown.
            || tokens < self.guard.record.deferred_until_tokens
        {
            return false;
        }
        let margin = (settings.margin * window as f64) as u64;
        // Not again before the context has regrown by half the margin since the last
        // compression: each one changes the view, and with it the provider's cache.
        let regrown = self
            .guard
            .record
            .compressions
            .iter()
            .rev()
            .find(|c| c.error.is_none() && !c.deferred)
            .is_none_or(|last| tokens >= last.tokens_after + margin / 2);
        if margin == 0 || !regrown {
            return false;
        }
        match self.guard.session.should_compress(tokens + margin).await {
            Ok(near) => near && self.preparing_pays(tokens, margin, window).await,
            Err(error) => {
                draft.engine_error = Some(self.failed(&error));
                false
            }
        }
    }

    fn prepared(&mut self, draft: Draft) -> Prepared {
        self.stamp();
        Prepared {
            upstream: Arc::try_unwrap(draft.upstream).unwrap_or_else(|shared| shared.to_vec()),
            continuity: draft.continuity,
            compressed: draft.compressed,
            engine_error: draft.engine_error,
            over_window: None,
        }
    }

    /// The record names the engine as it now is, as of now.
    fn stamp(&mut self) {
        let live = &mut *self.guard;
        live.record.engine = live.session.engine().to_string();
        live.record.updated_at = unix_now();
    }

    /// Records one model call: its prompt (what was sent) and its usage (reported, else
    /// counted).
    pub async fn called(
        &mut self,
        sent: &[Message],
        reply: Option<&Message>,
        reported: Option<Usage>,
    ) {
        let metrics = &self.gateway.metrics;
        let live = &mut *self.guard;
        let prompt_tokens = live.session.count(sent);
        let stats = &mut live.record.stats;
        stats.upstream_calls += 1;
        stats.tokens_sent += prompt_tokens;
        stats.peak_prompt_tokens = stats.peak_prompt_tokens.max(prompt_tokens);
        live.record.last_sent_tokens = prompt_tokens;
        metrics.add(Metric::TokensSent, &[], prompt_tokens);
        if let Some(reported) = &reported {
            stats.reported_prompt_tokens += reported.prompt_tokens;
            let read = reported.cache_read_tokens.unwrap_or(0);
            let write = reported.cache_write_tokens.unwrap_or(0);
            stats.cache_read_tokens += read;
            stats.cache_write_tokens += write;
            metrics.add(Metric::CacheReadTokens, &[], read);
            metrics.add(Metric::CacheWriteTokens, &[], write);
        }
        let was_reported = reported.is_some();
        let usage = reported.unwrap_or_else(|| {
            let completion_tokens = reply.map(|m| live.session.count_message(m)).unwrap_or(0);
            Usage {
                prompt_tokens,
                completion_tokens,
                total_tokens: prompt_tokens + completion_tokens,
                ..Usage::default()
            }
        });
        live.record.last_prompt_tokens = usage.prompt_tokens;
        let priced = usage.clone();
        if live.preparing() {
            live.queued_usage.push(usage);
        } else if let Err(error) = live.session.record_usage(usage).await {
            self.failed(&error);
        }
        self.price_call(was_reported, &priced);
    }

    /// Prices the call just made (its usage, `reported` by the provider or counted) and what
    /// no engine would have paid, when the session's model has a price; says it once when the
    /// engine costs more than no engine.
    fn price_call(&mut self, reported: bool, usage: &Usage) {
        let Some(price) = self.model_price() else {
            return;
        };
        let gateway = &self.gateway;
        let live = &mut *self.guard;
        let cache = |tokens: Option<u64>| tokens.filter(|_| reported).unwrap_or(0);
        let billed = Billed {
            prompt_tokens: usage.prompt_tokens,
            cache_read_tokens: cache(usage.cache_read_tokens),
            cache_write_tokens: cache(usage.cache_write_tokens),
            cache_write_1h_tokens: usage.cache_write_1h_tokens.filter(|_| reported),
            output_tokens: usage.completion_tokens,
        };
        let priced = live
            .costs
            .call(&price, gateway.settings.anthropic.cache_ttl, billed);
        let cost = micro(priced.dollars.total());
        let no_engine = micro(priced.no_engine.total());
        self.cost.add(cost, no_engine);
        let stats = &mut live.record.stats;
        stats.priced_calls += 1;
        stats.cost_microdollars += cost;
        stats.no_engine_cost_microdollars += no_engine;
        gateway.metrics.add(Metric::CostMicrodollars, &[], cost);
        gateway
            .metrics
            .add(Metric::NoEngineCostMicrodollars, &[], no_engine);
        if stats.cost_microdollars > stats.no_engine_cost_microdollars
            && !live.record.compressions.is_empty()
            && !live.costs.warned
        {
            live.costs.warned = true;
            tracing::warn!(
                session = %live.record.key.name,
                engine = %live.record.engine,
                dollars = stats.cost_microdollars as f64 / 1e6,
                no_engine_dollars = stats.no_engine_cost_microdollars as f64 / 1e6,
                "this session costs more with its engine than it would with none (each \
                 compression rewrites the provider's prompt cache): said once per session"
            );
        }
    }

    /// After the last call of a request: asks the engine whether the next one must compress
    /// (unless one is being prepared, or ready: the next request takes it in). A failure is
    /// said in the response's headers when they are still to be sent (a whole answer's).
    pub async fn finished(&mut self) {
        if self.guard.pending.is_none() {
            let live = &mut *self.guard;
            match live
                .session
                .should_compress(live.record.last_prompt_tokens)
                .await
            {
                Ok(yes) => live.record.compress_next = yes,
                Err(error) => {
                    let error = self.failed(&error);
                    if !self.headers.contains_key(ENGINE_ERROR_HEADER) {
                        set_header(&mut self.headers, ENGINE_ERROR_HEADER, &error);
                    }
                    // The session goes on with another engine from now on.
                    let engine = self.guard.session.engine().to_string();
                    set_header(&mut self.headers, "x-ctxhost-engine", &engine);
                }
            }
        }
        self.stamp();
    }

    /// Runs one of the engine's tools for the model; a failure becomes the tool's answer.
    pub async fn run_tool(&mut self, name: &str, arguments: &str) -> String {
        // The engine answers once it is done preparing a compression.
        self.guard.settle_pending(None).await;
        let args: Value = serde_json::from_str(arguments)
            .unwrap_or_else(|_| Value::String(arguments.to_string()));
        self.guard.record.stats.engine_tool_calls += 1;
        self.gateway
            .metrics
            .add(Metric::EngineToolCalls, &[("tool", name)], 1);
        match self.guard.session.call_tool(name.to_string(), args).await {
            Ok(answer) => answer,
            Err(error) => format!("error: {}", self.failed(&error)),
        }
    }

    /// Counts and logs a failed engine operation against the session; returns its line.
    pub fn failed(&mut self, error: &SessionError) -> String {
        self.guard.record.stats.engine_failures += 1;
        self.gateway.engine_failed(error);
        error.to_string()
    }
}
