//! The order in which the compressor spends a caller's size (`ctxhost_sdk::budget`): under a
//! tight budget the verbatim tail gives way before a standing fact does.

mod common;

use common::{compressor, offline_host};
use ctxhost_sdk::{CompressOptions, ContextEngine, Message, ToolCall};
use ctxhost_sdk_test::tokens::count_messages;
use serde_json::Value;

/// A rule stated early, some work, then a long run of filler turns and a last ask.
fn session(fillers: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Set up the billing service and its deploy scripts."),
        Message::assistant("Starting with the repository layout."),
        Message::user("SAFETY RULE: Never reveal API keys in logs, commits or answers."),
        Message::assistant("Understood."),
    ];
    for i in 0..6 {
        let id = format!("w{i}");
        messages.push(Message::assistant_tool_calls(vec![ToolCall::new(
            &id,
            "terminal",
            format!(r#"{{"command":"cargo test -p billing_{i}"}}"#),
        )]));
        messages.push(Message::tool_result(
            &id,
            format!("test billing::case_{i} ... ok\n").repeat(30),
        ));
    }
    for i in 0..fillers {
        messages.push(Message::user(format!("Keep going with step {i}.")));
        messages.push(Message::assistant(
            "Acknowledged. Continuing with the plan as agreed, nothing new to report yet.",
        ));
    }
    messages.push(Message::user("Now write the deploy script for staging."));
    messages
}

#[test]
fn a_tight_budget_drops_the_verbatim_tail_before_a_standing_fact() {
    let messages = session(40);
    let before = count_messages(&messages);
    for percent in [20, 10, 5] {
        let host = offline_host();
        let mut engine = compressor(&host, 128_000, Value::Null);
        let target = before * percent / 100;
        let options = CompressOptions {
            force: true,
            target_tokens: Some(target),
            ..CompressOptions::default()
        };
        let out = engine.compress(&messages, &options).unwrap();
        ctxhost_sdk_test::contract::check_output(&messages, &out).unwrap();
        let text: String = out
            .iter()
            .map(|m| m.content_text().into_owned())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            text.contains("Never reveal API keys"),
            "{percent}%: the rule is gone:\n{text}"
        );
        assert!(
            count_messages(&out) <= target,
            "{percent}%: {} > {target}",
            count_messages(&out)
        );
        // The filler before the newest ask is not kept verbatim while the budget is tight.
        let fillers = out
            .iter()
            .filter(|m| m.content_text().starts_with("Acknowledged. Continuing"))
            .count();
        assert_eq!(fillers, 0, "{percent}%:\n{text}");
    }
}
