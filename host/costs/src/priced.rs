//! One side of a priced conversation: its prompt as it stands, sent call by call against the
//! model's prompt cache and billed at the model's prices. The replay prices two (the engine's
//! view and the whole history); the gateway one (the whole history, beside the real bill).

use crate::bill::Dollars;
use crate::cache::{Block, CacheRules, CallTokens, Prompt, PromptCache};
use crate::price::Price;

#[derive(Debug, Clone, Default)]
pub struct PricedPrompt {
    /// Made at the first call, with the rules of the model it goes to.
    cache: Option<PromptCache>,
    prompt: Prompt,
}

impl PricedPrompt {
    /// `block` joined the prompt.
    pub fn push(&mut self, block: Block) {
        self.prompt.push(block);
    }

    /// The prompt becomes `blocks` (a compression's new view).
    pub fn replace(&mut self, blocks: impl IntoIterator<Item = Block>) {
        self.prompt.replace(blocks);
    }

    /// The prompt starts over (a new lineage: nothing of it is cached).
    pub fn clear(&mut self) {
        self.prompt.clear();
    }

    pub fn blocks(&self) -> usize {
        self.prompt.len()
    }

    /// Whether the provider still caches a prefix of the prompt at `at`.
    pub fn is_warm(&self, at: f64) -> bool {
        self.cache
            .as_ref()
            .is_some_and(|cache| cache.is_warm(at, &self.prompt))
    }

    /// The prompt goes out at `at` (seconds), answered with `output` tokens, as an agent
    /// sends it: its tokens as the cache splits them, and their price.
    pub fn send(
        &mut self,
        at: f64,
        output: u64,
        rules: CacheRules,
        price: &Price,
    ) -> (CallTokens, Dollars) {
        let cache = self.cache.get_or_insert_with(|| PromptCache::new(rules));
        let tokens = cache.send_as_agent(at, &self.prompt, output);
        (tokens, Dollars::of(&tokens, price, rules.ttl()))
    }
}
