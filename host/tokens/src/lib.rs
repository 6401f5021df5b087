//! Token counting, cached per text, so re-measuring a long session each turn costs only its new
//! messages.
//!
//! Two backends give identical counts for `o200k_base` and `cl100k_base`: GitHub's `bpe-openai`
//! (the default where it has the encoding: measured here it loads in ~140 ms and counts ~25 MB/s)
//! and `tiktoken-rs` (~210 ms and ~5 MB/s; also has `p50k_base` and `r50k_base`). `o200k_base`,
//! the default, loads nothing: its ranks are a table `build.rs` prebuilds and the binary holds
//! ([`o200k`]), and ASCII text is split without its regex ([`ascii_pieces`]); the regex compiles
//! on first use, for other text. A text is split into pieces (words, runs of punctuation)
//! before its byte pairs are merged, and a session repeats its pieces: each distinct piece of a
//! batch is merged once. An over-long text is counted segment by segment ([`segments`]), so a
//! count is linear in time and bounded in memory whatever the text holds (a base64 blob, a run
//! of one character).

mod ascii_pieces;
mod o200k;
mod piece_counts;
mod segments;
mod table_hash;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHasher;
use tiktoken_rs::CoreBPE;

use o200k::RankTable;
use piece_counts::PieceCounts;

/// Texts shorter than this are counted directly: hashing them costs about as much.
const CACHE_MIN_BYTES: usize = 64;

/// At most this many segments of one text are remembered: a run of one character repeats
/// its segments, other text does not.
const SEGMENT_CACHE_MAX_ENTRIES: usize = 1 << 12;

/// New text below which a batch is counted on the calling thread (about a millisecond of
/// counting, many times what starting a thread costs).
const PARALLEL_MIN_BYTES: usize = 32 * 1024;

use ctxhost_config::tokens::{Backend, BPE_ENCODINGS};

enum Loaded {
    Bpe(&'static bpe_openai::Tokenizer),
    /// `o200k_base`'s ranks, in the binary; its pattern is [`ascii_pieces`]' on ASCII text.
    O200k(RankTable),
    Tiktoken(Box<CoreBPE>),
}

/// A tokenizer with a count cache. Cheap to create: the encoding loads on first use.
pub struct TokenCounter {
    encoding: String,
    backend: Backend,
    bpe: OnceLock<Result<Loaded, String>>,
    cache: Mutex<HashMap<Key, u32, BuildHasherDefault<IdentityHasher>>>,
}

/// A text's cache key: its hash and its length.
type Key = (u64, usize);

/// Exact counts of texts, by key.
type Counted = HashMap<Key, u64, BuildHasherDefault<IdentityHasher>>;

impl TokenCounter {
    /// `encoding` must be one of [`ctxhost_config::ENCODINGS`] (the config validates it).
    pub fn new(encoding: &str) -> Self {
        Self::with_backend(encoding, Backend::Auto)
    }

    /// The counter `config.yaml`'s `tokens.*` asks for (checked when the config was read).
    pub fn for_config(tokens: &ctxhost_config::TokensSection) -> Self {
        Self::with_backend(
            &tokens.encoding,
            tokens.backend.parse().unwrap_or(Backend::Auto),
        )
    }

