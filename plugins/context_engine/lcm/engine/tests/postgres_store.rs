//! What only the PostgreSQL store does: one writer per session across machines (an advisory
//! lock), substring search where full-text does not serve (CJK text, identifiers), a server
//! that cannot be reached, `migrate_session` from a SQLite store, ingest storing the rows
//! SQLite stores, and the connections the engines of one process share.

#[path = "common/mod.rs"]
mod common;

use common::*;
use ctxhost_engine_lcm::LcmEngine;
use ctxhost_lcm_store::{ContextItem, Location, Store};
use ctxhost_sdk::{CompressOptions, ContextEngine, Message, SessionStart};
use ctxhost_sdk_test::FakeHost;
use ctxhost_test_postgres::Postgres;
use serde_json::{json, Value};

/// A host with its own data directory (another machine, as far as files go) whose store is
/// `store` (a SQLite file in its data directory when `None`).
fn machine(store: Option<&str>, config: Value, script: Script) -> FakeHost {
    let mut config = match config {
        Value::Object(map) => Value::Object(map),
        _ => json!({}),
    };
    if let Some(store) = store {
        config["store"] = json!(store);
    }
    FakeHost::builder("lcm")
        .config(config)
        .context_length(SMALL_WINDOW)
        .default_answer(script.answer())
        .build()
}

fn start(engine: &mut LcmEngine, session: &str) {
    engine
        .on_session_start(&SessionStart {
            session_id: session.to_string(),
            ..SessionStart::default()
        })
        .unwrap();
}

/// Starts `session` in a window wide enough that nothing is compacted: what comes back is the
/// stored view itself.
fn start_wide(engine: &mut LcmEngine, session: &str) {
    engine
        .on_session_start(&SessionStart {
            session_id: session.to_string(),
            context_length: Some(10_000_000),
            ..SessionStart::default()
        })
        .unwrap();
}

fn count(url: &str, sql: &str) -> u64 {
    Postgres::psql(url, sql).trim().parse().expect("a count")
}

#[test]
fn a_session_has_one_writer_across_machines() {
    let url = Postgres::database("lcm_lock");
    let mut config = small_config();
    config["session_lock_wait_ms"] = json!(50);
    // The first machine's summarizer is slow: its compaction holds the session a while.
    let slow = machine(
        Some(&url),
        config.clone(),
        Script::Slow(std::time::Duration::from_secs(3)),
    );
    let second_host = machine(Some(&url), config, Script::Good);
    let mut first = engine(&slow);
    let mut second = engine(&second_host);
    // Over the window's threshold: the first write summarizes.
    let chat = tool_chat(40, 400);
    start(&mut first, "shared");
    start(&mut second, "shared");
    std::thread::scope(|scope| {
        let writing = scope.spawn(|| {
            let forced = CompressOptions {
                force: true,
                ..CompressOptions::default()
            };
            first.compress(&chat, &forced).unwrap()
        });
        // Until the first machine holds the session's lock (a condition, not a deadline).
        while count(
            &url,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted",
        ) == 0
        {
            assert!(
                !writing.is_finished(),
                "the first write ended before it was seen"
            );
            std::thread::yield_now();
        }
        let error = second
            .compress(&chat, &CompressOptions::default())
            .expect_err("the first machine holds the session");
        assert!(error.is_busy(), "{error}");
        assert!(error.message().contains("session `shared`"), "{error}");
        assert!(
            error
                .message()
                .contains(&format!("ctxhost lcm pid {}", std::process::id())),
            "the holder is named: {error}"
        );
        // Reading never waits, and other sessions are free.
        tool(&mut second, "lcm_grep", json!({"pattern": "careful"}));
        start(&mut second, "other");
        second.compress(&chat, &CompressOptions::default()).unwrap();
        writing.join().unwrap();
    });
    // Each write lets go when it ends: the second machine takes its turn.
    assert_eq!(
        count(
            &url,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
        ),
        0
    );
    start(&mut second, "shared");
    second.compress(&chat, &CompressOptions::default()).unwrap();
    assert_eq!(
        count(
            &url,
            "SELECT count(*) FROM lcm_messages m JOIN lcm_conversations c \
             ON c.id = m.conversation_id WHERE c.session_id = 'shared'"
        ),
        chat.len() as u64,
        "each message stored once"
    );
}

