//! A simulation of a provider's prompt cache: for each model call, which tokens of its prompt
//! are read from the cache, which are written to it, and which are neither.
//!
//! A prompt is a list of [`Block`]s (the messages the provider reads, each a hash of its
//! content and its token count). Caches hold prefixes: a block's prefix is itself and every
//! block before it, so a compression that rewrites the middle of a conversation leaves its
//! head cached and writes the rest again.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::price::{ModelPrice, Provider};

/// One message of a prompt as the cache sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Block {
    /// A hash of everything the provider reads of the message (two messages with the same key
    /// are the same to the cache).
    pub key: u64,
    pub tokens: u64,
}

/// How long an Anthropic cache entry lives after its last write or hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Ttl {
    /// `cache_control: {"type": "ephemeral"}`, the default.
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// `cache_control: {"type": "ephemeral", "ttl": "1h"}`.
    #[serde(rename = "1h")]
    OneHour,
}

impl Ttl {
    pub fn seconds(self) -> f64 {
        match self {
            Ttl::FiveMinutes => 300.0,
            Ttl::OneHour => 3600.0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Ttl::FiveMinutes => "5m",
            Ttl::OneHour => "1h",
        }
    }
}

impl std::str::FromStr for Ttl {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "5m" => Ok(Ttl::FiveMinutes),
            "1h" => Ok(Ttl::OneHour),
            other => Err(format!("`{other}` is not a cache TTL: use 5m or 1h")),
        }
    }
}

/// Anthropic looks for an earlier cache entry at most this many blocks before a breakpoint
/// (<https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching>, "the system
/// automatically checks for cache hits at all previous content block boundaries (up to
/// approximately 20 blocks before your explicit breakpoint)"). ctxhost counts messages as
/// blocks.
pub const ANTHROPIC_LOOKBACK_BLOCKS: usize = 20;
/// At most this many `cache_control` breakpoints per request (same page).
pub const ANTHROPIC_MAX_BREAKPOINTS: usize = 4;
/// OpenAI caches a prompt's prefix in steps of this many tokens past the first 1,024
/// (<https://platform.openai.com/docs/guides/prompt-caching>: "cache hits occur in
/// increments of 128 tokens").
pub const OPENAI_CACHE_STEP: u64 = 128;
/// OpenAI clears a prefix after "5 to 10 minutes of inactivity" (same page); ctxhost takes
/// the shorter, so it never promises a read that may not happen.
pub const OPENAI_IDLE_EXPIRY_SECONDS: f64 = 300.0;

/// How a provider caches prompts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CacheRules {
    /// Prefixes up to explicit breakpoints are written (at a premium) and read back while
    /// they live; every hit refreshes the entry's TTL.
    Anthropic { ttl: Ttl, min_tokens: u64 },
    /// Every prompt of at least `min_tokens` is cached whole, for free; a later prompt reads
    /// the longest cached prefix, rounded down to `min_tokens` plus 128-token steps.
    OpenAi {
        idle_expiry_seconds: f64,
        min_tokens: u64,
    },
}

impl CacheRules {
    /// The rules of `model`'s provider; `ttl` is what the gateway's breakpoints ask
    /// (Anthropic only).
    pub fn for_model(model: &ModelPrice, ttl: Ttl) -> CacheRules {
        match model.provider {
            Provider::Anthropic => CacheRules::Anthropic {
                ttl,
                min_tokens: model.min_cacheable_tokens,
            },
            Provider::OpenAi => CacheRules::OpenAi {
                idle_expiry_seconds: OPENAI_IDLE_EXPIRY_SECONDS,
                min_tokens: model.min_cacheable_tokens,
            },
        }
    }

    /// How long an unused entry lives.
    pub fn lifetime_seconds(&self) -> f64 {
        match self {
            CacheRules::Anthropic { ttl, .. } => ttl.seconds(),
            CacheRules::OpenAi {
                idle_expiry_seconds,
                ..
            } => *idle_expiry_seconds,
        }
    }

    /// Tokens written to the cache are billed at this TTL's write price.
    pub fn ttl(&self) -> Ttl {
        match self {
            CacheRules::Anthropic { ttl, .. } => *ttl,
            CacheRules::OpenAi { .. } => Ttl::FiveMinutes,
        }
    }
}

