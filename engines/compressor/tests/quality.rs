//! The compressor under the quality harness of ctxhost-quality, on ctxhost-sdk-test's fake
//! host: five compactions in a row at a fixed budget, which it meets with its own sizing
//! (`CompressOptions::target_tokens`), not the window's.

mod common;

use common::compressor;
use ctxhost_quality::{Budget, Settings};
use ctxhost_sdk_test::EngineSubject;
use ctxhost_sdk_test::FakeHost;
use serde_json::Value;

fn run(budget: Budget) -> ctxhost_quality::QualityReport {
    // The fake host's summarizer digests what it is given within the tokens asked for.
    let host = FakeHost::builder("compressor").build();
    let mut subject = EngineSubject::new(compressor(&host, 128_000, Value::Null));
    let settings = Settings {
        budget,
        rounds: 5,
        seed: 3,
    };
    ctxhost_quality::run(
        &mut subject,
        &ctxhost_quality::generated_session(3, 120),
        &settings,
    )
    .unwrap()
}

#[test]
fn five_rounds_fit_the_budget_whatever_the_window() {
    for budget in [
        Budget::Share(30.0),
        Budget::Share(20.0),
        Budget::Tokens(700),
    ] {
        let report = run(budget);
        assert_eq!(
            report.outcome.budgets_met,
            5,
            "{budget}:\n{}",
            report.table()
        );
        for round in &report.rounds {
            assert!(round.error.is_none(), "{}", report.table());
            // Far under the window's threshold: the engine sized the output itself.
            assert!(
                round.output_tokens < round.input_tokens / 4,
                "{}",
                report.table()
            );
        }
    }
}

#[test]
fn no_tools_no_retrieval_score() {
    assert!(run(Budget::Share(20.0)).outcome.retrieval.is_none());
}

/// The newest user message followed by a long run of tool turns: the tail must hold them all,
/// so under a caller's size their older outputs are pruned as the middle's are.
#[test]
fn a_long_tool_run_after_the_newest_ask_is_pruned_to_fit_a_target() {
    use ctxhost_sdk::{CompressOptions, ContextEngine, Message, ToolCall};
    let mut messages = common::conversation(10);
    messages.pop();
    messages.push(Message::user("latest ask: run the whole suite"));
    for i in 0..12 {
        let id = format!("t{i}");
        messages.push(Message::assistant_tool_calls(vec![ToolCall::new(
            &id,
            "terminal",
            format!(r#"{{"command":"cargo test part{i}"}}"#),
        )]));
        messages.push(Message::tool_result(&id, format!("ok {i}\n").repeat(120)));
    }
    let count = ctxhost_sdk_test::tokens::count_messages;
    let host = FakeHost::builder("compressor").build();
    let mut engine = compressor(&host, 128_000, Value::Null);
    let target = count(&messages) / 4;
    let sized = CompressOptions {
        force: true,
        target_tokens: Some(target),
        ..CompressOptions::default()
    };
    let out = engine.compress(&messages, &sized).unwrap();
    assert!(count(&out) <= target, "{} > {target}", count(&out));
    ctxhost_sdk_test::contract::check_output(&messages, &out).unwrap();
    let pruned = |m: &[Message]| {
        m.iter()
            .filter(|m| m.content_text().starts_with("[tool output pruned]"))
            .count()
    };
    assert!(pruned(&out) >= 10, "the tail's older outputs: {out:?}");
    // The newest turn's output stays as it was.
    assert_eq!(out.last(), messages.last());
    // Without a target the tail is left alone.
    let mut engine = compressor(&host, 128_000, Value::Null);
    let forced = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    let out = engine.compress(&messages, &forced).unwrap();
    let tail = out
        .iter()
        .rposition(|m| m.content_text() == "latest ask: run the whole suite");
    assert_eq!(pruned(&out[tail.unwrap()..]), 0);
}

/// A summarizer that writes more than it was asked for (it counts tokens its own way) is asked
/// once more, for less, when the caller gave a size.
#[test]
fn an_oversized_summary_is_asked_for_again_shorter_under_a_target() {
    use ctxhost_sdk::{CompressOptions, ContextEngine, Summary};
    let count = ctxhost_sdk_test::tokens::count_messages;
    let host = FakeHost::builder("compressor")
        .default_answer(ctxhost_sdk_test::Answer::with(|request| {
            Ok(Summary {
                text: "word ".repeat(request.max_tokens as usize * 2),
                summarizer: "verbose".into(),
                ..Summary::default()
            })
        }))
        .build();
    let messages = common::conversation(30);
    let target = count(&messages) / 5;
    let mut engine = compressor(&host, 128_000, Value::Null);
    let sized = CompressOptions {
        force: true,
        target_tokens: Some(target),
        ..CompressOptions::default()
    };
    let out = engine.compress(&messages, &sized).unwrap();
    assert!(count(&out) <= target, "{} > {target}", count(&out));
    let requests = host.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].max_tokens < requests[0].max_tokens / 2);
}
