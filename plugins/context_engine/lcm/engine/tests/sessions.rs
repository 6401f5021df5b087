//! The contract operations the host calls around compression: listing and deleting sessions
//! (`ctxhost sessions`), the typed report of the last compression, and checking settings
//! without side effects (`ctxhost config set`).

#[path = "common/mod.rs"]
mod common;

use ctxhost_sdk_test::contract;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{on_postgres, plant_markers, small_config, tool, tool_chat, with_store, Script};
use ctxhost_engine_lcm::LcmEngine;
use ctxhost_plugin_host::load_library;
use ctxhost_sdk::{
    sequence, CompressOptions, ContextEngine, EnginePlugin, Escalation, HostBackend, HostServices,
    Message, SessionInfo, SessionStart,
};
use ctxhost_sdk_test::FakeHost;
use serde_json::{json, Value};

/// A window small enough for [`history`] to be compacted by a plain `compress`, down to
/// condensed summaries.
const WINDOW: u64 = 4000;

fn host(dir: &Path, script: Script, config: Value) -> FakeHost {
    FakeHost::builder("lcm")
        .config(with_store(config, Some(dir)))
        .context_length(WINDOW)
        .data_dir(dir)
        .default_answer(script.answer())
        .build()
}

fn services(dir: &Path, script: Script, config: Value) -> HostServices {
    host(dir, script, config).services()
}

fn setup(dir: &Path, config: Value) -> ctxhost_sdk::EngineSetup {
    host(dir, Script::Good, config).setup().clone()
}

fn engine(dir: &Path, script: Script) -> LcmEngine {
    LcmEngine::create(services(dir, script, small_config())).expect("engine starts")
}

fn start(engine: &mut dyn ContextEngine, session: &str) {
    engine
        .on_session_start(&SessionStart {
            session_id: session.to_string(),
            ..SessionStart::default()
        })
        .unwrap();
}

/// A conversation long enough to be compacted, with `zqmark<tag>x<index>` in every fifth
/// message.
fn history(tag: &str) -> Vec<Message> {
    let mut messages = tool_chat(80, 400);
    assert!(!plant_markers(&mut messages, tag, 5).is_empty());
    messages
}

/// Stores `messages` for `session` and compacts them (they are over the threshold).
fn converse(engine: &mut dyn ContextEngine, session: &str, messages: &[Message]) -> Vec<Message> {
    start(engine, session);
    let out = engine
        .compress(messages, &CompressOptions::default())
        .unwrap();
    sequence::validate(&out).unwrap();
    assert!(out.len() < messages.len(), "{session} was compacted");
    out
}

/// What `lcm_grep` finds in the current session: the messages holding the markers of `tag`,
/// then the summaries (the fake summarizer starts each with `summary:`).
fn grep(engine: &mut LcmEngine, tag: &str) -> Vec<Value> {
    let mut found = Vec::new();
    for args in [
        json!({"pattern": format!("zqmark{tag}x"), "mode": "regex", "scope": "messages"}),
        json!({"pattern": "summary", "scope": "summaries"}),
    ] {
        let mut args = args;
        args["limit"] = json!(200);
        let answer = tool(engine, "lcm_grep", args);
        assert_eq!(
            answer["next_offset"],
            Value::Null,
            "one page holds them all"
        );
        found.extend(answer["matches"].as_array().unwrap().iter().cloned());
    }
    found
}

fn summaries(info: &SessionInfo) -> u64 {
    info.details["summaries"].as_u64().unwrap()
}

#[test]
fn sessions_are_listed_with_what_each_holds() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), Script::Good);
    let (alpha, beta) = (history("a"), tool_chat(12, 400));
    converse(&mut engine, "alpha", &alpha);
    start(&mut engine, "beta");
    engine.compress(&beta, &CompressOptions::default()).unwrap();

    let listed = engine.sessions().unwrap();
    // The default session the engine opened at start holds nothing, so it is not listed.
    let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["alpha", "beta"]);
    assert_eq!(listed[0].messages, alpha.len() as u64);
    assert_eq!(listed[1].messages, beta.len() as u64);
    assert!(summaries(&listed[0]) > 0, "{:?}", listed[0]);
    assert_eq!(summaries(&listed[1]), 0, "beta stayed under the threshold");
    for info in &listed {
        assert!(info.context_tokens.unwrap() > 0, "{info:?}");
        let updated = info.updated.as_deref().unwrap();
        assert!(
            updated.len() == 24 && updated.ends_with('Z') && updated.as_bytes()[10] == b'T',
            "RFC 3339 in UTC: {updated}"
        );
    }
    assert_eq!(engine.session("alpha").unwrap().as_ref(), Some(&listed[0]));
    assert_eq!(engine.session("gamma").unwrap(), None);
    assert_eq!(engine.session("default").unwrap(), None);
}

