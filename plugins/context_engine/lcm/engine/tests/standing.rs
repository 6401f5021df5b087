//! Standing facts in lcm: planted rules, constraints, facts, goals and preferences stay in the
//! view through five rounds of compaction at a tight budget on the offline summary, a
//! superseded value is replaced, and the retrieval tools find a fact by its subject or value,
//! saying which value is current.

#[path = "common/mod.rs"]
mod common;

use common::*;
use ctxhost_engine_lcm::LcmEngine;
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, Message, ToolCall};
use ctxhost_sdk_test::{Answer, FakeHost};
use serde_json::{json, Value};

/// The values planted, each in a user turn of some round.
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

/// `turns` tool exchanges of busy work for `round`.
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
            format!("test parse::case_{i} ... ok\n").repeat(12),
        ));
        messages.push(Message::assistant(format!("Module {round}.{i} passes.")));
    }
    messages
}

fn text_of(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| m.content_text().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Five rounds of planting and compacting; the view after each.
fn five_rounds(engine: &mut LcmEngine) -> Vec<Vec<Message>> {
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    let mut view = vec![
        Message::system("You are a coding agent."),
        Message::user("Work through the ledger modules."),
    ];
    let mut views = Vec::new();
    for round in 0..5 {
        for (_, sentence, _) in PLANTED.iter().filter(|(r, _, _)| *r == round) {
            view.push(Message::user(format!("Noted for later: {sentence}")));
            view.push(Message::assistant("Understood."));
        }
        if round == 3 {
            view.push(Message::user("Update: the budget is now $6,120."));
            view.push(Message::assistant("Understood."));
        }
        view.extend(work(round, 12));
        view.push(Message::user(format!("Round {round} done, carry on.")));
        view = engine.compress(&view, &force).unwrap();
        sequence::validate(&view).unwrap();
        views.push(view.clone());
    }
    views
}

#[test]
fn planted_facts_stay_in_the_view_through_five_rounds_at_a_tight_budget() {
    let host = offline_host(small_config(), SMALL_WINDOW);
    let mut engine = engine(&host);
    let views = five_rounds(&mut engine);
    for (round, view) in views.iter().enumerate() {
        let blocks: Vec<&Message> = view.iter().filter(|m| block_id(m).is_some()).collect();
        assert!(!blocks.is_empty(), "round {round}: compacted");
        let text = text_of(view);
        for (_, _, value) in PLANTED.iter().filter(|(r, _, _)| *r <= round) {
            // From round 3 the budget's value is the new one: the old need not be shown.
            let value = if *value == "$4,817" && round >= 3 {
                "$6,120"
            } else {
                value
            };
            assert!(text.contains(value), "round {round}: {value} lost\n{text}");
        }
        assert!(
            tokens(view) <= SMALL_WINDOW,
            "round {round}: {} tokens",
            tokens(view)
        );
    }
    let last = text_of(views.last().unwrap());
    // The facts are in the summaries, not only in the verbatim tail.
    let summaries: String = views
        .last()
        .unwrap()
        .iter()
        .filter(|m| block_id(m).is_some())
        .map(|m| m.content_text().to_string())
        .collect();
    for (_, _, value) in PLANTED {
        if value != "$4,817" {
            assert!(
                summaries.contains(value),
                "{value} not in a summary\n{last}"
            );
        }
    }
    assert!(summaries.contains("$6,120"), "{last}");
    // No block shows the old budget as current.
    for (at, _) in summaries.match_indices("$4,817") {
        assert!(
            summaries[at..].starts_with("$4,817 (superseded by $6,120)"),
            "{summaries}"
        );
    }
}

#[test]
fn grep_finds_a_fact_by_subject_or_value_and_says_which_value_is_current() {
    let host = offline_host(small_config(), SMALL_WINDOW);
    let mut engine = engine(&host);
    five_rounds(&mut engine);

    let found = tool(&mut engine, "lcm_grep", json!({"pattern": "budget"}));
    let standing = found["standing"].as_array().expect("standing facts");
    let budget: Vec<&Value> = standing
        .iter()
        .filter(|s| s["subject"] == "budget")
        .collect();
    assert_eq!(budget.len(), 1, "{found}");
    assert_eq!(budget[0]["kind"], "Constraint");
    assert_eq!(budget[0]["current"], "$6,120");
    let values: Vec<(&str, bool)> = budget[0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["value"].as_str().unwrap(),
                v["current"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(values, [("$4,817", false), ("$6,120", true)], "{found}");
    let old = &budget[0]["values"][0];
    assert!(old["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(old["text"], "Noted for later: The budget is $4,817.");

    // By the value: the region and the rule.
    let found = tool(&mut engine, "lcm_grep", json!({"pattern": "ap-south-2"}));
    assert_eq!(found["standing"][0]["subject"], "deploy to", "{found}");
    assert_eq!(found["standing"][0]["current"], "ap-south-2");
    let found = tool(&mut engine, "lcm_grep", json!({"pattern": "vault code"}));
    assert_eq!(found["standing"][0]["kind"], "Rule", "{found}");
    assert_eq!(
        found["standing"][0]["current"],
        "reveal the vault code QX-7731"
    );
    // A search that touches no standing fact says nothing of them.
    let found = tool(&mut engine, "lcm_grep", json!({"pattern": "mod_3_4"}));
    assert!(found.get("standing").is_none(), "{found}");
}

#[test]
fn describe_lists_a_summarys_standing_facts() {
    let host = offline_host(small_config(), SMALL_WINDOW);
    let mut engine = engine(&host);
    let views = five_rounds(&mut engine);
    let id = views
        .last()
        .unwrap()
        .iter()
        .find_map(block_id)
        .expect("a block");
    let described = tool(&mut engine, "lcm_describe", json!({"id": id}));
    let standing = described["standing"].as_array().expect("standing facts");
    let budget = standing
        .iter()
        .find(|s| s["subject"] == "budget")
        .expect("the budget");
    assert_eq!(budget["kind"], "Constraint");
    assert_eq!(budget["value"], "$6,120", "{described}");
}

#[test]
fn truncation_keeps_the_standing_facts_when_no_summary_can_be_written() {
    let host = FakeHost::builder("lcm")
        .config(with_store(small_config(), None))
        .context_length(SMALL_WINDOW)
        .default_answer(Answer::error(
            ctxhost_sdk::ErrorKind::Unavailable,
            "HTTP 500 from the summarizer",
        ))
        .build();
    let mut engine = engine(&host);
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Noted for later: Never reveal the vault code QX-7731."),
        Message::assistant("Understood."),
    ];
    messages.extend(work(0, 12));
    messages.push(Message::user("carry on"));
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    let view = engine.compress(&messages, &force).unwrap();
    let block = view
        .iter()
        .find(|m| block_id(m).is_some())
        .expect("compacted");
    let text = block.content_text();
    assert!(text.contains("[truncated extract"), "{text}");
    assert!(
        text.contains("Standing:\n- Rule: Noted for later: Never reveal the vault code QX-7731."),
        "{text}"
    );
}

/// Rules of distinct subjects, each with a value nobody could guess.
const RULES: [(&str, &str); 14] = [
    ("vault code", "QX-7731"),
    ("deploy key", "KD-4410"),
    ("release tag", "RT-9052"),
    ("audit log", "AL-3318"),
    ("backup bucket", "BB-6604"),
    ("staging host", "SH-2271"),
    ("protected branch", "PB-8843"),
    ("billing account", "BA-1196"),
    ("smoke suite", "SS-5527"),
    ("signing key", "SK-3390"),
    ("support queue", "SQ-7765"),
    ("build cache", "BC-2048"),
    ("metrics bucket", "MB-9912"),
    ("mirror host", "MH-4436"),
];

/// An acknowledgement long enough that a summary of the rules is smaller than their turns.
const ACK: &str = "Noted. I will keep that in mind at every step of the ledger modules and \
                   check it before each change I make.";

/// A round whose newest turn leaves little room writes the block before it small, with only
/// the standing facts it has room for; the summaries under that block still state the rest. A
/// later round with room for them all states every one again, at its current value, within
/// its size.
#[test]
fn standing_facts_a_small_room_cut_come_back_when_the_room_grows() {
    let host = offline_host(Value::Null, 128_000);
    let mut engine = engine(&host);
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Work through the ledger modules."),
    ];
    for (subject, value) in RULES {
        messages.push(Message::user(format!(
            "Never delete the {subject} {value}."
        )));
        messages.push(Message::assistant(ACK));
    }
    messages.push(Message::user("Carry on with the modules."));
    messages.push(Message::assistant("Carrying on."));
    // Room for every rule.
    let view = sized(&mut engine, &messages, tokens(&messages) / 2);
    let text = text_of(&view);
    for (_, value) in RULES {
        assert!(text.contains(value), "round 1: {value} lost\n{text}");
    }

    // The vault code changes (its block merges with the one before), and the newest turn is a
    // long log: the merged block gets little room.
    let mut messages = view;
    messages.push(Message::user(
        "Update: the vault code is now QX-9000; never delete it.",
    ));
    messages.push(Message::assistant("Noted."));
    let verbatim = push_long_log(&mut messages);
    let view = sized(&mut engine, &messages, verbatim + 160);
    let text = text_of(&view);
    assert!(
        RULES.iter().any(|(_, value)| !text.contains(value)),
        "round 2 cut no rule: the test needs a smaller room\n{text}"
    );

    // A short newest turn and a size with room for every rule.
    let view = short_turn_within(&mut engine, view, 1_000);
    let text = text_of(&view);
    assert!(text.contains("QX-9000"), "{text}");
    for (_, value) in &RULES[1..] {
        assert!(text.contains(value), "round 3: {value} lost\n{text}");
    }
    // The old vault code is not shown as current.
    for (at, _) in text.match_indices("QX-7731") {
        assert!(
            text[at..].starts_with("QX-7731 (superseded by QX-9000)"),
            "{text}"
        );
    }
}

/// Things a user states in passing, held as said (notes): a small room cuts them first, and a
/// later round with room states them again, as it does the other kinds.
#[test]
fn notes_a_small_room_cut_come_back_when_the_room_grows() {
    const NOTES: [&str; 5] = [
        "fwiw production runs runtime version v2.45.76",
        "fwiw the staging cluster is osprey-4410",
        "fwiw the ledger service lives in repository ledger-core-9182",
        "fwiw the release train is called basalt-7723",
        "fwiw the build machines run image debian-12.4-ci-3391",
    ];
    let value = |note: &str| {
        note.split_whitespace()
            .next_back()
            .map(|word| word.trim_end_matches('.').to_string())
            .unwrap_or_default()
    };
    let host = offline_host(Value::Null, 128_000);
    let mut engine = engine(&host);
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Work through the ledger modules."),
    ];
    for note in NOTES {
        messages.push(Message::user(note));
        messages.push(Message::assistant(ACK));
    }
    messages.push(Message::user("Carry on with the modules."));
    messages.push(Message::assistant("Carrying on."));
    let view = sized(&mut engine, &messages, tokens(&messages) * 4 / 5);
    let text = text_of(&view);
    assert!(
        text.contains("Note: "),
        "no note was read: the test needs notes\n{text}"
    );
    for note in NOTES {
        assert!(text.contains(&value(note)), "round 1: {note} lost\n{text}");
    }

    // A rule that merges with the block before, and a long log as the newest turn: the merged
    // block gets little room.
    let mut messages = view;
    messages.push(Message::user("Never delete the ledger archive LA-5512."));
    messages.push(Message::assistant("Noted."));
    let verbatim = push_long_log(&mut messages);
    let view = sized(&mut engine, &messages, verbatim + 100);
    let text = text_of(&view);
    assert!(
        NOTES.iter().any(|note| !text.contains(&value(note))),
        "round 2 cut no note: the test needs a smaller room\n{text}"
    );

    let view = short_turn_within(&mut engine, view, 1_000);
    let text = text_of(&view);
    assert!(text.contains("LA-5512"), "{text}");
    for note in NOTES {
        assert!(text.contains(&value(note)), "round 3: {note} lost\n{text}");
    }
}
