//! The cache-aware policy on a request (`serve.compression.cache_aware`): a compression
//! rewrites the prompt prefix the provider caches, so on a warm cache the engine's request to
//! compress is held unless the window requires it or the smaller view's cheaper reads pay the
//! rewrite back; on a cold cache (the session idle longer than its model's cache lives) a
//! context past the lower, opportunistic threshold is compressed early, the rewrite being free.
//! The rule itself is ctxhost-costs' [`CachePolicy`]; this is what the gateway knows of the
//! moment: the session's idle time, its model's price and what its compressions left.

use ctxhost_costs::cache::CacheRules;
use ctxhost_costs::policy::{CachePolicy, Moment, Why};
use ctxhost_costs::price::ModelPrice;
use ctxhost_metrics::Metric;

use super::Turn;
use crate::record::{unix_now, Trigger};

impl Turn {
    /// The session's model's price (configured, else the table's), when it has one: resolved
    /// once per session, again when its model changes.
    pub(super) fn model_price(&mut self) -> Option<ModelPrice> {
        let models = &self.gateway.settings.models;
        let live = &mut *self.guard;
        let model = &live.record.model;
        live.price.of(model, || {
            models.get(model).and_then(|setting| setting.price())
        })
    }

    /// The trigger the cache-aware policy settles on for a request of `tokens`: the engine's
    /// own (`asked`), none (held on a warm cache), or [`Trigger::ColdCache`]. Unchanged when
    /// the policy is off or the model has no price.
    pub(super) async fn weigh_cache(
        &mut self,
        asked: Option<Trigger>,
        tokens: u64,
        window: u64,
    ) -> Option<Trigger> {
        let Some(moment) = self.moment(asked.is_some(), tokens, window).await else {
            return asked;
        };
        let why = self.decide(&moment);
        match why {
            Why::ColdCacheEarly => Some(Trigger::ColdCache),
            Why::WouldNotPayBack => {
                self.guard.record.compress_next = false;
                None
            }
            _ => asked,
        }
    }

    /// Whether a compression prepared now, as the session nears its threshold (`margin` more
    /// tokens than `tokens` would cross it), would be worth taking in by the same rule:
    /// background preparation follows it.
    pub(super) async fn preparing_pays(&mut self, tokens: u64, margin: u64, window: u64) -> bool {
        match self.moment(true, tokens, window).await {
            Some(moment) => {
                // It is taken in by a later request, which finds the cache this one writes.
                let at_threshold = Moment {
                    context_tokens: tokens + margin,
                    cache_warm: true,
                    ..moment
                };
                self.decide(&at_threshold) != Why::WouldNotPayBack
            }
            None => true,
        }
    }

    /// The policy's decision, counted and logged.
    fn decide(&mut self, moment: &Moment) -> Why {
        let Some(price) = self.model_price() else {
            return Why::EngineDidNotAsk;
        };
        let ttl = self.gateway.settings.anthropic.cache_ttl;
        let why = CachePolicy::default().decide(moment, &price.price, ttl);
        if why != Why::EngineDidNotAsk {
            self.gateway
                .metrics
                .add(Metric::CacheDecisions, &[("outcome", why.name())], 1);
            tracing::info!(
                session = %self.guard.record.key.name,
                outcome = %why,
                tokens = moment.context_tokens,
                cache_warm = moment.cache_warm,
                compresses = why.compresses(),
                "cache-aware policy"
            );
        }
        why
    }

    /// What the policy weighs, now; `None` when it is off or the model has no price.
    async fn moment(&mut self, engine_asks: bool, tokens: u64, window: u64) -> Option<Moment> {
        if !self.gateway.settings.compression.cache_aware {
            return None;
        }
        let price = self.model_price()?;
        let rules = CacheRules::for_model(&price, self.gateway.settings.anthropic.cache_ttl);
        let record = &self.guard.record;
        let calls_so_far = record.stats.upstream_calls;
        let idle = unix_now().saturating_sub(record.updated_at) as f64;
        // A session's first call finds nothing cached: its compression rewrites nothing.
        let cache_warm = calls_so_far > 0 && idle <= rules.lifetime_seconds();
        let expected_ratio = record
            .compressions
            .iter()
            .rev()
            .find(|c| c.error.is_none() && !c.deferred && c.tokens_after < c.tokens_before)
            .map(|c| c.tokens_after as f64 / c.tokens_before as f64);
        // The context's growth lately: what came since the last call's prompt.
        let growth_per_call = match record.last_sent_tokens {
            0 => 0.0,
            last => tokens.saturating_sub(last) as f64,
        };
        // Only an early compression on a cold cache needs the engine's threshold.
        let threshold = if cache_warm || engine_asks {
            0
        } else {
            match self.guard.session.status().await {
                Ok(status) => status.threshold_tokens,
                Err(error) => {
                    self.failed(&error);
                    0
                }
            }
        };
        Some(Moment {
            context_tokens: tokens,
            window,
            threshold,
            engine_asks,
            cache_warm,
            expected_ratio,
            calls_so_far,
            growth_per_call,
        })
    }
}
