//! The standing items of a session as they stand: each subject once, at its newest value.

use std::borrow::Cow;

use super::change;
use super::{Kind, Standing, MAX_ITEMS};

/// The current standing items of a session, in the order they were stated, each subject once:
/// a newer value replaces the older (which is remembered as superseded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Book {
    items: Vec<Standing>,
    /// Values replaced by newer ones: (old item, new value).
    superseded: Vec<(Standing, String)>,
}

impl Book {
    pub fn items(&self) -> &[Standing] {
        &self.items
    }

    /// What was replaced, and by which value.
    pub fn superseded(&self) -> &[(Standing, String)] {
        &self.superseded
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds `item`; one with the same subject is replaced (the newer value wins and moves last),
    /// and so is one it changes in other words ([`change`]).
    pub fn add(&mut self, item: Standing) {
        if self.items.iter().any(|known| known.text == item.text) {
            return;
        }
        // A preference that names an older one it replaces ("spaces over tabs", "spaces
        // instead of tabs") supersedes it too.
        // So does an item that says which value it replaces ("NATS instead of Kafka", "no
        // longer us-west-2"), of the same kind.
        let replaced = replaced_words(&item.text);
        // Goals named only as "the goal" are one subject when one changes the other; two
        // goals stated apart are two things to do.
        let apart_goals = |known: &Standing| {
            known.kind == Kind::Goal
                && item.kind == Kind::Goal
                && known.subject == "goal"
                && !change::is_change(&item.text)
        };
        let replaces = |known: &Standing| {
            (known.same_subject(&item) && !apart_goals(known))
                || (known.kind == Kind::Preference
                    && item.kind == Kind::Preference
                    && mentions_word(&item.text, &known.value))
                || (known.kind == item.kind
                    && replaced
                        .iter()
                        .any(|word| mentions_word(&known.value, word)))
        };
        let same = self.items.iter().position(replaces);
        // A change said its own way ("the smoke suite was renamed to X") names what it
        // changes by the words of an older item, or by the value it replaces.
        let changed = same
            .is_none()
            .then(|| change::target(&self.items, &item))
            .flatten();
        // A change takes the place of what it changes in that item's own words.
        let (item, swapped) = match (same, changed) {
            (Some(at), _) if change::is_change(&item.text) => {
                change::applied(&self.items[at], item)
            }
            (None, Some(at)) => change::applied(&self.items[at], item),
            _ => (item, None),
        };
        if let Some(at) = same.or(changed) {
            let mut old = self.items.remove(at);
            // What other sections may show of it is the value the change replaced.
            let new_value = match swapped {
                Some((gone, new)) => {
                    old.value = gone;
                    new
                }
                None => item.value.clone(),
            };
            if !old.value.eq_ignore_ascii_case(&new_value) {
                // Each old value once, with its latest replacement; the newest few are kept
                // (marking looks for each in every other item).
                self.superseded.retain(|(gone, _)| gone.value != old.value);
                self.superseded.push((old, new_value));
                if self.superseded.len() > MAX_ITEMS {
                    self.superseded.remove(0);
                }
            }
        }
        self.items.push(item);
        while self.items.len() > MAX_ITEMS {
            // By the rule every summary follows (`ctxhost_sdk::budget::FACT_DROP_RULE`): a line
            // read from output first (a tool prints many `name: value` lines, a user states few
            // things, and each of those matters), then a note held as said, then the rest;
            // within those the oldest of the kind kept least.
            let rank = |item: &Standing| (item.drop_tier(), item.kind.keep_rank());
            let lowest = self.items.iter().map(rank).min().unwrap_or((0, 0));
            let at = self
                .items
                .iter()
                .position(|item| rank(item) == lowest)
                .unwrap_or(0);
            self.items.remove(at);
        }
    }

    pub fn extend(&mut self, items: impl IntoIterator<Item = Standing>) {
        for item in items {
            self.add(item);
        }
    }

    /// Adds the items of section lines a summary wrote (lines that are not items are skipped).
    pub fn add_lines<'a>(&mut self, lines: impl IntoIterator<Item = &'a str>) {
        for line in lines {
            if let Some(item) = Standing::parse_line(line) {
                self.add(item);
            }
        }
    }

    /// The section's lines.
    pub fn lines(&self) -> Vec<String> {
        self.items.iter().map(Standing::line).collect()
    }

    /// `text` with each superseded value in it marked as such (`$500 (superseded by $700)`),
    /// so that no other part of a summary still shows it as current.
    pub fn mark_superseded<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (old, new) in &self.superseded {
            let shown = old.value.len() >= 2 && out.contains(old.value.as_str());
            if !shown || self.items.iter().any(|i| i.value == old.value) {
                continue;
            }
            out = Cow::Owned(mark_value(&out, &old.value, new));
        }
        out
    }
}

/// Words that say what a change replaces: the first word that names something after
/// "instead of", "rather than", "no longer", "renamed from", "moved from" and the like.
fn replaced_words(text: &str) -> Vec<&str> {
    const CUES: &[&str] = &[
        "instead of ",
        "rather than ",
        "no longer ",
        "replacing ",
        "renamed from ",
        "moved from ",
        "switched from ",
        "migrated from ",
        "changed from ",
        "moved off ",
    ];
    const FILLER: &[&str] = &[
        "the", "a", "an", "use", "using", "to", "on", "in", "at", "be", "is",
    ];
    let lower = text.to_ascii_lowercase();
    CUES.iter()
        .filter_map(|cue| lower.find(cue).map(|at| at + cue.len()))
        .filter_map(|at| {
            let mut offset = at;
            text[at..].split(' ').find_map(|word| {
                let start = offset;
                offset += word.len() + 1;
                let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
                let filler = FILLER.iter().any(|f| bare.eq_ignore_ascii_case(f));
                (!bare.is_empty() && !filler).then(|| {
                    let lead = word.len()
                        - word
                            .trim_start_matches(|c: char| !c.is_alphanumeric())
                            .len();
                    &text[start + lead..start + lead + bare.len()]
                })
            })
        })
        .filter(|word| word.len() >= 2)
        .collect()
}

/// Whether `text` holds `word` as a whole word, ignoring case.
fn mentions_word(text: &str, word: &str) -> bool {
    let (text, word) = (text.to_lowercase(), word.to_lowercase());
    !word.is_empty()
        && text.match_indices(&word).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + word.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
}

/// `text` with every standalone `value` not already marked followed by `(superseded by new)`.
fn mark_value(text: &str, value: &str, new: &str) -> String {
    const NOTE: &str = " (superseded by ";
    if !text.contains(value) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = 0;
    for (at, _) in text.match_indices(value) {
        let end = at + value.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        let standalone =
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric);
        if at < rest || !standalone || text[end..].starts_with(NOTE) {
            continue;
        }
        out.push_str(&text[rest..end]);
        out.push_str(NOTE);
        out.push_str(new);
        out.push(')');
        rest = end;
    }
    out.push_str(&text[rest..]);
    out
}
