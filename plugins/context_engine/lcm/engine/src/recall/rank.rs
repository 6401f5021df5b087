//! Recall's one ranking, the same on every store: Okapi BM25, computed here over the text of
//! the candidates the store found. Each store's own full-text rank (SQLite's bm25,
//! PostgreSQL's `ts_rank`) orders matches its own way, so what recall brought back would
//! change with a move of the store from one database to the other.

use std::collections::BTreeSet;

/// How fast a word's weight saturates with its count in a text.
const K1: f64 = 1.2;
/// How much a text's length discounts its counts.
const B: f64 = 0.75;
/// The first bytes of a candidate's text that are scored.
const SCORED_BYTES: usize = 64 * 1024;

/// The words of `text` as the store's full-text index splits them: runs of letters and
/// digits, lower-cased.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

/// Each of `texts`' BM25 score for `terms` (a term of several words, such as `eu-west-2`,
/// counts each of them), with the words' rarity taken among `texts` alone: higher is better.
pub fn bm25(terms: &[String], texts: &[&str]) -> Vec<f64> {
    let query = Query::new(terms);
    // Per text: its length in words and the count of each query word in it, by the word's
    // place in the query's sorted order, so a text's score is summed in the same order every
    // time (a hash map's order changes per map, and a float sum with it: equal texts would
    // tie one call and not the next, and the selection would not be stable).
    let counted: Vec<(usize, Vec<u32>)> = texts
        .iter()
        .map(|text| {
            let scored = &text[..floor_boundary(text, SCORED_BYTES)];
            let mut length = 0;
            let mut counts = vec![0u32; query.words.len()];
            for_each_word(scored, |word, ascii| {
                length += 1;
                if let Some(at) = query.find(word, ascii) {
                    counts[at] += 1;
                }
            });
            (length, counts)
        })
        .collect();
    let total = counted.len() as f64;
    let average = counted
        .iter()
        .map(|(length, _)| *length as f64)
        .sum::<f64>()
        / total.max(1.0);
    let rarity: Vec<f64> = (0..query.words.len())
        .map(|at| {
            let holding = counted.iter().filter(|(_, counts)| counts[at] > 0).count() as f64;
            (1.0 + (total - holding + 0.5) / (holding + 0.5)).ln()
        })
        .collect();
    counted
        .iter()
        .map(|(length, counts)| {
            let norm = K1 * (1.0 - B + B * *length as f64 / average.max(1.0));
            counts
                .iter()
                .zip(&rarity)
                .filter(|(count, _)| **count > 0)
                .map(|(count, rarity)| {
                    let count = f64::from(*count);
                    rarity * count * (K1 + 1.0) / (count + norm)
                })
                .sum()
        })
        .collect()
}

/// The query's words, lower-cased, each once, in sorted order, and found by length. Every
/// word of every candidate is looked up on every request: comparing it with the few query
/// words of its length, ignoring ASCII case, allocates nothing for an ASCII word (looking
/// each up lower-cased in an ordered set cost most of a request's ranking).
struct Query {
    words: Vec<String>,
    /// By length in bytes: the places in `words` of the words that long.
    by_length: Vec<Vec<usize>>,
}

impl Query {
    fn new(terms: &[String]) -> Query {
        let words: BTreeSet<String> = terms.iter().flat_map(|term| words(term)).collect();
        let words: Vec<String> = words.into_iter().collect();
        let longest = words.iter().map(String::len).max().unwrap_or(0);
        let mut by_length = vec![Vec::new(); longest + 1];
        for (at, word) in words.iter().enumerate() {
            by_length[word.len()].push(at);
        }
        Query { words, by_length }
    }

    /// The place of `word` (as the text holds it; `ascii` when it is all ASCII) among the
    /// query's words, compared lower-cased.
    fn find(&self, word: &str, ascii: bool) -> Option<usize> {
        if ascii {
            // Lower-casing keeps an ASCII word's length; most words differ from a query word
            // of their length in the first letter already.
            let first = word.as_bytes()[0].to_ascii_lowercase();
            return self.by_length.get(word.len())?.iter().copied().find(|&at| {
                let query = self.words[at].as_bytes();
                query[0] == first && query.eq_ignore_ascii_case(word.as_bytes())
            });
        }
        let lower = word.to_lowercase();
        self.by_length
            .get(lower.len())?
            .iter()
            .copied()
            .find(|&at| self.words[at] == lower)
    }
}

