//! A replay's model calls priced: what each call's prompt costs with the engine's view and with
//! no engine (the whole history), each against its own simulated prompt cache, on a clock the
//! transcript's timestamps (or a pace) give.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

use ctxhost_costs::bill::Dollars;
use ctxhost_costs::cache::{Block, CacheRules, CallTokens, Ttl};
use ctxhost_costs::policy::{CachePolicy, Moment, Why};
use ctxhost_costs::price::{ModelPrice, Provider};
use ctxhost_costs::priced::PricedPrompt;
use ctxhost_sdk::{Content, Message};
use ctxhost_summarizer::usage::SummarizerUsage;
use serde::Serialize;

/// How to price a replay.
#[derive(Debug, Clone)]
pub struct Costing {
    /// The model whose prices apply.
    pub model: String,
    pub price: ModelPrice,
    /// The TTL of the cache breakpoints (Anthropic).
    pub ttl: Ttl,
    /// Seconds between two calls when the transcript does not say when they happened.
    pub pace_seconds: f64,
    /// Breaks added before given calls.
    pub pauses: Vec<Pause>,
    /// When each transcript message happened (seconds on any one clock), where the transcript
    /// says so: one entry per message, or empty.
    pub times: Vec<Option<f64>>,
    /// Compress when it pays against the cache (`None`: whenever the engine asks).
    pub policy: Option<CachePolicy>,
    /// The LLM summarizer whose own calls are priced too (`None`: the offline one, which calls
    /// no model).
    pub summarizer: Option<SummarizerPricing>,
}

/// The LLM summarizer a replay's engine summarizes with, and the price of its model.
#[derive(Debug, Clone)]
pub struct SummarizerPricing {
    /// As its description names it (`openai:gpt-4o-mini`).
    pub summarizer: String,
    /// The model its calls go to.
    pub model: String,
    /// `None`: the model has no price.
    pub price: Option<ModelPrice>,
}

/// What the summarizer's own model calls cost over a replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummarizerCost {
    pub summarizer: String,
    pub model: String,
    /// Its calls' tokens, as its provider reported them.
    pub usage: SummarizerUsage,
    /// `None` when its model has no price.
    pub dollars: Option<Dollars>,
    pub total_dollars: Option<f64>,
}

impl SummarizerCost {
    fn of(pricing: &SummarizerPricing, usage: SummarizerUsage) -> SummarizerCost {
        let tokens = CallTokens {
            uncached: usage
                .input_tokens
                .saturating_sub(usage.cache_read_tokens + usage.cache_write_tokens),
            cache_write: usage.cache_write_tokens,
            cache_read: usage.cache_read_tokens,
            output: usage.output_tokens,
        };
        // Nothing asks the summarizer's provider for a longer-lived cache.
        let dollars = pricing
            .price
            .map(|price| Dollars::of(&tokens, &price.price, Ttl::FiveMinutes));
        SummarizerCost {
            summarizer: pricing.summarizer.clone(),
            model: pricing.model.clone(),
            usage,
            dollars,
            total_dollars: dollars.map(|d| d.total()),
        }
    }
}

/// A break of `seconds` before model call `before_call` (counted from 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pause {
    pub before_call: usize,
    pub seconds: f64,
}

/// One model call's input and output, priced.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CallCost {
    /// Seconds since the first call.
    pub at_seconds: f64,
    pub engine: CallTokens,
    pub no_engine: CallTokens,
    pub engine_dollars: f64,
    pub no_engine_dollars: f64,
}

/// A session's calls added up.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Priced {
    pub tokens: CallTokens,
    pub dollars: Dollars,
    pub total_dollars: f64,
}

impl Priced {
    fn add(&mut self, tokens: CallTokens, dollars: Dollars) {
        self.tokens += tokens;
        self.dollars += dollars;
        self.total_dollars = self.dollars.total();
    }
}

