//! The files a session touched are tracked through three compactions on the offline summary:
//! a file renamed twice shows only its newest path (saying what it was renamed from), an
//! edited file shows the last command that touched it, a deleted one says deleted.

mod common;

use common::compressor;
use ctxhost_compressor::SUMMARY_PREFIX;
use ctxhost_offline_summary::OfflineSummarizer;
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, Message, ToolCall};
use ctxhost_sdk_test::{Answer, FakeHost};
use serde_json::json;

/// One tool call and its result.
fn call(id: &str, tool: &str, arguments: serde_json::Value, result: &str) -> Vec<Message> {
    vec![
        Message::assistant_tool_calls(vec![ToolCall::new(id, tool, arguments.to_string())]),
        Message::tool_result(id, result),
    ]
}

/// What round `round` does to files, then busy work.
fn round(round: usize) -> Vec<Message> {
    let shell = |id: &str, command: &str| call(id, "terminal", json!({"command": command}), "");
    let mut messages = match round {
        0 => [
            call(
                "e0",
                "edit_file",
                json!({"path": "src/ledger.rs", "old": "u32", "new": "u64"}),
                "ok",
            ),
            shell("m0", "git mv src/old_name.rs src/new_name.rs"),
            shell("t0", "touch tmp/scratch.txt"),
        ]
        .concat(),
        1 => shell("s1", "sed -i 's/u32/u64/' src/ledger.rs"),
        _ => [
            shell("m2", "mv src/new_name.rs src/final_name.rs"),
            shell("r2", "rm tmp/scratch.txt"),
        ]
        .concat(),
    };
    for i in 0..10 {
        let id = format!("w{round}_{i}");
        messages.extend(call(
            &id,
            "terminal",
            json!({"command": format!("cargo test -p mod_{round}_{i}")}),
            &format!("test parse::case_{i} ... ok\n").repeat(30),
        ));
        messages.push(Message::assistant(format!("Module {round}.{i} passes.")));
    }
    messages.push(Message::user(format!("Round {round} done, carry on.")));
    messages
}

/// The Files section of the one summary in `messages`.
fn files_section(messages: &[Message]) -> Vec<String> {
    let summary = messages
        .iter()
        .map(Message::content_text)
        .find(|text| text.starts_with(SUMMARY_PREFIX))
        .expect("a summary")
        .to_string();
    summary
        .lines()
        .skip_while(|line| *line != "## Files")
        .skip(1)
        .take_while(|line| line.starts_with("- "))
        .map(|line| line[2..].to_string())
        .collect()
}

fn line_of<'a>(files: &'a [String], path: &str) -> Option<&'a str> {
    files
        .iter()
        .map(String::as_str)
        .find(|line| line.split(" (").next() == Some(path))
}

#[test]
fn a_renamed_and_an_edited_file_are_tracked_through_three_compactions() {
    let host = FakeHost::builder("compressor")
        .default_answer(Answer::with(|request| {
            Ok(OfflineSummarizer.summary(request))
        }))
        .build();
    let mut engine = compressor(&host, 12_000, json!({"protect_last_n": 4}));
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Tidy up the ledger module."),
        Message::assistant("Starting."),
    ];
    let mut sections = Vec::new();
    for n in 0..3 {
        messages.extend(round(n));
        messages = engine.compress(&messages, &force).unwrap();
        sequence::validate(&messages).unwrap();
        sections.push(files_section(&messages));
    }
    assert_eq!(host.summarize_calls(), 3);

    let first = &sections[0];
    let renamed = line_of(first, "src/new_name.rs").unwrap_or_else(|| panic!("{first:#?}"));
    assert!(
        renamed.contains("renamed from src/old_name.rs"),
        "{renamed}"
    );
    assert!(renamed.contains("last: `git mv src/old_name.rs src/new_name.rs`"));
    assert!(line_of(first, "src/old_name.rs").is_none(), "{first:#?}");
    let edited = line_of(first, "src/ledger.rs").unwrap_or_else(|| panic!("{first:#?}"));
    assert!(edited.contains("edited"), "{edited}");

    let second = &sections[1];
    let edited = line_of(second, "src/ledger.rs").unwrap_or_else(|| panic!("{second:#?}"));
    assert!(
        edited.contains("edited") && edited.contains("last: `sed -i 's/u32/u64/' src/ledger.rs`"),
        "{edited}"
    );
    assert!(line_of(second, "src/new_name.rs").is_some(), "{second:#?}");
    assert!(line_of(second, "tmp/scratch.txt").is_some_and(|l| l.contains("written")));

    let third = &sections[2];
    let renamed = line_of(third, "src/final_name.rs").unwrap_or_else(|| panic!("{third:#?}"));
    assert!(
        renamed.contains("renamed from src/new_name.rs"),
        "{renamed}"
    );
    for old in ["src/new_name.rs", "src/old_name.rs"] {
        assert!(
            line_of(third, old).is_none(),
            "{old} still listed: {third:#?}"
        );
    }
    let edited = line_of(third, "src/ledger.rs").unwrap_or_else(|| panic!("{third:#?}"));
    assert!(
        edited.contains("last: `sed -i 's/u32/u64/' src/ledger.rs`"),
        "{edited}"
    );
    let deleted = line_of(third, "tmp/scratch.txt").unwrap_or_else(|| panic!("{third:#?}"));
    assert!(
        deleted.contains("deleted; last: `rm tmp/scratch.txt`"),
        "{deleted}"
    );
}
