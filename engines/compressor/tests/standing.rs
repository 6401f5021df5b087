//! Standing facts planted in a session survive five rounds of compression on the offline
//! summary, and a superseded value is replaced.

mod common;

use common::{compressor, offline_host};
use ctxhost_compressor::SUMMARY_PREFIX;
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, Message, ToolCall};
use serde_json::json;

/// `turns` exchanges of busy work for round `round`: a call, its sizeable output, a remark.
fn work(round: usize, turns: usize) -> Vec<Message> {
    let mut messages = Vec::new();
    for i in 0..turns {
        let id = format!("r{round}c{i}");
        messages.push(Message::assistant_tool_calls(vec![ToolCall::new(
            &id,
            "terminal",
            format!(r#"{{"command":"cargo test -p mod_{round}_{i}"}}"#),
        )]));
        messages.push(Message::tool_result(
            &id,
            format!("test parse::case_{i} ... ok\n").repeat(40),
        ));
        messages.push(Message::assistant(format!(
            "Module {round}.{i} passes; moving on."
        )));
    }
    messages
}

/// The values planted, each in a user turn of some round, and the budget raised in round 3.
const PLANTED: [(usize, &str, &str); 6] = [
    (0, "Never reveal the vault code QX-7731.", "QX-7731"),
    (0, "The budget is $4,817.", "$4,817"),
    (1, "We deploy to ap-south-2.", "ap-south-2"),
    (1, "The deadline is 2026-03-14.", "2026-03-14"),
    (
        2,
        "The user prefers tabs for indentation.",
        "tabs for indentation",
    ),
    (
        2,
        "The goal is to migrate the ledger to Quarry v3.",
        "Quarry v3",
    ),
];

fn summary_text(messages: &[Message]) -> String {
    let summaries: Vec<String> = messages
        .iter()
        .map(Message::content_text)
        .filter(|text| text.starts_with(SUMMARY_PREFIX))
        .map(|text| text.to_string())
        .collect();
    assert_eq!(summaries.len(), 1, "one summary");
    summaries.into_iter().next().unwrap()
}

#[test]
fn planted_facts_survive_five_rounds_and_a_superseded_value_is_replaced() {
    let host = offline_host();
    // A small window: each summary gets a tight budget (5% of it).
    let mut engine = compressor(&host, 8_000, json!({"protect_last_n": 6}));
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Work through the ledger modules."),
        Message::assistant("Starting."),
    ];
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    for round in 0..5 {
        for (_, sentence, _) in PLANTED.iter().filter(|(r, _, _)| *r == round) {
            messages.push(Message::user(format!("Noted for later: {sentence}")));
            messages.push(Message::assistant("Understood."));
        }
        if round == 3 {
            messages.push(Message::user("Update: the budget is now $6,120."));
            messages.push(Message::assistant("Understood."));
        }
        messages.extend(work(round, 10));
        messages.push(Message::user(format!("Round {round} done, carry on.")));
        messages = engine.compress(&messages, &force).unwrap();
        sequence::validate(&messages).unwrap();
        let summary = summary_text(&messages);
        // The summary met the budget it was asked for.
        let asked = host
            .requests()
            .last()
            .expect("a summary request")
            .max_tokens;
        let written = summary
            .split_once("\n\n")
            .map_or(summary.as_str(), |(_, body)| body);
        assert!(
            ctxhost_offline_summary::budget::estimate_tokens(written) <= asked + 16,
            "round {round}: over {asked} tokens"
        );
        for (_, _, value) in PLANTED.iter().filter(|(r, _, _)| *r <= round) {
            if *value != "$4,817" || round < 3 {
                assert!(
                    summary.contains(value),
                    "round {round}: {value} lost\n{summary}"
                );
            }
        }
    }
    assert_eq!(host.summarize_calls(), 5);
    let summary = summary_text(&messages);
    assert!(summary.contains("the budget is now $6,120"), "{summary}");
    // The old budget is not shown as current anywhere.
    for (at, _) in summary.match_indices("$4,817") {
        assert!(
            summary[at..].starts_with("$4,817 (superseded by $6,120)"),
            "{summary}"
        );
    }
    // The facts are in the summary, not only in the verbatim tail.
    let tail: String = messages
        .iter()
        .filter(|m| !m.content_text().starts_with(SUMMARY_PREFIX))
        .map(|m| m.content_text().to_string())
        .collect();
    assert!(!tail.contains("QX-7731"));
}

/// A compressor of a later life of the session (another process, a restarted gateway) folds
/// the summary an earlier one wrote once the host says it is its own: every planted fact
/// stays. Not told, it reads that summary as a turn, as it must any text framed like one.
#[test]
fn a_summary_from_an_earlier_life_is_folded_once_the_host_says_it_is_the_engines_own() {
    let host = offline_host();
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Work through the ledger modules."),
        Message::assistant("Starting."),
    ];
    for (_, sentence, _) in PLANTED.iter().filter(|(round, _, _)| *round < 2) {
        messages.push(Message::user(format!("Noted for later: {sentence}")));
        messages.push(Message::assistant("Understood."));
    }
    messages.extend(work(0, 10));
    messages.push(Message::user("Round 0 done, carry on."));
    let first = compressor(&host, 8_000, json!({"protect_last_n": 6}))
        .compress(&messages, &force)
        .unwrap();
    let earlier: Vec<Message> = first
        .iter()
        .filter(|m| m.content_text().starts_with(SUMMARY_PREFIX))
        .cloned()
        .collect();
    assert_eq!(earlier.len(), 1, "one summary");
    let mut next = first.clone();
    next.extend(work(1, 10));
    next.push(Message::user("Round 1 done, carry on."));

    let mut told = compressor(&host, 8_000, json!({"protect_last_n": 6}));
    told.recognize_written(&earlier).unwrap();
    let folded = summary_text(&told.compress(&next, &force).unwrap());
    for (_, _, value) in PLANTED.iter().filter(|(round, _, _)| *round < 2) {
        assert!(folded.contains(value), "{value} lost\n{folded}");
    }
    // Folded, its sections are the new summary's own: no section of it is quoted as a turn.
    assert_eq!(folded.matches("## Standing Facts").count(), 1, "{folded}");

    // Not told: the earlier summary is a turn like any other message framed as one.
    let untold = summary_text(
        &compressor(&host, 8_000, json!({"protect_last_n": 6}))
            .compress(&next, &force)
            .unwrap(),
    );
    assert_ne!(untold, folded);
}
