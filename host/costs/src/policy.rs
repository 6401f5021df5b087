//! When a compression is worth what it costs the prompt cache.
//!
//! A compression rewrites the prompt's prefix: the next call writes the new view to the cache
//! (Anthropic bills that at 1.25x or 2x input; OpenAI at the uncached price) where it would
//! have read the old one at a tenth or half of input. It pays when the cheaper reads of the
//! smaller view over the calls that follow outweigh that rewrite. On a cold cache (the
//! conversation idle longer than the cache lives) the rewrite costs nothing extra: every token
//! is written again anyway, so that is the time to compress, even a little early.

use serde::Serialize;

use crate::cache::Ttl;
use crate::price::Price;

/// What an early compression on a cold cache aims at, as a share of the context: the host
/// forces it to this size, the engine not having asked yet.
pub const COLD_CACHE_TARGET_RATIO: f64 = 0.5;

/// Before a compression has shown what an engine leaves, the most a compression is taken to
/// save: it leaves at least this share of the context. One that would not pay back even so is
/// held; one that might is left to the engine's own rule (a guess in between would decide for
/// it: compressing where the engine leaves nine tenths, or holding where it leaves a third).
pub const UNKNOWN_RATIO_BOUND: f64 = 0.5;

/// The settings of the cache-aware policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CachePolicy {
    /// On a cold cache, compress once the context reaches this share of the engine's
    /// threshold.
    pub opportunistic_ratio: f64,
    /// On a warm cache, compress without counting once the context reaches this share of the
    /// model's window: the next turns must fit.
    pub window_ratio: f64,
    /// The most calls a compression is expected to pay back over.
    pub max_payback_calls: u64,
}

impl Default for CachePolicy {
    fn default() -> Self {
        CachePolicy {
            opportunistic_ratio: 0.5,
            window_ratio: 0.85,
            max_payback_calls: 20,
        }
    }
}

/// What is known when the next call is about to go out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moment {
    /// The prompt as it would go out now.
    pub context_tokens: u64,
    pub window: u64,
    /// Where the engine compresses (its own, token-only rule).
    pub threshold: u64,
    /// The engine's token-only answer: compress now.
    pub engine_asks: bool,
    /// Whether the provider still caches a prefix of the prompt.
    pub cache_warm: bool,
    /// What a compression is expected to leave, as a share of the context: the last one's
    /// in this session; `None` before one has shown what this engine leaves.
    pub expected_ratio: Option<f64>,
    /// Calls the session has made so far: it is expected to make as many again (at most
    /// `max_payback_calls`).
    pub calls_so_far: u64,
    /// How many tokens the context grows by per call, lately.
    pub growth_per_call: f64,
}

/// Why the policy compresses now or holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// The engine asked, and the cache was cold: the rewrite is free.
    ColdCache,
    /// The engine did not ask yet, but the cache was cold and the context past the lower,
    /// opportunistic threshold.
    ColdCacheEarly,
    /// The cache was warm, but the context is too near the window to wait.
    WindowRequires,
    /// The cache was warm, and the smaller view's cheaper reads pay the rewrite back.
    PaysBack,
    /// The cache was warm, and the rewrite would cost more than it saves: held.
    WouldNotPayBack,
    /// The cache was warm and no compression has shown yet what this engine leaves: one that
    /// left [`UNKNOWN_RATIO_BOUND`] of the context would pay back, so the engine's own rule
    /// stands.
    RatioUnknown,
    /// The engine did not ask.
    EngineDidNotAsk,
}

