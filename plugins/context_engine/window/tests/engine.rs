//! The window engine through its public surface, on the fake host of ctxhost-sdk-test.

mod common;

use common::*;
use ctxhost_engine_window::WindowEngine;
use ctxhost_sdk::{
    sequence, CompressOptions, ContextEngine, EnginePlugin, ErrorKind, LogLevel, Message,
    SessionStart, ToolCall, Usage,
};
use ctxhost_sdk_test::contract::{self, Check, EngineCheck};
use serde_json::{json, Value};

fn forced() -> CompressOptions {
    CompressOptions {
        force: true,
        ..CompressOptions::default()
    }
}

fn compress(engine: &mut WindowEngine, messages: &[Message]) -> Vec<Message> {
    let out = engine.compress(messages, &forced()).expect("compress");
    contract::check_output(messages, &out).unwrap_or_else(|e| panic!("the output contract: {e}"));
    out
}

#[test]
fn a_short_conversation_comes_back_unchanged() {
    let mut engine = engine(Value::Null, 1000);
    let messages = chat(2);
    assert_eq!(compress(&mut engine, &messages), messages);
    assert!(!engine.has_content_to_compress(&messages).unwrap());
    assert_eq!(engine.status().unwrap().compression_count, 0);
}

#[test]
fn the_head_is_kept_and_one_marker_replaces_the_middle() {
    let host = host(Value::Null, 2000);
    let mut engine = WindowEngine::create(host.services()).unwrap();
    let mut messages = chat(30);
    messages.insert(1, Message::system("A second system message."));
    assert!(engine.has_content_to_compress(&messages).unwrap());
    let out = compress(&mut engine, &messages);
    assert_eq!(out[..3], messages[..3], "system messages and the first ask");
    assert!(is_marker(&out[3]), "{}", out[3]);
    assert_eq!(markers(&out), 1);
    assert_eq!(out.last(), messages.last());
    assert!(tokens(&out) < tokens(&messages));
    let dropped = messages.len() - (out.len() - 1);
    assert!(
        out[3]
            .content_text()
            .starts_with(&format!("[window engine: {dropped} earlier messages (")),
        "{}",
        out[3]
    );
    assert_eq!(engine.status().unwrap().compression_count, 1);
    // One debug line for the host's log says what was done.
    let logs = host.logs();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(
        (logs[0].engine.as_str(), logs[0].level),
        ("window", LogLevel::Debug)
    );
    assert!(
        logs[0].message.starts_with(&format!(
            "{} → {} messages; {dropped} dropped",
            messages.len(),
            out.len()
        )),
        "{}",
        logs[0].message
    );
}

#[test]
fn the_tail_fills_its_token_budget_and_no_more() {
    // 10,000 tokens of window × 0.40 = a 4,000-token tail.
    let mut engine = engine(Value::Null, 10_000);
    let messages = chat(60);
    let out = compress(&mut engine, &messages);
    let tail = &out[3..];
    let budget = 4_000;
    assert!(tokens(tail) <= budget, "{} > {budget}", tokens(tail));
    let next_older = &messages[messages.len() - tail.len() - 1];
    assert!(tokens(tail) + tokens(std::slice::from_ref(next_older)) > budget);
    assert!(tail.len() > 6, "the budget, not the floor, chose this tail");
}

#[test]
fn the_floor_keeps_recent_messages_even_over_budget() {
    let mut engine = engine(json!({"min_tail_messages": 8}), 1000);
    let mut messages = chat(1);
    for i in 0..12 {
        messages.push(Message::assistant(filler(&format!("huge {i}"), 4000)));
        messages.push(Message::user(format!("ok {i}")));
    }
    let out = compress(&mut engine, &messages);
    assert_eq!(out.len(), 2 + 1 + 8);
    assert_eq!(out[3..], messages[messages.len() - 8..]);
}

