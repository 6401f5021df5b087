//! The contract operations the host calls around compression: the typed report of the last
//! compression, and checking settings without side effects (`ctxhost config set`).

mod common;

use ctxhost_sdk_test::contract;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{chat, engine};
use ctxhost_engine_window::WindowEngine;
use ctxhost_plugin_host::load_library;
use ctxhost_sdk::{
    CompressOptions, ContextEngine, EnginePlugin, EngineSetup, Escalation, HostBackend,
    HostServices, ModelInfo,
};
use serde_json::{json, Value};

fn setup(data_dir: &Path, config: Value) -> EngineSetup {
    EngineSetup {
        engine: "window".to_string(),
        data_dir: data_dir.to_path_buf(),
        config,
        model: ModelInfo {
            name: "test-model".to_string(),
            context_length: 2000,
        },
    }
}

#[test]
fn validate_settings_names_the_key_and_creates_nothing() {
    // A directory nobody creates: the engine has no reason to, least of all when checking.
    let data = std::env::temp_dir().join(format!("ctxhost-window-validate-{}", std::process::id()));
    assert!(!data.exists());
    let check = |config: Value| {
        WindowEngine::validate_settings(&HostServices::new(
            ctxhost_sdk_test::FakeHost::new("window").backend(),
            setup(&data, config),
        ))
    };
    let error = check(json!({"threshold": 1.7})).unwrap_err();
    assert_eq!(contract::setting_key(&error), "threshold");
    assert_eq!(
        error.setting().unwrap().problem,
        "must be between 0 and 1, got 1.7"
    );
    let error = check(json!({"threshold": 0.5, "tail_ratio": 0.6})).unwrap_err();
    assert_eq!(contract::setting_key(&error), "tail_ratio");
    assert_eq!(
        error.setting().unwrap().problem,
        "must be below threshold (0.5), got 0.6"
    );
    let error = check(json!({"min_tail_messages": 0})).unwrap_err();
    assert_eq!(contract::setting_key(&error), "min_tail_messages");
    let error = check(json!({"tail_ratio": "lots"})).unwrap_err();
    assert_eq!(contract::setting_key(&error), "tail_ratio");
    let error = check(json!({"treshold": 0.8})).unwrap_err();
    assert_eq!(contract::setting_key(&error), "treshold");

    check(json!({"threshold": 0.7})).unwrap();
    check(Value::Null).unwrap();
    assert!(
        !data.exists(),
        "checking settings created {}",
        data.display()
    );
}

#[test]
fn last_compression_reports_what_the_last_call_did() {
    let mut engine = engine(Value::Null, 2000);
    assert_eq!(engine.last_compression().unwrap(), None, "none yet");

    // Under the threshold: nothing changes, and the report says so.
    let short = chat(2);
    assert_eq!(
        engine
            .compress(&short, &CompressOptions::default())
            .unwrap(),
        short
    );
    let report = engine.last_compression().unwrap().unwrap();
    assert_eq!(report.tokens_before, report.tokens_after);
    assert_eq!(report.messages_before, short.len() as u64);
    assert_eq!(report.messages_after, short.len() as u64);

    let long = chat(30);
    let out = engine.compress(&long, &CompressOptions::default()).unwrap();
    assert!(out.len() < long.len());
    let report = engine.last_compression().unwrap().unwrap();
    assert!(report.tokens_before > report.tokens_after, "{report:?}");
    assert_eq!(report.messages_before, long.len() as u64);
    assert_eq!(report.messages_after, out.len() as u64);
    assert_eq!(report.escalation, Escalation::Normal);
    assert_eq!(
        report.summarizer, None,
        "the window engine writes no summary"
    );
    assert_eq!(report.summarizer_calls, 0);
    assert!(
        report.details["dropped_messages_in_all"].as_u64().unwrap() > 0,
        "{report:?}"
    );

    engine.on_session_reset().unwrap();
    assert_eq!(engine.last_compression().unwrap(), None);
}

fn library_path() -> PathBuf {
    ctxhost_sdk_test::built_library("ctxhost_engine_window")
}

#[test]
fn the_operations_cross_the_plugin_boundary_typed() {
    let library = load_library(&library_path()).unwrap_or_else(|e| panic!("{}", e.summary()));
    let home = std::env::temp_dir();
    let backend =
        || -> Arc<dyn HostBackend> { ctxhost_sdk_test::FakeHost::new("window").backend() };
    let error = library
        .validate_settings(backend(), setup(&home, json!({"tail_ratio": 0})))
        .unwrap_err();
    assert_eq!(contract::setting_key(&error), "tail_ratio");
    library
        .validate_settings(backend(), setup(&home, json!({"threshold": 0.7})))
        .unwrap();

    let mut engine = library
        .instantiate(backend(), setup(&home, Value::Null))
        .unwrap();
    assert_eq!(engine.last_compression().unwrap(), None);
    let long = chat(30);
    let out = engine.compress(&long, &CompressOptions::default()).unwrap();
    let report = engine.last_compression().unwrap().unwrap();
    assert!(report.tokens_before > report.tokens_after);
    assert_eq!(report.messages_after, out.len() as u64);
    assert!(
        engine.sessions().unwrap_err().is_unsupported(),
        "the window engine keeps no sessions"
    );
}
