//! The order in which an engine spends a size budget (a caller's
//! [`CompressOptions::target_tokens`](crate::CompressOptions::target_tokens), or its own
//! share of the window), written down once for every engine and summarizer.
//!
//! What the model needs to go on is bought first, what it can do without last:
//!
//! 1. [`BudgetPart::Head`]: the protected head (system prompt, first exchange), verbatim;
//! 2. [`BudgetPart::StandingFacts`]: the rules, constraints, facts, goals and preferences the
//!    session stated;
//! 3. [`BudgetPart::Files`], up to [`files_share`] of the room: the files the session touched,
//!    one short line each (path and what was done to it last), since what the next turn does
//!    is mostly to those files;
//! 4. [`BudgetPart::GoalAndPlan`]: the current goal and the plan (next steps);
//! 5. [`BudgetPart::Files`] past their share, and the last command that touched each;
//! 6. [`BudgetPart::LatestTurn`]: the most recent turn in progress (the newest user message
//!    and what followed it, which the output contract keeps anyway);
//! 7. [`BudgetPart::TailAndNarrative`]: the verbatim tail before it and the summary's
//!    narrative (what was done, decisions, context).
//!
//! When the budget is short, parts give way in the reverse order: the verbatim tail and the
//! narrative shrink before the latest turn's state, the files or the plan (the narrative's
//! last item is cut to [`NARRATIVE_FLOOR_BYTES`] before it goes, so a summary with room for
//! one short line of what the turns did still says it); a file's line
//! gives up its last command, then its changes before the last, then a rename's former path,
//! before the file goes ([`FILE_LINE_STEPS`]), and the files within their share go
//! after the plan; a standing fact is dropped only when the facts alone exceed the budget.
//! Facts then go by [`FACT_DROP_RULE`]: a value marked superseded first, then facts a tool
//! printed (a `name: value` line), then notes held as the user said them (`Note: …`, read by
//! no form), then the facts a user stated in a form (a rule, a limit, a goal …), each oldest
//! first.
//!
//! [`trim_summary`] applies the order to a summary in the handoff template (markdown sections):
//! engines use it on a summary that came back larger than its share, summarizers on an answer
//! larger than its `max_tokens`.

/// A part of what an engine's output holds, in the order a budget is spent on it (see the
/// [module](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BudgetPart {
    /// The protected head, verbatim: never given up.
    Head,
    /// The session's standing rules, constraints, facts, goals and preferences.
    StandingFacts,
    /// The current goal and the plan.
    GoalAndPlan,
    /// The files touched and their last state (up to [`files_share`] of the room before the
    /// goal and plan).
    Files,
    /// The most recent turn in progress.
    LatestTurn,
    /// The verbatim tail before the latest turn, and the summary's narrative.
    TailAndNarrative,
}

impl BudgetPart {
    /// Every part, first bought first; the files' share ([`files_share`]) is bought before
    /// the goal and plan, the rest of the files where they stand here.
    pub const ORDER: [BudgetPart; 6] = [
        BudgetPart::Head,
        BudgetPart::StandingFacts,
        BudgetPart::GoalAndPlan,
        BudgetPart::Files,
        BudgetPart::LatestTurn,
        BudgetPart::TailAndNarrative,
    ];

    /// The part a summary section holds, by its heading (the handoff template's, as the
    /// offline summary and the LLM summarizers write it, and the digest's `Label:` lines);
    /// anything else is narrative.
    pub fn of_heading(title: &str) -> BudgetPart {
        let title = title
            .trim()
            .trim_start_matches('#')
            .trim()
            .trim_matches(['*', ':'])
            .trim()
            .to_lowercase();
        match title.as_str() {
            "standing facts"
            | "standing"
            | "constraints & preferences"
            | "constraints and preferences"
            | "constraints"
            | "preferences"
            | "rules" => BudgetPart::StandingFacts,
            "goal" | "goals" | "current goal" | "next steps" | "plan" | "asked" => {
                BudgetPart::GoalAndPlan
            }
            "relevant files" | "files" | "files touched" | "artifacts" => BudgetPart::Files,
            "in progress" | "current state" | "latest state" | "open" => BudgetPart::LatestTurn,
            _ => BudgetPart::TailAndNarrative,
        }
    }
}

/// How long the narrative's last item is cut to before it gives way: what the turns did, in
/// one short line.
pub const NARRATIVE_FLOOR_BYTES: usize = 80;

/// What the summaries get under a size that what an engine must keep verbatim (its protected
/// head, the newest user message, the turn in progress) already fills: room for the standing
/// facts, measured on what follows the verbatim part.
pub const FACTS_FLOOR_TOKENS: u64 = 256;

/// What a size of `target` tokens leaves the summaries beside the `verbatim` tokens an engine
/// keeps as they are: all that is left, so the output fits the size; when nothing is left,
/// [`FACTS_FLOOR_TOKENS`] (never more than the size itself), so the output fits
/// `verbatim + min(size, FACTS_FLOOR_TOKENS)`.
pub fn summary_room(target: u64, verbatim: u64) -> u64 {
    match target.checked_sub(verbatim) {
        Some(left) if left > 0 => left,
        _ => FACTS_FLOOR_TOKENS.min(target),
    }
}

