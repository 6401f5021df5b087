//! A message's words as PostgreSQL indexes them, found by the engine rather than by the server:
//! the server's text parser (`to_tsvector`) cost more than everything else ingest does on the
//! server together, and the engine splits words in a fraction of that. The words are what
//! SQLite's `unicode61` tokenizer sees (runs of letters and digits, lower-cased), so a search
//! finds the same messages on both databases; each carries its positions (for phrases and
//! ranking). The vector travels in PostgreSQL's binary `tsvector` format, and the queries are
//! written in the same words ([`tsquery`]).
//!
//! Rows stored before schema 3 keep the server's own split (which also keeps `foo-bar`
//! whole besides its parts): the queries written here match those as well.

use std::borrow::Cow;
use std::error::Error;

use bytes::BytesMut;
use postgres_types::{to_sql_checked, IsNull, ToSql, Type};

/// Characters of a text that are indexed, as the server-side column did (`left(text, 500000)`).
const INDEXED_CHARS: usize = 500_000;
/// The longest lexeme PostgreSQL keeps, in bytes; longer words are left out, as the server's
/// parser leaves them.
const MAX_LEXEME_BYTES: usize = 2_047;
/// Positions run from 1 to this; later words share the last, as the server's parser does.
const MAX_POSITION: u16 = 16_383;
/// Positions a lexeme keeps at most.
const MAX_POSITIONS: usize = 256;
/// A vector's lexemes and positions stay under PostgreSQL's 1 MB; words past it are left out.
pub(crate) const MAX_VECTOR_BYTES: usize = 1_000_000;

/// The words of one text with the positions each is at, as PostgreSQL's binary `tsvector`
/// (`tsvector_recv`): the count of lexemes, then each lexeme (sorted byte-wise, as the server
/// sorts them) NUL-terminated, with its count of positions and the positions (weight D: none
/// set).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Words {
    encoded: Vec<u8>,
}

/// `word` lower-cased, borrowed when it already is (most words are).
fn lower(word: &str) -> Cow<'_, str> {
    if word
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(word.to_lowercase())
    }
}

/// The maximal runs of letters and digits of `text` (ASCII read byte by byte).
fn split_words(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        let mut start = None;
        while at < bytes.len() {
            let (word_char, width) = match bytes[at] {
                byte if byte.is_ascii() => (byte.is_ascii_alphanumeric(), 1),
                _ => {
                    let c = text[at..].chars().next().unwrap_or_default();
                    (c.is_alphanumeric(), c.len_utf8())
                }
            };
            match (word_char, start) {
                (true, None) => start = Some(at),
                (false, Some(from)) => {
                    at += width;
                    return Some(&text[from..at - width]);
                }
                _ => {}
            }
            at += width;
        }
        start.map(|from| &text[from..])
    })
}

