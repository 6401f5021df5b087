//! The digest shape ([`SummaryShape::Digest`](ctxhost_sdk::SummaryShape::Digest)): a record
//! of what a span of turns did, for a summary that stands in for those turns (the lossless
//! engine's leaves), and the merge of such records (its condensed summaries).
//!
//! Sections appear only when they hold something, each line once: no placeholders, no
//! repeated or doubled bullets. A record reads:
//!
//! ```text
//! Asked: fix the failing test in src/parser.rs
//! Files:
//! - src/parser.rs (edited; last: `apply_patch`)
//! - tests/parse.rs
//! Did:
//! - Ran `cargo test` → 2 failed
//! - Edited src/parser.rs
//! Errors:
//! - error[E0599]: no method named `len` found
//! ```

use std::collections::HashSet;

use crate::digest::Digest;
use crate::files::FileBook;
use crate::restated;
use crate::standing::{self, Book};

/// The sections, in the order they are written, with how many items each keeps at most.
const SECTIONS: [(Section, usize); 9] = [
    (Section::Standing, standing::MAX_ITEMS),
    (Section::Asked, 4),
    // The files at their last state before the limits said in passing and the narrative: a
    // cut to the budget takes those first. The cap keeps the most recently touched.
    (Section::Files, 32),
    (Section::Constraints, 6),
    (Section::Did, 16),
    (Section::Open, 6),
    (Section::Decided, 8),
    (Section::Errors, 8),
    (Section::Next, 4),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    /// Standing rules, constraints, facts, goals and preferences: first, so a cut keeps them.
    Standing,
    Asked,
    Constraints,
    Files,
    Did,
    Open,
    Decided,
    Errors,
    Next,
}

impl Section {
    fn title(self) -> &'static str {
        match self {
            Section::Standing => "Standing",
            Section::Asked => "Asked",
            Section::Constraints => "Constraints",
            Section::Did => "Did",
            Section::Open => "Open",
            Section::Decided => "Decided",
            Section::Files => "Files",
            Section::Errors => "Errors",
            Section::Next => "Next",
        }
    }

    pub(crate) fn from_title(title: &str) -> Option<Section> {
        SECTIONS
            .iter()
            .map(|(section, _)| *section)
            .find(|section| section.title() == title)
    }

    /// What its items are, for the note on those left out.
    fn noun(self) -> &'static str {
        match self {
            Section::Standing => "standing facts",
            Section::Asked => "asks",
            Section::Constraints => "constraints",
            Section::Did => "actions",
            Section::Open => "open items",
            Section::Decided => "decisions",
            Section::Files => "files",
            Section::Errors => "errors",
            Section::Next => "next steps",
        }
    }

    /// Read from one line, comma-separated (how records once wrote files).
    fn inline(self) -> bool {
        matches!(self, Section::Files)
    }
}

/// The files of the Files sections in `text` (a summary in the digest shape), each at the last
/// state it states, in the order last touched (what lcm reads back to restore files a cut
/// dropped).
pub fn files_in(text: &str) -> FileBook {
    let mut record = Record::default();
    record.add_records(text);
    record.files
}

/// A record being built: items per section, each kept once.
#[derive(Debug, Default)]
pub struct Record {
    items: Vec<(Section, Vec<String>)>,
    seen: HashSet<String>,
    /// The standing section, each subject once (a newer value replaces an older one).
    standing: Book,
    /// The files section, each file once at its last state (a rename replaces the old path).
    files: FileBook,
}

impl Record {
    fn push(&mut self, section: Section, item: &str) {
        if section == Section::Standing {
            self.standing.add_lines([item]);
            return;
        }
        if section == Section::Files {
            let left_out = item.trim().starts_with("(+");
            if !left_out {
                self.files.add_lines([item]);
            }
            return;
        }
        let item = clean(item);
        // The note on items left out of an earlier record is not an item.
        let left_out = item.starts_with("(+") && item.ends_with(')');
        if item.is_empty() || left_out || !self.seen.insert(normalized(&item)) {
            return;
        }
        match self.items.iter_mut().find(|(s, _)| *s == section) {
            Some((_, items)) => items.push(item),
            None => self.items.push((section, vec![item])),
        }
    }

