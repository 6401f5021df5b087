//! Updating a previous summary with new turns rather than starting over.
//!
//! The previous summary is read back by its headings (this template's, Hermes' and common
//! variants); items under headings it does not know, and text before any heading, are kept
//! under Critical Context.

use super::digest::Digest;
use super::files::{FileBook, FileState};
use super::handoff::{Handoff, Key};
use super::restated;
use super::standing::Book;

/// Where a heading of a previous summary goes.
pub(crate) fn key_for_heading(title: &str) -> Option<Key> {
    let normalized: String = title
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    Some(match normalized.as_str() {
        "goal" | "goals" | "task" | "objective" => Key::Goal,
        "standingfacts" | "standing" | "standingrules" | "standingrulesandfacts" => Key::Standing,
        "constraintspreferences" | "constraints" | "preferences" | "constraintsandpreferences" => {
            Key::Constraints
        }
        "progress" | "done" | "completed" | "completedactions" | "completedwork" => Key::Done,
        "inprogress"
        | "activestate"
        | "currentstate"
        | "state"
        | "activetask"
        | "historicaltasksnapshot"
        | "historicalinprogressstate" => Key::InProgress,
        "blocked" | "blockers" | "errors" | "openissues" => Key::Blocked,
        "keydecisions" | "decisions" | "resolvedquestions" => Key::Decisions,
        "relevantfiles" | "files" | "filestouched" | "filesandtheirstate" => Key::Files,
        "nextsteps"
        | "remainingwork"
        | "historicalremainingwork"
        | "pendinguserasks"
        | "historicalpendinguserasks"
        | "todo" => Key::NextSteps,
        "criticalcontext" | "context" | "notes" => Key::Critical,
        _ => return None,
    })
}

/// A line that says a section is empty, or that items were omitted.
fn is_placeholder(item: &str) -> bool {
    let lower = item.trim().trim_end_matches('.').to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "none" | "none recorded" | "nothing recorded" | "nothing blocking" | "n/a" | "-" | ""
    ) || Key::ORDER.iter().any(|key| item.trim() == key.empty_text())
        || (lower.starts_with("(+") && lower.ends_with("omitted)"))
}

/// `text` without a list marker (`- `, `* `, `• `, `1. `, `2) `).
fn strip_marker(line: &str) -> &str {
    let line = line.trim();
    for marker in ["- ", "* ", "• ", "+ "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return rest.trim();
        }
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && digits < 4 {
        let rest = &line[digits..];
        if let Some(rest) = rest.strip_prefix(". ").or(rest.strip_prefix(") ")) {
            return rest.trim();
        }
    }
    line
}

/// A heading line: `## Title`, `**Title**` or `Title:` when the title is known.
pub(crate) fn heading(line: &str) -> Option<String> {
    let trimmed = line.trim();
    if let Some(rest) = trimmed.strip_prefix('#') {
        return Some(rest.trim_start_matches('#').trim().to_string());
    }
    let bold = trimmed
        .strip_prefix("**")
        .and_then(|rest| rest.strip_suffix("**"))
        .map(|t| t.trim_end_matches(':'));
    let colon = trimmed.strip_suffix(':');
    bold.or(colon)
        .filter(|title| key_for_heading(title).is_some())
        .map(str::to_string)
}

/// The previous summary's items by section, in order.
pub fn parse_previous(text: &str) -> Vec<(Key, String)> {
    let mut items = Vec::new();
    let mut current: Option<Key> = None;
    let mut unknown_title = String::new();
    for line in text.lines() {
        if let Some(title) = heading(line) {
            current = key_for_heading(&title);
            unknown_title = if current.is_none() {
                title
            } else {
                String::new()
            };
            continue;
        }
        let item = strip_marker(line);
        if is_placeholder(item) {
            continue;
        }
        match current {
            Some(key) => items.push((key, item.to_string())),
            None if unknown_title.is_empty() => {
                items.push((Key::Critical, format!("Earlier: {item}")));
            }
            None => items.push((Key::Critical, format!("{unknown_title}: {item}"))),
        }
    }
    items
}

