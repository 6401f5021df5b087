//! Prebuilds the counting tables of `o200k_base`: bpe-openai's byte-pair encoding without the
//! parts counting never reads (the tokens' bytes, the bytes-to-token index and two of its three
//! automata, which serve encoding and decoding), written with bincode, whose fixed-width
//! integers read back several times faster than bpe-openai's MessagePack. A one-shot command
//! loads it in a fraction of the time. The tables are checked here: the lean encoding, read
//! back as `tokens.rs` reads it, must count like the full one.

use std::path::PathBuf;

use bpe_openai::byte_pair_encoding::BytePairEncoding;
use serde::de::{Deserialize, IgnoredAny};

/// Fields of `BytePairEncoding` in its serialized order (a MessagePack array).
const FIELDS: usize = 10;
const ALL_TOKENS: usize = 0;
const BYTES_HASH_TO_TOKEN: usize = 2;
const LONGEST_SEARCHER: usize = 5;
const OVERLAPPING_SEARCHER: usize = 6;
const OVERLAPPING_SEARCHER_REV: usize = 7;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let full = &bpe_openai::o200k_base().bpe;
    let serialized = rmp_serde::to_vec(full).expect("the encoding serializes");
    let lean: BytePairEncoding =
        rmp_serde::from_slice(&lean(&serialized)).expect("lean tables load");
    let tables = bincode::serialize(&lean).expect("the lean encoding serializes");
    let reloaded: BytePairEncoding = bincode::deserialize(&tables).expect("the tables load");
    let sample = "Token counting, cached per text: fn main() { println!(\"héllo\"); } // 🚀 \
                  aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1234567890 \n\n\t  ÄÖÜ 日本語のテキスト";
    for piece in bpe_openai::o200k_base().split(sample) {
        assert_eq!(
            reloaded.count(piece.as_bytes()),
            full.count(piece.as_bytes()),
            "the lean tables count {piece:?} differently: has bpe's layout changed?"
        );
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("o200k_base.count.bincode"), tables).expect("OUT_DIR is writable");
}

/// The serialized encoding with the fields counting does not use replaced by empty ones.
fn lean(serialized: &[u8]) -> Vec<u8> {
    let mut rest = serialized;
    let fields = rmp::decode::read_array_len(&mut rest).expect("the encoding is an array");
    assert_eq!(
        fields as usize, FIELDS,
        "bpe's BytePairEncoding layout changed"
    );
    // A valid automaton with one pattern stands in for the unused ones.
    let empty_searcher =
        aneubeck_daachorse::DoubleArrayAhoCorasick::<u32>::with_values([(b"a".as_slice(), 0)])
            .expect("a one-pattern automaton builds")
            .serialize();
    let mut lean = Vec::new();
    rmp::encode::write_array_len(&mut lean, fields).expect("writes to a vector");
    for field in 0..FIELDS {
        let before = rest;
        IgnoredAny::deserialize(&mut rmp_serde::Deserializer::new(&mut rest))
            .expect("a MessagePack value");
        let value = &before[..before.len() - rest.len()];
        let marker = rmp::Marker::from_u8(value[0]);
        match field {
            ALL_TOKENS => {
                assert!(is_array(marker), "all_tokens is a sequence");
                rmp::encode::write_array_len(&mut lean, 0).expect("writes to a vector");
            }
            BYTES_HASH_TO_TOKEN => {
                assert!(is_map(marker), "bytes_hash_to_token is a map");
                rmp::encode::write_map_len(&mut lean, 0).expect("writes to a vector");
            }
            OVERLAPPING_SEARCHER | OVERLAPPING_SEARCHER_REV => {
                assert!(is_bin(marker), "the automata are byte strings");
                rmp::encode::write_bin(&mut lean, &empty_searcher).expect("writes to a vector");
            }
            LONGEST_SEARCHER => {
                assert!(is_bin(marker), "the automata are byte strings");
                lean.extend_from_slice(value);
            }
            _ => lean.extend_from_slice(value),
        }
    }
    assert!(rest.is_empty(), "bpe's BytePairEncoding layout changed");
    lean
}

fn is_array(marker: rmp::Marker) -> bool {
    matches!(
        marker,
        rmp::Marker::FixArray(_) | rmp::Marker::Array16 | rmp::Marker::Array32
    )
}

fn is_map(marker: rmp::Marker) -> bool {
    matches!(
        marker,
        rmp::Marker::FixMap(_) | rmp::Marker::Map16 | rmp::Marker::Map32
    )
}

fn is_bin(marker: rmp::Marker) -> bool {
    matches!(
        marker,
        rmp::Marker::Bin8 | rmp::Marker::Bin16 | rmp::Marker::Bin32
    )
}
