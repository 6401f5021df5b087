//! Token counting with tiktoken, cached per text, so re-measuring a long session each turn costs
//! only its new messages.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHasher;
use tiktoken_rs::CoreBPE;

/// Texts shorter than this are counted directly: hashing them costs about as much.
const CACHE_MIN_BYTES: usize = 64;

/// A tokenizer with a count cache. Cheap to create: the encoding loads on first use.
pub struct TokenCounter {
    encoding: String,
    bpe: OnceLock<Result<CoreBPE, String>>,
    cache: Mutex<HashMap<(u64, usize), u32, BuildHasherDefault<IdentityHasher>>>,
}

impl TokenCounter {
    /// `encoding` must be one of [`crate::config::ENCODINGS`] (the config validates it).
    pub fn new(encoding: &str) -> Self {
        TokenCounter {
            encoding: encoding.to_string(),
            bpe: OnceLock::new(),
            cache: Mutex::new(HashMap::default()),
        }
    }

    pub fn encoding(&self) -> &str {
        &self.encoding
    }

    /// Tokens a message costs in a prompt, counted the way engines count it through
    /// `HostServices::count_message_tokens`.
    pub fn count_message(&self, message: &ctxhost_sdk::Message) -> u64 {
        self.count(&message.searchable_text()) + ctxhost_sdk::MESSAGE_OVERHEAD_TOKENS
    }

    pub fn count_messages(&self, messages: &[ctxhost_sdk::Message]) -> u64 {
        messages.iter().map(|m| self.count_message(m)).sum()
    }

    pub fn count(&self, text: &str) -> u64 {
        if text.len() < CACHE_MIN_BYTES {
            return self.count_uncached(text);
        }
        let key = (fx_hash(text.as_bytes()), text.len());
        if let Some(count) = self.cache.lock().ok().and_then(|c| c.get(&key).copied()) {
            return u64::from(count);
        }
        let count = self.count_uncached(text);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(key, count.min(u64::from(u32::MAX)) as u32);
        }
        count
    }

    fn count_uncached(&self, text: &str) -> u64 {
        match self.bpe() {
            Some(bpe) => bpe.encode_ordinary(text).len() as u64,
            // Unreachable with a validated config; a rough estimate beats failing the turn.
            None => (text.len() as u64).div_ceil(4),
        }
    }

    fn bpe(&self) -> Option<&CoreBPE> {
        self.bpe
            .get_or_init(|| {
                match self.encoding.as_str() {
                    "o200k_base" => tiktoken_rs::o200k_base(),
                    "cl100k_base" => tiktoken_rs::cl100k_base(),
                    "p50k_base" => tiktoken_rs::p50k_base(),
                    "r50k_base" => tiktoken_rs::r50k_base(),
                    other => return Err(format!("unknown encoding {other}")),
                }
                .map_err(|error| error.to_string())
            })
            .as_ref()
            .ok()
    }
}

fn fx_hash(bytes: &[u8]) -> u64 {
    let mut hasher = FxHasher::default();
    hasher.write(bytes);
    hasher.finish()
}

/// The cache keys are already hashes.
#[derive(Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 ^= value;
    }

    fn write_usize(&mut self, value: usize) {
        self.0 ^= (value as u64).rotate_left(32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_tiktoken_and_are_cached() {
        let counter = TokenCounter::new("o200k_base");
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(10);
        let expected = tiktoken_rs::o200k_base()
            .unwrap()
            .encode_ordinary(&text)
            .len() as u64;
        assert_eq!(counter.count(&text), expected);
        assert_eq!(counter.count(&text), expected);
        assert_eq!(counter.cache.lock().unwrap().len(), 1);
        assert_eq!(counter.count("hello"), 1);
    }
}
