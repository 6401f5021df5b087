//! The handoff template: its sections, their items, and rendering within a size budget.

use std::collections::HashSet;

use std::borrow::Cow;

use crate::budget::truncate_bytes;
use crate::budget::Part;
use crate::standing::Book;
use ctxhost_sdk::budget::FileCut;

use super::extract::mentions;

/// A section of the handoff template, in the order it is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    Goal,
    /// Standing rules, constraints, facts, goals and preferences ([`crate::standing`]): shown
    /// only when there are some, never shortened, and the last to give way to the budget.
    Standing,
    Constraints,
    Done,
    InProgress,
    Blocked,
    Decisions,
    Files,
    NextSteps,
    Critical,
}

impl Key {
    pub const ORDER: [Key; 10] = [
        Key::Goal,
        Key::Standing,
        Key::Constraints,
        Key::Done,
        Key::InProgress,
        Key::Blocked,
        Key::Decisions,
        Key::Files,
        Key::NextSteps,
        Key::Critical,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Key::Goal => "Goal",
            Key::Standing => "Standing Facts",
            Key::Constraints => "Constraints & Preferences",
            Key::Done => "Done",
            Key::InProgress => "In Progress",
            Key::Blocked => "Blocked",
            Key::Decisions => "Key Decisions",
            Key::Files => "Files",
            Key::NextSteps => "Next Steps",
            Key::Critical => "Critical Context",
        }
    }

    /// What the section carries, for the order a budget keeps sections in.
    pub(crate) fn part(self) -> Part {
        match self {
            Key::Standing => Part::Facts,
            Key::Goal | Key::NextSteps => Part::GoalAndPlan,
            Key::Files => Part::Files,
            Key::Constraints => Part::Remarks,
            Key::InProgress | Key::Blocked => Part::Progress,
            Key::Done | Key::Decisions | Key::Critical => Part::Narrative,
        }
    }

    /// Done / In Progress / Blocked sit under `## Progress`.
    fn is_progress(self) -> bool {
        matches!(self, Key::Done | Key::InProgress | Key::Blocked)
    }

    /// Whether the oldest items go first when the summary must shrink (histories), rather
    /// than the last ones (lists in priority order).
    fn drops_oldest(self) -> bool {
        matches!(
            self,
            Key::Goal | Key::Standing | Key::Done | Key::Blocked | Key::Decisions | Key::Critical
        )
    }

    /// What an empty section says.
    pub fn empty_text(self) -> &'static str {
        match self {
            Key::Goal => "Not stated in the summarized turns.",
            Key::Standing | Key::Constraints | Key::Decisions | Key::Files | Key::Critical => {
                "None recorded."
            }
            Key::Done | Key::InProgress => "Nothing recorded.",
            Key::Blocked => "Nothing blocking.",
            Key::NextSteps => {
                "Continue from the most recent messages; check the current state of files and \
                 tests before relying on this summary."
            }
        }
    }
}

/// One bullet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub text: String,
    /// Mentions the focus topic: kept in priority.
    pub focus: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub key: Key,
    pub items: Vec<Item>,
    /// The first `pinned` items go last when shrinking (the original goal).
    pub pinned: usize,
    /// Items left out to fit.
    pub omitted: usize,
    /// The normalized text of every item pushed, to skip duplicates.
    seen: HashSet<String>,
}

/// The bytes an item keeps when its part gives way to the parts before it.
const SHORT_ITEM: usize = 80;

/// How much of the template a rendering shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Every section, empty ones saying so (the standing facts only when there are some).
    Full,
    /// Sections with items or a note on omitted ones.
    Compact,
    /// Sections with items, without notes: the room made before the files, the plan or the
    /// facts give way.
    Bare,
}

/// A summary in the handoff template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    pub sections: Vec<Section>,
    /// The standing facts, for the values they replaced: rendering marks those wherever the
    /// other sections still show them (after the sections are cut to size, so it is cheap).
    pub standing: Book,
    /// The bytes the files' lines get before the goal and plan, while rendering within a
    /// budget.
    files_share: usize,
}