/// The words of `text`: each maximal run of letters and digits, lower-cased.
pub fn words(text: &str) -> Words {
    let indexed = match text.char_indices().nth(INDEXED_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    };
    // Every word with its position, then sorted: no allocation per word or per lexeme. The
    // sort compares the words' first 8 bytes as a number first (most differ there).
    let mut found: Vec<(u64, Cow<'_, str>, u16)> = Vec::with_capacity(indexed.len() / 6);
    let mut position: u16 = 0;
    for word in split_words(indexed) {
        position = (position + 1).min(MAX_POSITION);
        let lexeme = lower(word);
        // Lower-casing can lengthen a word past the limit.
        if lexeme.len() <= MAX_LEXEME_BYTES {
            let mut head = [0; 8];
            let take = lexeme.len().min(8);
            head[..take].copy_from_slice(&lexeme.as_bytes()[..take]);
            found.push((u64::from_be_bytes(head), lexeme, position));
        }
    }
    found.sort_unstable();
    let mut encoded = Vec::with_capacity(4 + found.len() * 4);
    encoded.extend_from_slice(&[0; 4]);
    let (mut count, mut bytes) = (0_i32, 0);
    for group in found.chunk_by(|a, b| a.1 == b.1) {
        let lexeme = group[0].1.as_bytes();
        // Sorted by position: a repeat (words past the last position share it) follows its
        // twin, and is written once.
        let distinct = 1 + group.windows(2).filter(|w| w[0].2 != w[1].2).count();
        let kept = distinct.min(MAX_POSITIONS);
        // The lexeme, its terminator and count, its positions, alignment.
        let cost = lexeme.len() + 4 + 2 * kept;
        if bytes + cost > MAX_VECTOR_BYTES {
            continue;
        }
        bytes += cost;
        count += 1;
        encoded.extend_from_slice(lexeme);
        encoded.push(0);
        encoded.extend_from_slice(&(kept as u16).to_be_bytes());
        let mut last = None;
        for at in group
            .iter()
            .map(|(_, _, at)| *at)
            .filter(|at| {
                let new = last != Some(*at);
                last = Some(*at);
                new
            })
            .take(kept)
        {
            encoded.extend_from_slice(&at.to_be_bytes());
        }
    }
    encoded[..4].copy_from_slice(&count.to_be_bytes());
    Words { encoded }
}

impl Words {
    /// Bytes of the binary form: more than its lexemes take in a vector without positions
    /// (each lexeme has at least one position here).
    pub(crate) fn bytes(&self) -> usize {
        self.encoded.len()
    }

    /// The lexemes, in order.
    pub(crate) fn lexemes(&self) -> impl Iterator<Item = &[u8]> {
        let bytes = &self.encoded;
        let mut at = 4;
        std::iter::from_fn(move || {
            let rest = bytes.get(at..).filter(|rest| !rest.is_empty())?;
            let end = rest.iter().position(|b| *b == 0)?;
            let positions = rest.get(end + 1..end + 3)?;
            at += end + 3 + 2 * usize::from(u16::from_be_bytes([positions[0], positions[1]]));
            Some(&rest[..end])
        })
    }

    /// The lexemes of all `parts`, each once and without positions: what the index holds
    /// for a span of messages (`spans.rs`).
    pub fn union<'a>(parts: impl IntoIterator<Item = &'a Words>) -> Words {
        let mut lexemes: Vec<&[u8]> = parts.into_iter().flat_map(Words::lexemes).collect();
        lexemes.sort_unstable();
        lexemes.dedup();
        let mut encoded =
            Vec::with_capacity(4 + lexemes.iter().map(|l| l.len() + 3).sum::<usize>());
        encoded.extend_from_slice(&(lexemes.len() as i32).to_be_bytes());
        for lexeme in lexemes {
            encoded.extend_from_slice(lexeme);
            encoded.extend_from_slice(&[0, 0, 0]);
        }
        Words { encoded }
    }
}

impl ToSql for Words {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(&self.encoded);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TS_VECTOR
    }

    to_sql_checked!();
}

/// A character of the scripts written without spaces between words (the ranges of the
/// schema's `cjk_class!`): their words are searched as substrings.
pub fn cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF | 0x2E80..=0x9FFF | 0xA960..=0xA97F | 0xAC00..=0xD7FF
        | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x20000..=0x3FFFF)
}

/// Whether `text` holds CJK text (such messages are trigram-indexed).
pub fn has_cjk(text: &str) -> bool {
    text.chars().any(cjk)
}

/// One search term as a `tsquery` in the words of [`words`]: its parts (`foo-bar` is `foo`
/// followed by `bar`), the last one a prefix when `prefix`. `None` when it holds no word.
pub fn tsquery_term(term: &str, prefix: bool) -> Option<String> {
    let parts: Vec<String> = term
        .split(|c: char| !c.is_alphanumeric())
        .filter(|p| !p.is_empty())
        .map(|p| format!("'{}'", p.to_lowercase()))
        .collect();
    if parts.is_empty() {
        return None;
    }
    let mut query = parts.join(" <-> ");
    if prefix {
        query.push_str(":*");
    }
    Some(query)
}