    pub fn with_backend(encoding: &str, backend: Backend) -> Self {
        TokenCounter {
            encoding: encoding.to_string(),
            backend,
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

    /// The same total as summing [`Self::count_message`], with the texts not yet cached counted
    /// on every core when there are enough of them (a one-shot command counts a whole session).
    pub fn count_messages(&self, messages: &[ctxhost_sdk::Message]) -> u64 {
        let texts: Vec<_> = messages.iter().map(|m| m.searchable_text()).collect();
        let overhead = ctxhost_sdk::MESSAGE_OVERHEAD_TOKENS * messages.len() as u64;
        self.count_texts(&texts) + overhead
    }

    /// The total of [`Self::count`] over `texts`.
    fn count_texts<T: AsRef<str>>(&self, texts: &[T]) -> u64 {
        let mut total = 0;
        // Uncached texts by key, each once, and how many bytes they hold.
        let mut pending: HashMap<Key, &str, BuildHasherDefault<IdentityHasher>> =
            HashMap::default();
        let mut pending_bytes = 0;
        {
            let cache = self.cache.lock().ok();
            for text in texts {
                let text = text.as_ref();
                if text.len() < CACHE_MIN_BYTES {
                    continue;
                }
                let key = (fx_hash(text.as_bytes()), text.len());
                match cache.as_ref().and_then(|c| c.get(&key)) {
                    Some(&count) => total += u64::from(count),
                    None => {
                        if pending.insert(key, text).is_none() {
                            pending_bytes += text.len();
                        }
                    }
                }
            }
        }
        if pending_bytes < PARALLEL_MIN_BYTES {
            // Few new texts: counting them here costs less than starting threads.
            return texts.iter().map(|t| self.count(t.as_ref())).sum();
        }
        let counted = self.count_in_parallel(pending.into_iter().collect(), pending_bytes);
        if let Ok(mut cache) = self.cache.lock() {
            for (&key, &count) in &counted {
                cache.insert(key, count.min(u64::from(u32::MAX)) as u32);
            }
        }
        let mut pieces = PieceCounts::default();
        for text in texts {
            let text = text.as_ref();
            if text.len() < CACHE_MIN_BYTES {
                total += self.count_uncached(text, &mut pieces);
            } else if let Some(count) = counted.get(&(fx_hash(text.as_bytes()), text.len())) {
                total += count;
            }
        }
        total
    }

    /// Counts `texts` (`bytes` in all) on up to one thread per core, in chunks of similar size.
    fn count_in_parallel(&self, texts: Vec<(Key, &str)>, bytes: usize) -> Counted {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let chunk_bytes = bytes.div_ceil(threads);
        let mut chunks: Vec<&[(Key, &str)]> = Vec::with_capacity(threads);
        let (mut start, mut filled) = (0, 0);
        for (index, (_, text)) in texts.iter().enumerate() {
            filled += text.len();
            if filled >= chunk_bytes {
                chunks.push(&texts[start..=index]);
                (start, filled) = (index + 1, 0);
            }
        }
        if start < texts.len() {
            chunks.push(&texts[start..]);
        }
        // Load the encoding here, rather than have every thread wait for it.
        self.loaded();
        let (own, others) = chunks.split_first().expect("at least one chunk");
        std::thread::scope(|scope| {
            let workers: Vec<_> = others
                .iter()
                .map(|&chunk| scope.spawn(move || self.count_chunk(chunk)))
                .collect();
            let mut counted = self.count_chunk(own);
            for worker in workers {
                counted.extend(worker.join().expect("counting does not panic"));
            }
            counted
        })
    }

    fn count_chunk(&self, chunk: &[(Key, &str)]) -> Counted {
        let mut pieces = PieceCounts::default();
        chunk
            .iter()
            .map(|&(key, text)| (key, self.count_uncached(text, &mut pieces)))
            .collect()
    }

    pub fn count(&self, text: &str) -> u64 {
        let mut pieces = PieceCounts::default();
        if text.len() < CACHE_MIN_BYTES {
            return self.count_uncached(text, &mut pieces);
        }
        let key = (fx_hash(text.as_bytes()), text.len());
        if let Some(count) = self.cache.lock().ok().and_then(|c| c.get(&key).copied()) {
            return u64::from(count);
        }
        let count = self.count_uncached(text, &mut pieces);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(key, count.min(u64::from(u32::MAX)) as u32);
        }
        count
    }

    /// The count of `text`, its pieces looked up in (and added to) `pieces` first; an
    /// over-long text segment by segment ([`segments`]), so no piece merges longer than a
    /// segment.
    fn count_uncached(&self, text: &str, pieces: &mut PieceCounts) -> u64 {
        let Some(loaded) = self.loaded() else {
            // Unreachable with a validated config; a rough estimate beats failing the turn.
            return (text.len() as u64).div_ceil(4);
        };
        if text.len() <= segments::SEGMENT_BYTES {
            return count_segment(loaded, text, pieces);
        }
        let hard = match loaded {
            Loaded::Tiktoken(_) => segments::TIKTOKEN_HARD_CUT_BYTES,
            Loaded::Bpe(_) | Loaded::O200k(_) => segments::HARD_CUT_BYTES,
        };
        let mut seen: Counted = HashMap::default();
        segments::segments(text, segments::SEGMENT_BYTES, hard)
            .map(|segment| {
                let key = (fx_hash(segment.as_bytes()), segment.len());
                if let Some(&count) = seen.get(&key) {
                    return count;
                }
                let count = count_segment(loaded, segment, pieces);
                if seen.len() < SEGMENT_CACHE_MAX_ENTRIES {
                    seen.insert(key, count);
                }
                count
            })
            .sum()
    }

    /// Gets ready to count: loads the encoding, and compiles what counting text other than
    /// ASCII needs. A command calls it on another thread while it reads its input.
    pub fn warm(&self) {
        if let Some(Loaded::O200k(_)) = self.loaded() {
            o200k_base_splitter();
        }
    }

    fn loaded(&self) -> Option<&Loaded> {
        self.bpe
            .get_or_init(|| {
                let bpe = match self.backend {
                    Backend::Auto | Backend::Bpe => BPE_ENCODINGS.contains(&self.encoding.as_str()),
                    Backend::Tiktoken => false,
                };
                if bpe {
                    return Ok(match self.encoding.as_str() {
                        "cl100k_base" => Loaded::Bpe(bpe_openai::cl100k_base()),
                        _ => Loaded::O200k(RankTable::o200k_base()),
                    });
                }
                match self.encoding.as_str() {
                    "o200k_base" => tiktoken_rs::o200k_base(),
                    "cl100k_base" => tiktoken_rs::cl100k_base(),
                    "p50k_base" => tiktoken_rs::p50k_base(),
                    "r50k_base" => tiktoken_rs::r50k_base(),
                    other => return Err(format!("unknown encoding {other}")),
                }
                .map(|bpe| Loaded::Tiktoken(Box::new(bpe)))
                .map_err(|error| error.to_string())
            })
            .as_ref()
            .ok()
    }
}

/// The count of one segment of a text (at most [`segments::SEGMENT_BYTES`]).
fn count_segment(loaded: &Loaded, text: &str, pieces: &mut PieceCounts) -> u64 {
    match loaded {
        Loaded::Bpe(bpe) => count_pieces(bpe.split(text), pieces, |_| false, |p| bpe.bpe.count(p)),
        Loaded::O200k(table) if text.is_ascii() => {
            count_pieces(ascii_pieces::pieces(text), pieces, one_token(table), |p| {
                table.count_merged(p)
            })
        }
        Loaded::O200k(table) => count_pieces(
            o200k_base_splitter().split(text),
            pieces,
            one_token(table),
            |p| table.count_merged(p),
        ),
        Loaded::Tiktoken(bpe) => bpe.encode_ordinary(text).len() as u64,
    }
}

/// The count of a text given its `pieces` (the sum of their counts, `count` merging one that
/// `one_token` does not recognize), with each distinct short piece merged once while
/// remembering pays ([`piece_counts`]). A piece
/// `one_token` recognizes counts one without a look in `counted` (most words are a token, and
/// the rank table finds one faster than the cache).
/// Neither encoding normalizes its text.
fn count_pieces<'a>(
    pieces: impl Iterator<Item = &'a str>,
    counted: &mut PieceCounts,
    one_token: impl Fn(&[u8]) -> bool,
    count: impl Fn(&[u8]) -> usize,
) -> u64 {
    pieces
        .map(|piece| {
            if one_token(piece.as_bytes()) {
                return 1;
            }
            if let Some(count) = counted.get(piece) {
                return u64::from(count);
            }
            let count = count(piece.as_bytes());
            counted.insert(piece, count);
            count as u64
        })
        .sum()
}

/// Whether a piece is one `o200k_base` token, by `table`.
fn one_token(table: &RankTable) -> impl Fn(&[u8]) -> bool + '_ {
    |piece| piece.len() == 1 || table.rank(piece).is_some()
}