impl Default for Handoff {
    fn default() -> Self {
        Handoff {
            sections: Key::ORDER
                .iter()
                .map(|&key| Section {
                    key,
                    items: Vec::new(),
                    pinned: 0,
                    omitted: 0,
                    seen: HashSet::new(),
                })
                .collect(),
            standing: Book::default(),
            files_share: 0,
        }
    }
}

/// Items equal after this are duplicates.
pub(crate) fn normalized(text: &str) -> String {
    let lower = text.to_lowercase();
    let words = lower.split_whitespace().collect::<Vec<_>>().join(" ");
    words
        .strip_prefix("also asked: ")
        .map(str::to_string)
        .unwrap_or(words)
}

impl Handoff {
    pub fn section(&self, key: Key) -> &Section {
        self.sections
            .iter()
            .find(|s| s.key == key)
            .expect("every key has a section")
    }

    pub fn section_mut(&mut self, key: Key) -> &mut Section {
        self.sections
            .iter_mut()
            .find(|s| s.key == key)
            .expect("every key has a section")
    }

    /// Adds an item unless it is empty or already there.
    pub fn push(&mut self, key: Key, text: impl Into<String>) {
        let text = text.into();
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let section = self.section_mut(key);
        if !section.seen.insert(normalized(text)) {
            return;
        }
        section.items.push(Item {
            text: text.to_string(),
            focus: false,
        });
    }

    pub fn extend<I: IntoIterator<Item = String>>(&mut self, key: Key, items: I) {
        for item in items {
            self.push(key, item);
        }
    }

    pub fn set_pinned(&mut self, key: Key, pinned: usize) {
        let section = self.section_mut(key);
        section.pinned = pinned.min(section.items.len());
    }

    /// Flags the items mentioning `topic` and moves them first (after pinned items).
    pub fn prioritise(&mut self, topic: &str) {
        let topic = topic.trim();
        if topic.is_empty() {
            return;
        }
        for section in &mut self.sections {
            for item in &mut section.items {
                item.focus = mentions(&item.text, topic);
            }
            let pinned = section.pinned.min(section.items.len());
            // A stable sort keeps the original order within each group.
            section.items[pinned..].sort_by_key(|item| !item.focus);
        }
    }

    /// Leaves at most `max` items per section.
    pub fn cap(&mut self, max: usize) {
        for section in &mut self.sections {
            while section.items.len() > max {
                section.drop_one(0);
            }
        }
    }

    /// The summary as text, each item cut to `item_max` bytes.
    pub fn render(&self, item_max: usize) -> String {
        self.render_as(item_max, Layout::Full)
    }

    fn render_as(&self, item_max: usize, layout: Layout) -> String {
        let mut out = String::new();
        let shown = |section: &Section| match layout {
            Layout::Full => {
                section.key != Key::Standing || !section.items.is_empty() || section.omitted > 0
            }
            Layout::Compact => !section.items.is_empty() || section.omitted > 0,
            Layout::Bare => !section.items.is_empty(),
        };
        let progress_shown = self
            .sections
            .iter()
            .any(|s| s.key.is_progress() && shown(s));
        for section in &self.sections {
            if !shown(section) {
                continue;
            }
            // Standing items are carried verbatim: never shortened.
            let item_max = if section.key == Key::Standing {
                usize::MAX
            } else {
                item_max
            };
            if section.key.is_progress() && progress_shown && !out.contains("## Progress\n") {
                out.push_str("\n## Progress\n");
            } else if !section.key.is_progress() && !out.is_empty() {
                out.push('\n');
            }
            let hashes = if section.key.is_progress() {
                "###"
            } else {
                "##"
            };
            out.push_str(&format!("{hashes} {}\n", section.key.title()));
            if section.items.is_empty() && section.omitted == 0 {
                out.push_str(&format!("- {}\n", section.key.empty_text()));
                continue;
            }
            let notes = layout != Layout::Bare;
            if notes && section.omitted > 0 && section.key.drops_oldest() {
                out.push_str(&format!("- (+{} earlier items omitted)\n", section.omitted));
            }
            for item in &section.items {
                out.push_str("- ");
                match truncate_bytes(&item.text, item_max) {
                    Cow::Borrowed(whole) => out.push_str(whole),
                    Cow::Owned(cut) => out.push_str(&without_cut_mark(&cut)),
                }
                out.push('\n');
            }
            if notes && section.omitted > 0 && !section.key.drops_oldest() {
                out.push_str(&format!("- (+{} more omitted)\n", section.omitted));
            }
        }
        out.trim().to_string()
    }