/// What a size of `target` tokens leaves the summaries when the size is measured the way a
/// caller measures it: on the whole output, or, when the protected `head` alone exceeds the
/// size (no engine that keeps the head can meet it), on what follows the head. `after_head`
/// is what the engine keeps verbatim after the head (the newest turn). So a head larger than
/// the size does not starve the standing facts: they get the size less the newest turn, as
/// [`summary_room`] gives it for what follows the head.
pub fn summary_room_past_head(target: u64, head: u64, after_head: u64) -> u64 {
    if head > target {
        summary_room(target, after_head)
    } else {
        summary_room(target, head + after_head)
    }
}

/// What of a summary's `room` (in any unit) the files touched get before the goal and plan,
/// once the standing facts are bought: an eighth. Files listed one short line each (four in
/// some 40 tokens) cost little, and the plan still gets most of what the facts leave.
pub fn files_share(room: usize) -> usize {
    room / 8
}

/// A file's line (`path (edited; last: `cmd`)`) without the last command that touched it,
/// when it has one: what the line gives up before the file goes.
pub fn without_last_command(item: &str) -> Option<String> {
    let open = item.rfind(" (")?;
    let notes = item[open + 2..].strip_suffix(')')?;
    let at = notes.find("last: ")?;
    let changes = notes[..at].trim_end().trim_end_matches(';').trim_end();
    Some(if changes.is_empty() {
        item[..open].to_string()
    } else {
        format!("{} ({changes})", &item[..open])
    })
}

/// Which of the files' lines (their `lengths` in bytes, least recently touched first) goes
/// when `over` bytes must be freed: so that as many files as fit stay, the least recently
/// touched of those that free it alone, else the longest (the first of those).
pub fn file_to_drop(lengths: &[usize], over: usize) -> Option<usize> {
    lengths
        .iter()
        .position(|&length| length >= over)
        .or_else(|| {
            let longest = lengths.iter().max()?;
            lengths.iter().position(|length| length == longest)
        })
}

/// What a cut does next to the files' lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileCut {
    /// A line reads shorter: one of [`FILE_LINE_STEPS`].
    Shorten {
        /// Which line.
        at: usize,
        /// What it reads now.
        line: String,
    },
    /// A file goes.
    Drop {
        /// Which file's line.
        at: usize,
    },
}

/// What a cut does next to the files' `lines` (least recently touched first, each costing its
/// length and `per_line` bytes more as rendered) when `over` bytes must be freed: a file only
/// named (no state) goes first, the one touched first, since it says the least; then a line
/// gets shorter by [`FILE_LINE_STEPS`] (every line takes a step before any line takes the
/// next), the one touched first first; then the file [`file_to_drop`] picks. Both cuts of the budget order
/// (`trim_summary`, and the offline summary's own) choose by it.
pub fn next_file_cut<S: AsRef<str>>(lines: &[S], per_line: usize, over: usize) -> Option<FileCut> {
    let line = |at: usize| lines[at].as_ref();
    if let Some(at) = (0..lines.len()).find(|&at| !line(at).contains(" (")) {
        return Some(FileCut::Drop { at });
    }
    let shorter = FILE_LINE_STEPS.iter().find_map(|step| {
        (0..lines.len()).find_map(|at| step(line(at)).map(|line| FileCut::Shorten { at, line }))
    });
    shorter.or_else(|| {
        let lengths: Vec<usize> = (0..lines.len())
            .map(|at| line(at).len() + per_line)
            .collect();
        file_to_drop(&lengths, over).map(|at| FileCut::Drop { at })
    })
}

/// How a file's line gets shorter before the file goes, one step at a time, in order: every
/// line takes a step before any line takes the next (a cut of many files keeps each one's
/// path and what was done to it last as long as it can).
pub const FILE_LINE_STEPS: [fn(&str) -> Option<String>; 3] = [
    without_last_command,
    without_earlier_changes,
    without_former_path,
];

/// A file's line without the changes before its last one (a rename's former path stays:
/// it says which file the path was), when it has some.
pub fn without_earlier_changes(item: &str) -> Option<String> {
    let (path, changes) = file_changes(item)?;
    let (last, earlier) = changes.split_last()?;
    let rename = earlier
        .iter()
        .find(|change| change.starts_with(RENAMED_FROM));
    let kept: Vec<&str> = rename.into_iter().copied().chain([*last]).collect();
    (kept.len() < changes.len()).then(|| format!("{path} ({})", kept.join(", ")))
}

/// A renamed file's line without its former path (`b.rs (renamed)`): the last step before
/// the file goes, since the path and the rename still tell the model where the file is.
pub fn without_former_path(item: &str) -> Option<String> {
    let (path, changes) = file_changes(item)?;
    let at = changes
        .iter()
        .position(|change| change.starts_with(RENAMED_FROM))?;
    let mut changes = changes;
    changes[at] = "renamed";
    Some(format!("{path} ({})", changes.join(", ")))
}

