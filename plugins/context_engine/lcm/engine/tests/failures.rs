//! When things go wrong: summarizer failures, a hung summarizer, a damaged or locked store.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use common::*;
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, ErrorKind};
use ctxhost_sdk_test::{digest, Answer, FakeHost};
use serde_json::{json, Value};

fn over_threshold(
    engine: &mut ctxhost_engine_lcm::LcmEngine,
) -> (Vec<ctxhost_sdk::Message>, Vec<ctxhost_sdk::Message>, Value) {
    let history = tool_chat(30, 400);
    let out = engine
        .compress(&history, &CompressOptions::default())
        .unwrap();
    sequence::validate(&out).unwrap();
    let report = engine.invoke("last_compaction", &Value::Null).unwrap();
    (history, out, report)
}

#[test]
fn summarizer_failures_escalate_to_truncation_and_still_make_progress() {
    for script in [Script::Fail, Script::Empty, Script::Oversized] {
        let host = host(script.clone(), small_config(), SMALL_WINDOW);
        let mut engine = engine(&host);
        let (history, out, report) = over_threshold(&mut engine);
        assert_eq!(report["escalation_level"], json!(2), "{script:?}: {report}");
        assert_eq!(report["summarizer"], json!("truncation"), "{script:?}");
        let leaves = report["leaf_summaries"].as_u64().unwrap();
        assert!(leaves > 0, "{script:?}");
        // An unusable answer gets a second, aggressive attempt per summary before truncating;
        // an error is not asked again: the host's own ladder already fell back and failed.
        let summaries = leaves + report["condensed_summaries"].as_u64().unwrap();
        let attempts = match script {
            Script::Fail => 1,
            _ => 2,
        };
        assert_eq!(
            report["summarizer_calls"].as_u64().unwrap(),
            attempts * summaries,
            "{script:?}"
        );
        // The report counts what the host saw.
        assert_eq!(
            host.summarize_calls() as u64,
            attempts * summaries,
            "{script:?}"
        );
        assert!(!report["summarizer_failures"].as_array().unwrap().is_empty());
        assert!(tokens(&out) < tokens(&history), "{script:?}");
        assert!(
            recover(&mut engine, &out, 1000) == values(&history),
            "{script:?}"
        );
        let id = out.iter().find_map(block_id).unwrap();
        let described = tool(&mut engine, "lcm_describe", json!({"id": id}));
        assert_eq!(described["escalation"], json!(2));
        assert!(
            described["text"].as_str().unwrap().contains("truncated"),
            "{described}"
        );
    }
}

#[test]
fn an_unusable_normal_answer_escalates_to_aggressive() {
    let host = host(Script::Good, small_config(), SMALL_WINDOW);
    host.push_answer(ctxhost_sdk_test::Answer::text("   "));
    let mut engine = engine(&host);
    let (_, _, report) = over_threshold(&mut engine);
    assert_eq!(report["escalation_level"], json!(1), "{report}");
    assert_eq!(report["summarizer"], json!("fake"));
}

#[test]
fn a_summarizer_error_truncates_that_summary_and_the_next_asks_again() {
    let host = host(Script::FailThenGood, small_config(), SMALL_WINDOW);
    let mut engine = engine(&host);
    let (_, _, report) = over_threshold(&mut engine);
    assert_eq!(report["escalation_level"], json!(2), "{report}");
    // The failed summary was truncated without a second call; the next one was written.
    assert_eq!(report["summarizer"], json!("fake"), "{report}");
    let summaries = report["leaf_summaries"].as_u64().unwrap()
        + report["condensed_summaries"].as_u64().unwrap();
    assert_eq!(host.summarize_calls() as u64, summaries, "{report}");
}

