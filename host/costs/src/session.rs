//! What a live session's model calls cost in dollars (the gateway's), and what the same calls
//! would have cost with no engine: the client's whole history each time, against the same
//! model's prompt cache.
//!
//! The real cost comes from each response's usage (cache reads and writes as the provider
//! reported them) and the model's price. The no-engine estimate simulates the provider's cache
//! over the histories the client sent: a history that extends the last one reads it back
//! while the cache lives, and writes what is new. It is kept in memory: after a restart (or on
//! another replica) it starts with a cold cache.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::bill::Dollars;
use crate::cache::{Block, CacheRules, CallTokens, Ttl};
use crate::price::ModelPrice;
use crate::priced::PricedPrompt;

/// One model call's tokens as the provider reported them (or as counted, without cache
/// figures, when it reported none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Billed {
    /// Every input token, cached or not.
    pub prompt_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Of the writes, those the provider says went to its 1-hour cache (the rest to the
    /// 5-minute one); `None`: it did not say, and every write is priced at the gateway's TTL.
    pub cache_write_1h_tokens: Option<u64>,
    pub output_tokens: u64,
}

/// One session's meter.
#[derive(Debug, Default)]
pub struct SessionCosts {
    /// The client's history as the cache sees it (one block per request's new messages),
    /// priced as no engine would have sent it.
    history: PricedPrompt,
    /// Bumped at every new lineage, so its blocks never match the last one's.
    lineage: u64,
    /// The tokens of the client's last history.
    history_tokens: u64,
    /// A negative saving was said (once per session).
    pub warned: bool,
}

/// One model call priced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PricedCall {
    pub dollars: Dollars,
    pub no_engine: Dollars,
}

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl SessionCosts {
    /// The client sent a history of `tokens`; `extends`: it goes on from the last one (the
    /// lineage continues).
    pub fn history(&mut self, tokens: u64, extends: bool) {
        if !extends || tokens < self.history_tokens {
            self.lineage += 1;
            self.history.clear();
            self.history_tokens = 0;
        }
        if tokens > self.history_tokens {
            self.history.push(Block {
                key: self.lineage << 32 | self.history.blocks() as u64,
                tokens: tokens - self.history_tokens,
            });
            self.history_tokens = tokens;
        }
    }

    /// Prices one model call, now: what the provider billed, and what no engine would have.
    pub fn call(&mut self, price: &ModelPrice, ttl: Ttl, billed: Billed) -> PricedCall {
        self.call_at(now_seconds(), price, ttl, billed)
    }

    fn call_at(&mut self, at: f64, price: &ModelPrice, ttl: Ttl, billed: Billed) -> PricedCall {
        let (read, write) = (billed.cache_read_tokens, billed.cache_write_tokens);
        let output_tokens = billed.output_tokens;
        let tokens = CallTokens {
            uncached: billed.prompt_tokens.saturating_sub(read + write),
            cache_write: write,
            cache_read: read,
            output: output_tokens,
        };
        let rules = CacheRules::for_model(price, ttl);
        let (_, no_engine) = self.history.send(at, output_tokens, rules, &price.price);
        let mut dollars = Dollars::of(&tokens, &price.price, ttl);
        if let Some(hour) = billed.cache_write_1h_tokens {
            let hour = hour.min(write);
            let per_million = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
            dollars.cache_write = per_million(write - hour, price.price.cache_write_5m)
                + per_million(hour, price.price.cache_write_1h);
        }
        PricedCall { dollars, no_engine }
    }
}

/// Dollars as millionths, the unit the session's record and the metrics keep.
pub fn micro(dollars: f64) -> u64 {
    (dollars * 1_000_000.0).round().max(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::price::price_of;

    fn usage(prompt: u64, read: u64, write: u64, output: u64) -> Billed {
        Billed {
            prompt_tokens: prompt,
            cache_read_tokens: read,
            cache_write_tokens: write,
            cache_write_1h_tokens: None,
            output_tokens: output,
        }
    }

    /// By hand, Sonnet ($3 input, $3.75 5m writes, $0.30 reads, $15 output per million).
    #[test]
    fn a_call_is_billed_as_reported_and_no_engine_as_simulated() {
        let sonnet = price_of("claude-sonnet-4-5", None).unwrap();
        let mut costs = SessionCosts::default();
        costs.history(2_000, true);
        let first = costs.call_at(0.0, &sonnet, Ttl::FiveMinutes, usage(2_000, 0, 2_000, 100));
        // 2,000 written at 3.75 and 100 out at 15: $0.0075 + $0.0015.
        assert!((first.dollars.total() - 0.009).abs() < 1e-12);
        // No engine sends the same and writes it all too.
        assert!((first.no_engine.total() - 0.009).abs() < 1e-12);
        // The history grows to 5,000; the engine's view is 1,500, read 1,000 and wrote 500.
        costs.history(5_000, true);
        let second = costs.call_at(
            60.0,
            &sonnet,
            Ttl::FiveMinutes,
            usage(1_500, 1_000, 500, 100),
        );
        let by_hand = (1_000.0 * 0.3 + 500.0 * 3.75 + 100.0 * 15.0) / 1e6;
        assert!((second.dollars.total() - by_hand).abs() < 1e-12);
        // No engine reads its 2,000 and writes 3,000.
        let none = (2_000.0 * 0.3 + 3_000.0 * 3.75 + 100.0 * 15.0) / 1e6;
        assert!((second.no_engine.total() - none).abs() < 1e-12);
        // A new lineage shares nothing with the last.
        costs.history(4_000, false);
        let third = costs.call_at(61.0, &sonnet, Ttl::FiveMinutes, usage(4_000, 0, 0, 0));
        assert!((third.no_engine.total() - 4_000.0 * 3.75 / 1e6).abs() < 1e-12);
        // Without cache figures the prompt counts as uncached input.
        assert!((third.dollars.total() - 4_000.0 * 3.0 / 1e6).abs() < 1e-12);
    }

    /// Anthropic says which cache its writes went to: each part at its own price, whatever
    /// the gateway's TTL.
    #[test]
    fn writes_the_provider_splits_are_priced_by_the_cache_they_went_to() {
        let sonnet = price_of("claude-sonnet-4-5", None).unwrap();
        let mut costs = SessionCosts::default();
        costs.history(3_000, true);
        let split = Billed {
            cache_write_1h_tokens: Some(1_000),
            ..usage(3_000, 0, 3_000, 0)
        };
        let priced = costs.call_at(0.0, &sonnet, Ttl::FiveMinutes, split);
        // 2,000 at $3.75 (5 minutes) and 1,000 at $6 (an hour), per million.
        let by_hand = (2_000.0 * 3.75 + 1_000.0 * 6.0) / 1e6;
        assert!(
            (priced.dollars.total() - by_hand).abs() < 1e-12,
            "{priced:?}"
        );
    }
}