/// What a replayed session cost with its engine, and with no engine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionCost {
    pub model: String,
    pub provider: Provider,
    /// Where the prices come from (`claude-sonnet- prices of 2026-03`, `prices from the config`).
    pub prices: String,
    pub cache_ttl: Ttl,
    /// Calls whose time came from the transcript (the others are `pace_seconds` apart).
    pub timed_calls: usize,
    pub pace_seconds: f64,
    pub pauses: Vec<Pause>,
    /// Seconds from the first call to the last.
    pub duration_seconds: f64,
    /// The model's calls with the engine.
    pub engine: Priced,
    pub no_engine: Priced,
    /// The LLM summarizer's own calls, when the engine summarized with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<SummarizerCost>,
    /// What the session cost with its engine: the model's calls, and the summarizer's when
    /// they have a price.
    pub engine_total_dollars: f64,
    /// What the engine saved against no engine (negative: it cost more).
    pub saving_dollars: f64,
    /// The saving as a share of no engine's cost, in per cent.
    pub saving_percent: f64,
    /// Whether compressions waited for the cache (`false`: whenever the engine asked).
    pub cache_aware: bool,
    /// The cache-aware policy's decisions by reason (`pays_back`, `would_not_pay_back`, ...),
    /// counted at each call where the engine asked or the cache was cold.
    pub decisions: BTreeMap<&'static str, u64>,
    pub calls: Vec<CallCost>,
}

/// Follows a replay: the engine's view and the whole history as the provider's caches see them.
pub(crate) struct Meter<'a> {
    costing: &'a Costing,
    rules: CacheRules,
    /// The engine's view, and the whole history, as the provider's cache sees them.
    view: PricedPrompt,
    history: PricedPrompt,
    /// Content hashes by message stamp: a message is hashed once however often it is sent.
    keys: HashMap<ctxhost_sdk::Stamp, u64>,
    clock: Clock,
    /// The time of the call being made.
    at: f64,
    decisions: BTreeMap<&'static str, u64>,
    calls: Vec<CallCost>,
    engine: Priced,
    no_engine: Priced,
}

/// The time of each call.
struct Clock {
    /// Seconds since the first call, as of the last one.
    now: Option<f64>,
    /// The transcript's time of the first timed call, and the clock's then.
    origin: Option<(f64, f64)>,
    /// Pauses added so far.
    paused: f64,
    timed: usize,
}

impl Clock {
    /// The time of call `call` (from 1), whose message happened at `time` if known.
    fn tick(&mut self, call: usize, time: Option<f64>, costing: &Costing) -> f64 {
        self.paused += costing
            .pauses
            .iter()
            .filter(|pause| pause.before_call == call)
            .map(|pause| pause.seconds)
            .sum::<f64>();
        let paced = self.now.map_or(0.0, |now| now + costing.pace_seconds);
        let at = match (time, self.origin) {
            (Some(time), Some((first, clock_then))) => {
                self.timed += 1;
                // Never backwards: a clock set back on the recording machine is not a pause.
                (clock_then + (time - first)).max(self.now.unwrap_or(0.0))
            }
            (Some(time), None) => {
                self.timed += 1;
                let at = self.now.map_or(0.0, |_| paced);
                self.origin = Some((time, at));
                at
            }
            (None, _) => paced,
        };
        // Pauses shift this call and every later one.
        let at_paused = at + self.paused;
        self.now = Some(at);
        at_paused
    }
}

/// A hash of what the provider reads of `message`: its role, content, tool calls and the
/// ids that tie results to calls (not the extra fields a transcript carries along).
fn content_key(message: &Message) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    message.role().hash(&mut hasher);
    match message.content() {
        Content::Absent => 0u8.hash(&mut hasher),
        Content::Null => 1u8.hash(&mut hasher),
        Content::Text(text) => (2u8, text.as_str()).hash(&mut hasher),
        Content::Json(json) => (3u8, json.as_str()).hash(&mut hasher),
    }
    for call in message.tool_calls() {
        (call.id(), call.name(), call.arguments()).hash(&mut hasher);
    }
    message.tool_call_id().hash(&mut hasher);
    message.name().hash(&mut hasher);
    hasher.finish()
}

