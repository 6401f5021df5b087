//! Short excerpts around a match.

use crate::summarize::prefix;

const BEFORE: usize = 80;
const AFTER: usize = 160;

/// The text around byte offset `at`, on one line, with `…` where it was cut.
pub fn around(text: &str, at: usize) -> String {
    let at = at.min(text.len());
    let mut start = at.saturating_sub(BEFORE);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let rest = &text[start..];
    let piece = prefix(rest, (at - start) + AFTER);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&piece.split_whitespace().collect::<Vec<_>>().join(" "));
    if piece.len() < rest.len() {
        out.push('…');
    }
    out
}

/// Where the first of `terms` occurs in `text`, ignoring ASCII case (0 when none does).
pub fn first_term(text: &str, terms: &[String]) -> usize {
    let lower = text.to_ascii_lowercase();
    terms
        .iter()
        .filter_map(|t| lower.find(&t.to_ascii_lowercase()))
        .min()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_are_cut_on_char_boundaries() {
        let text = format!("{}NEEDLE{}", "é".repeat(100), "ü".repeat(200));
        let at = text.find("NEEDLE").unwrap();
        let snippet = around(&text, at);
        assert!(snippet.contains("NEEDLE"));
        assert!(snippet.starts_with('…') && snippet.ends_with('…'));
        assert_eq!(first_term(&text, &["needle".to_string()]), at);
    }
}