#[test]
fn parallel_tool_calls_are_never_split_from_their_results() {
    // A 3-way parallel call near the end: as the window grows, the budget cut sweeps across
    // every position of that turn.
    let mut messages = chat(6);
    messages.extend(tool_turn(&["a", "b", "c"], 800));
    messages.push(Message::assistant(filler("done", 200)));
    messages.push(Message::user("thanks"));
    let call_at = messages
        .iter()
        .position(|m| !m.tool_calls().is_empty())
        .unwrap();
    let mut cut_inside_the_turn = 0;
    for context_length in (200..4000).step_by(25) {
        let mut engine = engine(
            json!({"min_tail_messages": 1, "keep_tool_outputs": 9}),
            context_length,
        );
        let out = compress(&mut engine, &messages);
        let call_kept = out.iter().any(|m| !m.tool_calls().is_empty());
        let results_kept = out.iter().filter(|m| m.is_tool_result()).count();
        assert_eq!(
            results_kept,
            if call_kept { 3 } else { 0 },
            "window {context_length}"
        );
        // Where the budget alone would have cut: is it inside the turn?
        let budget = (context_length as f64 * 0.40) as u64;
        let mut start = messages.len();
        while start > 2 && tokens(&messages[start - 1..]) <= budget {
            start -= 1;
        }
        if start > call_at && start <= call_at + 3 {
            cut_inside_the_turn += 1;
        }
    }
    assert!(
        cut_inside_the_turn > 0,
        "the sweep must cover cuts inside the parallel turn"
    );
}

#[test]
fn the_floor_pulls_in_a_whole_tool_turn() {
    // The floor of 2 messages lands on the last result of a parallel call.
    let mut engine = engine(json!({"min_tail_messages": 2, "keep_tool_outputs": 9}), 100);
    let mut messages = chat(3);
    messages.extend(tool_turn(&["a", "b", "c"], 2000));
    // Not `compress`: in a 100-token window the newest user message, before the tool turn, is
    // dropped, which the output contract's "newest user message kept" forbids.
    let out = engine.compress(&messages, &forced()).unwrap();
    sequence::validate(&out).unwrap();
    assert_eq!(
        out[3..],
        messages[messages.len() - 4..],
        "call plus all three results"
    );
}

#[test]
fn old_tool_outputs_in_the_tail_are_cleared_and_the_newest_kept() {
    // A 1,200-token tail: the six tool turns (about 700 tokens) and some chat before them.
    let mut engine = engine(json!({"keep_tool_outputs": 4}), 3000);
    let mut messages = chat(40);
    for i in 0..6 {
        messages.extend(tool_turn(&[&format!("t{i}")], 400));
    }
    messages.push(Message::assistant("all done"));
    let out = compress(&mut engine, &messages);
    let results: Vec<&Message> = out.iter().filter(|m| m.is_tool_result()).collect();
    assert_eq!(results.len(), 6, "every result stays, paired with its call");
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result.tool_call_id(), Some(format!("t{i}").as_str()));
        let text = result.content_text();
        if i < 2 {
            assert_eq!(
                text,
                "[tool output cleared by the window engine: 100 tokens]"
            );
        } else {
            assert!(text.starts_with(&format!("output of t{i} ")), "{text}");
        }
    }
}