/// The input tokens of one model call by how the provider bills them, and its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct CallTokens {
    /// Read from no cache, written to none.
    pub uncached: u64,
    pub cache_write: u64,
    pub cache_read: u64,
    pub output: u64,
}

impl CallTokens {
    pub fn input(&self) -> u64 {
        self.uncached + self.cache_write + self.cache_read
    }
}

impl std::ops::AddAssign for CallTokens {
    fn add_assign(&mut self, other: CallTokens) {
        self.uncached += other.uncached;
        self.cache_write += other.cache_write;
        self.cache_read += other.cache_read;
        self.output += other.output;
    }
}

/// A prompt as the cache sees it: its blocks, and each block's prefix (its hash and tokens)
/// kept as blocks are added, so a call hashes only what is new since the last.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    blocks: Vec<Block>,
    prefixes: Vec<(u64, u64)>,
}

/// The hash of the empty prefix.
const PREFIX_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

impl Prompt {
    pub fn push(&mut self, block: Block) {
        let (hash, tokens) = self.prefixes.last().copied().unwrap_or((PREFIX_SEED, 0));
        let hash = (hash.rotate_left(5) ^ block.key).wrapping_mul(0x517c_c1b7_2722_0a95);
        self.prefixes.push((hash, tokens + block.tokens));
        self.blocks.push(block);
    }

    /// The prompt becomes `blocks`.
    pub fn replace(&mut self, blocks: impl IntoIterator<Item = Block>) {
        self.clear();
        for block in blocks {
            self.push(block);
        }
    }

    pub fn clear(&mut self) {
        self.blocks.clear();
        self.prefixes.clear();
    }

    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The first `blocks` blocks, as a prompt of their own.
    pub fn head(&self, blocks: usize) -> Prompt {
        let blocks = blocks.min(self.len());
        Prompt {
            blocks: self.blocks[..blocks].to_vec(),
            prefixes: self.prefixes[..blocks].to_vec(),
        }
    }
}

impl FromIterator<Block> for Prompt {
    fn from_iter<I: IntoIterator<Item = Block>>(blocks: I) -> Prompt {
        let mut prompt = Prompt::default();
        prompt.replace(blocks);
        prompt
    }
}

/// One provider's cache for one conversation.
///
/// Every entry belongs to a *run*: the entries one send wrote or read, and (OpenAI) those of
/// the sends that extended it since. A run has one expiry, so a prompt that extends the last
/// one refreshes every prefix it shares with it by moving that run's expiry, and writes only
/// its new prefixes: a call costs what it adds, not the whole conversation again.
#[derive(Debug, Clone)]
pub struct PromptCache {
    rules: CacheRules,
    /// Cached prefixes by their hash: the run each belongs to (an index into `runs`).
    entries: HashMap<u64, usize>,
    /// When each run's entries expire (seconds on the caller's clock).
    runs: Vec<f64>,
    /// The last prompt sent (OpenAI), whose prefixes all belong to its run.
    last: Option<LastSent>,
}

/// The last prompt an OpenAI cache was sent: a prompt whose prefix of `blocks` blocks hashes to
/// `hash` extends it.
#[derive(Debug, Clone, Copy)]
struct LastSent {
    blocks: usize,
    hash: u64,
    run: usize,
}

impl PromptCache {
    pub fn new(rules: CacheRules) -> PromptCache {
        PromptCache {
            rules,
            entries: HashMap::new(),
            runs: Vec::new(),
            last: None,
        }
    }

    pub fn rules(&self) -> &CacheRules {
        &self.rules
    }

    fn live(&self, key: u64, at: f64) -> bool {
        self.entries
            .get(&key)
            .is_some_and(|run| at <= self.runs[*run])
    }

    /// A run of entries that expire at `expires`.
    fn new_run(&mut self, expires: f64) -> usize {
        self.runs.push(expires);
        self.runs.len() - 1
    }