impl<'a> Meter<'a> {
    pub(crate) fn new(costing: &'a Costing) -> Meter<'a> {
        let rules = CacheRules::for_model(&costing.price, costing.ttl);
        Meter {
            costing,
            rules,
            view: PricedPrompt::default(),
            history: PricedPrompt::default(),
            keys: HashMap::new(),
            clock: Clock {
                now: None,
                origin: None,
                paused: 0.0,
                timed: 0,
            },
            at: 0.0,
            decisions: BTreeMap::new(),
            calls: Vec::new(),
            engine: Priced::default(),
            no_engine: Priced::default(),
        }
    }

    fn block(&mut self, message: &Message, tokens: u64) -> Block {
        let key = *self
            .keys
            .entry(message.stamp())
            .or_insert_with(|| content_key(message));
        Block { key, tokens }
    }

    /// `message` joined the conversation: the view and the history both end with it.
    pub(crate) fn appended(&mut self, message: &Message, tokens: u64) {
        let block = self.block(message, tokens);
        self.view.push(block);
        self.history.push(block);
    }

    /// The engine replaced its view.
    pub(crate) fn view_replaced(&mut self, view: &[Message], count: impl Fn(&Message) -> u64) {
        let blocks: Vec<Block> = view
            .iter()
            .map(|message| self.block(message, count(message)))
            .collect();
        self.view.replace(blocks);
    }

    /// Model call `call` (from 1) is about to be made for the transcript's message `index`.
    pub(crate) fn begin_call(&mut self, call: usize, index: usize) {
        let time = self.costing.times.get(index).copied().flatten();
        self.at = self.clock.tick(call, time, self.costing);
    }

    /// Whether to compress before the call begun, by the cache-aware policy (`None`: there is
    /// none, the engine's answer stands). Counted unless the engine did not ask and the cache
    /// was warm.
    pub(crate) fn decide(&mut self, moment: Moment) -> Option<Why> {
        let policy = self.costing.policy?;
        let moment = Moment {
            cache_warm: self.view.is_warm(self.at),
            ..moment
        };
        let why = policy.decide(&moment, &self.costing.price.price, self.rules.ttl());
        if why != Why::EngineDidNotAsk {
            *self.decisions.entry(why.name()).or_default() += 1;
        }
        Some(why)
    }

    /// The call begun goes out, answered with `output` tokens.
    pub(crate) fn call(&mut self, output: u64) {
        let at = self.at;
        let price = &self.costing.price.price;
        let (engine, engine_dollars) = self.view.send(at, output, self.rules, price);
        let (no_engine, no_engine_dollars) = self.history.send(at, output, self.rules, price);
        self.engine.add(engine, engine_dollars);
        self.no_engine.add(no_engine, no_engine_dollars);
        self.calls.push(CallCost {
            at_seconds: at,
            engine,
            no_engine,
            engine_dollars: engine_dollars.total(),
            no_engine_dollars: no_engine_dollars.total(),
        });
    }

    /// The replay is over; `summarizer` is what the summarizer's calls used during it.
    pub(crate) fn finish(self, summarizer: SummarizerUsage) -> SessionCost {
        let summarizer = self
            .costing
            .summarizer
            .as_ref()
            .map(|pricing| SummarizerCost::of(pricing, summarizer));
        let engine_total_dollars = self.engine.total_dollars
            + summarizer
                .as_ref()
                .and_then(|cost| cost.total_dollars)
                .unwrap_or(0.0);
        let saving_dollars = self.no_engine.total_dollars - engine_total_dollars;
        let saving_percent = if self.no_engine.total_dollars > 0.0 {
            saving_dollars / self.no_engine.total_dollars * 100.0
        } else {
            0.0
        };
        SessionCost {
            model: self.costing.model.clone(),
            provider: self.costing.price.provider,
            prices: self.costing.price.source.to_string(),
            cache_ttl: self.rules.ttl(),
            timed_calls: self.clock.timed,
            pace_seconds: self.costing.pace_seconds,
            pauses: self.costing.pauses.clone(),
            duration_seconds: self.calls.last().map_or(0.0, |c| c.at_seconds),
            engine: self.engine,
            no_engine: self.no_engine,
            summarizer,
            engine_total_dollars,
            saving_dollars,
            saving_percent,
            cache_aware: self.costing.policy.is_some(),
            decisions: self.decisions,
            calls: self.calls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_costs::price::price_of;

    fn costing(model: &str, times: Vec<Option<f64>>, pauses: Vec<Pause>) -> Costing {
        Costing {
            model: model.to_string(),
            price: price_of(model, None).unwrap(),
            ttl: Ttl::FiveMinutes,
            pace_seconds: 10.0,
            pauses,
            times,
            policy: None,
            summarizer: None,
        }
    }

    #[test]
    fn calls_follow_the_transcripts_clock_then_the_pace_and_pauses_shift_later_calls() {
        let costing = costing(
            "claude-sonnet-4-5",
            vec![None, Some(1000.0), None, Some(1400.0), None],
            vec![Pause {
                before_call: 3,
                seconds: 600.0,
            }],
        );
        let mut clock = Clock {
            now: None,
            origin: None,
            paused: 0.0,
            timed: 0,
        };
        assert_eq!(clock.tick(1, costing.times[0], &costing), 0.0);
        // The first timed call sets the origin: paced from the call before.
        assert_eq!(clock.tick(2, costing.times[1], &costing), 10.0);
        // Untimed: paced, plus the 600 s pause before call 3.
        assert_eq!(clock.tick(3, costing.times[2], &costing), 620.0);
        // Timed again: 400 s after the first timed call, and the pause still counts.
        assert_eq!(clock.tick(4, costing.times[3], &costing), 1010.0);
        assert_eq!(clock.tick(5, costing.times[4], &costing), 1020.0);
        assert_eq!(clock.timed, 2);
    }

    #[test]
    fn the_same_content_has_the_same_key_and_extra_fields_do_not_count() {
        let a = Message::user("hello");
        let mut b = Message::user("hello");
        b.set_extra_field("timestamp", Some(serde_json::json!("2026-01-01T00:00:00Z")));
        assert_eq!(content_key(&a), content_key(&b));
        assert_ne!(content_key(&a), content_key(&Message::user("hello!")));
        assert_ne!(content_key(&a), content_key(&Message::assistant("hello")));
    }

    #[test]
    fn a_compression_rewrites_the_cached_view_and_no_engine_keeps_reading() {
        let costing = costing("claude-sonnet-4-5", Vec::new(), Vec::new());
        let mut meter = Meter::new(&costing);
        let system = Message::system("s");
        meter.appended(&system, 2000);
        for call in 1..=3 {
            let user = Message::user(format!("question {call}"));
            meter.appended(&user, 600);
            meter.begin_call(call, 0);
            meter.call(50);
            meter.appended(&Message::assistant(format!("answer {call}")), 50);
        }
        // The engine keeps the system prompt and a summary of 500 tokens.
        let summary = Message::user("summary");
        meter.view_replaced(&[system.clone(), summary.clone()], |m| {
            if m.is_system() {
                2000
            } else {
                500
            }
        });
        meter.appended(&Message::user("question 4"), 600);
        meter.begin_call(4, 0);
        meter.call(50);
        let cost = meter.finish(SummarizerUsage::default());
        let last = cost.calls[3];
        // The engine reads the system prompt, writes the summary and the question.
        assert_eq!(last.engine.cache_read, 2000);
        assert_eq!(last.engine.cache_write, 1100);
        // No engine reads what it sent at call 3 and writes the answer to it and the question.
        assert_eq!(last.no_engine.cache_read, 2000 + 3 * 600 + 2 * 50);
        assert_eq!(last.no_engine.cache_write, 650);
        assert_eq!(cost.engine.tokens.output, 200);
        let expected = cost.no_engine.total_dollars - cost.engine.total_dollars;
        assert!((cost.saving_dollars - expected).abs() < 1e-12);
    }

    /// By hand, gpt-4o-mini ($0.15 input, $0.075 cached, $0.60 output per million): 10,000 in
    /// (2,048 of them cached) and 1,000 out.
    #[test]
    fn the_summarizers_calls_are_priced_by_its_model_and_counted_against_the_saving() {
        let mut costing = costing("claude-sonnet-4-5", Vec::new(), Vec::new());
        costing.summarizer = Some(SummarizerPricing {
            summarizer: "openai:gpt-4o-mini".to_string(),
            model: "gpt-4o-mini".to_string(),
            price: price_of("gpt-4o-mini", None),
        });
        let mut meter = Meter::new(&costing);
        meter.appended(&Message::user("question"), 2_000);
        meter.begin_call(1, 0);
        meter.call(100);
        let usage = SummarizerUsage {
            calls: 2,
            input_tokens: 10_000,
            cache_read_tokens: 2_048,
            cache_write_tokens: 0,
            output_tokens: 1_000,
        };
        let cost = meter.finish(usage);
        let summarizer = cost.summarizer.as_ref().unwrap();
        let by_hand = (7_952.0 * 0.15 + 2_048.0 * 0.075 + 1_000.0 * 0.6) / 1e6;
        assert!((summarizer.total_dollars.unwrap() - by_hand).abs() < 1e-12);
        let with_engine = cost.engine.total_dollars + by_hand;
        assert!((cost.engine_total_dollars - with_engine).abs() < 1e-12);
        let saving = cost.no_engine.total_dollars - with_engine;
        assert!((cost.saving_dollars - saving).abs() < 1e-12);
        // A model without a price: its tokens, no dollars, nothing added.
        costing.summarizer.as_mut().unwrap().price = None;
        let mut meter = Meter::new(&costing);
        meter.appended(&Message::user("question"), 2_000);
        meter.begin_call(1, 0);
        meter.call(100);
        let cost = meter.finish(usage);
        assert_eq!(cost.summarizer.as_ref().unwrap().total_dollars, None);
        assert_eq!(cost.engine_total_dollars, cost.engine.total_dollars);
    }
}
