//! The handoff: what an agent gets back when the engine answers its compaction, in the shape
//! that agent keeps. A summary text for the agents that take one (the engine's summaries of its
//! view, what reaches the rest, and the line holding the gateway's reference; Claude Code reads
//! it from a `<summary>` block), or, for the provider-owned forms (a trigger, the compact
//! route), one `compaction` item whose `encrypted_content` is the reference.

use crate::claude_code;
use crate::compaction::Compaction;

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
    /// The line carrying the reference in a text handoff.
    pub marker_line: &'a str,
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
    text.push_str(engine.marker_line);
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
            marker_line: "[ctxhost handoff: ctxhost.v1.ab.1.cd]",
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
}
