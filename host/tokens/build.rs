//! Prebuilds `o200k_base`'s rank table: every token's bytes and a perfect hash from bytes to
//! rank, written as one blob the binary includes and reads in place (`src/o200k.rs`),
//! so a process counts without loading anything. The table is checked here: every token must
//! be found at its own rank.
//!
//! A second blob holds the ranks of the two-byte tokens, indexed by the two bytes; a third
//! a filter of the tokens' hashes, one bit each.
//!
//! Blob layout, little-endian: `u32`s `tokens`, `buckets`, `slots`, then `tokens + 1` offsets
//! into the token bytes, `buckets` displacements of one byte each, then `slots` slots of 16 bytes (the token's
//! first eight bytes, zero-padded, as a `u64`; its rank, `u32::MAX` when empty; its length), then
//! the token bytes. A slot holds what most lookups compare, so a lookup reads two places of the
//! table, not four, and the displacements (a byte each: every bucket finds free slots within
//! 256) take 65 KB, which stays in a core's cache.

#[path = "src/table_hash.rs"]
mod table_hash;

use std::path::PathBuf;

/// A slot no token occupies.
const EMPTY: u32 = u32::MAX;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/table_hash.rs");
    let bpe = &bpe_openai::o200k_base().bpe;
    // bpe-openai numbers tokens by their tiktoken rank, which is their merge priority.
    let tokens: Vec<&[u8]> = (0..bpe.num_tokens() as u32)
        .map(|rank| bpe.token_bytes(rank))
        .collect();
    let table = Table::build(&tokens);
    for (rank, token) in tokens.iter().enumerate() {
        assert_eq!(
            table.rank(&tokens, token),
            Some(rank as u32),
            "token {rank} is not found at its rank"
        );
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("o200k_base.ranks"), table.blob(&tokens)).expect("OUT_DIR is writable");
    std::fs::write(out.join("o200k_base.pairs"), pair_ranks(&tokens)).expect("OUT_DIR is writable");
    std::fs::write(out.join("o200k_base.filter"), filter(&tokens)).expect("OUT_DIR is writable");
}

/// The filter: the bit of every token's hash set (`table_hash::filter_bit`), a byte holding
/// eight bits, the lowest first.
fn filter(tokens: &[&[u8]]) -> Vec<u8> {
    let mut bits = vec![0u8; table_hash::FILTER_BITS / 8];
    for token in tokens {
        let bit = table_hash::filter_bit(table_hash::hash(token));
        bits[bit / 8] |= 1 << (bit % 8);
    }
    bits
}

/// The rank of every two-byte token at index `first << 8 | second` (`u32`s, little-endian;
/// `EMPTY` where the two bytes are not a token): most lookups while merging are of two bytes,
/// and this table's few hot rows stay in a core's cache where the hashed slots do not.
fn pair_ranks(tokens: &[&[u8]]) -> Vec<u8> {
    let mut ranks = vec![EMPTY; 1 << 16];
    for (rank, token) in tokens.iter().enumerate() {
        if let &[first, second] = *token {
            ranks[usize::from(first) << 8 | usize::from(second)] = rank as u32;
        }
    }
    ranks.iter().flat_map(|rank| rank.to_le_bytes()).collect()
}

struct Table {
    displacements: Vec<u8>,
    slots: Vec<u32>,
}

impl Table {
    /// Places every token in a slot of its own, the largest buckets first (while the table is
    /// emptiest), each bucket with the first displacement that puts all its tokens in free slots.
    fn build(tokens: &[&[u8]]) -> Table {
        let buckets = (tokens.len() / 3).max(1) as u32;
        let slot_count = (tokens.len() + tokens.len() / 4 + 1) as u32;
        let hashes: Vec<u64> = tokens.iter().map(|t| table_hash::hash(t)).collect();
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); buckets as usize];
        for (rank, &hash) in hashes.iter().enumerate() {
            members[table_hash::bucket(hash, buckets)].push(rank as u32);
        }
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by_key(|&bucket| std::cmp::Reverse(members[bucket].len()));
        let mut slots = vec![EMPTY; slot_count as usize];
        let mut displacements = vec![0u8; buckets as usize];
        let mut places = Vec::new();
        for bucket in order {
            let ranks = &members[bucket];
            if ranks.is_empty() {
                break;
            }
            let found = (0..=u8::MAX).find(|&displacement| {
                places.clear();
                for &rank in ranks {
                    let place =
                        table_hash::slot(hashes[rank as usize], displacement.into(), slot_count);
                    if slots[place] != EMPTY || places.contains(&place) {
                        return false;
                    }
                    places.push(place);
                }
                true
            });
            let displacement =
                found.expect("every bucket finds free slots within 256 displacements");
            displacements[bucket] = displacement;
            for (&rank, &place) in ranks.iter().zip(&places) {
                slots[place] = rank;
            }
        }
        Table {
            displacements,
            slots,
        }
    }

    /// Looks `bytes` up as `src/o200k.rs` does (the same bucket and slot).
    fn rank(&self, tokens: &[&[u8]], bytes: &[u8]) -> Option<u32> {
        let hash = table_hash::hash(bytes);
        let bucket = table_hash::bucket(hash, self.displacements.len() as u32);
        let place = table_hash::slot(
            hash,
            self.displacements[bucket].into(),
            self.slots.len() as u32,
        );
        let rank = self.slots[place];
        (rank != EMPTY && tokens[rank as usize] == bytes).then_some(rank)
    }

    fn blob(&self, tokens: &[&[u8]]) -> Vec<u8> {
        fn push(blob: &mut Vec<u8>, value: u32) {
            blob.extend_from_slice(&value.to_le_bytes());
        }
        let mut blob = Vec::new();
        push(&mut blob, tokens.len() as u32);
        push(&mut blob, self.displacements.len() as u32);
        push(&mut blob, self.slots.len() as u32);
        let mut offset = 0u32;
        push(&mut blob, offset);
        for token in tokens {
            offset += token.len() as u32;
            push(&mut blob, offset);
        }
        blob.extend_from_slice(&self.displacements);
        for &rank in &self.slots {
            let token: &[u8] = if rank == EMPTY {
                &[]
            } else {
                tokens[rank as usize]
            };
            let head = table_hash::head(token);
            push(&mut blob, head as u32);
            push(&mut blob, (head >> 32) as u32);
            push(&mut blob, rank);
            push(&mut blob, token.len() as u32);
        }
        for token in tokens {
            blob.extend_from_slice(token);
        }
        blob
    }
}
