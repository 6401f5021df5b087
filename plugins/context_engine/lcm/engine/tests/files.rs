//! lcm's summaries track the files a session touched through three compactions on the offline
//! summary: the newest blocks show a file renamed twice at its newest path (saying what it was
//! renamed from), an edited file with the last command that touched it, a deleted one as
//! deleted.

#[path = "common/mod.rs"]
mod common;

use common::*;
use ctxhost_offline_summary::files::FileState;
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, Message, ToolCall};
use serde_json::json;

/// One tool call and its result.
fn call(id: &str, tool: &str, arguments: serde_json::Value, result: &str) -> Vec<Message> {
    vec![
        Message::assistant_tool_calls(vec![ToolCall::new(id, tool, arguments.to_string())]),
        Message::tool_result(id, result),
    ]
}

/// A session whose agent edits `count` ledger files, one call each, and the files' paths.
fn ledger_edits(count: usize) -> (Vec<Message>, Vec<String>) {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Widen the ledger counters."),
    ];
    let paths: Vec<String> = (0..count)
        .map(|i| format!("src/ledger/part_{i}.rs"))
        .collect();
    for (i, path) in paths.iter().enumerate() {
        messages.extend(call(
            &format!("e{i}"),
            "edit_file",
            json!({"path": path, "old": "u32", "new": "u64"}),
            &"replaced one counter type in the file\n".repeat(6),
        ));
        messages.push(Message::assistant(format!("Widened part {i}.")));
    }
    (messages, paths)
}

/// Six test runs, each a tool call with a long passing log: busy work that touches no file.
fn test_runs() -> Vec<Message> {
    (0..6)
        .flat_map(|i| {
            call(
                &format!("t{i}"),
                "terminal",
                json!({"command": format!("cargo test -p ledger_{i}")}),
                &format!("test counters::case_{i} ... ok\n").repeat(20),
            )
        })
        .collect()
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

/// The files the summary blocks of `view` list, each block's in order, read back.
fn files_in_blocks(view: &[Message]) -> Vec<FileState> {
    let mut files = Vec::new();
    for block in view.iter().filter(|m| block_id(m).is_some()) {
        let text = block.content_text();
        let mut inside = false;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("Files:") {
                inside = rest.trim().is_empty();
                files.extend(rest.split(", ").filter_map(FileState::parse_line));
                continue;
            }
            match line.strip_prefix("- ") {
                Some(item) if inside => files.extend(FileState::parse_line(item)),
                _ => inside = false,
            }
        }
    }
    files
}

#[test]
fn a_renamed_and_an_edited_file_are_tracked_through_three_compactions() {
    let host = offline_host(small_config(), SMALL_WINDOW);
    let mut engine = engine(&host);
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    let mut view = vec![
        Message::system("You are a coding agent."),
        Message::user("Tidy up the ledger module."),
        Message::assistant("Starting."),
    ];
    let mut rounds = Vec::new();
    for n in 0..3 {
        view.extend(round(n));
        view = engine.compress(&view, &force).unwrap();
        sequence::validate(&view).unwrap();
        rounds.push(files_in_blocks(&view));
    }
    // The newest state a block gives each path (blocks are in order, oldest first).
    let latest = |files: &[FileState], path: &str| -> FileState {
        files
            .iter()
            .rev()
            .find(|f| f.path == path)
            .cloned()
            .unwrap_or_else(|| panic!("{path} not listed: {files:#?}"))
    };
    let listed = |files: &[FileState], path: &str| files.iter().any(|f| f.path == path);

    let first = &rounds[0];
    let renamed = latest(first, "src/new_name.rs");
    assert_eq!(renamed.renamed_from.as_deref(), Some("src/old_name.rs"));
    assert!(!listed(first, "src/old_name.rs"), "{first:#?}");
    assert!(latest(first, "src/ledger.rs").line().contains("edited"));

    let second = &rounds[1];
    assert_eq!(
        latest(second, "src/ledger.rs").last.as_deref(),
        Some("sed -i 's/u32/u64/' src/ledger.rs")
    );
    assert!(listed(second, "src/new_name.rs"), "{second:#?}");

    let third = &rounds[2];
    let renamed = latest(third, "src/final_name.rs");
    assert_eq!(renamed.renamed_from.as_deref(), Some("src/new_name.rs"));
    for old in ["src/new_name.rs", "src/old_name.rs"] {
        assert!(!listed(third, old), "{old} still listed: {third:#?}");
    }
    let edited = latest(third, "src/ledger.rs");
    assert!(edited.line().contains("edited"), "{edited:?}");
    assert_eq!(
        edited.last.as_deref(),
        Some("sed -i 's/u32/u64/' src/ledger.rs")
    );
    let deleted = latest(third, "tmp/scratch.txt");
    assert!(deleted.is_deleted(), "{deleted:?}");
    assert_eq!(deleted.last.as_deref(), Some("rm tmp/scratch.txt"));
}