impl Why {
    pub fn name(self) -> &'static str {
        match self {
            Why::ColdCache => "cold_cache",
            Why::ColdCacheEarly => "cold_cache_early",
            Why::WindowRequires => "window_requires",
            Why::PaysBack => "pays_back",
            Why::WouldNotPayBack => "would_not_pay_back",
            Why::RatioUnknown => "ratio_unknown",
            Why::EngineDidNotAsk => "engine_did_not_ask",
        }
    }

    /// Whether the policy compresses for this reason.
    pub fn compresses(self) -> bool {
        matches!(
            self,
            Why::ColdCache
                | Why::ColdCacheEarly
                | Why::WindowRequires
                | Why::PaysBack
                | Why::RatioUnknown
        )
    }
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl CachePolicy {
    /// Compress now, or hold, and why.
    pub fn decide(&self, moment: &Moment, price: &Price, ttl: Ttl) -> Why {
        let context = moment.context_tokens as f64;
        if !moment.cache_warm {
            if moment.engine_asks {
                return Why::ColdCache;
            }
            // A first call finds the cache cold too, but nothing was cached yet to lose.
            let early = self.opportunistic_ratio * moment.threshold as f64;
            if moment.calls_so_far > 0 && moment.threshold > 0 && context >= early {
                return Why::ColdCacheEarly;
            }
            return Why::EngineDidNotAsk;
        }
        if !moment.engine_asks {
            return Why::EngineDidNotAsk;
        }
        if moment.window > 0 && context >= self.window_ratio * moment.window as f64 {
            return Why::WindowRequires;
        }
        let ratio = moment.expected_ratio.unwrap_or(UNKNOWN_RATIO_BOUND);
        match (
            self.pays_back(moment, ratio, price, ttl),
            moment.expected_ratio,
        ) {
            (false, _) => Why::WouldNotPayBack,
            (true, Some(_)) => Why::PaysBack,
            (true, None) => Why::RatioUnknown,
        }
    }

    /// Whether compressing now costs less than holding. Compressing writes the smaller view
    /// `A` now where holding reads the context `C`; every call after reads `C − A` fewer
    /// tokens, until holding reaches the window's limit (at the context's pace) and compresses
    /// there: from then on both ways write and read alike (each reaches the limit once per
    /// cycle), so what compressing now buys is the reads saved until then, at most over the
    /// calls expected. It pays when `A·(w − r) < (n + 1)·(C − A)·r`, `n` those calls; without
    /// growth `n` is every call expected: `A·w + N·A·r < (N + 1)·C·r`.
    fn pays_back(&self, moment: &Moment, ratio: f64, price: &Price, ttl: Ttl) -> bool {
        let write = match ttl {
            Ttl::FiveMinutes => price.cache_write_5m,
            Ttl::OneHour => price.cache_write_1h,
        };
        let read = price.cache_read;
        let context = moment.context_tokens as f64;
        let after = context * ratio.clamp(0.0, 1.0);
        let growth = moment.growth_per_call.max(0.0);
        let calls = self.expected_calls(moment) as f64;
        let limit = self.window_ratio * moment.window as f64;
        let to_limit = if growth > 0.0 && moment.window > 0 {
            ((limit - context) / growth).ceil().max(1.0)
        } else {
            f64::INFINITY
        };
        let saving_calls = calls.min(to_limit);
        after * (write - read) < (saving_calls + 1.0) * (context - after) * read
    }

    /// The calls a session is expected to make after this one: as many as it made so far.
    fn expected_calls(&self, moment: &Moment) -> u64 {
        moment.calls_so_far.clamp(1, self.max_payback_calls.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moment() -> Moment {
        Moment {
            context_tokens: 100_000,
            window: 200_000,
            threshold: 100_000,
            engine_asks: true,
            cache_warm: true,
            expected_ratio: Some(0.3),
            calls_so_far: 10,
            growth_per_call: 0.0,
        }
    }

    const SONNET: Price = Price::anthropic(3.0, 15.0);

    /// The default policy's decision for Sonnet with a 5-minute cache.
    fn at_5m(moment: &Moment) -> Why {
        CachePolicy::default().decide(moment, &SONNET, Ttl::FiveMinutes)
    }

    /// The same with a 1-hour cache.
    fn at_1h(moment: &Moment) -> Why {
        CachePolicy::default().decide(moment, &SONNET, Ttl::OneHour)
    }

    #[test]
    fn a_cold_cache_compresses_when_asked_and_early_past_the_lower_threshold() {
        let cold = Moment {
            cache_warm: false,
            ..moment()
        };
        assert_eq!(at_5m(&cold), Why::ColdCache);
        let early = Moment {
            engine_asks: false,
            context_tokens: 50_000,
            ..cold
        };
        assert_eq!(at_5m(&early), Why::ColdCacheEarly);
        let first_call = Moment {
            calls_so_far: 0,
            ..early
        };
        assert_eq!(at_5m(&first_call), Why::EngineDidNotAsk);
        let too_small = Moment {
            context_tokens: 49_999,
            ..early
        };
        assert_eq!(at_5m(&too_small), Why::EngineDidNotAsk);
    }

    /// By hand, Sonnet (r = 0.3, w = 3.75 per million), C = 100,000, A = 30,000, N = 10:
    /// compressing costs 30,000 × 3.75 + 10 × 30,000 × 0.3 = 202,500; holding 11 × 100,000 ×
    /// 0.3 = 330,000 (millionths of a dollar): it pays. With A = 90,000: 337,500 + 270,000 =
    /// 607,500 against 330,000: it does not.
    #[test]
    fn a_warm_cache_compresses_only_when_the_rewrite_pays_back() {
        assert_eq!(at_5m(&moment()), Why::PaysBack);
        let little = Moment {
            expected_ratio: Some(0.9),
            ..moment()
        };
        assert_eq!(at_5m(&little), Why::WouldNotPayBack);
        // Near the window it compresses whatever it costs.
        let full = Moment {
            context_tokens: 170_000,
            ..little
        };
        assert_eq!(at_5m(&full), Why::WindowRequires);
        // What pays over 10 calls at no growth (A = 30,000: 30,000 × 3.45 = 103,500 against
        // 11 × 70,000 × 0.3 = 231,000) does not when the context reaches 85% of the window at
        // the next call anyway: holding reads the larger context once, then compresses there;
        // compressing now only adds a rewrite (2 × 70,000 × 0.3 = 42,000 saved).
        let at_the_limit_next = Moment {
            growth_per_call: 70_000.0,
            ..moment()
        };
        assert_eq!(at_5m(&at_the_limit_next), Why::WouldNotPayBack);
        // Five calls away: 6 × 70,000 × 0.3 = 126,000 saved, more than the rewrite.
        let five_calls_away = Moment {
            growth_per_call: 14_000.0,
            ..moment()
        };
        assert_eq!(at_5m(&five_calls_away), Why::PaysBack);
        // The engine's own rule still decides on a warm cache when it does not ask.
        let unasked = Moment {
            engine_asks: false,
            ..moment()
        };
        assert_eq!(at_5m(&unasked), Why::EngineDidNotAsk);
    }

    #[test]
    fn a_dearer_write_needs_a_longer_payback() {
        let half = Moment {
            expected_ratio: Some(0.5),
            calls_so_far: 2,
            ..moment()
        };
        // A = 50,000, N = 2: 50,000 × 3.75 + 2 × 50,000 × 0.3 = 217,500 against holding's
        // 3 × 100,000 × 0.3 = 90,000: it does not pay.
        assert_eq!(at_5m(&half), Why::WouldNotPayBack);
        let long = Moment {
            calls_so_far: 20,
            ..half
        };
        // 187,500 + 300,000 = 487,500 < 21 × 30,000 = 630,000: pays at 5m.
        assert_eq!(at_5m(&long), Why::PaysBack);
        // 1h: 300,000 + 300,000 = 600,000 < 630,000: still pays, by less.
        assert_eq!(at_1h(&long), Why::PaysBack);
        let fewer = Moment {
            calls_so_far: 15,
            ..half
        };
        // 1h: 300,000 + 225,000 = 525,000 against 16 × 30,000 = 480,000: does not pay.
        assert_eq!(at_1h(&fewer), Why::WouldNotPayBack);
        // 5m: 187,500 + 225,000 = 412,500 < 480,000: pays.
        assert_eq!(at_5m(&fewer), Why::PaysBack);
    }

    /// A small window squeezed by an engine that leaves most of the context (as the
    /// compressor does at 8,000 tokens: each compression left 85-90%, over its threshold, so
    /// it asked again at once): by hand, Sonnet, C = 4,700, the limit 6,800 (85% of 8,000),
    /// growing 500 a call, reached in 5 calls. A = 0.88·C = 4,136: its rewrite costs
    /// 4,136 × 3.45 = 14,269 more than reading; 6 calls of 564 fewer tokens save 1,015: held,
    /// until the window requires it. A = 0.33·C = 1,551: 5,351 against 6 × 3,149 × 0.3 =
    /// 5,668: it pays.
    #[test]
    fn a_compression_that_leaves_most_of_the_context_waits_for_the_window() {
        let near = Moment {
            context_tokens: 4_700,
            window: 8_000,
            threshold: 4_000,
            engine_asks: true,
            cache_warm: true,
            expected_ratio: Some(0.88),
            calls_so_far: 7,
            growth_per_call: 500.0,
        };
        assert_eq!(at_5m(&near), Why::WouldNotPayBack);
        let third = Moment {
            expected_ratio: Some(0.33),
            ..near
        };
        assert_eq!(at_5m(&third), Why::PaysBack);
    }

    /// Before a compression has shown what the engine leaves: held when even one that left
    /// half would not pay back, else the engine compresses when it asks, as with the
    /// token-only policy.
    #[test]
    fn without_a_known_ratio_the_engines_rule_stands_unless_even_half_would_not_pay() {
        let unknown = Moment {
            expected_ratio: None,
            ..moment()
        };
        // A = 50,000, N = 10: 50,000 × 3.45 = 172,500 against 11 × 50,000 × 0.3 = 165,000.
        assert_eq!(at_5m(&unknown), Why::WouldNotPayBack);
        // N = 20: 21 × 50,000 × 0.3 = 315,000 saved.
        let longer = Moment {
            calls_so_far: 20,
            ..unknown
        };
        let why = at_5m(&longer);
        assert_eq!(why, Why::RatioUnknown);
        assert!(why.compresses());
        // Known to leave 0.9, the same moment holds.
        let known = Moment {
            expected_ratio: Some(0.9),
            ..longer
        };
        assert_eq!(at_5m(&known), Why::WouldNotPayBack);
        // The window and a cold cache decide as before.
        let full = Moment {
            context_tokens: 170_000,
            ..unknown
        };
        assert_eq!(at_5m(&full), Why::WindowRequires);
        let cold = Moment {
            cache_warm: false,
            ..unknown
        };
        assert_eq!(at_5m(&cold), Why::ColdCache);
    }
}
