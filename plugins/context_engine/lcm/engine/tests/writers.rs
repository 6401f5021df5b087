//! One writer per session: engines that start one session of a fresh store at the same moment
//! create its schema once and one conversation, and store each message once (engines of one
//! process share the store's connections, and meet in the session lock as processes do); and
//! engines of one process share one set of connections to their store.

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::sync::{Arc, Barrier};

use common::{small_config, tool_chat, with_store, Script};
use ctxhost_engine_lcm::LcmEngine;
use ctxhost_lcm_store::{pool_stats, Location};
use ctxhost_sdk::{ContextEngine, EngineError, EnginePlugin, Message, SessionStart};
use ctxhost_sdk_test::FakeHost;
use serde_json::{json, Value};

/// Engines started at once in each trial.
const WRITERS: usize = 4;

fn host(dir: &Path) -> FakeHost {
    FakeHost::builder("lcm")
        .config(with_store(small_config(), Some(dir)))
        .context_length(4000)
        .data_dir(dir)
        .default_answer(Script::Good.answer())
        .build()
}

/// Opens the store, starts session `s` and stores `history` in it, as `ctxhost run` does.
fn write_session(dir: &Path, history: &[Message]) -> Result<(), EngineError> {
    let mut engine = LcmEngine::create(host(dir).services())?;
    engine.on_session_start(&SessionStart {
        session_id: "s".into(),
        ..SessionStart::default()
    })?;
    engine.on_session_end("s", history)
}

#[test]
fn engines_starting_one_session_of_a_fresh_store_at_once_make_one_conversation() {
    let history = tool_chat(20, 200);
    for trial in 0..8 {
        let dir = tempfile::tempdir().unwrap();
        // On PostgreSQL the database is made here, before the race, as a server would have it.
        let _ = with_store(json!({}), Some(dir.path()));
        let start = Arc::new(Barrier::new(WRITERS));
        let writers: Vec<_> = (0..WRITERS)
            .map(|_| {
                let (dir, start, history) =
                    (dir.path().to_path_buf(), start.clone(), history.clone());
                std::thread::spawn(move || {
                    start.wait();
                    write_session(&dir, &history)
                })
            })
            .collect();
        for writer in writers {
            writer
                .join()
                .unwrap()
                .unwrap_or_else(|e| panic!("trial {trial}: a writer failed: {e}"));
        }
        let mut engine = LcmEngine::create(host(dir.path()).services()).unwrap();
        let sessions = engine.sessions().unwrap();
        assert_eq!(sessions.len(), 1, "trial {trial}: {sessions:?}");
        assert_eq!(
            sessions[0].details["conversations"],
            json!(1),
            "trial {trial}: {sessions:?}"
        );
        assert_eq!(
            sessions[0].messages,
            history.len() as u64,
            "trial {trial}: {sessions:?}"
        );
        let doctor: Value = engine.invoke("doctor", &Value::Null).unwrap();
        assert_eq!(doctor["ok"], json!(true), "trial {trial}: {doctor}");
    }
}

/// Engines of one process on one store (the SQLite file, or the PostgreSQL database) share its
/// connections: opened and migrated once however many sessions open it, and closed with the
/// last of them.
#[test]
fn engines_of_one_process_share_one_store_and_open_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = with_store(small_config(), Some(dir.path()));
    let location = Location::from_setting(
        config["store"].as_str(),
        dir.path(),
        ctxhost_engine_lcm::DATABASE_FILE,
    )
    .unwrap();
    let mut engines: Vec<LcmEngine> = (0..3)
        .map(|_| LcmEngine::create(host(dir.path()).services()).unwrap())
        .collect();
    let stats = pool_stats(&location).expect("opened");
    assert_eq!((stats.users, stats.opened), (3, 1), "{stats:?}");
    let history = tool_chat(6, 40);
    for (at, engine) in engines.iter_mut().enumerate() {
        let session = format!("s{at}");
        engine
            .on_session_start(&SessionStart {
                session_id: session.clone(),
                ..SessionStart::default()
            })
            .unwrap();
        engine.on_session_end(&session, &history).unwrap();
    }
    // Each sees what the others wrote.
    assert_eq!(engines[2].sessions().unwrap().len(), 3);
    let stats = pool_stats(&location).unwrap();
    assert_eq!((stats.users, stats.opened), (3, 1), "{stats:?}");
    engines.clear();
    let stats = pool_stats(&location).unwrap();
    assert_eq!((stats.users, stats.connections), (0, 0), "{stats:?}");
    let _again = LcmEngine::create(host(dir.path()).services()).unwrap();
    let stats = pool_stats(&location).unwrap();
    assert_eq!((stats.users, stats.opened), (1, 2), "{stats:?}");
}
