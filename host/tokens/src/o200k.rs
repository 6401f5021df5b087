//! `o200k_base`'s byte-pair merges, counted over the rank table `build.rs` prebuilt and the
//! binary holds: nothing to load, so a one-shot command counts from its first microsecond.
//!
//! A piece (what the pre-tokenizer split a text into) that is a token counts one; otherwise
//! its bytes merge pairwise, the adjacent pair whose concatenation has the lowest rank first
//! (the leftmost on a tie), until no adjacent pair is a token: the count is the parts left.
//! That is tiktoken's definition of the encoding. Short pieces rescan their pairs after each
//! merge; long ones keep their pairs in a heap, so a piece of any length costs O(n log n).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::table_hash;

/// A slot no token occupies.
const EMPTY: u32 = u32::MAX;

/// Pieces up to this many bytes rescan their pairs after each merge (cheaper than a heap when
/// there are few).
const SCAN_MAX_BYTES: usize = 64;

/// Pieces up to this many bytes merge in smaller arrays: most pieces of a blob are this short,
/// and setting up arrays for 64 bytes cost more than their merges.
const SHORT_PIECE_BYTES: usize = 16;

/// The prebuilt table: token bytes and a perfect hash from bytes to rank (layout in
/// `build.rs`).
static TABLE_BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.ranks"));

/// The ranks of the two-byte tokens by their bytes (`build.rs`'s `pair_ranks`).
static PAIR_RANKS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.pairs"));

/// A bit for every token's hash ([`table_hash::filter_bit`]; `build.rs`'s `filter`): a
/// clear bit says the bytes are not a token.
static FILTER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.filter"));

/// `o200k_base`'s ranks, read in place from the binary.
pub struct RankTable {
    offsets: &'static [u8],
    displacements: &'static [u8],
    slots: &'static [u8],
    bytes: &'static [u8],
    bucket_count: u32,
    slot_count: u32,
}

/// The bytes of one slot: the token's head (`u64`), rank and length (`u32`s).
const SLOT_BYTES: usize = 16;

impl RankTable {
    /// The table the binary holds.
    pub fn o200k_base() -> RankTable {
        let header = |index: usize| read_u32(TABLE_BYTES, index) as usize;
        let (tokens, buckets, slots) = (header(0), header(1), header(2));
        let (offsets, rest) = TABLE_BYTES[12..].split_at((tokens + 1) * 4);
        let (displacements, rest) = rest.split_at(buckets);
        let (slot_bytes, bytes) = rest.split_at(slots * SLOT_BYTES);
        RankTable {
            offsets,
            displacements,
            slots: slot_bytes,
            bytes,
            bucket_count: buckets as u32,
            slot_count: slots as u32,
        }
    }

    /// The rank of the token whose bytes are `bytes`, if one is. Two bytes are read from
    /// their own table, directly. Longer bytes are first looked for in the filter, which
    /// turns away most that are not a token (most of the lookups merging a blob of random
    /// letters makes) without reading a slot. The slot holds the token's length and first
    /// eight bytes: only a longer token reads the rest of its bytes.
    pub fn rank(&self, bytes: &[u8]) -> Option<u32> {
        if let &[first, second] = bytes {
            let rank = read_u32(PAIR_RANKS, usize::from(first) << 8 | usize::from(second));
            return (rank != EMPTY).then_some(rank);
        }
        let hash = table_hash::hash(bytes);
        let bit = table_hash::filter_bit(hash);
        if FILTER[bit / 8] & (1 << (bit % 8)) == 0 {
            return None;
        }
        let bucket = table_hash::bucket(hash, self.bucket_count);
        let place = table_hash::slot(hash, self.displacements[bucket].into(), self.slot_count);
        let slot: &[u8; SLOT_BYTES] = self.slots[place * SLOT_BYTES..][..SLOT_BYTES]
            .try_into()
            .expect("a whole slot");
        let head = u64::from_le_bytes(slot[..8].try_into().expect("eight bytes"));
        let rank = read_u32(slot, 2);
        let length = read_u32(slot, 3) as usize;
        let found = rank != EMPTY
            && length == bytes.len()
            && head == table_hash::head(bytes)
            && (length <= 8 || self.token(rank)[8..] == bytes[8..]);
        found.then_some(rank)
    }