#[test]
fn markers_never_stack_and_carry_the_running_totals() {
    let mut engine = engine(Value::Null, 3000);
    let mut conversation: Vec<Message> = chat(20);
    let mut originals = conversation.clone();
    for round in 0..3 {
        let out = compress(&mut engine, &conversation);
        assert_eq!(markers(&out), 1, "round {round}");
        let marker = out.iter().find(|m| is_marker(m)).unwrap();
        // The marker accounts for every original message no longer present.
        let gone: Vec<Message> = originals
            .iter()
            .filter(|m| !out.contains(m))
            .cloned()
            .collect();
        let expected = format!("[window engine: {} earlier messages (", gone.len());
        assert!(
            marker.content_text().starts_with(&expected),
            "round {round}: {marker}"
        );
        let tokens_text = format!("({} tokens)", thousands(tokens(&gone)));
        assert!(
            marker.content_text().contains(&tokens_text),
            "round {round}: {marker}"
        );
        // The session goes on.
        conversation = out;
        for i in 0..10 {
            let more = [
                Message::assistant(filler(&format!("round {round} reply {i}"), 400)),
                Message::user(filler(&format!("round {round} ask {i}"), 400)),
            ];
            conversation.extend(more.iter().cloned());
            originals.extend(more);
        }
    }
    assert_eq!(engine.status().unwrap().compression_count, 3);
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[test]
fn compressing_twice_changes_nothing_more() {
    let mut engine = engine(Value::Null, 2000);
    let once = compress(&mut engine, &chat(30));
    assert_eq!(compress(&mut engine, &once), once);
    assert!(!engine.has_content_to_compress(&once).unwrap());
}

#[test]
fn a_marker_right_after_the_system_prompt_is_replaced_too() {
    // A conversation that opens with an assistant turn has no first user message to protect.
    let mut engine = engine(Value::Null, 2000);
    let mut messages = chat(30);
    messages.remove(1);
    let once = compress(&mut engine, &messages);
    assert!(is_marker(&once[1]));
    let mut longer = once.clone();
    longer.extend(chat(30).into_iter().skip(2));
    let twice = compress(&mut engine, &longer);
    assert_eq!(markers(&twice), 1);
    assert!(is_marker(&twice[1]));
}

#[test]
fn under_the_threshold_nothing_happens_unless_forced() {
    let mut engine = engine(Value::Null, 10_000);
    let messages = chat(30); // about 3,000 tokens, under 7,500
    let options = CompressOptions::default();
    assert_eq!(engine.compress(&messages, &options).unwrap(), messages);
    assert_ne!(engine.compress(&messages, &forced()).unwrap(), messages);
    let measured = CompressOptions {
        current_tokens: Some(9_000),
        ..CompressOptions::default()
    };
    assert_ne!(engine.compress(&messages, &measured).unwrap(), messages);
}

#[test]
fn a_focus_topic_keeps_whole_middle_turns_that_mention_it() {
    let mut engine = engine(Value::Null, 4000);
    let mut messages = chat(4);
    messages.push(Message::user("Please look at the PARSER bug."));
    messages.extend(tool_turn(&["unrelated"], 40));
    // A parallel call where only one result mentions the topic: the whole turn is kept.
    let matching_turn = messages.len()..messages.len() + 3;
    messages.push(Message::assistant_tool_calls(vec![
        ToolCall::new("p1", "grep", "{}"),
        ToolCall::new("p2", "ls", "{}"),
    ]));
    messages.push(Message::tool_result("p1", "src/parser.rs:12: fn parse()"));
    messages.push(Message::tool_result("p2", "src lib tests"));
    messages.extend(chat(30).into_iter().skip(2));
    let options = CompressOptions {
        force: true,
        focus_topic: Some(" Parser ".to_string()),
        ..CompressOptions::default()
    };
    let out = engine.compress(&messages, &options).unwrap();
    sequence::validate(&out).unwrap();
    assert!(is_marker(&out[2]));
    assert!(
        out[2]
            .content_text()
            .contains("The 4 messages right after this note"),
        "{}",
        out[2]
    );
    assert!(
        out[2].content_text().contains("mention \"Parser\""),
        "{}",
        out[2]
    );
    assert_eq!(out[3].content_text(), "Please look at the PARSER bug.");
    assert_eq!(out[4..7], messages[matching_turn]);
    let results: Vec<_> = out.iter().filter_map(|m| m.tool_call_id()).collect();
    assert_eq!(
        results,
        ["p1", "p2"],
        "the unrelated turn is dropped, the matching one whole"
    );
    assert!(tokens(&out) < tokens(&messages));
}

#[test]
fn unknown_fields_of_kept_messages_survive() {
    let mut engine = engine(Value::Null, 2000);
    let mut messages = chat(30);
    let last = messages.len() - 1;
    messages[last].set_extra_field("cache_control", Some(json!({"type": "ephemeral"})));
    let out = compress(&mut engine, &messages);
    assert_eq!(out.last(), messages.last());
}

#[test]
fn bad_settings_name_the_key() {
    // The key at fault travels as data, relative to the engine's section.
    let fault = |config: Value| {
        let e = try_engine(config, 1000).err().expect("an error");
        assert_eq!(e.kind(), ErrorKind::InvalidSetting, "{e}");
        let fault = e.setting().expect("the key at fault").clone();
        (fault.key, fault.problem)
    };
    let (key, problem) = fault(json!({"threshold": 1.7}));
    assert_eq!(
        (key.as_str(), problem.as_str()),
        ("threshold", "must be between 0 and 1, got 1.7")
    );
    let (key, problem) = fault(json!({"tail_ratio": 0}));
    assert_eq!(
        (key.as_str(), problem.as_str()),
        ("tail_ratio", "must be between 0 and 1, got 0")
    );
    let (key, problem) = fault(json!({"threshold": 0.5, "tail_ratio": 0.6}));
    assert_eq!(
        (key.as_str(), problem.as_str()),
        ("tail_ratio", "must be below threshold (0.5), got 0.6")
    );
    assert_eq!(
        fault(json!({"min_tail_messages": 0})).0,
        "min_tail_messages"
    );
    assert_eq!(
        fault(json!({"keep_tool_outputs": -1})).0,
        "keep_tool_outputs"
    );
    let (key, problem) = fault(json!({"threshold": 0.8, "tail_ratio": "lots"}));
    assert_eq!(key, "tail_ratio");
    assert!(problem.starts_with("invalid type"), "{problem}");
    let (key, problem) = fault(json!({"treshold": 0.8}));
    assert_eq!(key, "treshold");
    assert!(problem.starts_with("unknown field"), "{problem}");
    assert_eq!(fault(json!(5)).0, "");
}

#[test]
fn settings_are_read_from_the_config_section() {
    let engine = engine(json!({"threshold": 0.9, "keep_tool_outputs": 0}), 1000);
    assert_eq!(engine.settings().threshold, 0.9);
    assert_eq!(engine.settings().tail_ratio, 0.40);
    assert_eq!(engine.settings().keep_tool_outputs, 0);
}

#[test]
fn should_compress_fires_at_the_threshold_of_the_current_window() {
    let mut engine = engine(Value::Null, 1000);
    assert!(!engine.should_compress(749).unwrap());
    assert!(engine.should_compress(750).unwrap());
    engine.update_model("bigger", 2000).unwrap();
    assert!(!engine.should_compress(750).unwrap());
    assert!(engine.should_compress(1500).unwrap());
    engine
        .on_session_start(&SessionStart {
            session_id: "s".into(),
            model: None,
            context_length: Some(100),
        })
        .unwrap();
    assert!(engine.should_compress(75).unwrap());

    let mut unknown_window = common::engine(Value::Null, 0);
    assert!(!unknown_window.should_compress(1_000_000).unwrap());
}

#[test]
fn preflight_counts_the_messages() {
    let mut engine = engine(json!({"threshold": 0.5}), 1000);
    assert!(!engine.should_compress_preflight(&chat(2)).unwrap());
    let long = chat(10);
    assert!(tokens(&long) >= 500);
    assert!(engine.should_compress_preflight(&long).unwrap());
}

#[test]
fn status_reports_usage_and_resets() {
    let mut engine = engine(Value::Null, 1000);
    engine
        .update_from_response(&Usage {
            prompt_tokens: 500,
            completion_tokens: 20,
            total_tokens: 520,
            ..Usage::default()
        })
        .unwrap();
    compress(&mut engine, &chat(30));
    let status = engine.status().unwrap();
    assert_eq!(status.last_prompt_tokens, 500);
    assert_eq!(status.context_length, 1000);
    assert_eq!(status.threshold_tokens, 750);
    assert_eq!(status.usage_percent, 50.0);
    assert_eq!(status.compression_count, 1);
    assert_eq!(status.details["tail_budget_tokens"], 400);
    engine.on_session_reset().unwrap();
    let status = engine.status().unwrap();
    assert_eq!(
        (status.last_prompt_tokens, status.compression_count),
        (0, 0)
    );
}

#[test]
fn the_manifest_describes_the_plugin() {
    let manifest = WindowEngine::manifest();
    assert_eq!(manifest.name, "window");
    assert_eq!(manifest.version, env!("CARGO_PKG_VERSION"));
    let keys: Vec<(&str, &str)> = manifest
        .config_keys
        .iter()
        .map(|k| (k.key.as_str(), k.default.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            ("threshold", "0.75"),
            ("tail_ratio", "0.4"),
            ("min_tail_messages", "6"),
            ("keep_tool_outputs", "4")
        ]
    );
}

/// The contract checks of ctxhost-sdk-test: a valid sequence that keeps what the contract
/// protects, unchanged under the threshold, idempotent on its own output.
#[test]
fn the_engine_keeps_the_contract() {
    let mut with_tools = chat(10);
    for i in 0..8 {
        with_tools.extend(tool_turn(&[&format!("a{i}"), &format!("b{i}")], 600));
        with_tools.push(Message::user(format!("and then {i}?")));
    }
    let mut opens_with_a_reply = chat(30);
    opens_with_a_reply.remove(1);
    let report = EngineCheck::new("window", WindowEngine::create)
        .context_length(2000)
        .conversation("chat", chat(30))
        .conversation("tool turns", with_tools)
        .conversation("no first ask", opens_with_a_reply)
        .conversation("short", chat(1))
        .run()
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!((report.conversations, report.shrunk), (4, 3));
    // The window engine has no `select_context`: nothing selected, nothing failed.
    assert_eq!(report.selected, 0);

    // And the check can fail: a window too small for the conversation to be under it.
    let failure = EngineCheck::new("window", WindowEngine::create)
        .config(json!({"threshold": 0.1, "tail_ratio": 0.05}))
        .conversation("chat", chat(30))
        .run()
        .unwrap_err();
    assert_eq!(failure.check, Check::UnchangedUnderThreshold);
}