#[test]
fn deleting_a_session_removes_all_of_it_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), Script::Good);
    converse(&mut engine, "alpha", &history("a"));
    let alpha = engine.session("alpha").unwrap().unwrap();
    assert!(
        alpha.details["max_depth"].as_u64().unwrap() >= 1,
        "{alpha:?}"
    );
    let alpha_hits = grep(&mut engine, "a");
    assert!(alpha_hits.iter().any(|hit| hit["type"] == "summary"));
    assert!(alpha_hits.iter().any(|hit| hit["type"] == "message"));
    let beta_view = converse(&mut engine, "beta", &history("b"));
    let beta_before = engine.session("beta").unwrap().unwrap();
    let beta_hits = grep(&mut engine, "b");
    assert!(beta_hits.iter().any(|hit| hit["type"] == "summary"));
    assert!(beta_hits.iter().any(|hit| hit["type"] == "message"));

    assert!(engine.delete_session("alpha").unwrap());
    assert!(
        !engine.delete_session("alpha").unwrap(),
        "nothing left to delete"
    );

    // Beta is untouched: same counts, context and summaries, same search results.
    assert_eq!(engine.sessions().unwrap(), [beta_before]);
    assert_eq!(grep(&mut engine, "b"), beta_hits);
    let id = beta_view
        .iter()
        .find_map(common::block_id)
        .expect("a summary block");
    let described = tool(&mut engine, "lcm_describe", json!({"id": id}));
    assert!(described.get("error").is_none(), "{described}");
    // No row left behind: links, context items and both full-text indexes agree with their
    // tables.
    let doctor = engine.invoke("doctor", &Value::Null).unwrap();
    assert_eq!(doctor["ok"], json!(true), "{doctor}");

    // Alpha, started again, is a new and empty session.
    start(&mut engine, "alpha");
    assert_eq!(grep(&mut engine, "a"), Vec::<Value>::new());
    assert_eq!(engine.session("alpha").unwrap(), None);
}

#[test]
fn deleting_the_current_session_lets_the_engine_go_on_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), Script::Good);
    converse(&mut engine, "alpha", &history("a"));
    assert!(engine.delete_session("alpha").unwrap());
    assert_eq!(engine.last_compression().unwrap(), None);
    let next = vec![Message::system("You are terse."), Message::user("hello")];
    let out = engine.compress(&next, &CompressOptions::default()).unwrap();
    assert_eq!(out, next);
    assert_eq!(engine.session("alpha").unwrap().unwrap().messages, 2);
}

#[test]
fn last_compression_reports_tokens_messages_and_escalation() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), Script::Good);
    assert_eq!(engine.last_compression().unwrap(), None, "none yet");
    let messages = history("a");
    let out = converse(&mut engine, "alpha", &messages);
    let report = engine.last_compression().unwrap().expect("a report");
    assert!(report.tokens_before > report.tokens_after, "{report:?}");
    assert_eq!(report.messages_before, messages.len() as u64);
    assert_eq!(report.messages_after, out.len() as u64);
    assert_eq!(report.escalation, Escalation::Normal);
    assert_eq!(report.summarizer.as_deref(), Some("fake"));
    assert!(report.summarizer_calls > 0);
    assert_eq!(report.fallback_reason, None);
    assert!(report.details["passes"].as_u64().unwrap() > 0, "{report:?}");
    assert_eq!(report.details["stopped"], json!("under_target"));
    // The engine's own op still answers for `ctxhost engine last_compaction`.
    let legacy = engine.invoke("last_compaction", &Value::Null).unwrap();
    assert_eq!(legacy["tokens_after"], json!(report.tokens_after));
    drop(engine);

    // After a restart the stored report answers, until the next compression.
    let mut again = self::engine(dir.path(), Script::Good);
    start(&mut again, "alpha");
    let stored = again
        .last_compression()
        .unwrap()
        .expect("the stored report");
    assert_eq!(
        (stored.tokens_before, stored.tokens_after),
        (report.tokens_before, report.tokens_after)
    );
    assert_eq!(stored.escalation, Escalation::Normal);
}

