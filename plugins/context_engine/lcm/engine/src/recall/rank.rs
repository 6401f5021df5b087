//! Recall's one ranking, the same on every store: Okapi BM25, computed here over the text of
//! the candidates the store found. Each store's own full-text rank (SQLite's bm25,
//! PostgreSQL's `ts_rank`) orders matches its own way, so what recall brought back would
//! change with a move of the store from one database to the other.

use std::collections::{BTreeMap, BTreeSet, HashMap};

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
    let query: BTreeSet<String> = terms.iter().flat_map(|term| words(term)).collect();
    // Per text: its length in words and the count of each query word in it, in the words'
    // order, so a text's score is summed in the same order every time (a hash map's order
    // changes per map, and a float sum with it: equal texts would tie one call and not the
    // next, and the selection would not be stable).
    let counted: Vec<(usize, BTreeMap<&str, u32>)> = texts
        .iter()
        .map(|text| {
            let scored = &text[..floor_boundary(text, SCORED_BYTES)];
            let mut length = 0;
            let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
            for word in words(scored) {
                length += 1;
                if let Some(known) = query.get(&word) {
                    *counts.entry(known.as_str()).or_default() += 1;
                }
            }
            (length, counts)
        })
        .collect();
    let total = counted.len() as f64;
    let average = counted
        .iter()
        .map(|(length, _)| *length as f64)
        .sum::<f64>()
        / total.max(1.0);
    let rarity: HashMap<&str, f64> = query
        .iter()
        .map(|word| {
            let holding = counted
                .iter()
                .filter(|(_, counts)| counts.contains_key(word.as_str()))
                .count() as f64;
            let idf = (1.0 + (total - holding + 0.5) / (holding + 0.5)).ln();
            (word.as_str(), idf)
        })
        .collect();
    counted
        .iter()
        .map(|(length, counts)| {
            let norm = K1 * (1.0 - B + B * *length as f64 / average.max(1.0));
            counts
                .iter()
                .map(|(word, count)| {
                    let count = f64::from(*count);
                    rarity[word] * count * (K1 + 1.0) / (count + norm)
                })
                .sum()
        })
        .collect()
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
    fn a_term_of_several_words_counts_each_and_the_order_of_texts_does_not_matter() {
        let texts = ["region eu-west-2", "west of here"];
        let scores = bm25(&terms(&["eu-west-2"]), &texts);
        let reversed = bm25(&terms(&["eu-west-2"]), &[texts[1], texts[0]]);
        assert!(scores[0] > scores[1]);
        assert_eq!((scores[0], scores[1]), (reversed[1], reversed[0]));
    }
}
