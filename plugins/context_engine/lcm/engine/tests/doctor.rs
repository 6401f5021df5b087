//! `doctor` finds what is wrong with the store and repairs what can be repaired exactly; the
//! store's files are private to their owner.

mod common;

use std::path::Path;

use common::*;
use ctxhost_sdk::{CompressOptions, ContextEngine};
use serde_json::{json, Value};

fn doctor(engine: &mut ctxhost_engine_lcm::LcmEngine, args: Value) -> Value {
    engine.invoke("doctor", &args).unwrap()
}

fn checks(report: &Value) -> Vec<String> {
    report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["check"].as_str().unwrap().to_string())
        .collect()
}

fn sql(path: &Path, statements: &str) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(statements)
        .unwrap();
}

#[test]
fn a_duplicate_a_deleted_source_link_and_an_edited_message_are_found_and_repaired() {
    let host = small_host();
    let mut engine = engine(&host);
    let history = tool_chat(30, 400);
    let view = engine
        .compress(&history, &CompressOptions::default())
        .unwrap();
    assert_eq!(doctor(&mut engine, Value::Null)["ok"], json!(true));
    let backup = host.data_dir().join("before.sqlite");
    engine.invoke("backup", &json!({"path": backup})).unwrap();
    let db = host.data_dir().join("lcm.sqlite");

    // A message stored twice (the same content after the same message), a leaf that lost a
    // source link, and a message whose text was edited behind the engine's back.
    sql(
        &db,
        "INSERT INTO lcm_messages(conversation_id, seq, role, head, json, tokens, hash, prev_id, created_at) \
           SELECT conversation_id, (SELECT max(seq) + 1 FROM lcm_messages), role, head, json, tokens, hash, prev_id, created_at \
           FROM lcm_messages WHERE seq = 5; \
         DELETE FROM lcm_summary_messages WHERE (summary_id, ord) = \
           (SELECT summary_id, 1 FROM lcm_summaries s JOIN lcm_summary_messages sm ON sm.summary_id = s.id \
            WHERE s.kind = 'leaf' LIMIT 1); \
         UPDATE lcm_messages SET json = replace(json, 'output 2 ', 'output 2 EDITED ') WHERE seq = 7;",
    );
    let found = doctor(&mut engine, Value::Null);
    assert_eq!(found["ok"], json!(false), "{found}");
    let found_checks = checks(&found);
    for check in [
        "duplicate_messages",
        "missing_source_links",
        "checksum_mismatch",
    ] {
        assert!(found_checks.iter().any(|c| c == check), "{check}: {found}");
    }

    // Without the backup, the duplicate and the link are repaired; the edit cannot be undone.
    let applied = doctor(&mut engine, json!({"apply": true}));
    assert_eq!(checks(&applied), ["checksum_mismatch"], "{applied}");
    assert_eq!(applied["fixed"].as_array().unwrap().len(), 2, "{applied}");
    // With it, the edited text comes back, checked against its checksum.
    let restored = doctor(&mut engine, json!({"apply": true, "from_backup": backup}));
    assert_eq!(restored["ok"], json!(true), "{restored}");
    assert!(
        restored["fixed"][0].as_str().unwrap().contains("restored"),
        "{restored}"
    );
    assert_eq!(status(&mut engine)["messages"], json!(history.len()));
    // Nothing lost: the view still expands to the whole conversation.
    assert!(recover(&mut engine, &view, 1000) == values(&history));
}

#[test]
fn doctor_runs_on_a_truncated_database_and_says_how_to_restore_it() {
    let host = small_host();
    {
        let mut engine = engine(&host);
        engine
            .compress(&tool_chat(30, 400), &CompressOptions::default())
            .unwrap();
        engine.invoke("backup", &Value::Null).unwrap();
    }
    let db = host.data_dir().join("lcm.sqlite");
    let bytes = std::fs::read(&db).unwrap();
    std::fs::write(&db, &bytes[..bytes.len() / 3]).unwrap();
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    let mut engine = engine(&host);
    let report = doctor(&mut engine, Value::Null);
    assert_eq!(report["ok"], json!(false), "{report}");
    let detail = report["problems"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("backups"),
        "names the latest backup: {detail}"
    );
    assert!(detail.contains("move"), "{detail}");
}

