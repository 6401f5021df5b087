//! The handoff: what an agent gets back when the engine answers its compaction, in the shape
//! that agent keeps. A summary text for the agents that take one (the engine's summaries of its
//! view, what reaches the rest, and the line holding the gateway's reference; Claude Code reads
//! it from a `<summary>` block), or, for the provider-owned forms (a trigger, the compact
//! route), one `compaction` item whose `encrypted_content` is the reference.
//!
//! And where a text handoff is found again ([`Agent::kept_handoffs`](crate::Agent)): only in
//! the shape and place the agent keeps it in its compacted history, never a marker line quoted
//! inside someone's words ([`generic`] for a client no profile tells).

use ctxhost_sdk::{Content, Message};

use crate::claude_code;
use crate::compaction::{block_text, parts, Compaction};

/// What the answer carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handoff {
    /// A summary for the agent to keep as its history.
    Text(String),
    /// A `compaction` item whose `encrypted_content` is this reference.
    Item(String),
}

/// What the engine's view offers a handoff.
pub struct FromEngine<'a> {
    /// What the engine wrote into the view (its summaries).
    pub summaries: &'a [String],
    /// The engine's tools, by name.
    pub tools: &'a [&'a str],
    /// The gateway's signed reference to the view.
    pub reference: &'a str,
}

/// How a handoff text carries its reference: the last line of the gateway's text.
const MARKER: &str = "[ctxhost handoff: ";

/// The line a handoff text ends with.
pub fn marker_line(reference: &str) -> String {
    format!("{MARKER}{reference}]")
}

/// The reference a line holds when the line is a marker line, whole.
fn marker_in(line: &str) -> Option<&str> {
    let reference = line.trim().strip_prefix(MARKER)?.strip_suffix(']')?;
    let token =
        !reference.is_empty() && !reference.contains(|c: char| c.is_whitespace() || c == ']');
    token.then_some(reference)
}

/// A text handoff of the gateway's, where a history keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The message holding it.
    pub message: usize,
    /// The content block holding it, when the message has blocks.
    pub block: Option<usize>,
    /// The reference its marker line holds (verified by the caller).
    pub reference: String,
}

/// The reference of a handoff `text` keeps as its last marker line, when what follows that
/// line is the agent's own `trailer` (checked on the rest of the text, trimmed).
pub(crate) fn ends_with_marker(text: &str, trailer: impl Fn(&str) -> bool) -> Option<String> {
    let mut end = text.len();
    loop {
        let start = text[..end].rfind('\n').map_or(0, |newline| newline + 1);
        if let Some(reference) = marker_in(&text[start..end]) {
            return trailer(text[end..].trim()).then(|| reference.to_string());
        }
        if start == 0 {
            return None;
        }
        end = start - 1;
    }
}

/// The texts a handoff may be kept as in `message`: its whole text, or each text block.
pub(crate) fn texts(message: &Message) -> Vec<(Option<usize>, String)> {
    match message.content() {
        Content::Text(text) => vec![(None, text.to_string())],
        Content::Json(_) => parts(message)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter_map(|(index, block)| block_text(block).map(|t| (Some(index), t.to_string())))
            .collect(),
        Content::Absent | Content::Null => Vec::new(),
    }
}

/// Whether only the system prompt and the agent's own (user) messages stand before
/// `index`: where a compacted history starts over, with no answer of the model's before it.
pub(crate) fn at_the_head(history: &[Message], index: usize) -> bool {
    history[..index]
        .iter()
        .all(|m| m.is_system() || (m.is_user() && m.tool_calls().is_empty()))
}

