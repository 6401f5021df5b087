//! The order in which lcm spends a caller's size (`ctxhost_sdk::budget`): under a tight budget
//! its fresh tail gives way before a standing fact of its summaries does, and the view fits.

mod common;

use common::{engine, offline_host};
use ctxhost_sdk::{CompressOptions, ContextEngine, Message, SessionStart, ToolCall};
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
fn a_tight_budget_drops_the_fresh_tail_before_a_standing_fact() {
    let messages = session(40);
    let before = count_messages(&messages);
    for percent in [20, 10, 5] {
        let host = offline_host(Value::Null, 128_000);
        let mut lcm = engine(&host);
        lcm.on_session_start(&SessionStart {
            session_id: format!("budget-{percent}"),
            ..SessionStart::default()
        })
        .unwrap();
        let target = before * percent / 100;
        let options = CompressOptions {
            force: true,
            target_tokens: Some(target),
            ..CompressOptions::default()
        };
        let out = lcm.compress(&messages, &options).unwrap();
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
            "{percent}%: {} > {target}:\n{text}",
            count_messages(&out)
        );
    }
}

const JOBS: [&str; 12] = [
    "billing",
    "search",
    "upload",
    "export",
    "import",
    "login",
    "payment",
    "report",
    "archive",
    "mailer",
    "indexer",
    "scheduler",
];

/// Twelve limits stated early, work, then one of them changed near the end, and a last ask.
fn limits_then_a_change(fillers: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Keep the ingestion pipeline healthy this week."),
        Message::assistant("On it."),
    ];
    for (i, job) in JOBS.iter().enumerate() {
        messages.push(Message::user(format!(
            "CONSTRAINT: the {job} job may use at most {} MiB of memory.",
            1000 + i * 37
        )));
        messages.push(Message::assistant("Noted."));
    }
    for i in 0..fillers {
        messages.push(Message::user(format!("Carry on with batch {i}.")));
        messages.push(Message::assistant(
            "Batch processed; nothing new to report, continuing as planned.",
        ));
    }
    messages.push(Message::user(
        "CONSTRAINT: the scheduler job may now use at most 4321 MiB of memory.",
    ));
    messages.push(Message::assistant("Noted."));
    for i in 0..4 {
        messages.push(Message::user(format!("Carry on with batch {}.", 100 + i)));
        messages.push(Message::assistant("Batch processed."));
    }
    messages.push(Message::user("Now report the memory limits."));
    messages
}

/// When the standing facts alone are over the room, the summary gives up the oldest, not the
/// newest: a limit's new value stays and is the one shown, however the summarizer's own size
/// cut would have fallen.
#[test]
fn facts_over_the_room_give_up_the_oldest_and_keep_a_new_value() {
    let messages = limits_then_a_change(30);
    let host = offline_host(Value::Null, 128_000);
    let mut lcm = engine(&host);
    lcm.on_session_start(&SessionStart {
        session_id: "facts-over-the-room".into(),
        ..SessionStart::default()
    })
    .unwrap();
    // Room for about half of the limits beside the newest turn.
    let target = 260;
    let options = CompressOptions {
        force: true,
        target_tokens: Some(target),
        ..CompressOptions::default()
    };
    let out = lcm.compress(&messages, &options).unwrap();
    ctxhost_sdk_test::contract::check_output(&messages, &out).unwrap();
    let text: String = out
        .iter()
        .map(|m| m.content_text().into_owned())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(count_messages(&out) <= target, "{text}");
    assert!(text.contains("4321"), "the new value is gone:\n{text}");
    assert!(
        !text.contains("billing job"),
        "the oldest limit stayed while the room was short:\n{text}"
    );
    assert!(text.contains("indexer job"), "{text}");
}