const RENAMED_FROM: &str = "renamed from ";

/// A file's line split into its path (with any list mark before it) and its changes.
fn file_changes(item: &str) -> Option<(&str, Vec<&str>)> {
    let open = item.rfind(" (")?;
    let notes = item[open + 2..].strip_suffix(')')?;
    Some((&item[..open], notes.split(", ").collect()))
}

/// How standing facts go when the facts alone exceed a budget.
pub const FACT_DROP_RULE: &str = "oldest superseded value first, then tool-derived facts, \
                                  then notes held as said, then user-stated facts, each \
                                  oldest first";

/// Which of `items` (a summary's standing-fact lines, oldest first) goes first when the facts
/// alone exceed a budget, by [`FACT_DROP_RULE`].
pub fn fact_to_drop<S: AsRef<str>>(items: &[S]) -> Option<usize> {
    let text = |at: &usize| items[*at].as_ref();
    let all = 0..items.len();
    all.clone()
        .find(|at| text(at).contains("superseded"))
        .or_else(|| all.clone().find(|at| !is_stated(text(at))))
        .or_else(|| all.clone().find(|at| is_note(text(at))))
        .or_else(|| (!items.is_empty()).then_some(0))
}

/// `text` (a summary in markdown sections) cut until `fits` says it does, by the
/// [budget order](self): items of the narrative first, then the latest turn's, the files'
/// past their share (their last commands before the files), the plan's, the files within
/// their share, and the standing facts' last (by [`FACT_DROP_RULE`]); headings left without
/// items go with them. Text is cut short only when one item is left and it does not fit.
///
/// A cut that fits may have freed more than it had to (the last item it gave up was long):
/// what it gave up then comes back where the room allows, the last given up (the one the
/// order holds dearest) first, each as it was before that step.
pub fn trim_summary(text: &str, fits: impl Fn(&str) -> bool) -> String {
    if fits(text) {
        return text.to_string();
    }
    let mut summary = Sections::parse(text);
    // The room, in bytes: the longest start of the text that fits.
    let room = longest_fit(text, &fits);
    summary.files_share = files_share(room);
    let mut cuts: Vec<Cut> = Vec::new();
    loop {
        let rendered = summary.render();
        if fits(&rendered) {
            return summary.give_back(cuts, &fits).unwrap_or(rendered);
        }
        let over = rendered.len().saturating_sub(room);
        // The narrative's last item is cut short before it goes: a summary that fits with
        // one short line of what the turns did still says it; then the next item gives way.
        let left: usize = summary.sections.iter().map(|s| s.items.len()).sum();
        let cut = summary
            .shorten_last_narrative()
            .or_else(|| (left > 1).then(|| summary.next_to_drop(over)).flatten());
        match cut {
            Some(cut) => cuts.push(summary.apply(cut)),
            None => return cut_to_fit(&rendered, &fits),
        }
    }
}

/// The longest prefix of `text` (on a char boundary, at a line break when one is near) that
/// `fits`; empty when none does.
fn cut_to_fit(text: &str, fits: &impl Fn(&str) -> bool) -> String {
    if fits(text) {
        return text.to_string();
    }
    let kept = &text[..longest_fit(text, fits)];
    match kept.rfind('\n') {
        Some(at) if at * 4 >= kept.len() * 3 => kept[..at].trim_end().to_string(),
        _ => kept.trim_end().to_string(),
    }
}

