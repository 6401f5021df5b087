//! The window engine over the real SWE-agent transcripts of the shared corpus.

mod common;

use common::*;
use ctxhost_engine_window::WindowEngine;
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, Message};
use ctxhost_sdk_test::{check_plugin, contract, corpus};
use serde_json::{json, Value};

const CONTEXT_LENGTH: u64 = 8000;

/// Every corpus transcript, by file name. A missing corpus fails the test, saying where it
/// looked and how to point at it (`CTXHOST_CORPUS`).
fn transcripts() -> Vec<(String, Vec<Message>)> {
    corpus::transcripts()
        .into_iter()
        .map(|t| (t.name, t.messages))
        .collect()
}

fn forced() -> CompressOptions {
    CompressOptions {
        force: true,
        ..CompressOptions::default()
    }
}

#[test]
fn every_transcript_compresses_to_a_valid_smaller_context() {
    let transcripts = transcripts();
    let mut shrunk = 0;
    for (name, messages) in transcripts {
        sequence::validate(&messages).unwrap_or_else(|e| panic!("{name} (input): {e}"));
        // A small window wants a small floor: some transcripts are 9 messages whose one tool
        // output alone is 6,000 tokens, and a floor of 6 would leave nothing to drop.
        let mut engine = engine(json!({"min_tail_messages": 2}), CONTEXT_LENGTH);
        let options = forced();
        let out = engine.compress(&messages, &options).unwrap();
        contract::check_output(&messages, &out).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(markers(&out) <= 1, "{name}");
        let (before, after) = (tokens(&messages), tokens(&out));
        if before > CONTEXT_LENGTH {
            if engine.has_content_to_compress(&messages).unwrap() {
                shrunk += 1;
                assert!(after < before, "{name}: {before} → {after} tokens");
            } else {
                // The protected head alone (system prompt plus a huge first ask) can fill the
                // window; the engine then has nothing it may drop, and says so.
                eprintln!("note: {name}: nothing to drop, {before} tokens kept as they were");
                assert_eq!(out, messages, "{name}");
            }
        }
        // And again, as a long session would: stable, still one marker.
        let again = engine.compress(&out, &options).unwrap();
        contract::check_output(&out, &again).unwrap_or_else(|e| panic!("{name} (again): {e}"));
        assert!(markers(&again) <= 1, "{name}");
        assert!(tokens(&again) <= after, "{name}");
    }
    assert!(
        shrunk > 0,
        "some transcripts must exceed the window and shrink"
    );
}

#[test]
fn with_default_settings_every_output_is_valid_and_never_larger() {
    let transcripts = transcripts();
    for (name, messages) in transcripts {
        let mut engine = engine(Value::Null, CONTEXT_LENGTH);
        let out = engine.compress(&messages, &forced()).unwrap();
        contract::check_output(&messages, &out).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            engine.has_content_to_compress(&messages).unwrap(),
            out != messages,
            "{name}: has_content_to_compress agrees with compress"
        );
    }
}

#[test]
fn the_engine_keeps_the_contract_on_the_corpus() {
    let report = check_plugin::<WindowEngine>().unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(report.conversations, transcripts().len());
    assert!(report.shrunk > 0, "{report:?}");
}

#[test]
fn the_long_session_shrinks_to_the_window_and_keeps_the_contract() {
    let session = corpus::long_session();
    let mut engine = engine(Value::Null, CONTEXT_LENGTH);
    let out = engine.compress(&session, &forced()).unwrap();
    contract::check_output(&session, &out).unwrap();
    assert!(tokens(&out) < tokens(&session) / 10);
    contract::check_idempotent(&mut engine, &out).unwrap();
}
