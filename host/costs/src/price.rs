//! What a model's tokens cost, per provider and model: the table of known prices and the
//! overrides a config gives.

use serde::{Deserialize, Serialize};

/// The provider whose billing and prompt cache a model follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Explicit `cache_control` breakpoints; cache writes cost more than input.
    Anthropic,
    /// Automatic prefix caching; cache writes cost what input costs.
    #[serde(rename = "openai")]
    OpenAi,
}

impl Provider {
    /// The provider a model's name says (`claude-...` is Anthropic's, `gpt-...`, `o1`-`o4` and
    /// `codex-...` OpenAI's), ignoring a router's `vendor/` prefix.
    pub fn of_model(model: &str) -> Option<Provider> {
        let bare = bare(model);
        if bare.starts_with("claude") {
            return Some(Provider::Anthropic);
        }
        let openai = ["gpt-", "o1", "o3", "o4", "codex-", "chatgpt-"];
        openai
            .iter()
            .any(|prefix| bare.starts_with(prefix))
            .then_some(Provider::OpenAi)
    }

    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Dollars per one million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input read from no cache.
    pub input: f64,
    /// Input read from the cache (Anthropic: 0.1x input; OpenAI: 10-50% of input).
    pub cache_read: f64,
    /// Input written to a cache that lives 5 minutes (Anthropic: 1.25x input; OpenAI: input).
    pub cache_write_5m: f64,
    /// Input written to a cache that lives 1 hour (Anthropic: 2x input; OpenAI: input).
    pub cache_write_1h: f64,
    pub output: f64,
}

impl Price {
    /// Anthropic's price for a model whose input costs `input` and output `output`: its cache
    /// multipliers are the same for every model (reads 0.1x, 5-minute writes 1.25x, 1-hour
    /// writes 2x: <https://docs.anthropic.com/en/docs/about-claude/pricing>).
    pub const fn anthropic(input: f64, output: f64) -> Price {
        Price {
            input,
            cache_read: input * 0.1,
            cache_write_5m: input * 1.25,
            cache_write_1h: input * 2.0,
            output,
        }
    }

    /// OpenAI's price: writing the cache is free (it costs what input costs), reading costs
    /// `cached` (<https://platform.openai.com/docs/pricing>).
    pub const fn openai(input: f64, cached: f64, output: f64) -> Price {
        Price {
            input,
            cache_read: cached,
            cache_write_5m: input,
            cache_write_1h: input,
            output,
        }
    }

    /// The first field that is negative or not a number, by name.
    pub fn invalid_field(&self) -> Option<&'static str> {
        [
            ("input", self.input),
            ("cache_read", self.cache_read),
            ("cache_write_5m", self.cache_write_5m),
            ("cache_write_1h", self.cache_write_1h),
            ("output", self.output),
        ]
        .into_iter()
        .find(|(_, value)| !value.is_finite() || *value < 0.0)
        .map(|(name, _)| name)
    }
}

/// A model's price as ctxhost found it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModelPrice {
    pub provider: Provider,
    pub price: Price,
    /// The fewest tokens a prefix must hold for the provider to cache it.
    pub min_cacheable_tokens: u64,
    /// Where the price comes from: the table entry (`claude-sonnet-4`) or `config`.
    pub source: PriceSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceSource {
    /// The built-in table: the entry's model prefix and the month its prices were taken.
    Table {
        prefix: &'static str,
        taken: &'static str,
    },
    /// `serve.models.<name>.price` in the config.
    Config,
}

impl std::fmt::Display for PriceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PriceSource::Table { prefix, taken } => {
                write!(f, "{prefix} prices of {taken}")
            }
            PriceSource::Config => f.write_str("prices from the config"),
        }
    }
}

struct Known {
    prefix: &'static str,
    provider: Provider,
    price: Price,
    min_cacheable_tokens: u64,
    taken: &'static str,
}

const fn anthropic(prefix: &'static str, input: f64, output: f64, min: u64) -> Known {
    Known {
        prefix,
        provider: Provider::Anthropic,
        price: Price::anthropic(input, output),
        min_cacheable_tokens: min,
        taken: ANTHROPIC_TAKEN,
    }
}