    /// Drops what can never be read again at `at` or later: expired entries once they
    /// outnumber what a prompt of `blocks` blocks could use, and runs no entry belongs to.
    fn prune(&mut self, at: f64, blocks: usize) {
        let limit = 4 * blocks.max(64);
        if self.entries.len() > limit {
            let runs = &self.runs;
            self.entries.retain(|_, run| at <= runs[*run]);
            // Its entries are gone: the next prompt is written whole.
            self.last = self.last.filter(|last| at <= runs[last.run]);
        }
        if self.runs.len() <= limit.max(2 * self.entries.len()) {
            return;
        }
        let old = std::mem::take(&mut self.runs);
        let mut renumbered: HashMap<usize, usize> = HashMap::new();
        for run in self.entries.values_mut() {
            *run = *renumbered.entry(*run).or_insert_with(|| {
                self.runs.push(old[*run]);
                self.runs.len() - 1
            });
        }
        self.last = self.last.and_then(|last| {
            let run = *renumbered.get(&last.run)?;
            Some(LastSent { run, ..last })
        });
    }

    /// Whether any prefix of `prompt` would be read from the cache at `at`.
    pub fn is_warm(&self, at: f64, prompt: &Prompt) -> bool {
        prompt
            .prefixes
            .iter()
            .any(|(key, tokens)| *tokens >= self.min_tokens() && self.live(*key, at))
    }

    fn min_tokens(&self) -> u64 {
        match self.rules {
            CacheRules::Anthropic { min_tokens, .. } | CacheRules::OpenAi { min_tokens, .. } => {
                min_tokens
            }
        }
    }

    /// Sends `prompt` at `at` seconds (Anthropic: with breakpoints after the prefixes of
    /// `breakpoints` blocks, at most four, the last four kept) and answers `output` tokens:
    /// what the provider bills, and the cache as it is afterwards.
    pub fn send(
        &mut self,
        at: f64,
        prompt: &Prompt,
        breakpoints: &[usize],
        output: u64,
    ) -> CallTokens {
        let prefixes = &prompt.prefixes;
        let total = prefixes.last().map_or(0, |(_, tokens)| *tokens);
        let lifetime = self.rules.lifetime_seconds();
        let min_tokens = self.min_tokens();
        let expires = at + lifetime;
        self.prune(at, prompt.len());
        let tokens = match self.rules {
            CacheRules::Anthropic { .. } => {
                let mut marks: Vec<usize> = breakpoints
                    .iter()
                    .copied()
                    .filter(|&b| b >= 1 && b <= prompt.len())
                    .collect();
                marks.sort_unstable();
                marks.dedup();
                let keep_from = marks.len().saturating_sub(ANTHROPIC_MAX_BREAKPOINTS);
                let marks = &marks[keep_from..];
                // The longest live prefix within the lookback of a breakpoint.
                let hit = marks
                    .iter()
                    .flat_map(|&mark| {
                        // The breakpoint's own prefix and the 20 before it.
                        (mark.saturating_sub(ANTHROPIC_LOOKBACK_BLOCKS + 1)..mark).rev()
                    })
                    .filter(|&at_block| self.live(prefixes[at_block].0, at))
                    .max_by_key(|&at_block| prefixes[at_block].1);
                let read = hit.map_or(0, |block| prefixes[block].1);
                let run = self.new_run(expires);
                if let Some(block) = hit {
                    self.entries.insert(prefixes[block].0, run);
                }
                // Every breakpoint long enough is written (or refreshed, when already there).
                let mut written_to = read;
                for &mark in marks {
                    let (key, tokens) = prefixes[mark - 1];
                    if tokens >= min_tokens {
                        self.entries.insert(key, run);
                        written_to = written_to.max(tokens);
                    }
                }
                let cache_write = written_to - read;
                CallTokens {
                    uncached: total - read - cache_write,
                    cache_write,
                    cache_read: read,
                    output,
                }
            }
            CacheRules::OpenAi { .. } => {
                let matched = prefixes
                    .iter()
                    .rev()
                    .find(|(key, tokens)| *tokens >= min_tokens && self.live(*key, at))
                    .map_or(0, |(_, tokens)| *tokens);
                let read = if matched < min_tokens {
                    0
                } else {
                    min_tokens + (matched - min_tokens) / OPENAI_CACHE_STEP * OPENAI_CACHE_STEP
                };
                // Every prefix long enough is cached (or refreshed) until `expires`: those the
                // last prompt had by moving its run's expiry, the new ones by joining the run.
                let extends = self.last.filter(|last| {
                    prefixes
                        .get(last.blocks - 1)
                        .is_some_and(|(key, _)| *key == last.hash)
                });
                let (run, new_from) = match extends {
                    Some(last) => {
                        self.runs[last.run] = expires;
                        (last.run, last.blocks)
                    }
                    None => (self.new_run(expires), 0),
                };
                for (key, tokens) in &prefixes[new_from..] {
                    if *tokens >= min_tokens {
                        self.entries.insert(*key, run);
                    }
                }
                self.last = prefixes.last().map(|(hash, _)| LastSent {
                    blocks: prefixes.len(),
                    hash: *hash,
                    run,
                });
                CallTokens {
                    uncached: total - read,
                    cache_write: 0,
                    cache_read: read,
                    output,
                }
            }
        };
        tokens
    }
}

