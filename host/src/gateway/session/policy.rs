//! The compaction policy of a turn: what goes upstream (the view plus what is new), when the
//! engine compresses first (`should_compress` on the last call's prompt tokens, else
//! `should_compress_preflight`), when a compression is not worth a cold prompt cache, when one
//! is prepared in the background, and what each model call reports to the engine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_sdk::{CompressOptions, Message, Usage};

use crate::gateway::conversation::Continuity;
use crate::gateway::live::{Live, Prepared};
use crate::gateway::metrics::Metric;
use crate::gateway::record::{
    unix_now, unix_now_ms, CompressionOutcome, CompressionRecord, Trigger,
};
use crate::gateway::Gateway;

impl Live {
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
}