/// `query` (written by [`tsquery_term`]s joined by `&` or `|`) as a span's words can answer
/// it: they have no positions, so each phrase asks for its words, wherever they are.
pub fn without_phrases(query: &str) -> String {
    query.replace(" <-> ", " & ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lexemes and positions, read back from the binary form.
    fn listed(words: &Words) -> Vec<(String, Vec<u16>)> {
        let bytes = &words.encoded;
        let count = i32::from_be_bytes(bytes[..4].try_into().unwrap());
        let mut at = 4;
        let mut out = Vec::new();
        for _ in 0..count {
            let end = at + bytes[at..].iter().position(|b| *b == 0).unwrap();
            let lexeme = String::from_utf8(bytes[at..end].to_vec()).unwrap();
            at = end + 1;
            let n = u16::from_be_bytes([bytes[at], bytes[at + 1]]) as usize;
            at += 2;
            let positions = (0..n)
                .map(|i| u16::from_be_bytes([bytes[at + 2 * i], bytes[at + 2 * i + 1]]))
                .collect();
            at += 2 * n;
            out.push((lexeme, positions));
        }
        assert_eq!(at, bytes.len());
        out
    }

    fn positions(words: &Words, lexeme: &str) -> Vec<u16> {
        listed(words)
            .into_iter()
            .find(|(l, _)| l == lexeme)
            .unwrap()
            .1
    }

    #[test]
    fn words_are_runs_of_letters_and_digits_lower_cased_with_their_positions() {
        let found = words("Parse_block(self): the PARSER parses; Café 42 — the end");
        let listed = listed(&found);
        let found: Vec<(&str, Vec<u16>)> = listed
            .iter()
            .map(|(l, p)| (l.as_str(), p.clone()))
            .collect();
        assert_eq!(
            found,
            [
                ("42", vec![8]),
                ("block", vec![2]),
                ("café", vec![7]),
                ("end", vec![10]),
                ("parse", vec![1]),
                ("parser", vec![5]),
                ("parses", vec![6]),
                ("self", vec![3]),
                ("the", vec![4, 9]),
            ]
        );
    }

    #[test]
    fn positions_stop_at_the_last_and_overlong_words_are_left_out() {
        let mut text = "w ".repeat(20_000);
        text.push_str(&"x".repeat(MAX_LEXEME_BYTES + 1));
        text.push_str(" tail");
        let found = words(&text);
        let w = positions(&found, "w");
        assert_eq!(w.len(), MAX_POSITIONS);
        assert!(w.windows(2).all(|p| p[0] < p[1]));
        assert_eq!(positions(&found, "tail"), [MAX_POSITION]);
        assert_eq!(listed(&found).len(), 2, "the overlong word is not indexed");
    }

    #[test]
    fn a_term_is_its_words_in_a_row() {
        assert_eq!(tsquery_term("ZEBRA-42", false).unwrap(), "'zebra' <-> '42'");
        assert_eq!(tsquery_term("pref", true).unwrap(), "'pref':*");
        assert_eq!(tsquery_term("--", false), None);
        assert_eq!(
            without_phrases("('zebra' <-> '42') | ('pref':*)"),
            "('zebra' & '42') | ('pref':*)"
        );
    }

    #[test]
    fn a_union_holds_each_lexeme_of_its_parts_once_without_positions() {
        let union = Words::union([&words("b a b"), &words("c B"), &words("")]);
        let none = Vec::<u16>::new();
        assert_eq!(
            listed(&union),
            [
                ("a".to_string(), none.clone()),
                ("b".to_string(), none.clone()),
                ("c".to_string(), none)
            ]
        );
        assert_eq!(Words::union([]), words(""));
    }
}