    /// The summary as text in at most `budget` bytes, spent in the budget order
    /// (`ctxhost_sdk::budget`): long items are shortened; then the parts after the files give
    /// way, part by part (the narrative first, with the asks between the original goal and the
    /// newest one, then the progress, then the limits said in passing): each section down to
    /// its one most valuable item, that item shortened to [`SHORT_ITEM`] bytes. Only then do
    /// the files, the goal and plan and the facts give way: items dropped from sections that
    /// have several (the files past their share first, a file's line giving up its last
    /// command before the file goes, then the goal and plan), every item shortened further,
    /// then any item dropped in the same order (a last narrative item before a last file), the
    /// files within their share (`ctxhost_sdk::budget::files_share`) after the goal and plan,
    /// the standing facts last; empty sections and the notes on omitted items are left out before
    /// the files, the plan or the facts lose their last items. Text is cut only if the headings
    /// alone do not fit.
    pub fn render_within(mut self, budget: usize) -> String {
        self.mark_superseded();
        self.files_share = ctxhost_sdk::budget::files_share(budget);
        for item_max in [320, 200] {
            let text = self.render(item_max);
            if text.len() <= budget {
                return text;
            }
        }
        let mut item_max = 200;
        loop {
            let text = self.render(item_max);
            if text.len() <= budget {
                return text;
            }
            let share = self.files_share;
            let after_files = self.next_to_shrink(item_max, |s| {
                s.items.len() > 1 && s.part(share) > Part::Files
            });
            match after_files {
                Some(index) => self.sections[index].drop_one(text.len() - budget),
                None => break,
            }
        }
        for section in &mut self.sections {
            if section.part(self.files_share) > Part::Files {
                section.shorten(SHORT_ITEM);
            }
        }
        let mut layout = Layout::Full;
        loop {
            let text = self.render_as(item_max, layout);
            if text.len() <= budget {
                return text;
            }
            // First drop items from sections that have several (not the facts' nor the files
            // within their share); then shorten every item; then drop anything.
            let share = self.files_share;
            let several = self.next_to_shrink(item_max, |s| {
                s.items.len() > 1 && s.key != Key::Standing && s.part(share) != Part::FilesShare
            });
            if let Some(index) = several {
                // Empty sections saying so go before a file touched, the plan or a fact.
                let section = &self.sections[index];
                let named_file = section.key == Key::Files
                    && section.items.iter().any(|item| !item.text.contains(" ("));
                let gives_way = section.part(share) <= Part::Files && !named_file;
                if layout == Layout::Full && gives_way {
                    layout = Layout::Compact;
                    continue;
                }
                // What the turns did keeps one line, not one a section, before a file touched,
                // the plan or a fact gives way (as the budget order keeps the narrative's last
                // item): the last such section first.
                let after_files: Vec<usize> = (0..self.sections.len())
                    .filter(|&i| {
                        let s = &self.sections[i];
                        !s.items.is_empty() && s.part(share) > Part::Files
                    })
                    .collect();
                let index = match after_files.len() {
                    n if gives_way && n > 1 => self
                        .next_to_shrink(item_max, |s| {
                            !s.items.is_empty() && s.part(share) > Part::Files
                        })
                        .unwrap_or(index),
                    _ => index,
                };
                self.sections[index].drop_one(text.len() - budget);
                continue;
            }
            if item_max > SHORT_ITEM {
                item_max = (item_max * 2 / 3).max(SHORT_ITEM);
                continue;
            }
            match self.next_to_shrink(item_max, |s| !s.items.is_empty()) {
                Some(index)
                    if self.sections[index].part(share) <= Part::Files
                        && layout != Layout::Bare =>
                {
                    layout = match layout {
                        Layout::Full => Layout::Compact,
                        _ => Layout::Bare,
                    };
                }
                Some(index) => self.sections[index].drop_one(text.len() - budget),
                None => return truncate_bytes(&text, budget).into_owned(),
            }
        }
    }

