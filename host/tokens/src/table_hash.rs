//! The hash of `o200k_base`'s prebuilt rank table, shared by `build.rs` (which builds the table)
//! and [`super::o200k`] (which reads it): both must place a token's bytes in the same slot.
//!
//! The table is a minimal-search perfect hash: a token's bytes hash once; the high half of the
//! hash picks a bucket, the bucket's displacement mixed with the hash picks the slot. Every
//! token has a slot of its own, so a lookup is one hash, two reads and one comparison. The
//! low bits of the same hash pick a bit of a filter that says quickly which bytes are not
//! a token.

/// The hash of `bytes`: eight bytes at a time, then mixed so that every output bit depends on
/// every input bit.
#[inline]
pub fn hash(bytes: &[u8]) -> u64 {
    const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut state = (bytes.len() as u64).wrapping_mul(MULTIPLIER);
    if bytes.len() <= 8 {
        // Most lookups: one word, read without the loop.
        if !bytes.is_empty() {
            state = (state ^ head(bytes))
                .wrapping_mul(MULTIPLIER)
                .rotate_left(29);
        }
        return mix(state);
    }
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("chunks of eight bytes"));
        state = (state ^ word).wrapping_mul(MULTIPLIER).rotate_left(29);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        state = (state ^ head(rest))
            .wrapping_mul(MULTIPLIER)
            .rotate_left(29);
    }
    mix(state)
}

/// The first eight bytes of `bytes`, zero-padded, as a little-endian `u64`: what a slot of the
/// table holds of its token. Read in at most two overlapping loads, not copied byte by byte: it
/// is most of a lookup's work on a short piece.
#[inline]
pub fn head(bytes: &[u8]) -> u64 {
    let length = bytes.len();
    let load = |at: usize| {
        u64::from(u32::from_le_bytes(
            bytes[at..at + 4].try_into().expect("four bytes"),
        ))
    };
    match length {
        0 => 0,
        1..=3 => {
            let byte = |at: usize| u64::from(bytes[at]) << (8 * at);
            byte(0) | byte(length / 2) | byte(length - 1)
        }
        4..=7 => load(0) | load(length - 4) << (8 * (length - 4)),
        _ => u64::from_le_bytes(bytes[..8].try_into().expect("eight bytes")),
    }
}

/// The bucket of a hash among `buckets`.
#[inline]
pub fn bucket(hash: u64, buckets: u32) -> usize {
    (((hash >> 32) * u64::from(buckets)) >> 32) as usize
}

/// The slot of a hash among `slots`, given its bucket's displacement.
#[inline]
pub fn slot(hash: u64, displacement: u32, slots: u32) -> usize {
    let mixed = mix(hash ^ u64::from(displacement).wrapping_mul(0xc2b2_ae3d_27d4_eb4f));
    ((u128::from(mixed) * u128::from(slots)) >> 64) as usize
}

/// Bits in the filter of token hashes: 256 KB, which a core's cache holds, where the slots
/// (about 3 MB) do not; about one in eleven hashes of bytes that are not a token finds its
/// bit set.
pub const FILTER_BITS: usize = 1 << 21;

/// The filter's bit for a hash: its low bits (the bucket is chosen by its high half).
#[inline]
pub fn filter_bit(hash: u64) -> usize {
    hash as usize & (FILTER_BITS - 1)
}

/// A 64-bit finalizer (the avalanche step of common 64-bit hashes).
#[inline]
fn mix(mut value: u64) -> u64 {
    value ^= value >> 33;
    value = value.wrapping_mul(0xff51_afd7_ed55_8ccd);
    value ^= value >> 33;
    value = value.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    value ^ (value >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_the_first_eight_bytes_zero_padded_and_hashes_as_the_bytes_do() {
        let bytes: Vec<u8> = (1..=20u8).map(|b| b.wrapping_mul(37) | 0x80).collect();
        for length in 0..=bytes.len() {
            let piece = &bytes[..length];
            let mut padded = [0u8; 8];
            padded[..length.min(8)].copy_from_slice(&piece[..length.min(8)]);
            assert_eq!(head(piece), u64::from_le_bytes(padded), "{length} bytes");
        }
        // Trailing zero bytes still count: the length is part of the hash.
        assert_ne!(hash(b"a"), hash(b"a\0"));
        assert_ne!(hash(b"abcdefgh"), hash(b"abcdefgh\0"));
    }
}
