//! Counts of the pieces a pre-tokenizer split texts into, by piece, remembered for the rest of
//! a count: a piece counts the same wherever it appears, and a session repeats its words.
//!
//! Remembering pays only while pieces repeat. A blob of random letters (base64) splits into
//! pieces that mostly never come back: each look in the map then missed the processor's caches
//! as well as the map, and cost more than merging the piece again. So the map is consulted
//! while it finds at least one piece in [`FOUND_AT_LEAST_ONE_IN`] of those looked up (judged
//! after [`TRIAL_LOOKUPS`]), and not again in this count once it does not. Either way every
//! piece counts exactly: the map only saves merging.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use rustc_hash::FxHasher;

/// Pieces up to this long are remembered (a long piece rarely repeats, and remembering every
/// one would hold a copy of the text).
const MAX_PIECE_BYTES: usize = 256;

/// At most this many pieces are remembered: random text has as many distinct pieces as it has
/// pieces, and remembering them all would take several times the text's size.
const MAX_ENTRIES: usize = 1 << 17;

/// Lookups before the map is judged.
const TRIAL_LOOKUPS: u32 = 4096;

/// The map is given up when it finds fewer than one piece in this many looked up.
const FOUND_AT_LEAST_ONE_IN: u32 = 4;

#[derive(Default)]
pub struct PieceCounts {
    counts: HashMap<Box<str>, u32, BuildHasherDefault<FxHasher>>,
    looked_up: u32,
    found: u32,
    given_up: bool,
}

impl PieceCounts {
    /// The count remembered for `piece`, if it is, and the map is still worth a look.
    pub fn get(&mut self, piece: &str) -> Option<u32> {
        if self.given_up {
            return None;
        }
        let count = self.counts.get(piece).copied();
        self.looked_up += 1;
        self.found += u32::from(count.is_some());
        if self.looked_up >= TRIAL_LOOKUPS {
            self.given_up = self.found * FOUND_AT_LEAST_ONE_IN < self.looked_up;
            // Judge the next stretch of lookups on its own.
            (self.looked_up, self.found) = (0, 0);
        }
        count
    }

    /// Whether the map was given up in this count.
    #[cfg(test)]
    pub fn given_up(&self) -> bool {
        self.given_up
    }

    /// Remembers `piece`'s count, if the map is still in use and has room.
    pub fn insert(&mut self, piece: &str, count: usize) {
        if !self.given_up && piece.len() <= MAX_PIECE_BYTES && self.counts.len() < MAX_ENTRIES {
            self.counts
                .insert(piece.into(), count.min(u32::MAX as usize) as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_that_repeat_are_remembered_and_pieces_that_do_not_give_the_map_up() {
        let mut repeating = PieceCounts::default();
        let mut distinct = PieceCounts::default();
        for i in 0..4 * TRIAL_LOOKUPS {
            let piece = format!("w{}", i % 100);
            if repeating.get(&piece).is_none() {
                repeating.insert(&piece, 2);
            }
            let piece = format!("w{i}");
            assert_eq!(distinct.get(&piece), None);
            distinct.insert(&piece, 2);
        }
        assert_eq!(repeating.get("w7"), Some(2));
        assert!(!repeating.given_up);
        // Given up at the last lookup of the first trial: the pieces before it are all that
        // was remembered.
        assert!(distinct.given_up);
        assert_eq!(distinct.counts.len(), TRIAL_LOOKUPS as usize - 1);
        assert_eq!(distinct.get("w7"), None);
    }
}