    fn extend<'a>(&mut self, section: Section, items: impl IntoIterator<Item = &'a String>) {
        for item in items {
            self.push(section, item);
        }
    }

    /// The facts of new turns.
    pub fn add_digest(&mut self, digest: &Digest) {
        self.standing.extend(digest.standing.iter().cloned());
        self.extend(Section::Asked, &digest.asks);
        // A constraint kept as a standing item is not written twice.
        let standing: HashSet<String> = digest
            .standing
            .iter()
            .map(|s| normalized(&s.text))
            .collect();
        let constraints = digest
            .constraints
            .iter()
            .filter(|c| !standing.contains(&normalized(c)));
        self.extend(Section::Constraints, constraints);
        self.extend(Section::Did, &digest.done);
        // A failed action is said once, under Errors (its error lines, which name it).
        self.extend(Section::Open, &digest.in_progress);
        self.extend(Section::Decided, &digest.decisions);
        for state in &digest.files {
            self.files.add(state.clone());
        }
        self.extend(Section::Errors, &digest.critical);
        self.extend(Section::Next, &digest.next_steps);
    }

    /// Merges the records in `text` (earlier summaries in this shape); returns whether it found
    /// any, so other text can be read as turns instead.
    pub fn add_records(&mut self, text: &str) -> bool {
        let mut found = false;
        let mut current: Option<Section> = None;
        for line in text.lines() {
            let line = line.trim_end();
            // A standing section however a summarizer headed it (`## Standing Facts`).
            if crate::carry::is_standing_heading(line) {
                found = true;
                current = Some(Section::Standing);
                continue;
            }
            if let Some((title, rest)) = line.split_once(':') {
                if let Some(section) = Section::from_title(title) {
                    found = true;
                    current = Some(section);
                    let rest = rest.trim();
                    if section.inline() {
                        // Without the note on items left out: `a.rs, b.rs (+2 more files)`.
                        let rest = match rest.rfind(" (+") {
                            Some(at) if rest.ends_with(')') => &rest[..at],
                            _ => rest,
                        };
                        if !rest.is_empty() {
                            for item in split_inline(rest) {
                                self.push(section, item);
                            }
                        }
                    } else if !rest.is_empty() {
                        for item in rest.split("; ") {
                            self.push(section, item);
                        }
                    }
                    continue;
                }
            }
            match (current, line.trim_start().strip_prefix("- ")) {
                (Some(section), Some(item)) => self.push(section, item),
                // A line outside any list (a summary's label, a blank line) ends the list.
                _ => current = None,
            }
        }
        found
    }

    /// The record as text, within `max_bytes`: sections in order, each cut to its share.
    /// When that is still too large, items go by the budget order of
    /// [`ctxhost_sdk::budget`] (the narrative first, then the open items, the files, the
    /// asks, and the standing facts last, oldest first), not by where the text ends: a cut
    /// at the end would drop the newest standing facts (a value's update among them) and the
    /// files before any older fact.
    pub fn render_within(&self, max_bytes: usize) -> String {
        let shown = self.shown();
        let out = self.render(&shown, false);
        let out = if out.len() > max_bytes {
            // Every section as a heading and its items, which the budget order reads.
            let listed = self.render(&shown, true);
            ctxhost_sdk::budget::trim_summary(&listed, |text| text.len() <= max_bytes)
        } else {
            out
        };
        if out.trim().is_empty() {
            return "Nothing to record: the turns held no request, action, file or error.".into();
        }
        out.trim_end().to_string()
    }

    /// The sections but the standing facts and the files as they are written: no replaced
    /// value shown as current, and no ask or limit said in passing that only states what the
    /// standing facts carry (a rule, or a new value, said in a message of its own), which the
    /// handoff leaves out of its goal and limits the same way.
    fn shown(&self) -> Vec<(Section, Vec<String>)> {
        let current = restated::said_now(&self.standing);
        let ever = restated::said_ever(&self.standing);
        self.items
            .iter()
            .map(|(section, items)| {
                let said = match section {
                    Section::Asked => Some(&current),
                    Section::Constraints => Some(&ever),
                    _ => None,
                };
                let items = items
                    .iter()
                    .filter(|item| !said.is_some_and(|said| restated::states_only(item, said)))
                    .map(|item| self.standing.mark_superseded(item).into_owned());
                (*section, items.collect())
            })
            .collect()
    }

    /// Sections in order (`sections`, as [`Self::shown`] gives them), each cut to its share;
    /// `listed` writes every section as a heading and its items (no one-line forms).
    fn render(&self, sections: &[(Section, Vec<String>)], listed: bool) -> String {
        let mut out = String::new();
        if !self.standing.is_empty() {
            out.push_str(Section::Standing.title());
            out.push_str(":\n");
            for line in self.standing.lines() {
                out.push_str("- ");
                out.push_str(&line);
                out.push('\n');
            }
        }
        let files: Vec<String> = self
            .files
            .lines()
            .into_iter()
            .map(|line| self.standing.mark_superseded(&line).into_owned())
            .collect();
        for (section, limit) in SECTIONS {
            let items = match section {
                Section::Files if files.is_empty() => continue,
                Section::Files => &files,
                _ => match sections.iter().find(|(s, _)| *s == section) {
                    Some((_, items)) if !items.is_empty() => items,
                    _ => continue,
                },
            };
            // The files are listed least recent first: the cap keeps the last ones.
            let kept = match section {
                Section::Files => &items[items.len().saturating_sub(limit)..],
                _ => &items[..items.len().min(limit)],
            };
            let more = items.len() - kept.len();
            // Paths alone fit on one line; files with their state are listed.
            let one_line = !listed && section.inline() && kept.iter().all(|f| !f.contains(" ("));
            if one_line {
                out.push_str(&format!("{}: {}", section.title(), kept.join(", ")));
                if more > 0 {
                    out.push_str(&format!(" (+{more} more {})", section.noun()));
                }
                out.push('\n');
            } else if !listed && section == Section::Asked && kept.len() == 1 {
                out.push_str(&format!("Asked: {}\n", kept[0]));
            } else {
                out.push_str(section.title());
                out.push_str(":\n");
                for item in kept {
                    out.push_str("- ");
                    out.push_str(item);
                    out.push('\n');
                }
                // Not in the listed form: the budget order would keep the note as an item
                // after the items it counts are gone.
                if more > 0 && !listed {
                    out.push_str(&format!("- (+{more} more {})\n", section.noun()));
                }
            }
        }
        out
    }
}