#[test]
fn a_failing_summarizer_is_reported_as_the_deterministic_level_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), Script::Fail);
    converse(&mut engine, "alpha", &history("a"));
    let report = engine.last_compression().unwrap().unwrap();
    assert_eq!(report.escalation, Escalation::Deterministic);
    assert_eq!(report.summarizer.as_deref(), Some("truncation"));
    let reason = report
        .fallback_reason
        .expect("why the summarizer was not used");
    assert!(reason.contains("HTTP 500"), "{reason}");
    assert!(report.tokens_before > report.tokens_after);
}

#[test]
fn validate_settings_checks_like_create_without_creating_anything() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data").join("lcm");
    let check =
        |config: Value| LcmEngine::validate_settings(&services(&data, Script::Good, config));

    let error = check(json!({"threshold": 1.7})).unwrap_err();
    assert_eq!(contract::setting_key(&error), "threshold");
    assert_eq!(
        error.setting().unwrap().problem,
        "must be between 0 and 1, got 1.7"
    );
    let error = check(json!({"treshold": 0.7})).unwrap_err();
    assert_eq!(contract::setting_key(&error), "treshold");
    let error = check(json!({"deadline_ms": "soon"})).unwrap_err();
    assert_eq!(contract::setting_key(&error), "deadline_ms");

    check(json!({"threshold": 0.7})).unwrap();
    check(Value::Null).unwrap();
    assert!(
        !data.exists(),
        "checking settings created {}",
        data.display()
    );

    // The same settings through `create` do open the store: the check above is not vacuous.
    let error = LcmEngine::create(services(&data, Script::Good, json!({"threshold": 1.7})))
        .err()
        .expect("create refuses the same bad setting");
    assert_eq!(contract::setting_key(&error), "threshold");
    let mut created =
        LcmEngine::create(services(&data, Script::Good, json!({"threshold": 0.7}))).unwrap();
    if on_postgres() {
        let status = created.invoke("status", &Value::Null).unwrap();
        assert_eq!(status["backend"], json!("postgres"), "{status}");
        assert_eq!(
            status["schema_version"], status["schema_latest"],
            "{status}"
        );
    } else {
        assert!(data.join(ctxhost_engine_lcm::DATABASE_FILE).exists());
    }
}

fn library_path() -> PathBuf {
    ctxhost_sdk_test::built_library("ctxhost_engine_lcm")
}

#[test]
fn the_operations_cross_the_plugin_boundary_typed() {
    let library = load_library(&library_path()).unwrap_or_else(|e| panic!("{}", e.summary()));
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("lcm");
    let backend = || -> Arc<dyn HostBackend> { host(&data, Script::Good, Value::Null).backend() };

    let error = library
        .validate_settings(backend(), setup(&data, json!({"threshold": 1.7})))
        .unwrap_err();
    assert_eq!(contract::setting_key(&error), "threshold");
    library
        .validate_settings(backend(), setup(&data, small_config()))
        .unwrap();
    assert!(
        !data.exists(),
        "checking settings created {}",
        data.display()
    );

    let mut engine = library
        .instantiate(backend(), setup(&data, small_config()))
        .unwrap();
    assert_eq!(engine.last_compression().unwrap(), None);
    let alpha = history("a");
    converse(&mut engine, "alpha", &alpha);
    converse(&mut engine, "beta", &history("b"));
    let report = engine.last_compression().unwrap().expect("a report");
    assert!(report.tokens_before > report.tokens_after);

    let listed = engine.sessions().unwrap();
    let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["alpha", "beta"]);
    assert_eq!(
        engine.session("alpha").unwrap().unwrap().messages,
        alpha.len() as u64
    );
    assert_eq!(engine.session("gamma").unwrap(), None);
    assert!(engine.delete_session("alpha").unwrap());
    assert_eq!(engine.sessions().unwrap(), listed[1..]);
}