/// The handoff for `digest`, updating `previous` when there is one.
pub fn merge(previous: Option<&str>, digest: Digest) -> Handoff {
    let previous = previous.map(parse_previous).unwrap_or_default();
    let of = |key: Key| -> Vec<String> {
        previous
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|(_, item)| item.clone())
            .collect()
    };
    let mut handoff = Handoff::default();

    // Standing facts: the previous summary's, verbatim, then the new turns' (a newer value
    // replaces an older one of the same subject).
    let mut book = Book::default();
    book.add_lines(of(Key::Standing).iter().map(String::as_str));
    book.extend(digest.standing);
    let standing_texts = restated::said_now(&book);

    // Goal: the original goal stays first; later asks follow, but for those that only state
    // what the standing facts carry (a rule said in a message of its own is no ask).
    let old_goal = of(Key::Goal);
    let had_goal = !old_goal.is_empty();
    let mut old_goal = old_goal.into_iter();
    handoff.extend(Key::Goal, old_goal.next());
    handoff.extend(
        Key::Goal,
        old_goal.filter(|ask| !restated::states_only(ask, &standing_texts)),
    );
    let mut asks = digest
        .asks
        .iter()
        .filter(|ask| !restated::states_only(ask, &standing_texts));
    if !had_goal {
        handoff.extend(Key::Goal, asks.next().cloned());
    }
    handoff.extend(Key::Goal, asks.map(|ask| format!("Also asked: {ask}")));
    if handoff.section(Key::Goal).items.is_empty() {
        if let Some(goal) = digest.inferred_goal {
            handoff.push(Key::Goal, format!("(inferred) {goal}"));
        }
    }
    handoff.set_pinned(Key::Goal, 1);

    handoff.extend(Key::Standing, book.lines());
    // What the standing facts carry, or carried before a newer value replaced it, is not
    // repeated in the sections after them (where an old value would read as the last word).
    let standing = restated::said_ever(&book);
    let constraints = of(Key::Constraints).into_iter().chain(digest.constraints);
    handoff.extend(
        Key::Constraints,
        constraints.filter(|c| !restated::states_only(c, &standing)),
    );

    handoff.extend(Key::Done, merge_done(of(Key::Done), digest.done));

    // The state is the newest one.
    if digest.in_progress.is_empty() {
        handoff.extend(Key::InProgress, of(Key::InProgress));
    } else {
        handoff.extend(Key::InProgress, digest.in_progress);
    }

    // Earlier blockers stay unless the same action has since succeeded.
    let cleared = |item: &str| {
        digest
            .succeeded
            .iter()
            .any(|ok| item.starts_with(ok.as_str()))
    };
    let old_blocked: Vec<String> = of(Key::Blocked)
        .into_iter()
        .filter(|item| !cleared(item))
        .collect();
    handoff.extend(Key::Blocked, old_blocked);
    handoff.extend(Key::Blocked, digest.blocked);

    handoff.extend(Key::Decisions, of(Key::Decisions));
    handoff.extend(
        Key::Decisions,
        digest.decisions.into_iter().filter(|decision| {
            let said = decision.strip_prefix("User: ").unwrap_or(decision);
            !restated::states_only(said, &standing)
        }),
    );

    handoff.extend(Key::Files, merge_files(of(Key::Files), digest.files));

    if digest.next_steps.is_empty() {
        handoff.extend(Key::NextSteps, of(Key::NextSteps));
    } else {
        handoff.extend(Key::NextSteps, digest.next_steps);
    }

    handoff.extend(Key::Critical, of(Key::Critical));
    handoff.extend(Key::Critical, digest.critical);
    // Rendering marks the replaced values the other sections still show.
    handoff.standing = book;
    handoff
}