/// Calls `each` with every word of `text`, split as [`words`] splits it (not lower-cased),
/// and whether it is all ASCII. Read byte by byte, decoding a character only where one is
/// not ASCII: it runs over every candidate's text on every request.
fn for_each_word<'t>(text: &'t str, mut each: impl FnMut(&'t str, bool)) {
    let bytes = text.as_bytes();
    let mut start: Option<usize> = None;
    let mut ascii = true;
    let mut at = 0;
    while at < bytes.len() {
        let (in_word, width) = if bytes[at] < 0x80 {
            (bytes[at].is_ascii_alphanumeric(), 1)
        } else {
            let c = text[at..].chars().next().expect("at is a char boundary");
            (c.is_alphanumeric(), c.len_utf8())
        };
        match (in_word, start) {
            (true, None) => {
                start = Some(at);
                ascii = width == 1;
            }
            (true, Some(_)) => ascii &= width == 1,
            (false, Some(from)) => {
                each(&text[from..at], ascii);
                start = None;
            }
            (false, None) => {}
        }
        at += width;
    }
    if let Some(from) = start {
        each(&text[from..], ascii);
    }
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn rarer_words_and_shorter_texts_rank_higher() {
        let texts = [
            "the deploy target is the eu-west-2 cluster",
            "deploy the parser module, deploy the tests, deploy again and again and again",
            "nothing to see here",
        ];
        let scores = bm25(&terms(&["cluster", "deploy"]), &texts);
        assert!(scores[0] > scores[1], "{scores:?}");
        assert!(scores[1] > scores[2], "{scores:?}");
        assert_eq!(scores[2], 0.0);
    }

    #[test]
    fn texts_holding_the_same_words_tie_exactly_on_every_call() {
        // Equal scores must be equal floats, or ties (broken by id) flip from call to call.
        let vocabulary: Vec<String> = (0..24).map(|n| format!("w{n}")).collect();
        let same = vocabulary.join(" ");
        let reversed: Vec<&str> = vocabulary.iter().rev().map(String::as_str).collect();
        let reversed = reversed.join(" ");
        // Other texts hold the words a varied number of times, so each word's rarity differs.
        let others: Vec<String> = (1..24)
            .map(|n| vocabulary[..n].join(" ") + " filler")
            .collect();
        let mut texts = vec![same.as_str(), reversed.as_str()];
        texts.extend(others.iter().map(String::as_str));
        for _ in 0..50 {
            let scores = bm25(&vocabulary, &texts);
            assert_eq!(scores[0].to_bits(), scores[1].to_bits(), "{scores:?}");
        }
    }

    #[test]
    fn words_split_as_the_index_splits_them() {
        for text in [
            "",
            "  eu-west-2, cluster_9 (ok)!",
            "Zürich→Genève: 12 km; naïve café",
            "trailing",
            "日本語 text ١٢٣",
        ] {
            let mut split = Vec::new();
            for_each_word(text, |word, ascii| {
                assert_eq!(ascii, word.is_ascii(), "{word:?}");
                split.push(word.to_lowercase());
            });
            assert_eq!(split, words(text).collect::<Vec<_>>(), "{text:?}");
        }
    }

    #[test]
    fn words_are_compared_lower_cased_whatever_their_case_or_script() {
        let texts = [
            "DEPLOY to Zürich from the Deploy-Host",
            "deploy to zürich from the deploy-host",
            "nothing here",
        ];
        let long = "X".repeat(80);
        let mixed = [long.as_str(), "x"];
        // A word longer than any query word is none of them.
        assert_eq!(bm25(&terms(&["x"]), &mixed)[0], 0.0);
        let scores = bm25(&terms(&["deploy", "ZÜRICH", "host"]), &texts);
        assert_eq!(scores[0].to_bits(), scores[1].to_bits(), "{scores:?}");
        assert!(scores[0] > 0.0 && scores[2] == 0.0, "{scores:?}");
        // A long word is compared too.
        let scores = bm25(&[long.to_lowercase()], &mixed);
        assert!(scores[0] > 0.0 && scores[1] == 0.0, "{scores:?}");
    }

    #[test]
    fn a_term_of_several_words_counts_each_and_the_order_of_texts_does_not_matter() {
        let texts = ["region eu-west-2", "west of here"];
        let scores = bm25(&terms(&["eu-west-2"]), &texts);
        let reversed = bm25(&terms(&["eu-west-2"]), &[texts[1], texts[0]]);
        assert!(scores[0] > scores[1]);
        assert_eq!((scores[0], scores[1]), (reversed[1], reversed[0]));
    }
}
