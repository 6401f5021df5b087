//! The engine as the host sees it: the real cdylib, loaded through the stable ABI.

mod common;

use std::path::PathBuf;

use common::*;
use ctxhost_sdk::abi::load_library;
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, ErrorKind};
use serde_json::{json, Value};

/// The cdylib cargo built for this test run: next to the test binary (in `deps/`), or one
/// level up where `cargo build` puts it.
fn library() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let name = format!(
        "{}ctxhost_engine_lcm{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let deps = exe.parent()?;
    [deps.join(&name), deps.parent()?.join(&name)]
        .into_iter()
        .find(|p| p.exists())
}

#[test]
fn the_cdylib_loads_compresses_and_answers_tools() {
    let path = library().expect("the lcm cdylib is built beside the test binary");
    let library =
        load_library(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.summary()));
    assert_eq!(library.manifest().name, "lcm");
    assert!(library
        .manifest()
        .capabilities
        .contains(&"tools".to_string()));

    let dir = tempfile::tempdir().unwrap();
    let mut engine = library
        .instantiate(
            FakeBackend::new(Script::Good),
            setup(dir.path(), small_config(), SMALL_WINDOW),
        )
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
    assert_eq!(answer["messages"][0]["message"], history[1].to_value());
    let status = engine.invoke("status", &Value::Null).unwrap();
    assert_eq!(status["messages"], json!(history.len()));
    assert!(engine
        .invoke("no_such_op", &Value::Null)
        .unwrap_err()
        .is_unsupported());
}

#[test]
fn a_corrupted_store_fails_to_instantiate_with_one_clear_error() {
    let Some(path) = library() else {
        return;
    };
    let library = load_library(&path).unwrap_or_else(|e| panic!("{}", e.summary()));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lcm.sqlite"),
        b"this is not a database, at all; really not",
    )
    .unwrap();
    let error = library
        .instantiate(
            FakeBackend::new(Script::Good),
            setup(dir.path(), json!({}), SMALL_WINDOW),
        )
        .err()
        .expect("refused");
    assert_eq!(error.kind(), ErrorKind::Failed);
    assert!(error.message().contains("lcm.sqlite"), "{error}");
    assert!(!error.message().contains('\n'), "one line: {error}");
}