/// The length of the longest prefix of `text` (on a char boundary) that `fits`.
fn longest_fit(text: &str, fits: &impl Fn(&str) -> bool) -> usize {
    if fits(text) {
        return text.len();
    }
    let (mut low, mut high) = (0, text.len());
    // The longest prefix that fits lies in low..high; `fits` grows with the prefix.
    while low + 1 < high {
        let mid = floor_boundary(text, (low + high) / 2);
        if mid <= low {
            break;
        }
        if fits(&text[..mid]) {
            low = mid;
        } else {
            high = mid;
        }
    }
    low
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// A summary read as headed sections of item lines.
struct Sections {
    sections: Vec<Section>,
    /// The bytes the files' lines get before the goal and plan.
    files_share: usize,
}

struct Section {
    /// The heading line (none for text before the first heading).
    heading: Option<String>,
    /// How many `#` the heading has (0 for none).
    level: usize,
    part: BudgetPart,
    /// Whether a blank line came before its heading (kept when rendered).
    after_blank: bool,
    /// Whether the section had items when read (a parent heading such as `## Progress` has
    /// none of its own and stays while a subsection does).
    had_items: bool,
    items: Vec<String>,
    /// Where each item stood when read (kept beside `items`): where one given up goes back.
    ords: Vec<usize>,
}

/// One change to a summary's items, by where the item stood when read (`ord`): what a cut
/// does, and what undoes it ([`Sections::apply`] returns the one that undoes it).
enum Cut {
    /// The item leaves its section.
    Remove { section: usize, ord: usize },
    /// The item goes back to its place.
    Insert {
        section: usize,
        ord: usize,
        item: String,
    },
    /// The item reads `text` instead.
    Replace {
        section: usize,
        ord: usize,
        text: String,
    },
}

impl Sections {
    fn parse(text: &str) -> Sections {
        let mut sections = vec![Section {
            heading: None,
            level: 0,
            part: BudgetPart::TailAndNarrative,
            after_blank: false,
            had_items: false,
            items: Vec::new(),
            ords: Vec::new(),
        }];
        let mut after_blank = false;
        for line in text.lines() {
            let trimmed = line.trim_start();
            if let Some(level) = heading_level(trimmed) {
                sections.push(Section {
                    heading: Some(line.to_string()),
                    level,
                    part: BudgetPart::of_heading(trimmed),
                    after_blank,
                    had_items: false,
                    items: Vec::new(),
                    ords: Vec::new(),
                });
            } else if !line.trim().is_empty() {
                let section = sections.last_mut().expect("one section at least");
                section.ords.push(section.items.len());
                section.items.push(line.to_string());
                section.had_items = true;
            }
            after_blank = line.trim().is_empty();
        }
        Sections {
            sections,
            files_share: 0,
        }
    }

    /// The bytes the files' items take.
    fn files_bytes(&self) -> usize {
        self.sections
            .iter()
            .filter(|s| s.part == BudgetPart::Files)
            .flat_map(|s| &s.items)
            .map(|item| item.len() + 1)
            .sum()
    }

    /// What the files give up next ([`next_file_cut`], `over` the bytes a cut must free);
    /// `None` when the files fit their share and `within_share` is not asked.
    fn next_file(&self, within_share: bool, over: usize) -> Option<Cut> {
        let files_bytes = self.files_bytes();
        if !within_share && files_bytes <= self.files_share {
            return None;
        }
        let files: Vec<(usize, usize)> = self
            .sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.part == BudgetPart::Files)
            .flat_map(|(at, s)| (0..s.items.len()).map(move |line| (at, line)))
            .collect();
        let lines: Vec<&str> = files
            .iter()
            .map(|&(at, line)| self.sections[at].items[line].as_str())
            .collect();
        let over = if within_share {
            over
        } else {
            over.min(files_bytes - self.files_share)
        };
        let ord = |at: usize| self.sections[files[at].0].ords[files[at].1];
        Some(match next_file_cut(&lines, 1, over)? {
            FileCut::Shorten { at, line } => Cut::Replace {
                section: files[at].0,
                ord: ord(at),
                text: line,
            },
            FileCut::Drop { at } => Cut::Remove {
                section: files[at].0,
                ord: ord(at),
            },
        })
    }

    /// Where the narrative's one item left is, if it has exactly one.
    fn last_narrative(&self) -> Option<(usize, usize)> {
        let mut items = self
            .sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.part == BudgetPart::TailAndNarrative)
            .flat_map(|(at, s)| (0..s.items.len()).map(move |line| (at, line)));
        let first = items.next()?;
        items.next().is_none().then_some(first)
    }

    /// Cuts the narrative's one item left to [`NARRATIVE_FLOOR_BYTES`]; false when there is
    /// no such item or it is that short already.
    fn shorten_last_narrative(&self) -> Option<Cut> {
        let (at, line) = self.last_narrative()?;
        let item = &self.sections[at].items[line];
        if item.len() <= NARRATIVE_FLOOR_BYTES {
            return None;
        }
        let mut end = floor_boundary(item, NARRATIVE_FLOOR_BYTES - '…'.len_utf8());
        if let Some(space) = item[..end].rfind(' ') {
            if space * 2 > end {
                end = space;
            }
        }
        Some(Cut::Replace {
            section: at,
            ord: self.sections[at].ords[line],
            text: format!("{}…", item[..end].trim_end()),
        })
    }

    /// Makes `cut`; what undoes it.
    fn apply(&mut self, cut: Cut) -> Cut {
        let line = |section: &Section, ord: usize| {
            section
                .ords
                .iter()
                .position(|&o| o == ord)
                .expect("a cut names an item its section holds")
        };
        match cut {
            Cut::Remove { section, ord } => {
                let s = &mut self.sections[section];
                let at = line(s, ord);
                s.ords.remove(at);
                Cut::Insert {
                    section,
                    ord,
                    item: s.items.remove(at),
                }
            }
            Cut::Insert { section, ord, item } => {
                let s = &mut self.sections[section];
                let at = s.ords.partition_point(|&o| o < ord);
                s.items.insert(at, item);
                s.ords.insert(at, ord);
                Cut::Remove { section, ord }
            }
            Cut::Replace { section, ord, text } => {
                let s = &mut self.sections[section];
                let at = line(s, ord);
                Cut::Replace {
                    section,
                    ord,
                    text: std::mem::replace(&mut s.items[at], text),
                }
            }
        }
    }

    /// Undoes `cuts` (the undoings of a cut's steps, in the order the steps were made) where
    /// the room allows, the last first; the rendering when any came back.
    fn give_back(&mut self, cuts: Vec<Cut>, fits: impl Fn(&str) -> bool) -> Option<String> {
        let mut back = None;
        for undo in cuts.into_iter().rev() {
            // An item shortened, then removed for good, has nothing to lengthen.
            if let Cut::Replace { section, ord, .. } = &undo {
                if !self.sections[*section].ords.contains(ord) {
                    continue;
                }
            }
            let redo = self.apply(undo);
            let rendered = self.render();
            if fits(&rendered) {
                back = Some(rendered);
            } else {
                self.apply(redo);
            }
        }
        back
    }

    /// The next item to give up: from the last part in the order first; within it the last
    /// section first, its oldest (first) item first; standing facts by [`FACT_DROP_RULE`];
    /// the files past their share by [`Self::next_file`], and within it after the plan.
    fn next_to_drop(&self, over: usize) -> Option<Cut> {
        let remove = |(section, line): (usize, usize)| Cut::Remove {
            section,
            ord: self.sections[section].ords[line],
        };
        for part in BudgetPart::ORDER.iter().rev() {
            if *part == BudgetPart::Files {
                match self.next_file(false, over) {
                    Some(cut) => return Some(cut),
                    None => continue,
                }
            }
            let in_part = self
                .sections
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, s)| s.part == *part && !s.items.is_empty());
            if *part == BudgetPart::StandingFacts {
                // Sections beside the standing facts' own (constraints and preferences a
                // summary lists apart) go before them, the last first, each oldest first.
                let beside = in_part.clone().find(|(_, s)| {
                    s.heading
                        .as_deref()
                        .is_some_and(|h| !is_standing_heading(h))
                });
                if let Some((at, _)) = beside {
                    return Some(remove((at, 0)));
                }
                let mut facts: Vec<(usize, usize)> = in_part
                    .flat_map(|(at, s)| (0..s.items.len()).map(move |line| (at, line)))
                    .collect();
                facts.sort();
                let items: Vec<&str> = facts
                    .iter()
                    .map(|&(at, line)| self.sections[at].items[line].as_str())
                    .collect();
                // The files within their share go after the plan, before any fact.
                if let Some(cut) = self.next_file(true, over) {
                    return Some(cut);
                }
                if let Some(pick) = fact_to_drop(&items) {
                    return Some(remove(facts[pick]));
                }
                continue;
            }
            if let Some((at, _)) = in_part.into_iter().next() {
                return Some(remove((at, 0)));
            }
        }
        None
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (at, section) in self.sections.iter().enumerate() {
            let shown =
                !section.items.is_empty() || (!section.had_items && self.subsection_shown(at));
            if !shown {
                continue;
            }
            if let Some(heading) = &section.heading {
                if !out.is_empty() && section.after_blank {
                    out.push('\n');
                }
                out.push_str(heading);
                out.push('\n');
            }
            for item in &section.items {
                out.push_str(item);
                out.push('\n');
            }
        }
        out.trim().to_string()
    }

    /// Whether a deeper section under the one at `at` still has items.
    fn subsection_shown(&self, at: usize) -> bool {
        let level = self.sections[at].level;
        level > 0
            && self.sections[at + 1..]
                .iter()
                .take_while(|s| s.level > level)
                .any(|s| !s.items.is_empty())
    }
}