    fn token(&self, rank: u32) -> &'static [u8] {
        let start = read_u32(self.offsets, rank as usize) as usize;
        let end = read_u32(self.offsets, rank as usize + 1) as usize;
        &self.bytes[start..end]
    }

    /// How many tokens `piece` encodes to.
    #[cfg(test)]
    pub fn count(&self, piece: &[u8]) -> usize {
        self.count_with(piece, SCAN_MAX_BYTES)
    }

    /// How many tokens `piece`, which is not one token, merges to: [`Self::count`] without
    /// looking the whole piece up again (the caller has).
    pub fn count_merged(&self, piece: &[u8]) -> usize {
        self.merge(piece, SCAN_MAX_BYTES)
    }

    /// [`Self::count`], with pieces longer than `scan_max` merged through a heap.
    #[cfg(test)]
    fn count_with(&self, piece: &[u8], scan_max: usize) -> usize {
        if piece.len() > 1 && self.rank(piece).is_some() {
            return 1;
        }
        self.merge(piece, scan_max)
    }

    /// [`Self::count_with`] for a piece that is not one token.
    fn merge(&self, piece: &[u8], scan_max: usize) -> usize {
        match piece.len() {
            // Two bytes that are not one token are two.
            length @ (0..=2) => length,
            length if length <= scan_max.min(SHORT_PIECE_BYTES) => {
                self.merge_scanning::<SHORT_PIECE_BYTES>(piece)
            }
            length if length <= scan_max.min(SCAN_MAX_BYTES) => {
                self.merge_scanning::<SCAN_MAX_BYTES>(piece)
            }
            _ => self.merge_with_heap(piece),
        }
    }

    /// The rank of `piece[start..end]`, or [`EMPTY`] when it is not a token. The whole piece
    /// is not one (the merges start from there), which spares a lookup of the last pair.
    fn pair_rank(&self, piece: &[u8], start: usize, end: usize) -> u32 {
        if start == 0 && end == piece.len() {
            return EMPTY;
        }
        self.rank(&piece[start..end]).unwrap_or(EMPTY)
    }

    /// Parts are a list on the stack, linked by start offset: `next[start]` is where the part
    /// starting at `start` ends, `ranks[start]` the rank of that part and the next together. A
    /// blob of random letters is mostly short pieces that are not tokens: allocating or moving
    /// memory for each cost more than its merges.
    fn merge_scanning<const CAPACITY: usize>(&self, piece: &[u8]) -> usize {
        let length = piece.len();
        debug_assert!((2..=CAPACITY.min(SCAN_MAX_BYTES)).contains(&length));
        let mut next = [0u8; CAPACITY];
        for (start, end) in next[..length].iter_mut().enumerate() {
            *end = start as u8 + 1;
        }
        let mut ranks = [EMPTY; CAPACITY];
        for (start, rank) in ranks[..length - 1].iter_mut().enumerate() {
            *rank = self.pair_rank(piece, start, start + 2);
        }
        let mut parts = length;
        loop {
            // The lowest rank, the leftmost on a tie, and the part before it.
            let (mut lowest, mut at, mut before_at) = (EMPTY, 0, None);
            let (mut start, mut before) = (0, None);
            while start < length {
                if ranks[start] < lowest {
                    (lowest, at, before_at) = (ranks[start], start, before);
                }
                before = Some(start);
                start = usize::from(next[start]);
            }
            if lowest == EMPTY {
                return parts;
            }
            // Parts `at` and the next become one: the pairs on either side change.
            let end = usize::from(next[usize::from(next[at])]);
            next[at] = end as u8;
            parts -= 1;
            ranks[at] = if end < length {
                self.pair_rank(piece, at, usize::from(next[end]))
            } else {
                EMPTY
            };
            if let Some(before) = before_at {
                ranks[before] = self.pair_rank(piece, before, end);
            }
        }
    }

    /// The same merges, with the parts in a linked list (by start offset) and their pairs in a
    /// min-heap of `(rank, start, end)` ([`pair_key`]); a pair whose parts have changed since it was pushed is
    /// skipped when it comes out.
    fn merge_with_heap(&self, piece: &[u8]) -> usize {
        let length = piece.len();
        // `next[start]`: where the part starting at `start` ends; `previous[start]`: where the
        // part before it starts (`usize::MAX` for the first).
        let mut next: Vec<usize> = (1..=length).collect();
        let mut previous: Vec<usize> = (0..length).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; length];
        let pairs: Vec<_> = (0..length - 1)
            .filter_map(|start| {
                let rank = self.pair_rank(piece, start, start + 2);
                (rank != EMPTY).then(|| Reverse(pair_key(rank, start, start + 2)))
            })
            .collect();
        let mut pairs = BinaryHeap::from(pairs);
        let mut parts = length;
        while let Some(Reverse(key)) = pairs.pop() {
            let (start, end) = pair_of(key);
            let middle = next[start];
            if !alive[start] || middle >= length || next[middle] != end {
                continue;
            }
            alive[middle] = false;
            next[start] = end;
            if end < length {
                previous[end] = start;
                let after = next[end];
                let rank = self.pair_rank(piece, start, after);
                if rank != EMPTY {
                    pairs.push(Reverse(pair_key(rank, start, after)));
                }
            }
            let before = previous[start];
            if before != usize::MAX {
                let rank = self.pair_rank(piece, before, end);
                if rank != EMPTY {
                    pairs.push(Reverse(pair_key(rank, before, end)));
                }
            }
            parts -= 1;
        }
        parts
    }
}