    /// Marks the replaced standing values the sections other than the standing facts show.
    fn mark_superseded(&mut self) {
        if self.standing.superseded().is_empty() {
            return;
        }
        for section in &mut self.sections {
            if section.key == Key::Standing {
                continue;
            }
            for item in &mut section.items {
                if let Cow::Owned(marked) = self.standing.mark_superseded(&item.text) {
                    item.text = marked;
                }
            }
        }
    }

    /// The section (among those `eligible`) to shrink: by the budget order, the last part
    /// first; within it any before the standing facts, one with unpinned items first, then the
    /// largest, then the earliest.
    fn next_to_shrink(
        &self,
        item_max: usize,
        eligible: impl Fn(&Section) -> bool,
    ) -> Option<usize> {
        self.sections
            .iter()
            .enumerate()
            .filter(|(_, s)| eligible(s))
            .max_by_key(|(i, s)| {
                let unpinned = s.items.len() > s.pinned;
                let size: usize = s.items.iter().map(|i| i.text.len().min(item_max)).sum();
                (
                    s.part(self.files_share),
                    s.key != Key::Standing,
                    unpinned,
                    size,
                    std::cmp::Reverse(*i),
                )
            })
            .map(|(i, _)| i)
    }
}

impl Section {
    /// Cuts every item to at most `max` bytes (a replaced value goes with its mark).
    fn shorten(&mut self, max: usize) {
        for item in &mut self.items {
            if let Cow::Owned(cut) = truncate_bytes(&item.text, max) {
                item.text = without_cut_mark(&cut).into_owned();
            }
        }
    }

    /// What the item this section gives up next carries: the asks between the original goal
    /// (pinned) and the newest one are the session's history, spent like the narrative; the
    /// files, while their lines fit `files_share` bytes, their share; any other section's
    /// items carry what its key says.
    fn part(&self, files_share: usize) -> Part {
        if self.key == Key::Goal && self.items.len() > self.pinned.max(1) + 1 {
            Part::Narrative
        } else if self.key == Key::Files && self.bytes() <= files_share {
            Part::FilesShare
        } else {
            self.key.part()
        }
    }

    /// What its items take as rendered (`- item` lines).
    fn bytes(&self) -> usize {
        self.items.iter().map(|i| i.text.len() + 3).sum()
    }

    /// Drops the least valuable item: unpinned before pinned, other items before focus items,
    /// then the oldest or the last depending on the section; a file by what the cut must
    /// free, `over` bytes (0: the oldest).
    fn drop_one(&mut self, over: usize) {
        if self.items.is_empty() {
            return;
        }
        let pinned = self.pinned.min(self.items.len());
        let range = if pinned < self.items.len() {
            pinned..self.items.len()
        } else {
            self.pinned = self.pinned.saturating_sub(1);
            0..self.items.len()
        };
        let candidates: Vec<usize> = range.collect();
        let unfocused: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&i| !self.items[i].focus)
            .collect();
        let pool = if unfocused.is_empty() {
            &candidates
        } else {
            &unfocused
        };
        let victim = if self.key == Key::Files {
            // By the choice both cuts of the budget order make.
            let lines: Vec<&str> = pool.iter().map(|&i| self.items[i].text.as_str()).collect();
            match ctxhost_sdk::budget::next_file_cut(&lines, 3, over) {
                Some(FileCut::Shorten { at, line }) => {
                    self.items[pool[at]].text = line;
                    return;
                }
                Some(FileCut::Drop { at }) => pool[at],
                None => pool[0],
            }
        } else if self.key == Key::Standing {
            // Standing facts go by the rule every summary follows.
            let items: Vec<&str> = pool.iter().map(|&i| self.items[i].text.as_str()).collect();
            pool[ctxhost_sdk::budget::fact_to_drop(&items).unwrap_or(0)]
        } else if self.key.drops_oldest() {
            pool[0]
        } else {
            pool[pool.len() - 1]
        };
        self.items.remove(victim);
        self.omitted += 1;
    }
}

