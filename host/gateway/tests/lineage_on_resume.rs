//! The lineage rules against what the real agents sent, recorded before and after they resumed
//! a session (`fixtures/resume/<agent>/`: the history fields of a request's body, machine paths
//! replaced by neutral ones and each echoed command's output cut to its first rows): Claude
//! Code 2.1.197 (`claude -p`, then `claude -p --continue`), Codex CLI 0.169.0 (`codex exec`,
//! then `codex exec resume --last`), Hermes Agent 0.19.0 (`hermes chat -q`, then `hermes chat
//! --continue -q`). `before` is the last request of the first run, `after` the first one of the
//! resumed run; Claude Code's `next` is the resumed run's second request.

use std::path::Path;

use ctxhost_gateway_state::conversation::{Continuity, Conversation, Departure};
use ctxhost_sdk::Message;
use serde_json::Value;

fn fixture(agent: &str, name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/resume")
        .join(agent)
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// A recorded body's history as the gateway takes it in on the agent's wire.
fn history(agent: &str, body: &Value) -> Vec<Message> {
    match agent {
        "claude_code" => ctxhost_wire::anthropic::to_messages(
            Some(body["system"].clone()),
            body["messages"].as_array().unwrap().clone(),
        )
        .unwrap(),
        "codex" => {
            ctxhost_wire::responses::to_messages(Some(&body["instructions"]), &body["input"])
                .unwrap()
        }
        _ => body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| Message::from_value(m.clone()).unwrap())
            .collect(),
    }
}

fn recorded(agent: &str, name: &str) -> Vec<Message> {
    history(agent, &fixture(agent, name))
}

/// The resumed run's first request extends the lineage of the first run's last one, with no
/// view and with one (what goes upstream is then the view and what came after it).
fn resumed_history_extends_the_lineage(agent: &str) {
    let before = recorded(agent, "before");
    let after = recorded(agent, "after");
    assert!(
        after.len() > before.len(),
        "{agent}: the resumed run adds a prompt"
    );
    let mut conversation = Conversation::default();
    assert_eq!(conversation.advance(&before, None).0, Continuity::First);
    assert_eq!(conversation.departure(&after), None, "{agent}");
    let (continuity, upstream) = conversation.advance(&after, None);
    assert_eq!(continuity, Continuity::Extends, "{agent}");
    assert_eq!(upstream, after);

    let mut conversation = Conversation::default();
    conversation.advance(&before, None);
    let view = vec![before[0].clone(), Message::user("summary of the first run")];
    conversation.compressed(view.clone());
    let (continuity, upstream) = conversation.advance(&after, None);
    assert_eq!(continuity, Continuity::Extends, "{agent}");
    assert_eq!(upstream[..2], view[..], "{agent}");
    assert_eq!(upstream[2..], after[before.len()..], "{agent}");
}

#[test]
fn claude_code_resumed_extends_its_lineage() {
    // What it changed on resume: the cache breakpoint on the earlier tool result is gone.
    let (before, after) = (
        fixture("claude_code", "before"),
        fixture("claude_code", "after"),
    );
    assert_eq!(
        before["messages"][2]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert!(after["messages"][2]["content"][0]
        .get("cache_control")
        .is_none());
    resumed_history_extends_the_lineage("claude_code");
}

#[test]
fn claude_code_sends_its_last_prompt_as_a_block_then_as_text() {
    let (after, next) = (
        fixture("claude_code", "after"),
        fixture("claude_code", "next"),
    );
    let prompt = &after["messages"][4]["content"];
    assert!(prompt[0]["cache_control"].is_object(), "{prompt}");
    assert_eq!(next["messages"][4]["content"], prompt[0]["text"]);
    let mut conversation = Conversation::default();
    conversation.advance(&recorded("claude_code", "after"), None);
    let (continuity, _) = conversation.advance(&recorded("claude_code", "next"), None);
    assert_eq!(continuity, Continuity::Extends);
}

#[test]
fn codex_resumed_extends_its_lineage() {
    // Codex resends its history as it was (its items' ids included).
    let (before, after) = (fixture("codex", "before"), fixture("codex", "after"));
    let input = before["input"].as_array().unwrap();
    assert_eq!(after["input"].as_array().unwrap()[..input.len()], input[..]);
    resumed_history_extends_the_lineage("codex");
}

#[test]
fn hermes_resumed_extends_its_lineage() {
    // What it changed on resume: its tool message lost its `name`.
    let (before, after) = (fixture("hermes", "before"), fixture("hermes", "after"));
    assert_eq!(before["messages"][3]["role"], "tool");
    assert_eq!(before["messages"][3]["name"], "terminal");
    assert!(after["messages"][3].get("name").is_none());
    resumed_history_extends_the_lineage("hermes");
}

#[test]
fn a_truly_divergent_history_starts_a_new_lineage_and_says_where() {
    for agent in ["claude_code", "codex", "hermes"] {
        let before = recorded(agent, "before");
        let mut after = recorded(agent, "after");
        // The tool's output rewritten: no agent does that on resume.
        let index = after
            .iter()
            .position(Message::is_tool_result)
            .unwrap_or_else(|| panic!("{agent}: a tool result"));
        let mut edited = after[index].to_value();
        edited["content"] = Value::from("another output");
        after[index] = Message::from_value(edited).unwrap();
        let mut conversation = Conversation::default();
        conversation.advance(&before, None);
        conversation.compressed(vec![Message::user("summary")]);
        assert_eq!(
            conversation.departure(&after),
            Some(Departure {
                at: index,
                role: Some("tool".into()),
                lineage: before.len(),
            }),
            "{agent}"
        );
        let (continuity, upstream) = conversation.advance(&after, None);
        assert_eq!(continuity, Continuity::Diverged, "{agent}");
        assert_eq!(upstream, after, "{agent}: the view is not used");
    }
}

#[test]
fn resuming_an_older_point_continues_from_there() {
    for agent in ["claude_code", "codex", "hermes"] {
        let before = recorded(agent, "before");
        let after = recorded(agent, "after");
        // The session went on to `after`; the user resumed the first run's end with another
        // prompt.
        let mut conversation = Conversation::default();
        conversation.advance(&before, None);
        let view = vec![before[0].clone(), Message::user("summary")];
        conversation.compressed(view.clone());
        conversation.advance(&after, None);
        let mut older = before.clone();
        older.push(Message::user("Another prompt from the first run's end."));
        let (continuity, upstream) = conversation.advance(&older, None);
        assert_eq!(continuity, Continuity::Rewound, "{agent}");
        assert_eq!(upstream[..2], view[..], "{agent}: the view still stands");
        assert_eq!(upstream[2..], older[before.len()..], "{agent}");
        // The lineage goes on from there.
        let mut next = older.clone();
        next.push(Message::assistant("ok"));
        assert_eq!(conversation.advance(&next, None).0, Continuity::Extends);
    }
}