/// Whether a heading opens the standing facts' own section (`## Standing Facts`,
/// `Standing:`).
fn is_standing_heading(heading: &str) -> bool {
    let title = heading
        .trim()
        .trim_start_matches('#')
        .trim()
        .trim_matches(['*', ':'])
        .trim()
        .to_lowercase();
    matches!(title.as_str(), "standing facts" | "standing")
}

/// How deep a heading `line` is: its `#`s, or 2 for a digest's `Label:` line (a few words
/// and a colon, nothing after it); `None` for any other line.
fn heading_level(line: &str) -> Option<usize> {
    if line.starts_with('#') {
        return Some(line.chars().take_while(|c| *c == '#').count());
    }
    let label = line.strip_suffix(':')?;
    let is_label = !label.is_empty()
        && label.len() <= 40
        && label.starts_with(|c: char| c.is_alphabetic())
        && label
            .chars()
            .all(|c| c.is_alphanumeric() || c == ' ' || c == '&');
    is_label.then_some(2)
}

/// The kind label a standing item opens with (`- Rule: …`, `- **Fact** (region): …`),
/// lower case.
fn label(item: &str) -> String {
    item.trim()
        .trim_start_matches(['-', '*', '•', ' '])
        .split([':', '('])
        .next()
        .unwrap_or("")
        .replace('*', "")
        .trim()
        .to_lowercase()
}

/// Whether a standing item is a note held as said (`- Note: text`): what a user said that no
/// form reads, kept after the facts a form reads.
fn is_note(item: &str) -> bool {
    label(item) == "note"
}