#[cfg(unix)]
#[test]
fn the_database_its_log_and_its_backups_are_private_to_their_owner() {
    use std::os::unix::fs::PermissionsExt;
    // The umask most systems run with: files would be 0644 and directories 0755 by default.
    // SAFETY: umask only sets this process's file-creation mask.
    unsafe { libc::umask(0o022) };
    let host = small_host();
    let mut engine = engine(&host);
    engine
        .compress(&tool_chat(30, 400), &CompressOptions::default())
        .unwrap();
    let backup = engine.invoke("backup", &Value::Null).unwrap();
    let db = host.data_dir().join("lcm.sqlite");
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(Path::new(&format!("{}-wal", db.display()))), 0o600);
    let backup = Path::new(backup["path"].as_str().unwrap());
    assert_eq!(mode(backup), 0o600);
    assert_eq!(mode(backup.parent().unwrap()), 0o700);
    assert_eq!(mode(&host.data_dir().join("locks")), 0o700);
}

#[test]
fn a_version_4_store_from_the_previous_release_opens_and_migrates() {
    // Written by the release before exactly-once ingest: the first 90 messages of the example
    // session, replayed in a small window (session `v4-fixture`).
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lcm-v4.sqlite");
    let host = small_host();
    std::fs::copy(&fixture, host.data_dir().join("lcm.sqlite")).unwrap();
    let mut engine = engine(&host);
    engine
        .on_session_start(&ctxhost_sdk::SessionStart {
            session_id: "v4-fixture".into(),
            model: None,
            context_length: None,
        })
        .unwrap();
    let status = status(&mut engine);
    assert_eq!(
        status["schema_version"], status["schema_latest"],
        "{status}"
    );
    assert_eq!(status["messages"], json!(90), "{status}");
    assert_eq!(doctor(&mut engine, Value::Null)["ok"], json!(true));
    // The same 90 messages sent again are recognised, not stored a second time.
    let session: Vec<ctxhost_sdk::Message> = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../../examples/session.json"),
        )
        .unwrap(),
    )
    .unwrap();
    engine
        .compress(&session[..90], &CompressOptions::default())
        .unwrap();
    assert_eq!(self::status(&mut engine)["messages"], json!(90));
    let found = tool(
        &mut engine,
        "lcm_grep",
        json!({"pattern": "chall", "scope": "both", "limit": 5}),
    );
    assert!(!found["matches"].as_array().unwrap().is_empty(), "{found}");
}

#[test]
fn a_session_written_into_two_conversations_at_once_is_found_and_a_reset_is_not() {
    let host = small_host();
    let mut engine = engine(&host);
    engine.on_session_end("", &tool_chat(6, 200)).unwrap();
    // A reset starts a second conversation after the first one's last write: no fault.
    engine.on_session_reset().unwrap();
    engine.on_session_end("", &tool_chat(3, 100)).unwrap();
    let found = doctor(&mut engine, Value::Null);
    assert_eq!(found["ok"], json!(true), "{found}");

    // Two processes that started the session at once: a conversation made before the first
    // one's messages were stored, holding copies of them.
    sql(
        &host.data_dir().join("lcm.sqlite"),
        "INSERT INTO lcm_conversations(session_id, created_at) \
           SELECT session_id, (SELECT min(created_at) FROM lcm_messages) - 1 \
           FROM lcm_conversations ORDER BY id LIMIT 1; \
         INSERT INTO lcm_messages(conversation_id, seq, role, head, json, tokens, hash, prev_id, created_at) \
           SELECT (SELECT max(id) FROM lcm_conversations), seq, role, head, json, tokens, hash, \
                  prev_id, created_at \
           FROM lcm_messages WHERE conversation_id = (SELECT min(id) FROM lcm_conversations);",
    );
    let found = doctor(&mut engine, Value::Null);
    assert_eq!(found["ok"], json!(false), "{found}");
    let split = found["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["check"] == "split_conversations")
        .unwrap_or_else(|| panic!("{found}"));
    assert_eq!(split["count"], json!(1), "{found}");
}