const fn openai(prefix: &'static str, input: f64, cached: f64, output: f64) -> Known {
    Known {
        prefix,
        provider: Provider::OpenAi,
        price: Price::openai(input, cached, output),
        min_cacheable_tokens: OPENAI_MIN_CACHEABLE,
        taken: OPENAI_TAKEN,
    }
}

/// Anthropic's list prices as its pricing page gave them
/// (<https://docs.anthropic.com/en/docs/about-claude/pricing>); minimum cacheable lengths from
/// its prompt-caching guide
/// (<https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#cache-limitations>).
const ANTHROPIC_TAKEN: &str = "2026-03";
/// OpenAI's list prices (<https://platform.openai.com/docs/pricing>).
const OPENAI_TAKEN: &str = "2026-03";
/// OpenAI caches prompts of 1,024 tokens and more
/// (<https://platform.openai.com/docs/guides/prompt-caching>).
pub const OPENAI_MIN_CACHEABLE: u64 = 1024;

/// Known prices by model-name prefix: the longest matching prefix wins, so a family's entry
/// (`claude-sonnet-`) prices the versions the table does not name yet.
const KNOWN: &[Known] = &[
    anthropic("claude-opus-", 5.0, 25.0, 4096),
    anthropic("claude-opus-4-6", 5.0, 25.0, 4096),
    anthropic("claude-opus-4-5", 5.0, 25.0, 4096),
    anthropic("claude-opus-4-1", 15.0, 75.0, 1024),
    anthropic("claude-opus-4-0", 15.0, 75.0, 1024),
    // Opus 4.0's dated name (`claude-opus-4-20250514`).
    anthropic("claude-opus-4-2025", 15.0, 75.0, 1024),
    anthropic("claude-3-opus", 15.0, 75.0, 1024),
    anthropic("claude-sonnet-", 3.0, 15.0, 1024),
    anthropic("claude-3-7-sonnet", 3.0, 15.0, 1024),
    anthropic("claude-3-5-sonnet", 3.0, 15.0, 1024),
    anthropic("claude-haiku-", 1.0, 5.0, 4096),
    anthropic("claude-3-5-haiku", 0.8, 4.0, 2048),
    anthropic("claude-3-haiku", 0.25, 1.25, 2048),
    openai("gpt-5", 1.25, 0.125, 10.0),
    openai("gpt-5-mini", 0.25, 0.025, 2.0),
    openai("gpt-5-nano", 0.05, 0.005, 0.4),
    openai("gpt-5.1", 1.25, 0.125, 10.0),
    openai("gpt-5.1-codex-mini", 0.25, 0.025, 2.0),
    openai("gpt-5.2", 1.75, 0.175, 14.0),
    openai("gpt-5.4", 2.5, 0.25, 15.0),
    openai("gpt-4.1", 2.0, 0.5, 8.0),
    openai("gpt-4.1-mini", 0.4, 0.1, 1.6),
    openai("gpt-4.1-nano", 0.1, 0.025, 0.4),
    openai("gpt-4o", 2.5, 1.25, 10.0),
    openai("gpt-4o-mini", 0.15, 0.075, 0.6),
    openai("o3", 2.0, 0.5, 8.0),
    openai("o4-mini", 1.1, 0.275, 4.4),
    openai("codex-mini", 1.5, 0.375, 6.0),
];

/// `model` without a router's `vendor/` prefix, lower-cased.
fn bare(model: &str) -> String {
    model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase()
}

/// The price of `model`: `configured` (the config's override) first, then the built-in table.
pub fn price_of(model: &str, configured: Option<ConfiguredPrice>) -> Option<ModelPrice> {
    let bare = bare(model);
    let known = KNOWN
        .iter()
        .filter(|known| bare.starts_with(known.prefix))
        .max_by_key(|known| known.prefix.len());
    if let Some(configured) = configured {
        let provider = configured
            .provider
            .or_else(|| Provider::of_model(model))
            .or(known.map(|k| k.provider))?;
        let min_cacheable_tokens = match (known, provider) {
            (Some(known), _) if known.provider == provider => known.min_cacheable_tokens,
            (_, Provider::OpenAi) => OPENAI_MIN_CACHEABLE,
            (_, Provider::Anthropic) => 1024,
        };
        return Some(ModelPrice {
            provider,
            price: configured.price.resolve(provider),
            min_cacheable_tokens,
            source: PriceSource::Config,
        });
    }
    known.map(|known| ModelPrice {
        provider: known.provider,
        price: known.price,
        min_cacheable_tokens: known.min_cacheable_tokens,
        source: PriceSource::Table {
            prefix: known.prefix,
            taken: known.taken,
        },
    })
}

