//! The engine as the host sees it: the real cdylib, loaded through the stable ABI.

mod common;

use std::path::PathBuf;

use common::*;
use ctxhost_plugin_host::load_library;
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, ErrorKind};
use serde_json::{json, Value};

fn library() -> PathBuf {
    ctxhost_sdk_test::built_library("ctxhost_engine_lcm")
}

#[test]
fn the_cdylib_loads_compresses_and_answers_tools() {
    let path = library();
    let library =
        load_library(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.summary()));
    assert_eq!(library.manifest().name, "lcm");
    assert!(library
        .manifest()
        .capabilities
        .contains(&"tools".to_string()));

    let host = small_host();
    let mut engine = library
        .instantiate(host.backend(), host.setup().clone())
        .unwrap();
    let history = tool_chat(30, 400);
    let out = engine
        .compress(&history, &CompressOptions::default())
        .unwrap();
    sequence::validate(&out).unwrap();
    assert!(out.len() < history.len());
    let id = out.iter().find_map(block_id).expect("a summary block");
    let answer: Value = serde_json::from_str(
        &engine
            .handle_tool_call("lcm_expand", &json!({"id": id, "max_tokens": 100_000}))
            .unwrap(),
    )
    .unwrap();
    assert!(answer["returned"].as_u64().unwrap() > 0);
    // The task is the newest user message: it stays in the view, and the first block begins
    // after it.
    assert!(out.contains(&history[1]));
    assert_eq!(answer["messages"][0]["message"], history[2].to_value());
    let status = engine.invoke("status", &Value::Null).unwrap();
    assert_eq!(status["messages"], json!(history.len()));
    assert!(engine
        .invoke("no_such_op", &Value::Null)
        .unwrap_err()
        .is_unsupported());
}

#[test]
fn a_corrupted_store_fails_every_call_with_one_clear_error_and_doctor_says_how_to_restore() {
    let path = library();
    let library = load_library(&path).unwrap_or_else(|e| panic!("{}", e.summary()));
    let host = host(Script::Good, json!({}), SMALL_WINDOW);
    std::fs::write(
        host.data_dir().join("lcm.sqlite"),
        b"this is not a database, at all; really not",
    )
    .unwrap();
    let mut engine = library
        .instantiate(host.backend(), host.setup().clone())
        .unwrap_or_else(|e| panic!("the engine stays up to diagnose its store: {e}"));
    let error = engine
        .compress(&tool_chat(3, 100), &CompressOptions::default())
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Failed);
    assert!(error.message().contains("lcm.sqlite"), "{error}");
    assert!(error.message().contains("ctxhost engine doctor"), "{error}");
    assert!(!error.message().contains('\n'), "one line: {error}");
    let doctor = engine.invoke("doctor", &Value::Null).unwrap();
    assert_eq!(doctor["ok"], json!(false), "{doctor}");
    assert_eq!(doctor["problems"][0]["check"], json!("open"), "{doctor}");
    let detail = doctor["problems"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("move") && detail.contains("backup"),
        "{detail}"
    );
}