#[test]
fn cjk_text_and_identifiers_are_found_as_substrings() {
    let url = Postgres::database("lcm_search");
    let mut engine = engine(&machine(Some(&url), small_config(), Script::Good));
    let chat = vec![
        Message::system("You are a careful agent."),
        Message::user("検索エンジンの設計について教えてください"),
        Message::assistant("see config.load_settings() in foo_bar.baz for the details"),
        Message::user("and the ZEBRA-42 flag?"),
        Message::assistant("the zebra flag is off"),
    ];
    engine.compress(&chat, &CompressOptions::default()).unwrap();
    let mut seqs = |pattern: &str, mode: &str| -> Vec<i64> {
        let answer = tool(
            &mut engine,
            "lcm_grep",
            json!({"pattern": pattern, "mode": mode, "scope": "messages"}),
        );
        assert!(answer.get("error").is_none(), "{answer}");
        let mut seqs: Vec<i64> = answer["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["seq"].as_i64().unwrap())
            .collect();
        seqs.sort();
        seqs
    };
    // A word inside a run of CJK text, which has no spaces to split words at.
    assert_eq!(seqs("エンジン", "full_text"), [1]);
    assert_eq!(seqs("foo_bar.baz", "full_text"), [2]);
    assert_eq!(seqs("load_settings", "full_text"), [2]);
    assert_eq!(seqs("ZEBRA-42", "full_text"), [3]);
    assert_eq!(seqs("zeb*", "full_text"), [3, 4]);
    assert_eq!(seqs("zebra flag", "full_text"), [3, 4]);
    // Regular expressions: one PostgreSQL reads alike (prefiltered by `~`), and one it reads
    // differently (`\b`), decided by the engine either way.
    assert_eq!(seqs("foo_[a-z]+\\.baz", "regex"), [2]);
    assert_eq!(seqs("\\bzebra\\b", "regex"), [4]);
    assert_eq!(seqs("(?i)\\bzebra\\b", "regex"), [3, 4]);
}

#[test]
fn a_server_that_cannot_be_reached_is_one_line_without_the_password() {
    // A port nothing listens on: taken from the shared server's, which is ours alone.
    let url = format!(
        "postgres://lcm:hunter2@127.0.0.1:{}/nowhere?connect_timeout=2",
        free_port()
    );
    let mut engine = engine(&machine(Some(&url), json!({}), Script::Good));
    let error = engine
        .compress(&tool_chat(2, 10), &CompressOptions::default())
        .expect_err("nothing to store into");
    let message = error.message();
    assert!(!message.contains("hunter2"), "{message}");
    assert!(
        message.contains("postgres://lcm:***@127.0.0.1"),
        "{message}"
    );
    assert!(!message.contains('\n'), "{message}");
    let doctor = engine.invoke("doctor", &Value::Null).unwrap();
    assert_eq!(doctor["ok"], json!(false), "{doctor}");
    assert_eq!(
        doctor["problems"][0]["check"],
        json!("reachable"),
        "{doctor}"
    );
    assert!(!doctor.to_string().contains("hunter2"), "{doctor}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_session_migrates_from_sqlite_once_and_goes_on_with_the_same_view() {
    let url = Postgres::database("lcm_migrate");
    let sqlite_host = machine(None, small_config(), Script::Good);
    let mut sqlite = engine(&sqlite_host);
    let mut history = tool_chat(60, 300);
    let markers = plant_markers(&mut history, "m", 7);
    start(&mut sqlite, "moved");
    let view = replay(&mut sqlite, Vec::new(), &history);
    sqlite.on_session_end("moved", &view).unwrap();
    start(&mut sqlite, "other");
    sqlite
        .compress(&tool_chat(2, 10), &CompressOptions::default())
        .unwrap();
    let before = status(&mut sqlite);

    let payload = json!({"to": url, "session": "moved"});
    let copied = sqlite.invoke("migrate_session", &payload).unwrap();
    assert_eq!(copied["status"], json!("added"), "{copied}");
    assert_eq!(copied["checksum"], copied["target_checksum"], "{copied}");
    let stored = sqlite.session("moved").unwrap().unwrap();
    assert_eq!(copied["messages"], json!(stored.messages), "{copied}");
    assert_eq!(copied["summaries"], stored.details["summaries"], "{copied}");
    assert!(copied["summaries"].as_u64().unwrap() > 0, "{copied}");

    // Twice adds nothing.
    let again = sqlite.invoke("migrate_session", &payload).unwrap();
    assert_eq!(again["status"], json!("unchanged"), "{again}");
    assert_eq!(again["checksum"], copied["checksum"]);
    assert_eq!(
        count(&url, "SELECT count(*) FROM lcm_messages"),
        stored.messages
    );
    assert_eq!(status(&mut sqlite)["messages"], before["messages"]);

    // The session goes on in PostgreSQL: the same view for the same history, every marker
    // found, the next turn stored once.
    let mut postgres = engine(&machine(Some(&url), small_config(), Script::Good));
    start_wide(&mut postgres, "moved");
    let resumed = postgres
        .compress(&view, &CompressOptions::default())
        .unwrap();
    start_wide(&mut sqlite, "moved");
    let expected = sqlite.compress(&view, &CompressOptions::default()).unwrap();
    assert_eq!(values(&resumed), values(&expected));
    for (marker, _) in &markers {
        let found = tool(
            &mut postgres,
            "lcm_grep",
            json!({"pattern": marker, "scope": "messages"}),
        );
        assert_eq!(found["returned"], json!(1), "{marker}: {found}");
    }
    let mut next = view.clone();
    next.push(Message::user("one more thing"));
    postgres
        .compress(&next, &CompressOptions::default())
        .unwrap();
    assert_eq!(
        count(&url, "SELECT count(*) FROM lcm_messages"),
        stored.messages + 1
    );
    // Every message but the system prompt, and the new one.
    assert_eq!(stored_messages(&mut postgres).len(), history.len());
}

/// Every stored message of `session` (its row id, sequence number, the one it followed, role,
/// head, JSON, tokens, hash) and the context list, read from the store at `location`.
fn stored_rows(location: &Location, session: &str) -> (Vec<String>, Vec<String>) {
    let mut store = Store::open_or_unusable(location, std::time::Duration::from_secs(10));
    let conv = store.current_conversation(session).unwrap();
    let mut rows = Vec::new();
    for seq in 0.. {
        let Some(message) = store.message_by_seq(conv, seq).unwrap() else {
            break;
        };
        rows.push(format!(
            "{} {} {} {} {} {}",
            message.rowid, message.seq, message.role, message.head, message.tokens, message.json
        ));
    }
    let chain: Vec<String> = store
        .raw_after(conv, -1, 1_000_000)
        .unwrap()
        .into_iter()
        .map(|raw| format!("{} {} {} {}", raw.rowid, raw.seq, raw.prev, raw.hash))
        .collect();
    rows.extend(chain);
    let context = store
        .context(conv)
        .unwrap()
        .into_iter()
        .map(|item| match item.item {
            ContextItem::Message(message) => format!("{} message {}", item.position, message.rowid),
            ContextItem::Summary(summary) => format!("{} summary {}", item.position, summary.id),
        })
        .collect();
    (rows, context)
}

#[test]
fn ingest_on_postgres_stores_the_same_rows_as_on_sqlite() {
    let url = Postgres::database("lcm_same_rows");
    let sqlite_host = machine(None, small_config(), Script::Good);
    let postgres_host = machine(Some(&url), small_config(), Script::Good);
    let mut sqlite = engine(&sqlite_host);
    let mut postgres = engine(&postgres_host);
    // An agent loop's calls: the history so far and the next turns (a repeated "ok" is a new
    // message each time), a replay of a prefix, and a first call of a whole transcript.
    let mut history = tool_chat(40, 120);
    for at in [5, 17, 30] {
        history.insert(at, Message::assistant("ok"));
    }
    let history = ctxhost_sdk::sequence::repair(history);
    let mut calls: Vec<Vec<Message>> = (1..=4)
        .map(|round| history[..history.len() * round / 4].to_vec())
        .collect();
    calls.insert(2, history[..history.len() / 3].to_vec());
    for (engine, session) in [(&mut sqlite, "loop"), (&mut postgres, "loop")] {
        start_wide(engine, session);
        for call in &calls {
            engine.compress(call, &CompressOptions::default()).unwrap();
        }
    }
    for (engine, session) in [(&mut sqlite, "whole"), (&mut postgres, "whole")] {
        start_wide(engine, session);
        engine.on_session_end(session, &history).unwrap();
    }
    // An import large enough that PostgreSQL writes it with COPY.
    let large = tool_chat(1_100, 10);
    for (engine, session) in [(&mut sqlite, "large"), (&mut postgres, "large")] {
        start_wide(engine, session);
        engine.on_session_end(session, &large).unwrap();
    }
    let on_sqlite = Location::Sqlite(
        sqlite_host
            .data_dir()
            .join(ctxhost_engine_lcm::DATABASE_FILE),
    );
    let on_postgres = Location::postgres(&url).unwrap();
    for (session, sent) in [("loop", &history), ("whole", &history), ("large", &large)] {
        let (sqlite_rows, sqlite_context) = stored_rows(&on_sqlite, session);
        let (postgres_rows, postgres_context) = stored_rows(&on_postgres, session);
        assert!(sqlite_rows.len() > sent.len(), "{session}: {sqlite_rows:?}");
        assert_eq!(sqlite_rows, postgres_rows, "{session}");
        assert_eq!(sqlite_context, postgres_context, "{session}");
    }
}

/// Engines of one process on one PostgreSQL store share its connections: connected and
/// migrated once, however many sessions open it.
#[test]
fn engines_of_one_process_share_the_postgres_connections() {
    let url = Postgres::database("lcm_shared");
    let location = Location::postgres(&url).unwrap();
    assert_eq!(ctxhost_lcm_store::pool_stats(&location), None);
    let hosts: Vec<FakeHost> = (0..3)
        .map(|_| machine(Some(&url), small_config(), Script::Good))
        .collect();
    let mut engines: Vec<LcmEngine> = hosts.iter().map(engine).collect();
    let stats = ctxhost_lcm_store::pool_stats(&location).expect("opened");
    assert_eq!((stats.users, stats.opened), (3, 1), "{stats:?}");
    for (at, engine) in engines.iter_mut().enumerate() {
        let session = format!("s{at}");
        start_wide(engine, &session);
        engine
            .compress(&tool_chat(3, 20), &CompressOptions::default())
            .unwrap();
    }
    // Each sees what the others wrote, through the same connections.
    let listed = engines[0].sessions().unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
    let stats = ctxhost_lcm_store::pool_stats(&location).unwrap();
    assert_eq!((stats.users, stats.opened), (3, 1), "{stats:?}");
    // One call at a time needed two connections: the session's lock, and its writes.
    assert_eq!(stats.connections, 2, "{stats:?}");
    // The last to close closes them; the next store opens (and checks the schema) again.
    engines.clear();
    let stats = ctxhost_lcm_store::pool_stats(&location).unwrap();
    assert_eq!((stats.users, stats.connections), (0, 0), "{stats:?}");
    let _again = engine(&hosts[0]);
    let stats = ctxhost_lcm_store::pool_stats(&location).unwrap();
    assert_eq!((stats.users, stats.opened), (1, 2), "{stats:?}");
}

/// A conversation that has messages cannot be deleted by hand on either store (SQLite checks
/// each message's key; PostgreSQL checks once per write and on deletion). Rows deleted with
/// the checks off leave messages without their conversation, which `doctor` finds.
#[test]
fn messages_left_without_their_conversation_are_refused_or_found_on_either_store() {
    let url = Postgres::database("lcm_orphans");
    let sqlite_host = machine(None, small_config(), Script::Good);
    let postgres_host = machine(Some(&url), small_config(), Script::Good);
    let history = tool_chat(5, 40);
    for host in [&sqlite_host, &postgres_host] {
        let mut engine = engine(host);
        start_wide(&mut engine, "s");
        engine
            .compress(&history, &CompressOptions::default())
            .unwrap();
        assert_eq!(
            engine.invoke("doctor", &Value::Null).unwrap()["ok"],
            json!(true)
        );
    }
    let deletion = "DELETE FROM lcm_context_items; DELETE FROM lcm_conversations;";
    let sqlite = rusqlite::Connection::open(
        sqlite_host
            .data_dir()
            .join(ctxhost_engine_lcm::DATABASE_FILE),
    )
    .unwrap();
    let refused = sqlite.execute_batch(deletion).unwrap_err();
    assert!(refused.to_string().contains("FOREIGN KEY"), "{refused}");
    let mut postgres = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let refused = postgres.batch_execute(deletion).unwrap_err();
    let said = refused.as_db_error().map(|e| e.message().to_string());
    assert!(
        said.as_deref()
            .is_some_and(|said| said.contains("still has messages")),
        "{refused:?}"
    );

    sqlite
        .execute_batch(&format!("PRAGMA foreign_keys = OFF; {deletion}"))
        .unwrap();
    postgres
        .batch_execute(&format!(
            "SET session_replication_role = replica; {deletion}"
        ))
        .unwrap();
    for host in [&sqlite_host, &postgres_host] {
        let mut engine = engine(host);
        let report = engine.invoke("doctor", &Value::Null).unwrap();
        let orphans = report["problems"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["check"] == "messages_without_conversation")
            .unwrap_or_else(|| panic!("{report}"));
        assert_eq!(orphans["count"], json!(history.len()), "{report}");
    }
}