/// `serve.models.<name>.price` as the config writes it: input, cache reads and output are
/// required; cache writes default to the provider's rule (Anthropic 1.25x and 2x input,
/// OpenAI the input price).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceSetting {
    pub input: f64,
    pub cache_read: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_5m: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<f64>,
    pub output: f64,
}

impl PriceSetting {
    /// The full price, cache writes filled in by `provider`'s rule where not given.
    pub fn resolve(&self, provider: Provider) -> Price {
        let (five, hour) = match provider {
            Provider::Anthropic => (self.input * 1.25, self.input * 2.0),
            Provider::OpenAi => (self.input, self.input),
        };
        Price {
            input: self.input,
            cache_read: self.cache_read,
            cache_write_5m: self.cache_write_5m.unwrap_or(five),
            cache_write_1h: self.cache_write_1h.unwrap_or(hour),
            output: self.output,
        }
    }

    /// The first field that is negative or not a number, by name.
    pub fn invalid_field(&self) -> Option<&'static str> {
        self.resolve(Provider::OpenAi).invalid_field().or_else(|| {
            [
                ("cache_write_5m", self.cache_write_5m),
                ("cache_write_1h", self.cache_write_1h),
            ]
            .into_iter()
            .find(|(_, value)| value.is_some_and(|v| !v.is_finite() || v < 0.0))
            .map(|(name, _)| name)
        })
    }
}

/// A price the config gives for one model (`serve.models.<name>.price`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfiguredPrice {
    pub price: PriceSetting,
    /// Whose cache the model follows; from its name when the config does not say.
    pub provider: Option<Provider>,
}

/// A session's price: resolved for its model once (a lookup lower-cases the name and scans the
/// table), again only when the session's model changes.
#[derive(Debug, Clone, Default)]
pub struct SessionPrice {
    /// The model the price was resolved for, and what it resolved to.
    resolved: Option<(String, Option<ModelPrice>)>,
}