/// A pair of parts in the heap: its rank, start and end in one number that orders as the
/// tuple `(rank, start, end)` does (cheaper to compare and move than the tuple).
fn pair_key(rank: u32, start: usize, end: usize) -> u128 {
    (u128::from(rank) << 96) | ((start as u128) << 48) | end as u128
}

/// The start and end of the pair `key` stands for.
fn pair_of(key: u128) -> (usize, usize) {
    const OFFSET: u128 = (1 << 48) - 1;
    (((key >> 48) & OFFSET) as usize, (key & OFFSET) as usize)
}

fn read_u32(bytes: &[u8], index: usize) -> u32 {
    let at = index * 4;
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tiktoken's own implementation, for reference.
    fn reference() -> tiktoken_rs::CoreBPE {
        tiktoken_rs::o200k_base().expect("tiktoken has o200k_base")
    }

    #[test]
    fn every_piece_counts_as_tiktoken_encodes_it_by_scanning_and_by_heap() {
        let table = RankTable::o200k_base();
        let tiktoken = reference();
        let splitter = bpe_openai::o200k_base();
        let mut texts: Vec<String> = vec![
            "fn main() { println!(\"héllo, wörld\"); } // 🚀".to_string(),
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                .to_string(),
            "=".repeat(300),
            " ".repeat(500),
            "日本語のテキストと中文文本和한국어".repeat(20),
            "SGVsbG8gd29ybGQhIFRoaXMgaXMgYmFzZTY0IGVuY29kZWQgdGV4dA".repeat(30),
            "Supercalifragilisticexpialidociousantidisestablishmentarianism".repeat(10),
        ];
        // Pseudo-random bytes turned into text of every kind: ASCII, Latin, CJK, emoji.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let alphabet: Vec<char> = "abcXYZ019 _-=.,;:'\"\n\téüßøñ日本語中文한🚀💡∀∂"
            .chars()
            .collect();
        for _ in 0..200 {
            let mut text = String::new();
            for _ in 0..200 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            texts.push(text);
        }
        for text in &texts {
            for piece in splitter.split(text) {
                let expected = tiktoken.encode_ordinary(piece).len();
                assert_eq!(table.count(piece.as_bytes()), expected, "{piece:?}");
                assert_eq!(
                    table.count_with(piece.as_bytes(), 0),
                    expected,
                    "{piece:?} by heap"
                );
                assert_eq!(
                    table.count_with(piece.as_bytes(), usize::MAX),
                    expected,
                    "{piece:?} by scanning"
                );
            }
        }
    }

    /// Random text over `alphabet`, `length` characters, from `state`.
    fn random_text(state: &mut u64, alphabet: &[char], length: usize) -> String {
        (0..length)
            .map(|_| {
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                alphabet[(*state % alphabet.len() as u64) as usize]
            })
            .collect()
    }

    #[test]
    fn pieces_of_random_letters_and_ideographs_that_are_not_tokens_merge_as_tiktoken_does() {
        // A blob's pieces (base64: short runs of letters, up to three digits) and runs of CJK
        // ideographs, of every length the stack merge and the heap take.
        let table = RankTable::o200k_base();
        let tiktoken = reference();
        let splitter = bpe_openai::o200k_base();
        let base64: Vec<char> = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
            .chars()
            .collect();
        let ideographs: Vec<char> = (0x4e00..0x4e00 + 400).filter_map(char::from_u32).collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut merged = 0;
        for length in 1..=300 {
            let blob = random_text(&mut state, &base64, 40 * length);
            let han = random_text(&mut state, &ideographs, length);
            for piece in splitter.split(&blob).chain(splitter.split(&han)) {
                let expected = tiktoken.encode_ordinary(piece).len();
                assert_eq!(table.count(piece.as_bytes()), expected, "{piece:?}");
                if piece.len() > 1 && table.rank(piece.as_bytes()).is_none() {
                    merged += 1;
                    assert_eq!(table.count_merged(piece.as_bytes()), expected, "{piece:?}");
                    assert_eq!(
                        table.merge(piece.as_bytes(), 0),
                        expected,
                        "{piece:?} by heap"
                    );
                }
            }
        }
        assert!(merged > 10_000, "only {merged} pieces were merged");
    }

    #[test]
    fn every_token_is_found_at_its_rank_and_nothing_else_is() {
        let table = RankTable::o200k_base();
        let bpe = &bpe_openai::o200k_base().bpe;
        assert_eq!(read_u32(TABLE_BYTES, 0) as usize, bpe.num_tokens());
        // Every token: each one's filter bit must be set, and two-byte ones are read from
        // their own table.
        for rank in 0..bpe.num_tokens() as u32 {
            assert_eq!(table.rank(bpe.token_bytes(rank)), Some(rank));
        }
        let two_byte_tokens = (0..bpe.num_tokens() as u32)
            .filter(|&rank| bpe.token_bytes(rank).len() == 2)
            .count();
        let two_bytes_found = (0..=u16::MAX)
            .filter(|pair| table.rank(&pair.to_be_bytes()).is_some())
            .count();
        assert_eq!(two_bytes_found, two_byte_tokens);
        assert_eq!(table.rank(b"not a single token, surely"), None);
        assert_eq!(table.rank(b""), None);
        // A slot holds a token's first eight bytes and its length: bytes that share them, or
        // a token's bytes and more, are not that token.
        let long = (0..bpe.num_tokens() as u32)
            .map(|rank| (rank, bpe.token_bytes(rank)))
            .find(|(_, bytes)| bytes.len() > 10)
            .expect("a token longer than ten bytes");
        let mut changed = long.1.to_vec();
        *changed.last_mut().expect("bytes") ^= 0x20;
        assert_eq!(table.rank(long.1), Some(long.0));
        assert_ne!(table.rank(&changed), Some(long.0));
        let prefix = &long.1[..9];
        let prefix_rank =
            (0..bpe.num_tokens() as u32).find(|&rank| bpe.token_bytes(rank) == prefix);
        assert_eq!(table.rank(prefix), prefix_rank);
        let short = bpe.token_bytes(table.rank(b" the").expect("a token"));
        assert_eq!(table.rank(&[short, b"\0".as_slice()].concat()), None);
    }
}