#[test]
fn a_hung_summarizer_never_holds_compaction_past_its_deadline() {
    let mut config = small_config();
    config["deadline_ms"] = json!(300);
    config["summarizer_timeout_ms"] = json!(60_000);
    // A summarizer that answers only when the test lets it (the bound on its wait only keeps a
    // broken engine from hanging the test): compaction must come back while it is still held.
    let (release, held) = mpsc::channel::<()>();
    let held = Mutex::new(held);
    let asked = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let hung = {
        let (asked, answered) = (asked.clone(), answered.clone());
        Answer::with(move |request| {
            asked.fetch_add(1, Ordering::SeqCst);
            let _ = held.lock().unwrap().recv_timeout(Duration::from_secs(60));
            answered.fetch_add(1, Ordering::SeqCst);
            Ok(digest(request))
        })
    };
    let host = FakeHost::builder("lcm")
        .config(with_store(config, None))
        .context_length(SMALL_WINDOW)
        .default_answer(hung)
        .build();
    let mut engine = engine(&host);
    let history = tool_chat(30, 400);
    let out = engine
        .compress(&history, &CompressOptions::default())
        .unwrap();
    assert!(
        asked.load(Ordering::SeqCst) >= 1,
        "the summarizer was asked"
    );
    assert_eq!(
        answered.load(Ordering::SeqCst),
        0,
        "compaction came back while the summarizer was still held"
    );
    let report = engine.invoke("last_compaction", &Value::Null).unwrap();
    assert_eq!(report["escalation_level"], json!(2), "{report}");
    assert!(
        report["passes"].as_u64().unwrap() >= 1,
        "progress despite the hang"
    );
    assert!(tokens(&out) < tokens(&history));
    sequence::validate(&out).unwrap();
    // Let the held calls end before the engine goes.
    drop(release);
}

#[test]
fn a_per_call_timeout_cuts_a_slow_summarizer_off() {
    let mut config = small_config();
    config["summarizer_timeout_ms"] = json!(50);
    let slow = Script::Slow(Duration::from_secs(5));
    let mut engine = engine(&host(slow, config, SMALL_WINDOW));
    let (_, _, report) = over_threshold(&mut engine);
    assert_eq!(report["escalation_level"], json!(2), "{report}");
    let failures = report["summarizer_failures"].as_array().unwrap();
    assert!(
        failures[0].as_str().unwrap().contains("no answer within"),
        "{report}"
    );
}

#[test]
fn a_corrupted_database_is_an_error_naming_the_file() {
    let host = host(Script::Good, json!({}), SMALL_WINDOW);
    std::fs::write(host.data_dir().join("lcm.sqlite"), vec![0x5a; 8192]).unwrap();
    let mut engine = try_engine(&host).expect("the engine stays up to diagnose its store");
    let error = engine
        .compress(&tool_chat(3, 100), &CompressOptions::default())
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Failed);
    assert!(error.message().contains("lcm.sqlite"), "{error}");
    assert!(error.message().contains("not a database"), "{error}");
}

#[test]
fn a_store_damaged_while_open_gives_errors_not_panics() {
    let host = small_host();
    let mut engine = engine(&host);
    let history = tool_chat(30, 400);
    engine
        .compress(&history, &CompressOptions::default())
        .unwrap();
    {
        // A message row whose JSON no longer parses, and a context item pointing nowhere.
        let conn = rusqlite::Connection::open(host.data_dir().join("lcm.sqlite")).unwrap();
        conn.execute_batch(
            "UPDATE lcm_messages SET json = '{broken' WHERE seq = (SELECT max(seq) FROM lcm_messages); \
             INSERT INTO lcm_context_items(conversation_id, position, message_id) VALUES (1, 999999, 424242);",
        )
        .unwrap();
    }
    let doctor = engine.invoke("doctor", &Value::Null).unwrap();
    assert_eq!(doctor["ok"], json!(false));
    let checks: Vec<&str> = doctor["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["check"].as_str().unwrap())
        .collect();
    assert!(checks.contains(&"dangling_context_items"), "{doctor}");
    assert!(checks.contains(&"checksum_mismatch"), "{doctor}");
    let error = engine
        .compress(&history, &CompressOptions::default())
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Failed);
    assert!(error.message().contains("lcm.sqlite"), "{error}");
}

#[test]
fn a_locked_database_is_an_error_naming_the_file() {
    let mut config = small_config();
    config["busy_timeout_ms"] = json!(100);
    let host = host(Script::Good, config, SMALL_WINDOW);
    let mut engine = engine(&host);
    let locker = rusqlite::Connection::open(host.data_dir().join("lcm.sqlite")).unwrap();
    locker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let error = engine
        .compress(&tool_chat(3, 10), &CompressOptions::default())
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Failed);
    assert!(error.message().contains("lcm.sqlite"), "{error}");
    assert!(error.message().contains("locked"), "{error}");
    locker.execute_batch("ROLLBACK").unwrap();
    // Once the lock is gone, the engine carries on.
    engine
        .compress(&tool_chat(3, 10), &CompressOptions::default())
        .unwrap();
}
