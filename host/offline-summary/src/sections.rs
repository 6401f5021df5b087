//! A summary's sections by what they carry, so that a budget can be spent on them in order:
//! the standing facts first, then the goal and plan, the files at their last state, the
//! progress, and the narrative last. Both shapes are read (the handoff's `## Title` headings
//! and a digest record's `Title:` lines), and the headings other summarizers write.

use std::ops::Range;

use crate::budget::Part;
use crate::handoff::Key;
use crate::merge::{heading, key_for_heading};
use crate::record::Section;

/// The part a record's section carries.
fn part_of_record(section: Section) -> Part {
    match section {
        Section::Standing => Part::Facts,
        Section::Asked | Section::Next => Part::GoalAndPlan,
        Section::Files => Part::Files,
        Section::Constraints => Part::Remarks,
        Section::Open => Part::Progress,
        Section::Did | Section::Decided | Section::Errors => Part::Narrative,
    }
}

/// The part a heading line opens (`## Files`, `**Standing Facts**`, `Did:`, `Files: a.rs`).
pub fn part_of_heading(line: &str) -> Option<Part> {
    if let Some(title) = heading(line) {
        return key_for_heading(&title).map(Key::part);
    }
    let (title, _) = line.split_once(':')?;
    Section::from_title(title.trim()).map(part_of_record)
}

/// The sections of `summary`: each part with the byte range of its heading and lines. Text
/// before the first heading, or under a heading of no known part, is narrative.
pub fn parts(summary: &str) -> Vec<(Part, Range<usize>)> {
    let mut out: Vec<(Part, Range<usize>)> = Vec::new();
    let mut at = 0;
    for line in summary.split_inclusive('\n') {
        let end = at + line.len();
        let opens = line
            .trim_start()
            .starts_with(['#', '*'])
            .then(|| heading(line))
            .flatten()
            .map(|title| key_for_heading(&title).map_or(Part::Narrative, Key::part))
            .or_else(|| part_of_heading(line.trim_end()));
        match (opens, out.last_mut()) {
            (None, Some((_, range))) => range.end = end,
            (None, None) => out.push((Part::Narrative, at..end)),
            (Some(part), _) => out.push((part, at..end)),
        }
        at = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_split_into_typed_parts() {
        let handoff = "## Goal\n- fix it\n\n## Standing Facts\n- Rule: Never x.\n\n## Progress\n\
                       ### Done\n- Ran `make`\n### In Progress\n- waiting\n\n## Files\n- a.rs (edited)\n";
        let found: Vec<(Part, &str)> = parts(handoff)
            .into_iter()
            .map(|(part, range)| (part, &handoff[range]))
            .collect();
        assert_eq!(
            found,
            [
                (Part::GoalAndPlan, "## Goal\n- fix it\n\n"),
                (Part::Facts, "## Standing Facts\n- Rule: Never x.\n\n"),
                (Part::Narrative, "## Progress\n"),
                (Part::Narrative, "### Done\n- Ran `make`\n"),
                (Part::Progress, "### In Progress\n- waiting\n\n"),
                (Part::Files, "## Files\n- a.rs (edited)\n"),
            ]
        );
        let record = "Standing:\n- Fact: The region is eu-1.\nAsked: fix it\nFiles: a.rs\nDid:\n- Ran `make`";
        let kinds: Vec<Part> = parts(record).into_iter().map(|(part, _)| part).collect();
        assert_eq!(
            kinds,
            [Part::Facts, Part::GoalAndPlan, Part::Files, Part::Narrative]
        );
        assert_eq!(part_of_heading("**Relevant Files**"), Some(Part::Files));
        assert_eq!(part_of_heading("just text"), None);
    }
}