/// Whether a standing item was stated by someone rather than printed by a tool: a tool prints
/// `name: value` lines, which are read as facts and limits only; those are stated when they
/// read as a sentence (a capital first, a stop last).
fn is_stated(item: &str) -> bool {
    if !matches!(label(item).as_str(), "fact" | "constraint") {
        return true;
    }
    let text = item
        .trim()
        .trim_start_matches(['-', '*', '•', ' '])
        .split_once(':')
        .map_or(item, |(_, text)| text)
        .trim();
    text.starts_with(|c: char| c.is_uppercase()) && text.ends_with(['.', '!', '?'])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str = "## Goal\n- Ship the billing service\n\n## Standing Facts\n\
        - Rule: Never reveal API keys in logs.\n- Fact (region): region: eu-west-3\n\
        - Constraint: The budget is $4,000 (superseded by $5,120).\n\
        - Constraint: The budget is now $5,120.\n\n## Progress\n### Done\n- Ran step 1\n\
        - Ran step 2\n### In Progress\n- Writing deploy.sh\n\n## Relevant Files\n\
        - deploy.sh (created)\n\n## Critical Context\n- Acknowledged, continuing.";

    fn under(bytes: usize) -> impl Fn(&str) -> bool {
        move |text: &str| text.len() <= bytes
    }

    #[test]
    fn a_size_leaves_the_summaries_the_rest_or_room_for_the_facts() {
        assert_eq!(summary_room(1000, 300), 700);
        assert_eq!(summary_room(1000, 900), 100);
        assert_eq!(summary_room(1000, 1000), FACTS_FLOOR_TOKENS);
        assert_eq!(summary_room(1000, 5000), FACTS_FLOOR_TOKENS);
        assert_eq!(summary_room(100, 5000), 100);
    }

    #[test]
    fn a_head_over_the_size_leaves_the_summaries_the_size_less_the_newest_turn() {
        // The head fits: the whole output is measured.
        assert_eq!(summary_room_past_head(1000, 600, 100), 300);
        assert_eq!(summary_room_past_head(1000, 1000, 100), FACTS_FLOOR_TOKENS);
        // The head alone is over: what follows it is measured.
        assert_eq!(summary_room_past_head(1000, 3000, 100), 900);
        assert_eq!(summary_room_past_head(1000, 3000, 1000), FACTS_FLOOR_TOKENS);
        assert_eq!(summary_room_past_head(100, 3000, 500), 100);
    }

    #[test]
    fn the_order_is_written_once_and_headings_map_to_it() {
        assert_eq!(BudgetPart::ORDER[0], BudgetPart::Head);
        assert!(BudgetPart::StandingFacts < BudgetPart::TailAndNarrative);
        assert_eq!(
            BudgetPart::of_heading("## Constraints & Preferences"),
            BudgetPart::StandingFacts
        );
        assert_eq!(
            BudgetPart::of_heading("### In Progress"),
            BudgetPart::LatestTurn
        );
        assert_eq!(
            BudgetPart::of_heading("## Next Steps"),
            BudgetPart::GoalAndPlan
        );
        assert_eq!(
            BudgetPart::of_heading("## Critical Context"),
            BudgetPart::TailAndNarrative
        );
    }

    #[test]
    fn narrative_goes_before_the_latest_turn_files_plan_and_facts() {
        assert_eq!(trim_summary(SUMMARY, under(10_000)), SUMMARY);
        let cut = trim_summary(SUMMARY, under(SUMMARY.len() - 40));
        assert!(!cut.contains("Acknowledged"), "{cut}");
        assert!(
            cut.contains("Writing deploy.sh") && cut.contains("Never reveal"),
            "{cut}"
        );
        // Room for the facts and the file: Done, Critical Context, In Progress and the goal
        // are gone, with their headings.
        let facts = &SUMMARY
            [SUMMARY.find("## Standing").unwrap()..SUMMARY.find("\n\n## Progress").unwrap()];
        let files = "\n\n## Relevant Files\n- deploy.sh (created)";
        let both = format!("{facts}{files}");
        assert_eq!(trim_summary(SUMMARY, under(both.len())), both);
        // Room for the facts alone: the file goes too.
        assert_eq!(trim_summary(SUMMARY, under(facts.len())), facts);
    }

    #[test]
    fn the_files_in_short_lines_outlast_the_plan_after_the_standing_facts() {
        let mut facts = String::from("## Standing Facts\n");
        for i in 0..24 {
            facts.push_str(&format!(
                "- Rule: Always run the check suite-{i} before a merge.\n"
            ));
        }
        let files = "## Files\n- src/a/retry.rs (written, edited)\n- src/b/schema.sql (read)\n\
            - src/c/importer.py (edited, renamed from src/d/importer.py)\n\
            - src/e/notes.md (written, deleted)";
        let summary = format!(
            "## Goal\n- Step 1: look at the importer's retry logic and keep the fix small.\n\
             - Step 9: look at the flaky integration test.\n\n{facts}\n\
             ## Files\n- src/a/retry.rs (written, edited; last: `edit_file`)\n\
             - src/b/schema.sql (read; last: `read_file`)\n\
             - src/c/importer.py (edited, renamed from src/d/importer.py; last: `git mv src/d/importer.py src/c/importer.py`)\n\
             - src/e/notes.md (written, deleted; last: `rm src/e/notes.md`)"
        );
        // Room for every fact and every file in its short line: the files give up their last
        // commands, and the goal goes, before any file does.
        let short = format!("{facts}\n{files}");
        assert_eq!(trim_summary(&summary, under(short.len())), short);
        // Less room: each line gives up its earlier changes, then a rename its former path,
        // before any file goes (and what that freed past the need gives earlier changes back).
        let cut = trim_summary(&summary, under(short.len() - 30));
        for line in [
            "- src/a/retry.rs (",
            "- src/b/schema.sql (read)",
            "- src/c/importer.py (renamed)",
            "- src/e/notes.md (",
            "suite-0 ",
            "suite-23 ",
        ] {
            assert!(cut.contains(line), "{line} in {cut}");
        }
        // Less still: the file touched first goes; every fact stays.
        let cut = trim_summary(&summary, under(short.len() - 60));
        assert!(
            !cut.contains("retry.rs") && cut.contains("notes.md"),
            "{cut}"
        );
        assert!(
            cut.contains("suite-0 ") && cut.contains("suite-23 "),
            "{cut}"
        );
        // Room for the facts alone: the files go before any fact.
        assert_eq!(
            trim_summary(&summary, under(facts.trim_end().len())),
            facts.trim_end()
        );
    }

    #[test]
    fn files_that_must_go_leave_as_many_as_fit() {
        let facts = "## Standing Facts\n- Rule: Always run the check suite first.";
        let long = "- services/billing/importer/src/adapters/legacy_retry_policy.rs (written)";
        let summary = format!(
            "{facts}\n\n## Files\n- src/a.rs (read)\n{long}\n- etc/hosts\n- src/b.rs (edited)"
        );
        // Room for all but 40 bytes: the file only named goes first, then the one line
        // that frees the rest alone (the long one), not the file touched first; the named
        // file then comes back into the room the long one left.
        let cut = trim_summary(&summary, under(summary.len() - 40));
        assert_eq!(
            cut,
            format!("{facts}\n\n## Files\n- src/a.rs (read)\n- etc/hosts\n- src/b.rs (edited)")
        );
        // Past the named file no line frees it alone: the longest goes, then the least
        // recently touched that frees the rest.
        let cut = trim_summary(&summary, under(summary.len() - long.len() - 25));
        assert_eq!(cut, format!("{facts}\n\n## Files\n- src/b.rs (edited)"));
    }

    #[test]
    fn what_a_cut_gave_up_comes_back_where_the_room_allows() {
        let facts = "## Standing Facts\n- Rule: Always run the check suite first.";
        let files =
            "## Files\n- src/one/a.rs (read)\n- src/two/b.rs (read)\n- src/three/c.rs (read)";
        let plan = format!(
            "## Next Steps\n- {}",
            "wire the importer's retry policy ".repeat(3)
        );
        let summary = format!("{facts}\n\n{files}\n\n{plan}");
        // The files past their share go first, then the plan, which frees far more than
        // was left to free: the files it made room for come back.
        let room = summary.len() - 80;
        let cut = trim_summary(&summary, under(room));
        assert_eq!(cut, format!("{facts}\n\n{files}"));
    }

    #[test]
    fn the_narratives_last_item_is_cut_short_before_it_goes() {
        let mut facts = String::from("## Standing Facts");
        for i in 0..6 {
            facts.push_str(&format!("\n- Rule: Always run the check suite-{i} first."));
        }
        let files = "## Files\n- src/a.rs (edited)\n- src/b.rs (read)";
        let summary = format!(
            "{facts}\n\n{files}\n\n\
             ## Did\n- Read the logs of the failing deploy and found the missing variable.\n\
             - Ran the migration on the staging database, then checked every table it \
             touched for rows left behind by the old importer."
        );
        let kept = "- Ran the migration on the staging database, then checked every table it…";
        assert!(kept.len() <= NARRATIVE_FLOOR_BYTES);
        // Room for one short line: the newest item, cut short.
        let short = format!("{facts}\n\n{files}\n\n## Did\n{kept}");
        assert_eq!(trim_summary(&summary, under(short.len())), short);
        // Less room: it goes before the files, and the older item, shorter, comes back into
        // the room it left.
        let cut = format!(
            "{facts}\n\n{files}\n\n## Did\n\
             - Read the logs of the failing deploy and found the missing variable."
        );
        assert_eq!(trim_summary(&summary, under(short.len() - 1)), cut);
        // Less still: the narrative goes whole.
        let cut = format!("{facts}\n\n{files}");
        assert_eq!(trim_summary(&summary, under(cut.len())), cut);
    }

    #[test]
    fn a_file_line_gives_up_its_last_command() {
        assert_eq!(
            without_last_command("- a.rs (edited; last: `sed -i s/a/b/ a.rs`)").as_deref(),
            Some("- a.rs (edited)")
        );
        assert_eq!(
            without_last_command("- a.rs (last: `cat a.rs`)").as_deref(),
            Some("- a.rs")
        );
        assert_eq!(without_last_command("- a.rs (edited)"), None);
        assert_eq!(without_last_command("- a.rs"), None);
        // Then the changes before its last one, a rename's former path aside.
        // The first step that applies, as a cut takes them.
        let shorter_file_line = |item: &str| FILE_LINE_STEPS.iter().find_map(|step| step(item));
        assert_eq!(
            shorter_file_line("- a.rs (written, edited; last: `edit_file`)").as_deref(),
            Some("- a.rs (written, edited)")
        );
        assert_eq!(
            shorter_file_line("- a.rs (written, edited)").as_deref(),
            Some("- a.rs (edited)")
        );
        assert_eq!(
            shorter_file_line("- b.rs (read, edited, renamed from a.rs)").as_deref(),
            Some("- b.rs (renamed from a.rs)")
        );
        // Then a rename's former path: the path and the rename still say where the file is.
        assert_eq!(
            shorter_file_line("- b.rs (renamed from a.rs, edited)").as_deref(),
            Some("- b.rs (renamed, edited)")
        );
        assert_eq!(
            shorter_file_line("- b.rs (renamed from a.rs)").as_deref(),
            Some("- b.rs (renamed)")
        );
        assert_eq!(shorter_file_line("- b.rs (renamed)"), None);
        assert_eq!(shorter_file_line("- a.rs (deleted)"), None);
    }

    #[test]
    fn a_digest_is_cut_by_the_same_order() {
        let digest = "Standing:\n- Rule: Never reveal API keys.\nAsked:\n- Ship billing\n\
            Did:\n- Ran step 1\n- Ran step 2\nOpen:\n- Writing deploy.sh";
        let cut = trim_summary(digest, under(digest.len() - 10));
        assert!(
            !cut.contains("Ran step 1") && cut.contains("Ran step 2"),
            "{cut}"
        );
        let cut = trim_summary(digest, under(40));
        assert_eq!(cut, "Standing:\n- Rule: Never reveal API keys.");
    }

    #[test]
    fn facts_go_superseded_first_then_tool_derived_then_oldest() {
        let facts = "## Standing Facts\n- Rule: Never reveal API keys in logs.\n\
            - Fact (region): region: eu-west-3\n\
            - Constraint: The budget is $4,000 (superseded by $5,120).\n\
            - Constraint: The budget is now $5,120.";
        let one_less = trim_summary(facts, under(facts.len() - 1));
        assert!(
            !one_less.contains("$4,000") && one_less.contains("eu-west-3"),
            "{one_less}"
        );
        let two_less = trim_summary(facts, under(one_less.len() - 1));
        assert!(!two_less.contains("eu-west-3"), "{two_less}");
        assert!(two_less.contains("Never reveal") && two_less.contains("$5,120"));
        let three_less = trim_summary(facts, under(two_less.len() - 1));
        assert!(!three_less.contains("Never reveal"), "{three_less}");
        assert!(three_less.contains("now $5,120"));
    }

    #[test]
    fn constraints_listed_apart_go_before_the_standing_facts() {
        let summary = "## Standing Facts\n- Rule: Never reveal API keys in logs.\n\n\
            ## Constraints & Preferences\n- The last run printed 29 warnings.\n\
            - The last run printed 9 warnings.";
        let cut = trim_summary(summary, under(summary.len() - 1));
        assert!(
            !cut.contains("29 warnings") && cut.contains("9 warnings"),
            "{cut}"
        );
        let cut = trim_summary(summary, under(60));
        assert_eq!(
            cut,
            "## Standing Facts\n- Rule: Never reveal API keys in logs."
        );
    }

    #[test]
    fn notes_held_as_said_go_after_tool_lines_and_before_typed_facts() {
        let facts = "## Standing Facts\n- Note: fwiw prod runs v3.12.40.\n\
            - Rule: Never reveal API keys in logs.\n- Fact (region): region: eu-west-3\n\
            - Note: the nightly lives in /srv/nightly-4410.";
        let one_less = trim_summary(facts, under(facts.len() - 1));
        assert!(!one_less.contains("eu-west-3"), "{one_less}");
        let two_less = trim_summary(facts, under(one_less.len() - 1));
        assert!(
            !two_less.contains("v3.12.40") && two_less.contains("nightly-4410"),
            "{two_less}"
        );
        // One byte less: the newer note goes too, and the older one, shorter, comes back
        // into the room it left (a cut gives back what fits, dearest first).
        let three_less = trim_summary(facts, under(two_less.len() - 1));
        assert!(
            three_less.contains("v3.12.40") && !three_less.contains("nightly-4410"),
            "{three_less}"
        );
        let rule = "## Standing Facts\n- Rule: Never reveal API keys in logs.";
        assert_eq!(trim_summary(facts, under(rule.len())), rule);
    }

    #[test]
    fn text_is_cut_only_when_one_item_is_left_over() {
        for bytes in [0, 5, 17, 60] {
            assert!(trim_summary(SUMMARY, under(bytes)).len() <= bytes);
        }
        let cut = trim_summary("é".repeat(50).as_str(), under(21));
        assert!(cut.len() <= 21 && cut.starts_with('é'));
    }
}