/// The items of a one-line section: split on `, ` outside parentheses.
fn split_inline(text: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 && text[at + 1..].starts_with(' ') => {
                items.push(&text[start..at]);
                start = at + 2;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    items
}

/// An item without leading bullet markers (`- - - text`) and runs of whitespace.
fn clean(item: &str) -> String {
    let mut text = item.trim();
    loop {
        let stripped = text
            .strip_prefix("- ")
            .or_else(|| text.strip_prefix("* "))
            .or_else(|| text.strip_prefix("• "));
        match stripped {
            Some(rest) => text = rest.trim_start(),
            None => break,
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How two items are compared for repeats: case and punctuation aside.
fn normalized(item: &str) -> String {
    item.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_merge_without_repeats_and_bullets_are_cleaned() {
        let mut record = Record::default();
        assert!(record.add_records(
            "Asked: fix the parser\nDid:\n- Ran `cargo test` → 2 failed\n- - - I see the bug\n\
             Files: src/a.rs, src/b.rs"
        ));
        assert!(record.add_records(
            "[sum_1 · leaf]\nDid:\n- ran `cargo test` → 2 failed\n- Edited src/a.rs\n- (+3 more actions)\n\
             Files: src/a.rs (+2 more files)"
        ));
        let text = record.render_within(10_000);
        assert_eq!(
            text,
            "Asked: fix the parser\nFiles: src/a.rs, src/b.rs\nDid:\n- Ran `cargo test` → 2 failed\n\
             - I see the bug\n- Edited src/a.rs"
        );
        assert!(!record.add_records("free text with no record in it"));
    }

    #[test]
    fn a_standing_section_is_read_however_it_is_headed() {
        let mut record = Record::default();
        assert!(record.add_records(
            "[sum_a · leaf]\n## Standing Facts\n- Constraint: The budget is $500.\n\n\
             [sum_b · leaf]\nStanding:\n- Constraint: The budget is now $700.\nAsked: keep $500 in mind"
        ));
        assert_eq!(
            record.render_within(10_000),
            "Standing:\n- Constraint: The budget is $700.\n\
             Asked: keep $500 (superseded by $700) in mind"
        );
    }

    #[test]
    fn a_failed_command_is_said_once_under_errors() {
        let turns = crate::parse::parse_turns(
            "[user] build it\n\
             [assistant -> tool_call bash] {\"command\": \"make all\"}\n\
             [tool bash] cc: fatal error: missing.h: No such file or directory\n\
             [assistant] The build failed on a missing header.",
        );
        let mut record = Record::default();
        record.add_digest(&crate::digest::digest(&turns));
        let text = record.render_within(10_000);
        assert_eq!(text.matches("make all").count(), 1, "{text}");
        assert!(
            text.contains("Errors:\n- Error: Ran `make all`: cc: fatal error"),
            "{text}"
        );
    }

    #[test]
    fn a_cut_never_leaves_a_section_title_without_items() {
        let mut record = Record::default();
        record.add_records("Did:\n- one thing done\nErrors:\n- something broke badly here");
        let text = record.render_within(40);
        assert_eq!(text, "Did:\n- one thing done");
    }
}
