//! Nothing is lost: the real SWE-agent transcripts of the shared corpus, replayed through the
//! engine with a small window so compaction runs many times, come back byte for byte.

#[path = "common/mod.rs"]
mod common;

use common::*;
use ctxhost_sdk::{sequence, ContextEngine, Message, SessionStart};
use ctxhost_sdk_test::corpus;
use serde_json::{json, Value};

fn start(engine: &mut impl ContextEngine, session: &str) {
    engine
        .on_session_start(&SessionStart {
            session_id: session.to_string(),
            model: None,
            context_length: None,
        })
        .unwrap();
}

/// Every marker is found exactly once among messages, at the message that carries it.
fn check_markers(
    engine: &mut ctxhost_engine_lcm::LcmEngine,
    planted: &[(String, usize)],
    seq_of: impl Fn(usize) -> i64,
) {
    for (marker, index) in planted {
        let answer = tool(
            engine,
            "lcm_grep",
            json!({"pattern": marker, "scope": "messages"}),
        );
        let matches = answer["matches"].as_array().unwrap();
        assert_eq!(matches.len(), 1, "{marker}: {answer}");
        assert_eq!(matches[0]["seq"], json!(seq_of(*index)), "{marker}");
        assert!(matches[0]["snippet"]
            .as_str()
            .unwrap()
            .contains(marker.as_str()));
    }
}

#[test]
fn every_transcript_is_recoverable_byte_for_byte() {
    let transcripts = transcripts();
    let mut engine = small_engine();
    let mut compactions = 0;
    for (number, (name, mut messages)) in transcripts.into_iter().enumerate() {
        let planted = plant_markers(&mut messages, &number.to_string(), 5);
        start(&mut engine, &name);
        let context = replay(&mut engine, Vec::new(), &messages);
        sequence::validate(&context).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The last messages arrived after the last compress: hand them over, as a host does at
        // the end of a session.
        engine.on_session_end(&name, &context).unwrap();

        let recovered = recover(&mut engine, &context, 700);
        assert_eq!(recovered.len(), messages.len(), "{name}");
        assert!(
            recovered == values(&messages),
            "{name}: recovered messages differ"
        );

        let status = engine.invoke("status", &Value::Null).unwrap();
        assert_eq!(
            status["messages"],
            json!(messages.len()),
            "{name}: {status}"
        );
        compactions += status["compactions"].as_u64().unwrap();
        // Sequence numbers follow the transcript: the head is stored first, at 0.
        check_markers(&mut engine, &planted, |index| index as i64);
    }
    assert!(compactions > 20, "compaction ran only {compactions} times");
}

#[test]
fn a_long_session_builds_a_deep_dag_and_loses_nothing() {
    // One session: the first system prompt, then every transcript's turns in a row.
    let mut messages = corpus::long_session();
    let planted = plant_markers(&mut messages, "long", 7);
    sequence::validate(&messages).unwrap();

    let mut engine = small_engine();
    start(&mut engine, "long");
    let context = replay(&mut engine, Vec::new(), &messages);
    engine.on_session_end("long", &context).unwrap();
    let recovered = recover(&mut engine, &context, 2_000);
    assert!(recovered == values(&messages), "recovered messages differ");

    let status = engine.invoke("status", &Value::Null).unwrap();
    assert_eq!(status["messages"], json!(messages.len()));
    let depths = status["summaries_by_depth"].as_object().unwrap();
    assert!(depths.contains_key("2"), "no depth-2 summary: {status}");
    // The model's view stays far smaller than the session.
    assert!(
        tokens(&context) < tokens(&messages) / 5,
        "{} vs {}",
        tokens(&context),
        tokens(&messages)
    );

    check_markers(&mut engine, &planted, |index| index as i64);
    // Regex mode finds them too, newest first.
    let answer = tool(
        &mut engine,
        "lcm_grep",
        json!({"pattern": "zqmarklongx\\d+", "mode": "regex", "scope": "messages", "limit": 200}),
    );
    assert_eq!(
        answer["returned"],
        json!(planted.len().min(200)),
        "{answer}"
    );
    let seqs: Vec<i64> = answer["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_i64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] > w[1]), "recency order");

    let doctor = engine.invoke("doctor", &Value::Null).unwrap();
    assert_eq!(doctor["ok"], json!(true), "{doctor}");
}

/// The long session (every transcript's turns in a row) replayed in a 4K window, where the
/// corpus' system prompt alone takes about 40% of the window: after every compaction the view
/// holds at most `max_summary_blocks` summary blocks, the DAG stays shallow (no chain one level
/// deeper per call), and every message is recoverable.
fn replay_in_a_tiny_window(config: Value, max_blocks: usize) {
    let messages = corpus::long_session();
    let mut engine = engine(&host(Script::Good, config, 4096));
    let threshold = engine.status().unwrap().threshold_tokens;
    let mut context: Vec<Message> = Vec::new();
    let mut compactions = 0;
    for message in &messages {
        if message.is_assistant() && tokens(&context) >= threshold {
            let options = ctxhost_sdk::CompressOptions {
                current_tokens: Some(tokens(&context)),
                ..Default::default()
            };
            context = engine.compress(&context, &options).unwrap();
            compactions += 1;
            let blocks = context.iter().filter_map(block_id).count();
            assert!(
                blocks <= max_blocks,
                "{blocks} summary blocks after compaction {compactions}"
            );
        }
        context.push(message.clone());
    }
    assert!(compactions > 100, "only {compactions} compactions");
    engine.on_session_end("default", &context).unwrap();
    let status = engine.invoke("status", &Value::Null).unwrap();
    let deepest = status["summaries_by_depth"]
        .as_object()
        .unwrap()
        .keys()
        .map(|depth| depth.parse::<u32>().unwrap())
        .max()
        .unwrap();
    assert!(
        deepest <= 10,
        "a chain of summaries: depth {deepest}: {status}"
    );
    assert!(recover(&mut engine, &context, 2_000) == values(&messages));
    let doctor = engine.invoke("doctor", &Value::Null).unwrap();
    assert_eq!(doctor["ok"], json!(true), "{doctor}");
}

#[test]
fn a_tiny_window_keeps_few_summary_blocks_and_a_shallow_dag() {
    replay_in_a_tiny_window(json!({}), 8);
}

#[test]
fn the_summary_block_limit_holds_in_a_tiny_window() {
    let mut config = small_config();
    config["max_summary_blocks"] = json!(3);
    replay_in_a_tiny_window(config, 3);
}
