//! The turns Hermes' compression call quotes, read back as Hermes writes them
//! (`_serialize_for_summary` in Hermes Agent 0.19.0's `agent/context_compressor.py`): after
//! `TURNS TO SUMMARIZE:` (or `NEW TURNS TO INCORPORATE:` when it updates a summary), turn after
//! turn, separated by a blank line, each `[ROLE]: text` (`[TOOL RESULT call-id]: text` for a
//! tool result), an assistant's tool calls listed after its text, a long text cut to its head
//! and tail; the prompt's own instructions follow them.

use ctxhost_sdk::Message;

/// Where the quoted turns begin (the later heading first: it updates a summary).
const SECTIONS: [&str; 2] = ["NEW TURNS TO INCORPORATE:\n", "TURNS TO SUMMARIZE:\n"];
/// Where they end: the prompt's own sections after them.
const AFTER: [&str; 3] = [
    "\n\nMEMORY PROVIDER CONTEXT:\n",
    "\n\nUse this exact structure:",
    "\n\nUpdate the summary using this exact structure.",
];
/// How Hermes cuts a long text: over `CONTENT_MAX` characters, its head and tail around a mark.
const CONTENT_MAX: usize = 6000;
const CONTENT_HEAD: usize = 4000;
const CONTENT_TAIL: usize = 1500;
const CUT: &str = "\n...[truncated]...\n";
/// What follows an assistant's text when it made tool calls: a line per call,
/// `  name(arguments)`, then `]`.
const CALLS: &str = "\n[Tool calls:\n";

/// One quoted turn: its label (`USER`, `ASSISTANT`, `TOOL RESULT call-id`, ...) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quoted<'a> {
    label: &'a str,
    text: &'a str,
}

impl Quoted<'_> {
    /// Whether this turn is `message` as Hermes quotes it. Before it quotes them, Hermes
    /// reshapes the turns it will summarise (`_prune_old_tool_results`): an old tool result
    /// becomes a one-line summary or a note that it duplicates a later one, and a long tool
    /// call's arguments are shortened inside their JSON. So a tool result is known by its call
    /// id alone (ids are unique per call), an assistant's tool calls by their names, and every
    /// other text is compared whole, cut as Hermes cuts it.
    pub fn is(&self, message: &Message) -> bool {
        if let Some(id) = message.tool_call_id().filter(|_| message.is_tool_result()) {
            return self
                .label
                .strip_prefix("TOOL RESULT ")
                .is_some_and(|quoted| quoted == id);
        }
        if self.label != message.role().to_uppercase() {
            return false;
        }
        let text = cut(&message.content_text(), CONTENT_MAX, CONTENT_HEAD, |text| {
            format!("{CUT}{}", last_chars(text, CONTENT_TAIL))
        });
        if !message.is_assistant() || message.tool_calls().is_empty() {
            return self.text == text;
        }
        let Some((said, calls)) = self.text.split_once(CALLS) else {
            return false;
        };
        said == text && lists_in_order(calls, message)
    }
}

/// Whether `calls` (Hermes' list of an assistant's tool calls) names `message`'s calls in
/// order, each on a line of its own (its arguments, maybe shortened, follow the name).
fn lists_in_order(calls: &str, message: &Message) -> bool {
    let mut rest = calls;
    message.tool_calls().iter().all(|call| {
        let line = format!("  {}(", call.name());
        let found = if rest.starts_with(&line) {
            Some(0)
        } else {
            rest.find(&format!("\n{line}")).map(|at| at + 1)
        };
        found.is_some_and(|at| {
            rest = &rest[at + line.len()..];
            true
        })
    })
}

/// The turns `call` quotes, in order (none when it quotes none in Hermes' form).
pub fn turns(call: &str) -> Vec<Quoted<'_>> {
    let Some(start) = SECTIONS
        .iter()
        .find_map(|heading| call.find(heading).map(|at| at + heading.len()))
    else {
        return Vec::new();
    };
    let section = &call[start..];
    let end = AFTER
        .iter()
        .filter_map(|after| section.find(after))
        .min()
        .unwrap_or(section.len());
    let section = &section[..end];
    // Each turn starts with its label, at the section's start or after a blank line.
    let mut starts: Vec<usize> = Vec::new();
    let mut at = 0;
    while at < section.len() {
        if (at == 0 || section[..at].ends_with("\n\n")) && label_at(&section[at..]).is_some() {
            starts.push(at);
        }
        at = match section[at..].find("\n\n") {
            Some(blank) => at + blank + 2,
            None => section.len(),
        };
    }
    if starts.first() != Some(&0) {
        return Vec::new();
    }
    starts
        .iter()
        .enumerate()
        .filter_map(|(n, &start)| {
            let end = starts.get(n + 1).map_or(section.len(), |next| next - 2);
            let (label, text_start) = label_at(&section[start..])?;
            Some(Quoted {
                label,
                text: &section[start + text_start..end],
            })
        })
        .collect()
}