impl PromptCache {
    /// Sends `prompt` with Anthropic's breakpoints where agents place them: after the system
    /// prompt (the first block) and on the last message.
    pub fn send_as_agent(&mut self, at: f64, prompt: &Prompt, output: u64) -> CallTokens {
        let marks = [1, prompt.len()];
        let marks = match prompt.len() {
            0 => &marks[..0],
            1 => &marks[..1],
            _ => &marks[..],
        };
        self.send(at, prompt, marks, output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(tokens: &[(u64, u64)]) -> Prompt {
        tokens
            .iter()
            .map(|&(key, tokens)| Block { key, tokens })
            .collect()
    }

    fn anthropic(ttl: Ttl) -> PromptCache {
        PromptCache::new(CacheRules::Anthropic {
            ttl,
            min_tokens: 1024,
        })
    }

    fn send(cache: &mut PromptCache, at: f64, prompt: &Prompt) -> CallTokens {
        cache.send_as_agent(at, prompt, 10)
    }

    fn tokens(uncached: u64, cache_write: u64, cache_read: u64) -> CallTokens {
        CallTokens {
            uncached,
            cache_write,
            cache_read,
            output: 10,
        }
    }

    /// Worked by hand: a system prompt of 2,000 tokens, a conversation growing by a message of
    /// 500 tokens per call, a pause past the TTL, and a compression that keeps the system
    /// prompt and rewrites the rest.
    #[test]
    fn anthropic_writes_reads_expires_and_rewrites_by_hand() {
        let mut cache = anthropic(Ttl::FiveMinutes);
        let system = (1, 2000);
        // Call 1 at 0 s: everything is written (both breakpoints), nothing read.
        let first = blocks(&[system, (2, 500)]);
        assert_eq!(send(&mut cache, 0.0, &first), tokens(0, 2500, 0));
        // Call 2 at 60 s: the first prompt's end is read, the new message written.
        let second = blocks(&[system, (2, 500), (3, 500)]);
        assert_eq!(send(&mut cache, 60.0, &second), tokens(0, 500, 2500));
        // Call 3 at 60 + 299 s: still warm (a hit refreshed the TTL at 60 s).
        let third = blocks(&[system, (2, 500), (3, 500), (4, 500)]);
        assert_eq!(send(&mut cache, 359.0, &third), tokens(0, 500, 3000));
        // Call 4 after a pause of 301 s: everything expired, all written again.
        let fourth = blocks(&[system, (2, 500), (3, 500), (4, 500), (5, 500)]);
        assert_eq!(send(&mut cache, 660.0, &fourth), tokens(0, 4000, 0));
        // A compression: the system prompt stays, a summary of 300 tokens replaces the rest.
        // The system prompt's breakpoint is read; the summary and the new message written.
        let compressed = blocks(&[system, (9, 300), (6, 500)]);
        assert_eq!(send(&mut cache, 700.0, &compressed), tokens(0, 800, 2000));
    }

    #[test]
    fn anthropic_caches_nothing_shorter_than_the_models_minimum() {
        let mut cache = anthropic(Ttl::FiveMinutes);
        let short = blocks(&[(1, 300), (2, 300)]);
        assert_eq!(send(&mut cache, 0.0, &short), tokens(600, 0, 0));
        assert_eq!(send(&mut cache, 1.0, &short), tokens(600, 0, 0));
        // The system prompt alone is short, the whole prompt long enough: only its breakpoint
        // is written; the next call reads it.
        let long = blocks(&[(1, 300), (2, 300), (3, 800)]);
        assert_eq!(send(&mut cache, 2.0, &long), tokens(0, 1400, 0));
        let longer = blocks(&[(1, 300), (2, 300), (3, 800), (4, 100)]);
        assert_eq!(send(&mut cache, 3.0, &longer), tokens(0, 100, 1400));
    }

    #[test]
    fn anthropics_one_hour_ttl_survives_a_pause_the_five_minute_one_does_not() {
        let prompt = blocks(&[(1, 2000), (2, 500)]);
        let longer = blocks(&[(1, 2000), (2, 500), (3, 500)]);
        let mut hour = anthropic(Ttl::OneHour);
        send(&mut hour, 0.0, &prompt);
        assert_eq!(send(&mut hour, 1800.0, &longer), tokens(0, 500, 2500));
        let mut five = anthropic(Ttl::FiveMinutes);
        send(&mut five, 0.0, &prompt);
        assert_eq!(send(&mut five, 1800.0, &longer), tokens(0, 3000, 0));
    }

    #[test]
    fn anthropic_finds_an_entry_only_within_twenty_blocks_of_a_breakpoint() {
        let mut cache = anthropic(Ttl::FiveMinutes);
        let head: Vec<(u64, u64)> = (1..=3).map(|k| (k, 500)).collect();
        send(&mut cache, 0.0, &blocks(&head));
        // 21 new messages after the cached end, and a breakpoint only at the end and on the
        // (short) system prompt: the cached end lies 21 blocks back, out of reach.
        let mut far = head.clone();
        far.extend((10..31).map(|k| (k, 10)));
        let far = blocks(&far);
        let billed = cache.send(1.0, &far, &[far.len()], 0);
        assert_eq!(billed.cache_read, 0);
        // 20 new ones: within reach.
        let mut cache = anthropic(Ttl::FiveMinutes);
        send(&mut cache, 0.0, &blocks(&head));
        let mut near = head;
        near.extend((10..30).map(|k| (k, 10)));
        let near = blocks(&near);
        assert_eq!(cache.send(1.0, &near, &[near.len()], 0).cache_read, 1500);
    }

    #[test]
    fn openai_reads_the_longest_prefix_in_128_token_steps_and_writes_for_free() {
        let mut cache = PromptCache::new(CacheRules::OpenAi {
            idle_expiry_seconds: 300.0,
            min_tokens: 1024,
        });
        // Under 1,024 tokens nothing is cached.
        let small = blocks(&[(1, 600), (2, 300)]);
        assert_eq!(send(&mut cache, 0.0, &small), tokens(900, 0, 0));
        // 1,300 tokens: cached whole for the next call, which reads 1,024 + 2 x 128 = 1,280.
        let first = blocks(&[(1, 600), (2, 300), (3, 400)]);
        assert_eq!(send(&mut cache, 1.0, &first), tokens(1300, 0, 0));
        let second = blocks(&[(1, 600), (2, 300), (3, 400), (4, 200)]);
        assert_eq!(send(&mut cache, 2.0, &second), tokens(220, 0, 1280));
        // A rewrite after the first message reads nothing: 600 tokens is under the minimum.
        let rewritten = blocks(&[(1, 600), (8, 900)]);
        assert_eq!(send(&mut cache, 3.0, &rewritten), tokens(1500, 0, 0));
        // After 300 idle seconds the prefix is gone.
        let third = blocks(&[(1, 600), (2, 300), (3, 400), (4, 200), (5, 10)]);
        assert_eq!(send(&mut cache, 303.5, &third), tokens(1510, 0, 0));
    }

    /// After a pause, expired entries are dropped once they outnumber what the prompt could
    /// use; a prompt extending the last one is then written whole again, so a shorter one after
    /// it reads its head.
    #[test]
    fn openai_writes_a_prompt_whole_again_after_its_expired_entries_are_dropped() {
        let mut cache = PromptCache::new(CacheRules::OpenAi {
            idle_expiry_seconds: 300.0,
            min_tokens: 1024,
        });
        let opening = |k: u64, rest: u64| if k == 0 { 1024 } else { rest };
        // 300 prefixes of a long prompt cached, then a short prompt of 40 other blocks.
        let long: Prompt = (0..300)
            .map(|k| Block {
                key: 1000 + k,
                tokens: opening(k, 10),
            })
            .collect();
        send(&mut cache, 0.0, &long);
        let short: Vec<Block> = (0..40)
            .map(|k| Block {
                key: k + 1,
                tokens: opening(k, 128),
            })
            .collect();
        send(&mut cache, 10.0, &short.iter().copied().collect());
        // After the pause the short prompt grows by one message: all of it written again.
        let mut grown = short.clone();
        grown.push(Block {
            key: 99,
            tokens: 128,
        });
        let grown: Prompt = grown.into_iter().collect();
        assert_eq!(
            send(&mut cache, 1000.0, &grown),
            tokens(1024 + 40 * 128, 0, 0)
        );
        // Its first 20 blocks are read back: 1,024 + 19 x 128 tokens.
        let mut head = short[..20].to_vec();
        head.push(Block {
            key: 98,
            tokens: 128,
        });
        let head: Prompt = head.into_iter().collect();
        assert_eq!(
            send(&mut cache, 1010.0, &head),
            tokens(128, 0, 1024 + 19 * 128)
        );
    }

    #[test]
    fn warmth_follows_the_lifetime() {
        let mut cache = anthropic(Ttl::FiveMinutes);
        let prompt = blocks(&[(1, 2000), (2, 500)]);
        assert!(!cache.is_warm(0.0, &prompt));
        send(&mut cache, 0.0, &prompt);
        assert!(cache.is_warm(300.0, &prompt));
        assert!(!cache.is_warm(300.5, &prompt));
    }

    /// The cache as the providers' rules read, with nothing saved: every prefix has its own
    /// expiry, and each send marks again every prefix it reads or writes.
    struct Reference {
        rules: CacheRules,
        entries: HashMap<u64, f64>,
    }

    impl Reference {
        fn live(&self, key: u64, at: f64) -> bool {
            self.entries.get(&key).is_some_and(|expires| at <= *expires)
        }

        fn send_as_agent(&mut self, at: f64, prompt: &Prompt, output: u64) -> CallTokens {
            let prefixes = &prompt.prefixes;
            let total = prefixes.last().map_or(0, |(_, tokens)| *tokens);
            let expires = at + self.rules.lifetime_seconds();
            match self.rules {
                CacheRules::Anthropic { min_tokens, .. } => {
                    let mut marks = vec![1, prompt.len()];
                    marks.retain(|&mark| mark >= 1 && mark <= prompt.len());
                    marks.dedup();
                    let hit = marks
                        .iter()
                        .flat_map(|&mark| {
                            (mark.saturating_sub(ANTHROPIC_LOOKBACK_BLOCKS + 1)..mark).rev()
                        })
                        .filter(|&block| self.live(prefixes[block].0, at))
                        .max_by_key(|&block| prefixes[block].1);
                    let read = hit.map_or(0, |block| prefixes[block].1);
                    if let Some(block) = hit {
                        self.entries.insert(prefixes[block].0, expires);
                    }
                    let mut written_to = read;
                    for &mark in &marks {
                        let (key, tokens) = prefixes[mark - 1];
                        if tokens >= min_tokens {
                            self.entries.insert(key, expires);
                            written_to = written_to.max(tokens);
                        }
                    }
                    CallTokens {
                        uncached: total - written_to,
                        cache_write: written_to - read,
                        cache_read: read,
                        output,
                    }
                }
                CacheRules::OpenAi { min_tokens, .. } => {
                    let matched = prefixes
                        .iter()
                        .rev()
                        .find(|(key, tokens)| *tokens >= min_tokens && self.live(*key, at))
                        .map_or(0, |(_, tokens)| *tokens);
                    let read = if matched < min_tokens {
                        0
                    } else {
                        min_tokens + (matched - min_tokens) / OPENAI_CACHE_STEP * OPENAI_CACHE_STEP
                    };
                    for (key, tokens) in prefixes {
                        if *tokens >= min_tokens {
                            self.entries.insert(*key, expires);
                        }
                    }
                    CallTokens {
                        uncached: total - read,
                        cache_write: 0,
                        cache_read: read,
                        output,
                    }
                }
            }
        }
    }

    /// A long conversation sent call by call (growing, compressed to its head and a summary now
    /// and then, shortened, resent, with pauses past the lifetime): every call is billed, and
    /// every prefix is warm or cold, as if each send marked every prefix again, including
    /// after expired entries and runs are dropped.
    #[test]
    fn each_call_is_billed_as_if_every_prefix_were_marked_again() {
        for rules in [
            CacheRules::OpenAi {
                idle_expiry_seconds: 300.0,
                min_tokens: 1024,
            },
            CacheRules::Anthropic {
                ttl: Ttl::FiveMinutes,
                min_tokens: 1024,
            },
        ] {
            let mut cache = PromptCache::new(rules);
            let mut reference = Reference {
                rules,
                entries: HashMap::new(),
            };
            // A fixed pseudo-random sequence (a linear congruential generator).
            let mut state = 7u64;
            let mut next = |below: u64| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (state >> 33) % below
            };
            let mut blocks: Vec<Block> = vec![Block {
                key: 1,
                tokens: 900,
            }];
            let mut at = 0.0;
            let mut fresh_key = 100;
            let mut block = |tokens: u64| {
                fresh_key += 1;
                Block {
                    key: fresh_key,
                    tokens,
                }
            };
            for call in 0..1500 {
                match next(20) {
                    // Compressed: the system prompt, a summary, the last two messages.
                    0 => {
                        let tail: Vec<Block> = blocks.iter().rev().take(2).rev().copied().collect();
                        blocks.truncate(1);
                        blocks.push(block(400));
                        blocks.extend(tail);
                    }
                    // Shortened (a retry from an earlier point).
                    1 => blocks.truncate(1 + next(blocks.len() as u64) as usize),
                    // The same prompt again.
                    2 => {}
                    _ => {
                        for _ in 0..=next(3) {
                            blocks.push(block(50 + next(600)));
                        }
                    }
                }
                if blocks.len() > 300 {
                    blocks.truncate(1);
                }
                at += match next(25) {
                    0 => 301.0 + next(900) as f64,
                    _ => 1.0 + next(60) as f64,
                };
                let prompt: Prompt = blocks.iter().copied().collect();
                let warm = (
                    cache.is_warm(at, &prompt),
                    cache.is_warm(at, &prompt.head(3)),
                );
                let expected = (
                    prompt
                        .prefixes
                        .iter()
                        .any(|(key, tokens)| *tokens >= 1024 && reference.live(*key, at)),
                    prompt
                        .head(3)
                        .prefixes
                        .iter()
                        .any(|(key, tokens)| *tokens >= 1024 && reference.live(*key, at)),
                );
                assert_eq!(warm, expected, "{rules:?}, call {call}: warmth");
                assert_eq!(
                    cache.send_as_agent(at, &prompt, 10),
                    reference.send_as_agent(at, &prompt, 10),
                    "{rules:?}, call {call}"
                );
            }
            assert!(
                cache.runs.len() < 1500,
                "{rules:?}: runs no entry belongs to are dropped"
            );
        }
    }

    #[test]
    fn at_most_four_breakpoints_count_the_last_four() {
        let mut cache = anthropic(Ttl::FiveMinutes);
        let prompt = blocks(&[(1, 1100), (2, 100), (3, 100), (4, 100), (5, 100), (6, 100)]);
        // Six breakpoints asked: the first two are dropped, so 1,100 and 1,200 are not written
        // as entries of their own; the whole prompt is written up to the last one.
        let billed = cache.send(0.0, &prompt, &[1, 2, 3, 4, 5, 6], 0);
        assert_eq!(billed.cache_write, 1600);
        assert!(!cache.is_warm(1.0, &prompt.head(2)));
        assert!(cache.is_warm(1.0, &prompt.head(3)));
    }
}
