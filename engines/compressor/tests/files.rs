//! The files a session touched are tracked through three compactions on the offline summary:
//! a file renamed twice shows only its newest path (saying what it was renamed from), an
//! edited file shows the last command that touched it, a deleted one says deleted.

mod common;

use common::{compressor, offline_host};
use ctxhost_compressor::SUMMARY_PREFIX;
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, Message, ToolCall};
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
    let host = offline_host();
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

/// A size so tight that the standing facts fill the summary leaves the files out of that
/// compression's message, not out of the session: the next compression with room lists them
/// again, each with its whole history.
#[test]
fn a_file_left_out_by_a_tight_size_comes_back_with_its_history() {
    let host = offline_host();
    let mut engine = compressor(&host, 12_000, json!({"protect_last_n": 4}));
    let count = ctxhost_sdk_test::tokens::count_messages;
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Tidy up the ledger module."),
        Message::assistant("Starting."),
    ];
    let sized = |target: u64| CompressOptions {
        force: true,
        target_tokens: Some(target),
        ..CompressOptions::default()
    };
    // Round 0 writes then edits src/ledger.rs; then rules that fill a tight size.
    messages.extend(call(
        "w0",
        "write_file",
        json!({"path": "src/ledger.rs", "content": "x"}),
        "ok",
    ));
    messages.extend(round(0));
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    messages = engine.compress(&messages, &force).unwrap();
    let first = files_section(&messages);
    let ledger = line_of(&first, "src/ledger.rs").unwrap_or_else(|| panic!("{first:#?}"));
    assert!(ledger.contains("written, edited"), "{ledger}");

    for (i, noun) in ["vault code", "audit log", "release tag"]
        .iter()
        .enumerate()
    {
        messages.push(Message::user(format!(
            "Never change the {noun} KX-{i}4{i}7-QZ without asking first."
        )));
        messages.push(Message::assistant("Understood."));
    }
    messages.extend(round(1));
    let newest_turn = count(&messages[messages.len() - 1..]);
    let tight = count(&messages[..2]) + newest_turn + 120;
    messages = engine.compress(&messages, &sized(tight)).unwrap();
    let summary = messages
        .iter()
        .map(Message::content_text)
        .find(|text| text.starts_with(SUMMARY_PREFIX))
        .expect("a summary")
        .to_string();
    assert!(
        !summary.contains("src/ledger.rs"),
        "the size was not tight:\n{summary}"
    );

    messages.extend(round(2));
    messages = engine.compress(&messages, &force).unwrap();
    let third = files_section(&messages);
    let ledger = line_of(&third, "src/ledger.rs").unwrap_or_else(|| panic!("{third:#?}"));
    assert!(ledger.contains("written, edited"), "{ledger}");
    assert!(
        ledger.contains("last: `sed -i 's/u32/u64/' src/ledger.rs`"),
        "{ledger}"
    );
}