/// The label opening `text` (`[LABEL]: `), and where the turn's text starts.
fn label_at(text: &str) -> Option<(&str, usize)> {
    let rest = text.strip_prefix('[')?;
    let close = rest.find("]: ")?;
    let label = &rest[..close];
    let role = !label.is_empty() && label.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
    let tool_result = label
        .strip_prefix("TOOL RESULT ")
        .is_some_and(|id| !id.contains('\n'));
    (role || tool_result).then_some((label, 1 + close + 3))
}

/// `text` as Hermes cuts it: whole up to `max` characters, else its first `head` characters
/// and what `tail` makes of the whole.
fn cut(text: &str, max: usize, head: usize, tail: impl Fn(&str) -> String) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(head).collect();
    format!("{head}{}", tail(text))
}

fn last_chars(text: &str, n: usize) -> &str {
    let count = text.chars().count();
    let skip = count.saturating_sub(n);
    let at = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
    &text[at..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_sdk::ToolCall;

    #[test]
    fn turns_are_read_as_hermes_writes_them() {
        let long = "x".repeat(7000);
        let mut call_message = Message::assistant_tool_calls(vec![ToolCall::new(
            "c1",
            "terminal",
            "{\"command\": \"ls\"}",
        )]);
        call_message.set_text("looking");
        let history = [
            Message::user("fix it\n\nplease"),
            call_message,
            Message::tool_result("c1", long.clone()),
        ];
        let quoted = format!(
            "preamble\n\nTURNS TO SUMMARIZE:\n[USER]: fix it\n\nplease\n\n[ASSISTANT]: looking\n[Tool calls:\n  terminal({{\"command\": \"ls\"}})\n]\n\n[TOOL RESULT c1]: {}{CUT}{}\n\nUse this exact structure:\n\n## Active Task",
            &long[..CONTENT_HEAD],
            &long[..CONTENT_TAIL]
        );
        let turns = turns(&quoted);
        assert_eq!(turns.len(), 3, "{turns:?}");
        for (turn, message) in turns.iter().zip(&history) {
            assert!(turn.is(message), "{turn:?} is not {message:?}");
        }
        assert!(!turns[0].is(&history[1]));
        assert!(super::turns("no turns here").is_empty());
    }

    #[test]
    fn turns_hermes_reshaped_before_quoting_them_are_still_the_same_turns() {
        let mut calls = Message::assistant_tool_calls(vec![
            ToolCall::new(
                "c1",
                "write_file",
                format!("{{\"content\": \"{}\"}}", "y".repeat(900)),
            ),
            ToolCall::new("c2", "terminal", "{\"command\": \"ls\"}"),
        ]);
        calls.set_text("writing");
        let history = [
            calls,
            Message::tool_result("c1", "z".repeat(400)),
            Message::tool_result("c2", "a\nb"),
        ];
        // Hermes' pruning: a shortened argument, a result replaced by its summary line.
        let quoted = "TURNS TO SUMMARIZE:\n[ASSISTANT]: writing\n[Tool calls:\n  write_file({\"content\": \"yyy...[truncated]\"})\n  terminal({\"command\": \"ls\"})\n]\n\n[TOOL RESULT c1]: [write_file] wrote 400 chars\n\n[TOOL RESULT c2]: [Duplicate tool output — same content as a more recent call]\n\nUse this exact structure:";
        let turns = turns(quoted);
        assert_eq!(turns.len(), 3, "{turns:?}");
        for (turn, message) in turns.iter().zip(&history) {
            assert!(turn.is(message), "{turn:?} is not {message:?}");
        }
        // Another call id, or the calls in another order, is another turn.
        assert!(!turns[1].is(&history[2]));
        let mut swapped = Message::assistant_tool_calls(vec![
            ToolCall::new("c2", "terminal", "{}"),
            ToolCall::new("c1", "write_file", "{}"),
        ]);
        swapped.set_text("writing");
        assert!(!turns[0].is(&swapped));
    }
}
