//! Case-insensitive "does this text mention any of these words" checks, in one pass.
//!
//! The summary asks it of every sentence and line of a session (hundreds of thousands of them):
//! lower-casing each and searching for every marker in turn was most of the summary's time.
//! For ASCII text one Aho-Corasick automaton that ignores ASCII case answers the same; other
//! text is lower-cased as before (Unicode lower-casing can turn a non-ASCII character into an
//! ASCII one, e.g. the Kelvin sign into `k`), so the answers never differ.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

/// A fixed set of lower-case markers, searched as substrings ignoring case.
pub struct Markers {
    /// The markers, in one or two lists (one automaton searches both).
    lists: [&'static [&'static str]; 2],
    automaton: OnceLock<AhoCorasick>,
}

impl Markers {
    /// `markers` must be lower case (what `str::to_lowercase` gives).
    pub const fn new(markers: &'static [&'static str]) -> Self {
        Self::either(markers, &[])
    }

    /// The markers of both lists, searched in one pass.
    pub const fn either(first: &'static [&'static str], second: &'static [&'static str]) -> Self {
        Markers {
            lists: [first, second],
            automaton: OnceLock::new(),
        }
    }

    fn markers(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.lists.iter().flat_map(|list| list.iter().copied())
    }

    /// Whether `text`, lower-cased, contains one of the markers.
    pub fn any_in(&self, text: &str) -> bool {
        if text.is_ascii() {
            return self.automaton().is_match(text);
        }
        let lower = text.to_lowercase();
        self.markers().any(|marker| lower.contains(marker))
    }

    fn automaton(&self) -> &AhoCorasick {
        self.automaton.get_or_init(|| {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(self.markers())
                .expect("a few short literal markers build an automaton")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static MARKERS: Markers = Markers::new(&["don't", "next step", "todo"]);

    #[test]
    fn ignores_case_in_ascii_and_in_other_text() {
        assert!(MARKERS.any_in("The NEXT STEP is clear"));
        assert!(MARKERS.any_in("Don't"));
        assert!(MARKERS.any_in("ÄÖÜ: todo"));
        assert!(MARKERS.any_in("ÄÖÜ: TODO"));
        assert!(!MARKERS.any_in("nothing to see"));
        assert!(!MARKERS.any_in("ÄÖÜ nothing"));
    }

    #[test]
    fn either_list_matches() {
        let markers = Markers::either(&["alpha"], &["beta"]);
        assert!(markers.any_in("ALPHA"));
        assert!(markers.any_in("Beta"));
        assert!(markers.any_in("ÄÖÜ beta"));
        assert!(!markers.any_in("gamma"));
    }

    #[test]
    fn non_ascii_text_is_lower_cased_as_unicode() {
        // The Kelvin sign lower-cases to an ASCII `k`.
        let markers = Markers::new(&["ok"]);
        assert!(markers.any_in("O\u{212A}"));
        assert_eq!("O\u{212A}".to_lowercase(), "ok");
    }
}
