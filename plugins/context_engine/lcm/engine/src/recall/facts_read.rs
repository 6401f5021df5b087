//! The standing facts recall reads in a text, remembered from one request to the next. A
//! request repeats the one before it and adds a turn, and its matches are mostly the same:
//! reading every user and system message of the request and every match again (the
//! standing-facts reader over up to [`TEXT_READ`](super::TEXT_READ) bytes of each) was most
//! of what a request cost on a long session.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use ctxhost_offline_summary::standing::{extract, Origin, Standing};

/// How a text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reading {
    /// A summary's text: the standing lines it lists.
    Listed,
    /// A user's or a system prompt's sentences.
    User,
    /// A tool's output.
    Tool,
}

impl Reading {
    fn read(self, text: &str) -> Vec<Standing> {
        match self {
            Reading::Listed => text.lines().filter_map(Standing::parse_line).collect(),
            Reading::User => extract(text, Origin::User),
            Reading::Tool => extract(text, Origin::Tool),
        }
    }
}

/// A text by how it is read, its length and a 64-bit hash of it (two texts of one length
/// that hash alike are taken for one: a chance of about one in 2^64 per pair).
type Key = (Reading, usize, u64);

/// What the last two requests read, by text; older readings are let go, so what is kept is
/// bounded by what a request reads.
#[derive(Debug, Default)]
pub struct FactsRead {
    /// Read for the request being served.
    current: HashMap<Key, Vec<Standing>>,
    /// Read for the request before it.
    previous: HashMap<Key, Vec<Standing>>,
}

impl FactsRead {
    /// Starts a request: what the request before read stays at hand, anything older goes.
    pub fn start(&mut self) {
        self.previous = std::mem::take(&mut self.current);
    }

    /// The standing facts `text` states, read as `reading` says, once per text.
    pub fn read(&mut self, text: &str, reading: Reading) -> Vec<Standing> {
        let mut hasher = DefaultHasher::new();
        text.hash(&mut hasher);
        let key = (reading, text.len(), hasher.finish());
        if let Some(facts) = self.current.get(&key) {
            return facts.clone();
        }
        let facts = self
            .previous
            .remove(&key)
            .unwrap_or_else(|| reading.read(text));
        self.current.insert(key, facts.clone());
        facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_reads_the_same_remembered_or_not_and_old_readings_go() {
        let text = "RULE: never push to the release branch on Fridays.";
        let mut read = FactsRead::default();
        let first = read.read(text, Reading::User);
        assert!(!first.is_empty());
        assert_eq!(first, Reading::User.read(text));
        read.start();
        assert_eq!(read.read(text, Reading::User), first);
        // Read as a tool's output, the same text is another reading.
        assert_eq!(read.read(text, Reading::Tool), Reading::Tool.read(text));
        read.start();
        read.start();
        assert!(read.current.is_empty() && read.previous.is_empty());
    }
}
