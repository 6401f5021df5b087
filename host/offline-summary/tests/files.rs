//! The Files section of digest records: a merged record keeps each file at its newest state,
//! and under its cap the files touched most recently.

use ctxhost_offline_summary::OfflineSummarizer;
use ctxhost_sdk::{SummarizeRequest, SummaryShape};

/// A digest record of `content` (turns, or earlier records to merge), with room to spare so
/// only the section caps cut.
fn digest(content: String) -> String {
    OfflineSummarizer.summary_text(&SummarizeRequest {
        instructions: String::new(),
        content,
        max_tokens: 4_000,
        focus_topic: None,
        previous_summary: None,
        shape: SummaryShape::Digest,
    })
}

/// A tool call running `command`, and its output.
fn call(command: &str) -> String {
    format!(
        "[assistant -> tool_call bash] {{\"command\": \"{command}\"}}\n[tool bash] done\n\
         [assistant] Next.\n"
    )
}

/// The Files section's lines of a record.
fn files_section(record: &str) -> Vec<&str> {
    record
        .lines()
        .skip_while(|line| *line != "Files:")
        .skip(1)
        .map_while(|line| line.strip_prefix("- "))
        .collect()
}

fn edit(path: &str) -> String {
    call(&format!("sed -i 's/old/new/' {path}"))
}

#[test]
fn a_merged_record_keeps_the_most_recently_touched_files_under_the_cap() {
    // The first span edits 24 files; the second edits 24 others, edits the first span's
    // first file again, and renames its second: 48 files, over the cap of 32.
    let early: Vec<String> = (0..24).map(|i| format!("src/early/e{i}.rs")).collect();
    let late: Vec<String> = (0..24).map(|i| format!("src/late/l{i}.rs")).collect();
    let first: String = early.iter().map(|path| edit(path)).collect();
    let mut turns: String = late.iter().map(|path| edit(path)).collect();
    turns.push_str(&call("mv src/early/e1.rs src/late/moved.rs"));
    turns.push_str(&call("tee src/early/e0.rs"));
    let second = digest(turns);
    let first = digest(first);

    let merged = digest(format!(
        "[sum_a · leaf depth 0 · seq 1-40]\n{first}\n\n[sum_b · leaf depth 0 · seq 41-80]\n{second}"
    ));
    let files = files_section(&merged).join("\n");

    for path in &late {
        assert!(files.contains(&format!("{path} (edited")), "{merged}");
    }
    // A file touched again is at its newest state, as one line, and counts as recent.
    assert!(
        merged.contains("- src/early/e0.rs (edited, written; last: `tee src/early/e0.rs`)"),
        "{merged}"
    );
    assert_eq!(files.matches("src/early/e0.rs").count(), 2, "{merged}");
    assert!(
        merged.contains("- src/late/moved.rs (edited, renamed from src/early/e1.rs"),
        "{merged}"
    );
    // 32 kept: the 26 the second span touched and the six the first touched last.
    for recent in 18..24 {
        assert!(
            files.contains(&format!("src/early/e{recent}.rs")),
            "{merged}"
        );
    }
    for old in 2..18 {
        assert!(
            !files.contains(&format!("src/early/e{old}.rs ")),
            "{merged}"
        );
    }
    assert_eq!(files_section(&merged).len(), 33, "{merged}");
    assert_eq!(files_section(&merged)[32], "(+16 more files)", "{merged}");
}