impl SessionPrice {
    /// The price of `model`: the one resolved before when the model is the same, else
    /// [`price_of`] with what `configured` gives for it.
    pub fn of(
        &mut self,
        model: &str,
        configured: impl FnOnce() -> Option<ConfiguredPrice>,
    ) -> Option<ModelPrice> {
        match &self.resolved {
            Some((resolved, price)) if resolved == model => *price,
            _ => {
                let price = price_of(model, configured());
                self.resolved = Some((model.to_string(), price));
                price
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(input: f64, cache_read: f64, output: f64) -> PriceSetting {
        PriceSetting {
            input,
            cache_read,
            cache_write_5m: None,
            cache_write_1h: None,
            output,
        }
    }

    fn table(model: &str) -> ModelPrice {
        price_of(model, None).unwrap_or_else(|| panic!("{model} has a price"))
    }

    #[test]
    fn the_longest_prefix_prices_a_model() {
        assert_eq!(table("claude-opus-4-5-20251101").price.input, 5.0);
        assert_eq!(table("claude-opus-4-1-20250805").price.input, 15.0);
        assert_eq!(table("claude-opus-4-20250514").price.input, 15.0);
        assert_eq!(table("claude-sonnet-4-5").price.output, 15.0);
        assert_eq!(table("claude-3-5-haiku-latest").price.input, 0.8);
        assert_eq!(table("gpt-4o-mini-2024-07-18").price.input, 0.15);
        assert_eq!(table("gpt-4o").price.cache_read, 1.25);
        assert_eq!(table("openai/gpt-5-mini").price.output, 2.0);
        assert_eq!(table("gpt-5.1-codex").price.input, 1.25);
        assert!(price_of("llama-3-70b", None).is_none());
    }

    #[test]
    fn anthropics_cache_multipliers_hold_for_every_claude_entry() {
        for known in KNOWN.iter().filter(|k| k.provider == Provider::Anthropic) {
            let p = known.price;
            assert!(
                (p.cache_read - p.input * 0.1).abs() < 1e-12,
                "{}",
                known.prefix
            );
            assert!((p.cache_write_5m - p.input * 1.25).abs() < 1e-12);
            assert!((p.cache_write_1h - p.input * 2.0).abs() < 1e-12);
            assert!(known.min_cacheable_tokens >= 1024);
        }
        let sonnet = table("claude-sonnet-4-5");
        assert_eq!(sonnet.price.cache_write_5m, 3.75);
        assert_eq!(sonnet.price.cache_write_1h, 6.0);
        assert!((sonnet.price.cache_read - 0.3).abs() < 1e-12);
    }

    #[test]
    fn every_entry_is_a_valid_price_and_says_when_it_was_taken() {
        for known in KNOWN {
            assert_eq!(known.price.invalid_field(), None, "{}", known.prefix);
            assert!(
                known.price.cache_read <= known.price.input,
                "{}",
                known.prefix
            );
            assert_eq!(known.taken.len(), 7, "{}", known.prefix);
            assert_eq!(Provider::of_model(known.prefix), Some(known.provider));
        }
    }

    #[test]
    fn a_configured_price_wins_and_keeps_the_models_cache_rules() {
        let configured = ConfiguredPrice {
            price: setting(2.0, 0.2, 10.0),
            provider: None,
        };
        let found = price_of("claude-haiku-4-5", Some(configured)).unwrap();
        assert_eq!(found.price.input, 2.0);
        // Anthropic's write multipliers fill what the config leaves out.
        assert_eq!(found.price.cache_write_5m, 2.5);
        assert_eq!(found.price.cache_write_1h, 4.0);
        assert_eq!(found.source, PriceSource::Config);
        assert_eq!(found.min_cacheable_tokens, 4096);
        // A model no table knows needs its provider said, or a name that says it.
        let own = ConfiguredPrice {
            price: setting(1.0, 0.5, 2.0),
            provider: None,
        };
        assert_eq!(price_of("my-finetune", Some(own)), None);
        let said = ConfiguredPrice {
            provider: Some(Provider::OpenAi),
            ..own
        };
        let found = price_of("my-finetune", Some(said)).unwrap();
        assert_eq!(found.min_cacheable_tokens, OPENAI_MIN_CACHEABLE);
        assert_eq!(found.price.cache_write_5m, 1.0);
    }

    #[test]
    fn a_negative_or_missing_number_is_named() {
        let mut price = Price::openai(1.0, 0.1, 2.0);
        price.output = -1.0;
        assert_eq!(price.invalid_field(), Some("output"));
        price.output = f64::NAN;
        assert_eq!(price.invalid_field(), Some("output"));
        let mut setting = setting(1.0, 0.1, 2.0);
        assert_eq!(setting.invalid_field(), None);
        setting.cache_write_1h = Some(-2.0);
        assert_eq!(setting.invalid_field(), Some("cache_write_1h"));
    }

    #[test]
    fn a_sessions_price_is_resolved_again_only_when_its_model_changes() {
        let mut price = SessionPrice::default();
        let mut asked = 0;
        let mut of = |price: &mut SessionPrice, model: &str| {
            price.of(model, || {
                asked += 1;
                None
            })
        };
        let sonnet = of(&mut price, "claude-sonnet-4-5");
        assert_eq!(sonnet, price_of("claude-sonnet-4-5", None));
        assert_eq!(of(&mut price, "claude-sonnet-4-5"), sonnet);
        let gpt = of(&mut price, "gpt-5");
        assert_eq!(gpt.map(|p| p.provider), Some(Provider::OpenAi));
        // A model without a price is remembered as having none.
        assert_eq!(of(&mut price, "llama-3-70b"), None);
        assert_eq!(of(&mut price, "llama-3-70b"), None);
        assert_eq!(asked, 3, "once per model change");
    }
}