/// An item cut short (`…`) without a replaced value whose mark the cut broke ("$500
/// (supers…"): the value goes with its mark, so it is never shown as current.
fn without_cut_mark(cut: &str) -> Cow<'_, str> {
    const MARK: &str = "superseded by ";
    let Some(open) = cut.rfind(" (") else {
        return Cow::Borrowed(cut);
    };
    let rest = cut[open + 2..].trim_end_matches('…');
    let broken = !rest.contains(')') && !rest.is_empty() && MARK.starts_with(rest)
        || rest.starts_with(MARK) && !rest.contains(')');
    if !broken {
        return Cow::Borrowed(cut);
    }
    let value_start = cut[..open].rfind(' ').map_or(0, |at| at + 1);
    Cow::Owned(format!("{}…", cut[..value_start].trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Handoff {
        let mut handoff = Handoff::default();
        handoff.push(Key::Goal, "fix the parser");
        handoff.set_pinned(Key::Goal, 1);
        for i in 0..30 {
            handoff.push(
                Key::Done,
                format!("Ran `step {i}` with a fairly long description"),
            );
        }
        handoff.push(
            Key::Files,
            "src/parser.rs (edited; last: `sed -i s/a/b/ src/parser.rs`)",
        );
        handoff
    }

    #[test]
    fn files_outlast_the_sections_saying_they_are_empty_and_as_many_as_fit_stay() {
        let mut handoff = Handoff::default();
        for i in 0..6 {
            handoff.push(
                Key::Standing,
                format!("Rule: Always run the check suite-{i} before a merge."),
            );
        }
        let long = "services/billing/importer/src/adapters/legacy_retry_policy.rs (written)";
        for file in [
            "src/a.rs (read)",
            long,
            "src/b.rs (edited)",
            "src/c.rs (deleted)",
        ] {
            handoff.push(Key::Files, file);
        }
        // Room for every file without the empty sections' placeholders.
        let compact = handoff.clone().render_as(200, Layout::Compact);
        let text = handoff.clone().render_within(compact.len());
        assert_eq!(text, compact);
        assert!(!text.contains("None recorded"), "{text}");
        // 30 bytes less: the long line goes, not the file touched first.
        let text = handoff.render_within(compact.len() - 30);
        assert!(!text.contains("legacy_retry"), "{text}");
        for file in ["src/a.rs (read)", "src/b.rs (edited)", "src/c.rs (deleted)"] {
            assert!(text.contains(file), "{file}:\n{text}");
        }
    }

    #[test]
    fn what_the_turns_did_keeps_one_line_not_one_a_section_before_a_file_goes() {
        let mut handoff = Handoff::default();
        handoff.push(
            Key::Standing,
            "Rule: Always run the check suite before a merge.",
        );
        for key in [Key::Done, Key::Decisions, Key::Critical] {
            for i in 0..2 {
                handoff.push(
                    key,
                    format!("{key:?} item {i} of what the turns did and saw"),
                );
            }
        }
        let files = ["src/a.rs (read)", "src/b.rs (edited)", "src/c.rs (deleted)"];
        for file in files {
            handoff.push(Key::Files, file);
        }
        // At any size, a second line of what the turns did is kept only beside every file.
        for room in (100..500).step_by(4) {
            let text = handoff.clone().render_within(room);
            let narrative = ["Done item", "Decisions item", "Critical item"]
                .iter()
                .filter(|item| text.contains(**item))
                .count();
            if narrative > 1 {
                for file in files {
                    assert!(text.contains(file), "{room}: {file}:\n{text}");
                }
            }
        }
    }

    #[test]
    fn render_has_every_section() {
        let text = Handoff::default().render(200);
        for title in [
            "## Goal",
            "## Constraints & Preferences",
            "## Progress\n### Done",
            "### In Progress",
            "### Blocked",
            "## Key Decisions",
            "## Files",
            "## Next Steps",
            "## Critical Context",
        ] {
            assert!(text.contains(title), "{title} missing from\n{text}");
        }
    }

    #[test]
    fn render_within_drops_oldest_history_first() {
        let text = sample().render_within(900);
        assert!(text.len() <= 900);
        assert!(text.contains("fix the parser"));
        assert!(text.contains("step 29"));
        assert!(!text.contains("`step 0`"));
        assert!(text.contains("earlier items omitted"));
    }

    #[test]
    fn render_within_never_exceeds_tiny_budgets() {
        for budget in [0, 10, 50, 200, 400] {
            assert!(sample().render_within(budget).len() <= budget);
        }
    }

    #[test]
    fn focus_items_survive_shrinking() {
        let mut handoff = sample();
        handoff.push(Key::Done, "Ran `grep tokenizer`");
        handoff.prioritise("TOKENIZER");
        let done = handoff.section(Key::Done);
        assert!(done.items[0].focus);
        let text = handoff.render_within(700);
        assert!(text.contains("grep tokenizer"), "{text}");
    }

    #[test]
    fn a_cut_never_leaves_a_replaced_value_without_its_mark() {
        assert_eq!(
            without_cut_mark("The budget is $4,817 (super…"),
            "The budget is…"
        );
        assert_eq!(
            without_cut_mark("The budget is $4,817 (superseded by $6,1…"),
            "The budget is…"
        );
        assert_eq!(
            without_cut_mark("Ran `ls` (×2) and th…"),
            "Ran `ls` (×2) and th…"
        );
    }

    #[test]
    fn files_outlast_the_narrative_the_old_asks_and_the_limits_said_in_passing() {
        let mut handoff = sample();
        for i in 0..12 {
            handoff.push(
                Key::Goal,
                format!("Also asked: step {i}, and keep the fix small"),
            );
            handoff.push(
                Key::Constraints,
                format!("The last run printed {i} warnings; keep the fix small."),
            );
            handoff.push(
                Key::Files,
                format!("src/mod_{i}/lib.rs (written; last: `write_file`)"),
            );
        }
        handoff.push(Key::InProgress, "Last assistant update: ".repeat(12));
        let files: usize = handoff
            .section(Key::Files)
            .items
            .iter()
            .map(|i| i.text.len() + 3)
            .sum();
        let text = handoff.render_within(files + 700);
        for i in 0..12 {
            assert!(
                text.contains(&format!("src/mod_{i}/lib.rs (written")),
                "{i}:\n{text}"
            );
        }
        assert!(text.contains("fix the parser"), "{text}");
        assert!(!text.contains("step 0,"), "{text}");
        assert!(text.matches("warnings; keep").count() <= 1, "{text}");
    }

    #[test]
    fn under_many_facts_the_files_keep_short_lines_before_the_goal() {
        let files = [
            ("src/a_1/retry_policy.rs", "written, edited", "edit_file"),
            ("src/b_2/schema.sql", "read", "read_file"),
            (
                "src/c_3/importer.py",
                "edited, renamed from src/d_4/importer.py",
                "git mv src/d_4/importer.py src/c_3/importer.py",
            ),
            (
                "src/e_5/notes.md",
                "written, deleted",
                "rm src/e_5/notes.md",
            ),
        ];
        let build = |goal: bool, commands: bool| {
            let mut handoff = Handoff::default();
            if goal {
                handoff.push(Key::Goal, "Step 1: look at the config loader's defaults, the last run printed 29 warnings");
                handoff.set_pinned(Key::Goal, 1);
            }
            for i in 0..24 {
                handoff.push(
                    Key::Standing,
                    format!("Rule: Always run the smoke suite kestrel-{i} before every merge."),
                );
            }
            for (path, changes, last) in files {
                handoff.push(
                    Key::Files,
                    match commands {
                        true => format!("{path} ({changes}; last: `{last}`)"),
                        false => format!("{path} ({changes})"),
                    },
                );
            }
            handoff
        };
        // Room for the facts and the files' short lines, not for the goal beside them.
        let budget = build(false, false).render_as(200, Layout::Bare).len();
        let text = build(true, true).render_within(budget);
        for (path, changes, _) in files {
            assert!(
                text.contains(&format!("- {path} ({changes})\n"))
                    || text.ends_with(&format!("- {path} ({changes})")),
                "{path}:\n{text}"
            );
        }
        for i in 0..24 {
            assert!(text.contains(&format!("kestrel-{i} ")), "{i}:\n{text}");
        }
        assert!(!text.contains("Step 1"), "{text}");
    }

    #[test]
    fn duplicates_are_ignored() {
        let mut handoff = Handoff::default();
        handoff.push(Key::Goal, "Fix  it");
        handoff.push(Key::Goal, "Also asked: fix it");
        assert_eq!(handoff.section(Key::Goal).items.len(), 1);
    }
}
