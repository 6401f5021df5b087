//! The offline summarizer: deterministic, extractive, within budget.

use ctxhost_offline_summary::budget::estimate_tokens;
use ctxhost_offline_summary::OfflineSummarizer;
use ctxhost_sdk::SummarizeRequest;

const SECTIONS: [&str; 10] = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Files",
    "## Next Steps",
    "## Critical Context",
];

const SESSION: &str = "\
[user] The CSV export in src/export/csv.rs drops the last row. Please fix it. Don't change the public API.
[assistant] I'll reproduce it first.
[assistant -> tool_call bash] {\"command\": \"cargo test -p export\"}
[tool bash] running 4 tests
test csv::last_row ... FAILED
error: test failed, to rerun pass `-p export --lib`
[assistant -> tool_call read_file] {\"path\": \"src/export/csv.rs\"}
[tool read_file] fn write_rows(rows: &[Row]) { for r in &rows[..rows.len() - 1] { .. } }
[assistant] The loop skips the final row. We decided to iterate over all rows instead of slicing.
[assistant -> tool_call edit_file] {\"path\": \"src/export/csv.rs\", \"old\": \"&rows[..rows.len() - 1]\", \"new\": \"rows\"}
[tool edit_file] ok
[assistant -> tool_call bash] {\"command\": \"cargo clippy -p export\"}
[tool bash] error[E0599]: no method named `len` found for reference `&Row`
  --> src/export/writer.rs:12:9
[assistant] Clippy fails in src/export/writer.rs. Next I need to fix the writer's row type.";

fn request(content: &str) -> SummarizeRequest {
    SummarizeRequest {
        instructions: "ignored offline".into(),
        content: content.into(),
        max_tokens: 2000,
        focus_topic: None,
        previous_summary: None,
        shape: Default::default(),
    }
}

fn summarize(request: &SummarizeRequest) -> String {
    let summary = OfflineSummarizer.summary(request);
    assert_eq!(summary.summarizer, "offline");
    summary.text
}

/// The items of a section (`## Title` or `### Title`).
fn section<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    let mut lines = text
        .lines()
        .skip_while(|line| line.trim_start_matches('#').trim() != title);
    lines.next().expect("section present");
    lines
        .take_while(|line| !line.starts_with('#'))
        .filter_map(|line| line.strip_prefix("- "))
        .collect()
}

#[test]
fn fills_every_section_of_the_template() {
    let text = summarize(&request(SESSION));
    let mut at = 0;
    for heading in SECTIONS {
        let found = text[at..]
            .find(heading)
            .unwrap_or_else(|| panic!("{heading} missing or out of order in\n{text}"));
        at += found + heading.len();
    }
}

#[test]
fn extracts_asks_actions_files_errors_and_decisions() {
    let text = summarize(&request(SESSION));
    let goal = section(&text, "Goal");
    assert!(
        goal[0].starts_with("The CSV export in src/export/csv.rs drops the last row."),
        "{text}"
    );
    // A rule is a standing fact, written once.
    assert_eq!(
        section(&text, "Standing Facts"),
        ["Rule: Don't change the public API."]
    );
    assert_eq!(
        section(&text, "Constraints & Preferences"),
        ["None recorded."]
    );
    let done = section(&text, "Done");
    assert!(
        done.contains(&"Read src/export/csv.rs [read_file]"),
        "{done:?}"
    );
    assert!(
        done.contains(&"Edited src/export/csv.rs [edit_file]"),
        "{done:?}"
    );
    let blocked = section(&text, "Blocked").join("\n");
    assert!(
        blocked.contains("Ran `cargo test -p export` failed"),
        "{blocked}"
    );
    assert!(blocked.contains("Ran `cargo clippy -p export` failed: error[E0599]"));
    assert_eq!(
        section(&text, "Key Decisions"),
        ["We decided to iterate over all rows instead of slicing."]
    );
    let files = section(&text, "Files");
    // The file touched last is listed last.
    assert_eq!(
        files.last(),
        Some(&"src/export/csv.rs (read, edited; last: `edit_file`)")
    );
    assert!(files.contains(&"src/export/writer.rs"), "{files:?}");
    let state = section(&text, "In Progress").join("\n");
    assert!(
        state.contains("Next I need to fix the writer's row type."),
        "{state}"
    );
    let next = section(&text, "Next Steps").join("\n");
    assert!(
        next.contains("Next I need to fix the writer's row type."),
        "{next}"
    );
    let critical = section(&text, "Critical Context").join("\n");
    assert!(
        critical.contains("no method named `len` found"),
        "{critical}"
    );
}

#[test]
fn same_input_same_output() {
    let mut request = request(SESSION);
    request.focus_topic = Some("writer".into());
    request.previous_summary = Some("## Goal\n- earlier".into());
    request.max_tokens = 300;
    let first = summarize(&request);
    for _ in 0..3 {
        assert_eq!(summarize(&request), first);
        assert_eq!(OfflineSummarizer.summary(&request.clone()).text, first);
    }
}

#[test]
fn updates_a_previous_summary() {
    let first_half: String = SESSION.lines().take(8).collect::<Vec<_>>().join("\n");
    let second_half: String = SESSION.lines().skip(8).collect::<Vec<_>>().join("\n");
    let previous = summarize(&request(&first_half));
    let mut update = request(&format!(
        "[user] also add a test for empty input\n{second_half}"
    ));
    update.previous_summary = Some(previous.clone());
    let text = summarize(&update);

    let goal = section(&text, "Goal");
    assert!(
        goal[0].starts_with("The CSV export"),
        "the original goal stays first: {goal:?}"
    );
    assert!(goal.contains(&"Also asked: also add a test for empty input"));
    let done = section(&text, "Done");
    // From the previous summary, and from the new turns.
    assert!(
        done.contains(&"Read src/export/csv.rs [read_file]"),
        "{done:?}"
    );
    assert!(
        done.contains(&"Edited src/export/csv.rs [edit_file]"),
        "{done:?}"
    );
    // A rule is a standing fact, written once.
    assert_eq!(
        section(&text, "Standing Facts"),
        ["Rule: Don't change the public API."]
    );
    assert_eq!(
        section(&text, "Constraints & Preferences"),
        ["None recorded."]
    );
    let files = section(&text, "Files");
    assert_eq!(
        files.last(),
        Some(&"src/export/csv.rs (read, edited; last: `edit_file`)"),
        "{files:?}"
    );
    // Updating twice with nothing new changes nothing.
    let mut again = request("");
    again.previous_summary = Some(text.clone());
    let reparsed = summarize(&again);
    for title in [
        "Goal",
        "Standing Facts",
        "Constraints & Preferences",
        "Done",
        "Key Decisions",
        "Files",
    ] {
        assert_eq!(section(&reparsed, title), section(&text, title), "{title}");
    }
}

#[test]
fn never_exceeds_max_tokens() {
    let mut long = String::new();
    for i in 0..300 {
        long.push_str(&format!(
            "[user] step {i}: please look at module_{i}/file_{i}.py and keep going\n\
             [assistant -> tool_call bash] {{\"command\": \"python -m pytest tests/test_{i}.py\"}}\n\
             [tool bash] FAILED tests/test_{i}.py::test_case - AssertionError: expected {i}\n\
             [assistant] We will use approach {i} instead of the old one.\n"
        ));
    }
    for max_tokens in [1, 10, 50, 100, 200, 400, 800, 1600, 3200] {
        let mut request = request(&long);
        request.max_tokens = max_tokens;
        let text = summarize(&request);
        assert!(
            estimate_tokens(&text) <= max_tokens,
            "{max_tokens}: {} tokens",
            estimate_tokens(&text)
        );
        if max_tokens >= 400 {
            // The sections the budget order buys before the files past their share (600 files
            // touched here fill any room after them: the sections after the files keep one
            // line, the one the order keeps longest).
            for heading in ["## Goal", "## Files", "## Next Steps"] {
                assert!(text.contains(heading), "{max_tokens}: {heading} missing");
            }
            let after_files = SECTIONS[1..7]
                .iter()
                .filter(|heading| text.contains(**heading))
                .count();
            assert!(after_files >= 1, "{max_tokens}: nothing after the files");
            // The original goal and the latest state survive the cut.
            assert!(text.contains("step 0: please look"), "{max_tokens}");
            assert!(text.contains("approach 299"), "{max_tokens}");
        }
    }
}

#[test]
fn the_focus_topic_comes_first() {
    let mut request = request(SESSION);
    request.focus_topic = Some("clippy".into());
    let text = summarize(&request);
    let critical = section(&text, "Critical Context");
    assert!(critical[0].starts_with("On \"clippy\":"), "{critical:?}");
    let blocked = section(&text, "Blocked");
    assert!(blocked[0].contains("cargo clippy"), "{blocked:?}");
    // Under a tight budget the focus items are what remains.
    request.max_tokens = 250;
    let tight = summarize(&request);
    assert!(estimate_tokens(&tight) <= 250);
    assert!(tight.contains("cargo clippy"), "{tight}");
}

#[test]
fn tolerates_other_shapes() {
    let colon = "USER: rename config.yaml to settings.yaml\nassistant: Done, I will use settings.yaml from now on.\nuser: thanks";
    let text = summarize(&request(colon));
    assert_eq!(
        section(&text, "Goal")[0],
        "rename config.yaml to settings.yaml"
    );
    assert!(section(&text, "Files").contains(&"config.yaml"));
    assert!(section(&text, "Key Decisions")[0].contains("I will use settings.yaml"));

    let plain = "Build broke after upgrading serde.\n$ cargo build\nerror[E0277]: the trait bound is not satisfied\n  --> src/model.rs:40:1";
    let text = summarize(&request(plain));
    assert_eq!(
        section(&text, "Goal"),
        ["(inferred) Build broke after upgrading serde."]
    );
    assert!(section(&text, "Blocked")[0].starts_with("Ran `cargo build` failed: error[E0277]"));
    assert!(section(&text, "Files").contains(&"src/model.rs"));

    let empty = summarize(&request(""));
    for heading in SECTIONS {
        assert!(empty.contains(heading));
    }
}
