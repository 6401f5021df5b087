//! The window engine over the real SWE-agent transcripts of the shared corpus.

mod common;

use std::path::PathBuf;

use common::*;
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, Message};
use serde_json::{json, Value};

const CONTEXT_LENGTH: u64 = 8000;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../shared/corpus/swe-agent")
}

fn transcripts() -> Option<Vec<(String, Vec<Message>)>> {
    let dir = corpus_dir();
    // A missing corpus fails the test rather than passing it unexercised.
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|error| {
        panic!(
            "the shared corpus is missing ({}: {error}); it belongs beside the repository",
            dir.display()
        )
    });
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no transcripts in {}", dir.display());
    let transcripts = paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable transcript");
            let messages: Vec<Message> =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                messages,
            )
        })
        .collect();
    Some(transcripts)
}

fn forced() -> CompressOptions {
    CompressOptions {
        force: true,
        ..CompressOptions::default()
    }
}

#[test]
fn every_transcript_compresses_to_a_valid_smaller_context() {
    let Some(transcripts) = transcripts() else {
        return;
    };
    let mut shrunk = 0;
    for (name, messages) in transcripts {
        sequence::validate(&messages).unwrap_or_else(|e| panic!("{name} (input): {e}"));
        // A small window wants a small floor: some transcripts are 9 messages whose one tool
        // output alone is 6,000 tokens, and a floor of 6 would leave nothing to drop.
        let mut engine = engine(json!({"min_tail_messages": 2}), CONTEXT_LENGTH);
        let options = forced();
        let out = engine.compress(&messages, &options).unwrap();
        sequence::validate(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(out[0].is_system(), "{name}");
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
        sequence::validate(&again).unwrap_or_else(|e| panic!("{name} (again): {e}"));
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
    let Some(transcripts) = transcripts() else {
        return;
    };
    for (name, messages) in transcripts {
        let mut engine = engine(Value::Null, CONTEXT_LENGTH);
        let out = engine.compress(&messages, &forced()).unwrap();
        sequence::validate(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(tokens(&out) <= tokens(&messages), "{name}");
        assert_eq!(
            engine.has_content_to_compress(&messages).unwrap(),
            out != messages,
            "{name}: has_content_to_compress agrees with compress"
        );
    }
}