/// `Ran `x` (×3)` → (`Ran `x``, 3).
fn split_count(item: &str) -> (&str, usize) {
    if let Some((base, tail)) = item.rsplit_once(" (×") {
        if let Some(count) = tail.strip_suffix(')').and_then(|n| n.parse().ok()) {
            return (base, count);
        }
    }
    (item, 1)
}

/// Earlier actions then new ones; an action done again moves to the end with its counts
/// added up.
fn merge_done(previous: Vec<String>, new: Vec<String>) -> Vec<String> {
    let mut done: Vec<(String, usize)> = previous
        .iter()
        .map(|item| {
            let (base, count) = split_count(item);
            (base.to_string(), count)
        })
        .collect();
    for item in new {
        let (base, count) = split_count(&item);
        let earlier = match done.iter().position(|(b, _)| b == base) {
            Some(index) => done.remove(index).1,
            None => 0,
        };
        done.push((base.to_string(), earlier + count));
    }
    done.into_iter()
        .map(|(base, count)| {
            if count > 1 {
                format!("{base} (×{count})")
            } else {
                base
            }
        })
        .collect()
}

/// Earlier files and new ones as one list, each file once at its last state: a rename in the
/// new turns replaces the old path; the files only named first, then the touched ones, the
/// most recently touched last.
fn merge_files(previous: Vec<String>, new: Vec<FileState>) -> Vec<String> {
    let mut book = FileBook::default();
    book.add_lines(previous.iter().map(String::as_str));
    for state in new {
        book.add(state);
    }
    book.lines()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previous_summaries_are_read_by_heading() {
        let text = "[CONTEXT SUMMARY]\n## Goal\n- Fix the parser\n\n## Progress\n### Done\n1. Ran `make`\n\
                    ### Blocked\n- None.\n## Relevant Files\n* src/a.rs (edited)\n## Weird Section\nsome note\n\
                    **Next Steps**\n- ship it";
        let items = parse_previous(text);
        assert_eq!(
            items,
            [
                (Key::Critical, "Earlier: [CONTEXT SUMMARY]".to_string()),
                (Key::Goal, "Fix the parser".to_string()),
                (Key::Done, "Ran `make`".to_string()),
                (Key::Files, "src/a.rs (edited)".to_string()),
                (Key::Critical, "Weird Section: some note".to_string()),
                (Key::NextSteps, "ship it".to_string()),
            ]
        );
    }

    #[test]
    fn merge_keeps_the_old_goal_first_and_clears_fixed_blockers() {
        let previous = "## Goal\n- Fix the parser\n### Blocked\n- Ran `make` failed: boom\n- Ran `x` failed: y";
        let digest = Digest {
            asks: vec!["add docs".into()],
            succeeded: vec!["Ran `make`".into()],
            done: vec!["Ran `make`".into()],
            ..Digest::default()
        };
        let handoff = merge(Some(previous), digest);
        let goal: Vec<_> = handoff
            .section(Key::Goal)
            .items
            .iter()
            .map(|i| i.text.as_str())
            .collect();
        assert_eq!(goal, ["Fix the parser", "Also asked: add docs"]);
        let blocked: Vec<_> = handoff
            .section(Key::Blocked)
            .items
            .iter()
            .map(|i| i.text.as_str())
            .collect();
        assert_eq!(blocked, ["Ran `x` failed: y"]);
    }

    #[test]
    fn repeated_actions_and_files_combine() {
        assert_eq!(
            merge_done(
                vec!["Ran `a` (×2)".into(), "Ran `b`".into()],
                vec!["Ran `a`".into()]
            ),
            ["Ran `b`", "Ran `a` (×3)"]
        );
        let line = |text: &str| FileState::parse_line(text).unwrap();
        assert_eq!(
            merge_files(
                vec!["notes.md".into(), "src/a.rs (written)".into()],
                vec![line("/repo/src/a.rs (edited)"), line("b.rs")]
            ),
            ["notes.md", "b.rs", "/repo/src/a.rs (written, edited)"]
        );
    }
}