/// `o200k_base`'s split pattern, for text that is not ASCII, compiled on first use (around a
/// one-token placeholder encoding: the ranks are [`RankTable`]'s).
fn o200k_base_splitter() -> &'static bpe_openai::Tokenizer {
    static SPLITTER: OnceLock<bpe_openai::Tokenizer> = OnceLock::new();
    SPLITTER.get_or_init(compile_o200k_base_splitter)
}

fn compile_o200k_base_splitter() -> bpe_openai::Tokenizer {
    let placeholder =
        bpe_openai::byte_pair_encoding::BytePairEncoding::from_dictionary([b"a".to_vec()], None);
    // The encoding's split pattern (tiktoken's), with its `\s+(?!\S)` spelled without
    // look-ahead as bpe-openai does: `\s+\s` less its last character (the `true`), or `\s+$`.
    let words = [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+$",
    ]
    .join("|");
    let patterns = [(words.as_str(), false), (r"\s+\s", true), (r"\s+", false)];
    bpe_openai::Tokenizer::new_lookahead(placeholder, &patterns, false).expect("a valid pattern")
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
    fn both_backends_agree() {
        let text = "fn main() { println!(\"héllo, wörld\"); } // 🚀 ".repeat(50);
        for encoding in BPE_ENCODINGS {
            let bpe = TokenCounter::with_backend(encoding, Backend::Bpe);
            let tiktoken = TokenCounter::with_backend(encoding, Backend::Tiktoken);
            assert_eq!(bpe.count(&text), tiktoken.count(&text), "{encoding}");
        }
    }

    /// Text of every kind the split patterns treat apart: words, contractions, digits,
    /// punctuation, paths, runs of spaces and line breaks, CJK, emoji.
    fn mixed_text(bytes: usize) -> String {
        let words = [
            "lorem",
            "Ipsum",
            "don't",
            "WE'LL",
            "12345678",
            "3.14159",
            "foo.bar/baz",
            "--flag",
            "  ",
            "\n",
            "\n\n",
            "\t",
            "日本語のテキスト",
            "中文",
            "🚀",
            "x=1;",
            "(a, b)",
            "über",
            "naïve",
            "    indented",
            "\r\n",
            "'quoted'",
            "a",
            "I",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut text = String::new();
        while text.len() < bytes {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push_str(words[(state % words.len() as u64) as usize]);
            if !state.is_multiple_of(3) {
                text.push(' ');
            }
        }
        text
    }

    #[test]
    fn a_long_text_counts_exactly_what_it_counts_whole_when_it_has_spaces() {
        let text = mixed_text(3 * segments::SEGMENT_BYTES + 1234);
        for encoding in ["o200k_base", "cl100k_base", "p50k_base", "r50k_base"] {
            for backend in [Backend::Bpe, Backend::Tiktoken] {
                let counter = TokenCounter::with_backend(encoding, backend);
                let loaded = counter.loaded().expect("the encoding loads");
                let whole = count_segment(loaded, &text, &mut PieceCounts::default());
                assert_eq!(counter.count(&text), whole, "{encoding} {backend:?}");
            }
        }
    }

    #[test]
    fn one_long_piece_counts_within_a_fraction_of_a_percent_on_every_backend() {
        // A run of one letter counts exactly: the cuts fall where its tokens end.
        let run = "x".repeat(4 * segments::SEGMENT_BYTES);
        for backend in [Backend::Bpe, Backend::Tiktoken] {
            let counter = TokenCounter::with_backend("o200k_base", backend);
            assert_eq!(counter.count(&run) as usize, run.len() / 8, "{backend:?}");
        }
        // Random base64: every cut may cost a token, against the piece merged whole.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let blob: String = (0..3 * segments::SEGMENT_BYTES)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                alphabet[(state % alphabet.len() as u64) as usize] as char
            })
            .collect();
        let counter = TokenCounter::new("o200k_base");
        let loaded = counter.loaded().expect("the encoding loads");
        let whole = count_segment(loaded, &blob, &mut PieceCounts::default());
        let cut = counter.count(&blob);
        let cuts = (blob.len() / segments::HARD_CUT_BYTES) as u64;
        assert!(cut.abs_diff(whole) <= 2 * cuts, "{cut} against {whole}");
        let tiktoken = TokenCounter::with_backend("o200k_base", Backend::Tiktoken);
        let cuts = (blob.len() / segments::TIKTOKEN_HARD_CUT_BYTES) as u64;
        assert!(tiktoken.count(&blob).abs_diff(whole) <= 2 * cuts);
        assert!(tiktoken.count(&blob).abs_diff(whole) * 100 < whole);
    }

    #[test]
    fn a_batch_counted_in_parallel_totals_the_counts_one_by_one() {
        let texts: Vec<String> = (0..400)
            .map(|i| {
                format!(
                    "message {i}: {}",
                    "lorem ipsum dolor sit amet ".repeat(i % 17 + 3)
                )
            })
            .chain(["short".to_string(), String::new()])
            .collect();
        let one_by_one: u64 = {
            let counter = TokenCounter::new("o200k_base");
            texts.iter().map(|t| counter.count(t)).sum()
        };
        let batch = TokenCounter::new("o200k_base");
        let bytes: usize = texts.iter().map(String::len).sum();
        assert!(
            bytes > PARALLEL_MIN_BYTES,
            "the batch is large enough to go parallel"
        );
        assert_eq!(batch.count_texts(&texts), one_by_one);
        // Counted once: the second time every long text comes from the cache.
        assert_eq!(batch.cache.lock().unwrap().len(), 400);
        assert_eq!(batch.count_texts(&texts), one_by_one);
    }

    #[test]
    fn pieces_counted_once_count_as_bpe_openai_counts_each_text() {
        let counter = TokenCounter::new("o200k_base");
        let Some(Loaded::O200k(table)) = counter.loaded() else {
            panic!("o200k_base counts with its rank table")
        };
        let reference = bpe_openai::o200k_base();
        let mut pieces = PieceCounts::default();
        let texts = [
            "fn main() { println!(\"héllo, wörld\"); } // 🚀",
            "the the the  the\n\n\tthe",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaa 1234567890 ÄÖÜ 日本語のテキスト",
            "fn main() { the aaaaaaaa 1234 }   ",
        ];
        // Twice: the second time every piece comes from `pieces`.
        for text in texts.iter().chain(&texts) {
            let expected = reference.count(*text) as u64;
            assert_eq!(
                count_pieces(
                    o200k_base_splitter().split(text),
                    &mut pieces,
                    one_token(table),
                    |p| table.count_merged(p)
                ),
                expected,
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_blob_of_random_letters_counts_as_tiktoken_counts_it_with_its_pieces_not_remembered() {
        // Random base64 with a space every few hundred bytes: segments cut between words, so
        // the count is exact, and the pieces mostly never repeat.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let blob: String = (0..3 * segments::SEGMENT_BYTES)
            .map(|at| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if at % 300 == 299 {
                    ' '
                } else {
                    alphabet[(state % alphabet.len() as u64) as usize] as char
                }
            })
            .collect();
        let expected = tiktoken_rs::o200k_base()
            .unwrap()
            .encode_ordinary(&blob)
            .len() as u64;
        let counter = TokenCounter::new("o200k_base");
        let mut pieces = PieceCounts::default();
        assert_eq!(counter.count_uncached(&blob, &mut pieces), expected);
        assert!(pieces.given_up());
        assert_eq!(counter.count(&blob), expected);
    }

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