/// The handoffs `history` keeps in `shape`: each message's texts with the handoff, where
/// `place` allows one (by the message's index).
pub(crate) fn kept_in(
    history: &[Message],
    place: impl Fn(usize) -> bool,
    shape: impl Fn(&str) -> Option<String>,
) -> Vec<Kept> {
    let mut kept = Vec::new();
    for (index, message) in history.iter().enumerate() {
        if message.is_tool_result() || message.is_system() || !place(index) {
            continue;
        }
        for (block, text) in texts(message) {
            if !text.contains(MARKER) {
                continue;
            }
            if let Some(reference) = shape(&text) {
                kept.push(Kept {
                    message: index,
                    block,
                    reference,
                });
            }
        }
    }
    kept
}

/// A client no profile tells: the handoff text exactly as the gateway rendered it, a whole
/// message or a whole text block (its marker line last, after a blank line, or Claude Code's
/// `<summary>` block whole), at the head of the history where a compacted history puts it,
/// with the client's next words after it.
pub mod generic {
    use ctxhost_sdk::Message;

    use super::{at_the_head, ends_with_marker, kept_in, texts, Kept};

    pub(crate) fn kept(history: &[Message]) -> Vec<Kept> {
        // The client's next words come after it: a later message, or a later block.
        let followed = |index: usize, block: Option<usize>| {
            index + 1 < history.len()
                || block.is_some_and(|block| {
                    texts(&history[index])
                        .iter()
                        .any(|(other, _)| other.is_some_and(|other| other > block))
                })
        };
        kept_in(history, |index| at_the_head(history, index), rendered)
            .into_iter()
            .filter(|kept| followed(kept.message, kept.block))
            .collect()
    }

    /// The reference of a text that is a whole handoff as rendered: its marker line last
    /// after a blank line (inside Claude Code's `<summary>` block, when it is one).
    fn rendered(text: &str) -> Option<String> {
        let text = text.trim();
        let text = match text.strip_prefix("<summary>") {
            Some(inner) => inner.strip_suffix("</summary>")?.trim_end(),
            None => text,
        };
        let reference = ends_with_marker(text, str::is_empty)?;
        let (body, _) = text.rsplit_once('\n')?;
        body.ends_with('\n').then_some(reference)
    }
}

