//! What any summary must carry: the standing items of the previous summary and of the new
//! turns. An LLM's summary is checked against them and gets back what it dropped, so a
//! standing rule or value never depends on a model remembering to copy it.

use ctxhost_sdk::{SummarizeRequest, SummaryShape};

use crate::parse::{parse_turns, Role};
use crate::standing::{extract, Book, Origin};

/// The standing items a summary of `request` must keep: those in the standing sections of its
/// previous summary and of its content (earlier summaries it merges), then those its system
/// and user turns state (and its assistant turns confirm), each subject at its newest value.
pub fn expected(request: &SummarizeRequest) -> Book {
    let mut book = Book::default();
    if let Some(previous) = request.previous_summary.as_deref() {
        book.add_lines(section_lines(previous));
    }
    book.add_lines(section_lines(&request.content));
    for turn in parse_turns(&request.content) {
        match turn.role {
            Role::User | Role::System => book.extend(extract(&turn.text, Origin::User)),
            Role::Assistant => book.extend(extract(&turn.text, Origin::Assistant)),
            _ => {}
        }
    }
    book
}

/// `answer` with every item of `expected` it lost added back to its standing section (one is
/// added when it has none). An item is kept when the answer still states its value. Notes held
/// as said (read by no form) are the answer's to weigh: a short ask naming a file is one too.
pub fn restore(answer: &str, expected: &Book, shape: SummaryShape) -> String {
    let lower = answer.to_lowercase();
    let missing: Vec<String> = expected
        .items()
        .iter()
        .filter(|item| item.kind != crate::standing::Kind::Note)
        .filter(|item| !lower.contains(&item.value.to_lowercase()))
        .map(|item| format!("- {}", item.line()))
        .collect();
    if missing.is_empty() {
        return answer.to_string();
    }
    let lines: Vec<&str> = answer.lines().collect();
    match lines.iter().position(|line| is_standing_heading(line)) {
        Some(heading) => {
            // After the section's last item.
            let end = lines[heading + 1..]
                .iter()
                .position(|line| !is_item(line))
                .map_or(lines.len(), |at| heading + 1 + at);
            let mut out: Vec<&str> = lines[..end].to_vec();
            out.extend(missing.iter().map(String::as_str));
            out.extend(&lines[end..]);
            out.join("\n")
        }
        None => {
            let heading = match shape {
                SummaryShape::Handoff => "## Standing Facts",
                SummaryShape::Digest => "Standing:",
            };
            format!("{}\n\n{heading}\n{}", answer.trim_end(), missing.join("\n"))
        }
    }
}

/// The standing items of the standing sections in `text` (a summary).
pub fn standing_in(text: &str) -> Book {
    let mut book = Book::default();
    book.add_lines(section_lines(text));
    book
}

/// The item lines of every standing section in `text` (`## Standing Facts`, `Standing:`).
fn section_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut inside = false;
    text.lines().filter(move |line| {
        if is_standing_heading(line) {
            inside = true;
            return false;
        }
        inside &= is_item(line);
        inside
    })
}

fn is_item(line: &str) -> bool {
    let line = line.trim_start();
    ["- ", "* ", "• "]
        .iter()
        .any(|marker| line.starts_with(marker))
}

/// `## Standing Facts`, `**Standing facts**`, `Standing:` and the like.
pub(crate) fn is_standing_heading(line: &str) -> bool {
    let title: String = line
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    let marked = {
        let line = line.trim();
        line.starts_with('#') || line.starts_with("**") || line.ends_with(':')
    };
    marked
        && matches!(
            title.as_str(),
            "standing" | "standingfacts" | "standingrulesandfacts"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(previous: Option<&str>, content: &str) -> SummarizeRequest {
        SummarizeRequest {
            instructions: String::new(),
            content: content.into(),
            max_tokens: 500,
            focus_topic: None,
            previous_summary: previous.map(str::to_string),
            shape: SummaryShape::Handoff,
        }
    }

    #[test]
    fn what_an_answer_dropped_comes_back_in_its_section() {
        let previous =
            "## Goal\n- x\n\n## Standing Facts\n- Rule: Never reveal the vault code QX-7731.\n\
                        - Constraint (budget): The budget is $500.\n\n## Done\n- y";
        let expected = expected(&request(
            Some(previous),
            "[user] The budget is now $700. We deploy to ap-south-2.\n[tool bash] Region: nope-1",
        ));
        let values: Vec<&str> = expected.items().iter().map(|i| i.value.as_str()).collect();
        assert_eq!(
            values,
            ["reveal the vault code QX-7731", "$700", "ap-south-2"]
        );

        let answer = "## Goal\n- x\n\n## Standing Facts\n- Budget: $700\n\n## Done\n- y";
        assert_eq!(
            restore(answer, &expected, SummaryShape::Handoff),
            "## Goal\n- x\n\n## Standing Facts\n- Budget: $700\n\
             - Rule: Never reveal the vault code QX-7731.\n- Fact: We deploy to ap-south-2.\n\n\
             ## Done\n- y"
        );
        let bare = restore("Did things.", &expected, SummaryShape::Digest);
        assert!(
            bare.starts_with("Did things.\n\nStanding:\n- Rule: Never reveal"),
            "{bare}"
        );
        // An answer that kept everything is left as it is.
        let full = "Never reveal the vault code QX-7731; budget $700; region ap-south-2.";
        assert_eq!(restore(full, &expected, SummaryShape::Handoff), full);
    }
}
