//! The handoff: what an agent gets back when the engine answers its compaction, in the shape
//! that agent keeps. A summary text for the agents that take one (the engine's summaries of its
//! view, what reaches the rest, and the line holding the gateway's reference; Claude Code reads
//! it from a `<summary>` block), or, for the provider-owned forms (a trigger, the compact
//! route), one `compaction` item whose `encrypted_content` is the reference.
//! Where an agent keeps it in its compacted history is [`crate::kept`]'s.

use crate::claude_code;
use crate::compaction::Compaction;
use crate::kept::marker_line;

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
    use ctxhost_sdk::Message;

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
        // A text anyone could type in that shape (their own words, a blank line, a pasted
        // marker line) is found only with its text, for the caller to check against the one
        // it handed out; where an agent's own shape places a handoff, no text is asked for.
        let pasted = format!("What does the last line of this mean?\n\n{line}");
        let later_turn = [
            system.clone(),
            Message::user(pasted.clone()),
            Message::assistant("It is a handoff marker."),
            Message::user("And the line before it?"),
        ];
        let rendered = |agent: Agent, history: &[Message]| -> Vec<Option<String>> {
            agent
                .kept_handoffs(history)
                .into_iter()
                .map(|kept| kept.rendered)
                .collect()
        };
        assert_eq!(rendered(Agent::Unknown, &later_turn), [Some(pasted)]);
        assert_eq!(
            rendered(
                Agent::Unknown,
                &[
                    system.clone(),
                    Message::user(format!("\n{text}\n")),
                    Message::user("go on")
                ]
            ),
            [Some(text.clone())]
        );
        let codex_kept = [
            system.clone(),
            Message::user("fix it"),
            Message::user(format!(
                "Another language model started to solve this problem and produced a summary.\n{text}"
            )),
            Message::user("go on"),
        ];
        for agent in [Agent::Unknown, Agent::Codex] {
            assert_eq!(rendered(agent, &codex_kept), [None], "{agent:?}");
        }
        for agent in [Agent::ClaudeCode, Agent::Codex, Agent::Hermes] {
            assert_eq!(rendered(agent, &later_turn), [], "{agent:?}");
        }

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