/// The handoff answering the agent's `kind` of compaction.
pub fn handoff(kind: Compaction, engine: &FromEngine<'_>) -> Handoff {
    if !kind.wants_text() {
        return Handoff::Item(engine.reference.to_string());
    }
    let mut text = if engine.summaries.is_empty() {
        "The context engine (ctxhost) holds this session's whole history; nothing needed summarising yet.".to_string()
    } else {
        engine.summaries.join("\n\n")
    };
    if !engine.tools.is_empty() {
        text.push_str(&format!(
            "\n\nThe context engine's tools ({}) reach everything this summary leaves out.",
            engine.tools.join(", ")
        ));
    }
    text.push_str("\n\n");
    text.push_str(&marker_line(engine.reference));
    Handoff::Text(match kind {
        Compaction::ClaudeSummary => claude_code::handoff(&text),
        _ => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine<'a>(summaries: &'a [String], tools: &'a [&'a str]) -> FromEngine<'a> {
        FromEngine {
            summaries,
            tools,
            reference: "ctxhost.v1.ab.1.cd",
        }
    }

    #[test]
    fn each_agent_gets_the_handoff_it_keeps() {
        let summaries = ["The build was fixed.".to_string()];
        let Handoff::Text(claude) = handoff(
            Compaction::ClaudeSummary,
            &engine(&summaries, &["lcm_grep"]),
        ) else {
            panic!("Claude Code takes a text");
        };
        assert!(
            claude.starts_with("<summary>\nThe build was fixed."),
            "{claude}"
        );
        assert!(claude.contains("(lcm_grep)"), "{claude}");
        assert!(
            claude.ends_with("[ctxhost handoff: ctxhost.v1.ab.1.cd]\n</summary>"),
            "{claude}"
        );
        let Handoff::Text(codex) = handoff(Compaction::CodexHandoff, &engine(&[], &[])) else {
            panic!("Codex's local compaction takes a text");
        };
        assert!(
            codex.starts_with("The context engine (ctxhost) holds"),
            "{codex}"
        );
        assert!(!codex.contains("<summary>"));
        assert_eq!(
            handoff(Compaction::CompactionTrigger, &engine(&summaries, &[])),
            Handoff::Item("ctxhost.v1.ab.1.cd".into())
        );
    }

    fn kept(agent: crate::Agent, history: &[Message]) -> Vec<(usize, Option<usize>)> {
        agent
            .kept_handoffs(history)
            .into_iter()
            .map(|kept| {
                assert_eq!(kept.reference, "ctxhost.v1.ab.1.cd");
                (kept.message, kept.block)
            })
            .collect()
    }

    #[test]
    fn a_handoff_is_found_where_the_agent_keeps_it_and_nowhere_else() {
        use crate::Agent;
        let Handoff::Text(text) = handoff(Compaction::CodexHandoff, &engine(&[], &["lcm_grep"]))
        else {
            panic!("a text");
        };
        let line = marker_line("ctxhost.v1.ab.1.cd");
        let system = Message::system("s");
        // Codex: its summary prefix, after the user messages it retains.
        let codex = format!(
            "Another language model started to solve this problem and produced a summary.\n{text}"
        );
        let history = [
            system.clone(),
            Message::user("fix it"),
            Message::user(codex.clone()),
            Message::user("go on"),
        ];
        assert_eq!(kept(Agent::Codex, &history), [(2, None)]);
        assert_eq!(kept(Agent::Unknown, &history), [(2, None)]);
        assert_eq!(kept(Agent::ClaudeCode, &history), []);
        // Not after an answer of the model's.
        let late = [
            system.clone(),
            Message::user("a"),
            Message::assistant("b"),
            Message::user(codex),
        ];
        assert_eq!(kept(Agent::Codex, &late), []);
        // Claude Code: its continuation preamble, its own lines after the summary.
        let claude = format!("This session is being continued from a previous conversation that ran out of context. The summary below covers it.\n\nSummary:\n{text}\n\nContinue the conversation from where it left off.");
        let mut merged = Message::user("");
        merged.set_content_json(&serde_json::json!([
            {"type": "text", "text": "<system-reminder>context</system-reminder>"},
            {"type": "text", "text": claude},
            {"type": "text", "text": "next words"},
        ]));
        assert_eq!(
            kept(Agent::ClaudeCode, &[system.clone(), merged]),
            [(1, Some(1))]
        );
        // Hermes: its prefix, its end marker, wherever its protected head ends.
        let hermes = format!("[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted.\n{text}\n\n--- END OF CONTEXT SUMMARY — respond to the message below ---");
        let history = [
            system.clone(),
            Message::user("a"),
            Message::assistant("b"),
            Message::user(hermes),
            Message::user("c"),
        ];
        assert_eq!(kept(Agent::Unknown, &history), [(3, None)]);
        // Any client: the handoff as rendered, whole, with its next words after it.
        let history = [
            system.clone(),
            Message::user(text.clone()),
            Message::user("go on"),
        ];
        assert_eq!(kept(Agent::Unknown, &history), [(1, None)]);
        assert_eq!(
            kept(Agent::Unknown, &history[..2]),
            [],
            "nothing follows it"
        );
        // A marker line quoted amid someone's words is no handoff, for any agent.
        for pasted in [
            format!("I found this in a log:\n{line}\nWhat is it?"),
            format!("What does this mean?\n{line}"),
            format!("{line} is what it said"),
        ] {
            let history = [
                system.clone(),
                Message::user(pasted.clone()),
                Message::user("well?"),
            ];
            for agent in [
                Agent::Unknown,
                Agent::ClaudeCode,
                Agent::Codex,
                Agent::Hermes,
            ] {
                assert_eq!(kept(agent, &history), [], "{agent:?}: {pasted}");
            }
        }
    }
}