/// A round whose newest turn leaves little room writes the block before it small, with only
/// the files it has room for; the summaries under that block still list the rest. A later
/// round with room for them lists every one again at its newest state (a file deleted or
/// renamed since shows that), within its size.
#[test]
fn files_a_small_room_cut_come_back_when_the_room_grows() {
    let host = offline_host(serde_json::Value::Null, 128_000);
    let mut engine = engine(&host);
    let (mut messages, paths) = ledger_edits(12);
    messages.push(Message::user("Carry on with the modules."));
    messages.push(Message::assistant("Carrying on."));
    // Room for every file.
    let view = sized(&mut engine, &messages, tokens(&messages) / 2);
    let first = files_in_blocks(&view);
    for path in &paths {
        assert!(
            first.iter().any(|f| &f.path == path),
            "round 1: {path} lost\n{first:#?}"
        );
    }

    // One file goes, one is renamed, with room for all.
    let mut messages = view;
    messages.extend(call(
        "r0",
        "terminal",
        json!({"command": "rm src/ledger/part_0.rs"}),
        "",
    ));
    messages.extend(call(
        "m1",
        "terminal",
        json!({"command": "git mv src/ledger/part_1.rs src/ledger/moved_1.rs"}),
        "",
    ));
    // Busy work after them, so their record is no cut of a few lines.
    messages.extend(test_runs());
    messages.push(Message::user("Run the build."));
    messages.extend(call(
        "b2",
        "terminal",
        json!({"command": "cargo build"}),
        "Finished",
    ));
    messages.push(Message::assistant("Built."));
    let view = sized(&mut engine, &messages, tokens(&messages) / 2);

    // The newest turn is a long log: the block before it gets little room.
    let mut messages = view;
    let verbatim = push_long_log(&mut messages);
    let view = sized(&mut engine, &messages, verbatim + 120);
    let second = files_in_blocks(&view);
    assert!(
        paths[2..]
            .iter()
            .any(|path| !second.iter().any(|f| &f.path == path)),
        "round 2 cut no file: the test needs a smaller room\n{second:#?}"
    );

    // A short newest turn and a size with room for every file.
    let view = short_turn_within(&mut engine, view, 1_000);
    let third = files_in_blocks(&view);
    let latest = |path: &str| third.iter().rev().find(|f| f.path == path).cloned();
    for path in &paths[2..] {
        let state = latest(path).unwrap_or_else(|| panic!("round 3: {path} lost\n{third:#?}"));
        assert!(state.line().contains("edited"), "{state:?}");
    }
    let deleted = latest(&paths[0]).unwrap_or_else(|| panic!("{third:#?}"));
    assert!(deleted.is_deleted(), "{deleted:?}");
    let moved = latest("src/ledger/moved_1.rs").unwrap_or_else(|| panic!("{third:#?}"));
    assert_eq!(moved.renamed_from.as_deref(), Some(paths[1].as_str()));
    assert!(latest(&paths[1]).is_none(), "{third:#?}");
}

#[test]
fn files_the_first_block_of_a_session_had_no_room_for_come_back_from_its_messages() {
    // The first compaction of the session has almost no room (its newest turn is a long log):
    // its one block keeps few of the files it covers and no narrative, so nothing says which
    // it cut. Its messages are stored whole: once there is room, a merge lists every file.
    files_cut_in_the_first_block_come_back(None);
}

#[test]
fn a_limit_said_in_passing_does_not_hide_that_the_first_block_cut_files() {
    // The same, with a limit said in passing: the engine's cut keeps it (beside the standing
    // facts) past the files over their share, so a block still stating it may have cut files.
    files_cut_in_the_first_block_come_back(Some(
        "Widen them one file at a time. Please make sure every edit keeps the indentation and \
         adds no duplicate lines.",
    ));
}

/// Ten files edited, the first compaction in a room that cuts some (after `remark`, a user
/// message, when given), then a compaction with room for all: every file is listed.
fn files_cut_in_the_first_block_come_back(remark: Option<&str>) {
    let host = offline_host(serde_json::Value::Null, 128_000);
    let mut engine = engine(&host);
    let (mut messages, paths) = ledger_edits(10);
    if let Some(remark) = remark {
        messages.insert(2, Message::user(remark));
        messages.insert(3, Message::assistant("Will do."));
    }
    let verbatim = push_long_log(&mut messages);
    let view = sized(&mut engine, &messages, verbatim + 80);
    let first = files_in_blocks(&view);
    assert!(
        paths
            .iter()
            .any(|path| !first.iter().any(|f| &f.path == path)),
        "round 1 cut no file: the test needs a smaller room\n{first:#?}"
    );

    // More work, so a second block forms, then a short newest turn and room for every file.
    let mut messages = view;
    messages.extend(test_runs());
    messages.push(Message::user("Carry on."));
    messages.push(Message::assistant("Done."));
    let target = 1_200;
    let view = sized(&mut engine, &messages, target);
    assert!(tokens(&view) <= target, "{} tokens", tokens(&view));
    let second = files_in_blocks(&view);
    for path in &paths {
        let state = second
            .iter()
            .rev()
            .find(|f| &f.path == path)
            .unwrap_or_else(|| panic!("round 2: {path} lost\n{second:#?}\n{view:#?}"));
        assert!(state.line().contains("edited"), "{state:?}");
    }
}
