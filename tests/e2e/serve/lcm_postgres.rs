//! The lossless engine's store in PostgreSQL behind the gateway: `ctxhost sessions migrate`
//! copies lcm's SQLite store (counts and checksums match, the session goes on with the same
//! view), and three gateways sharing one database store each message of a session once.

use ctxhost_test_postgres::Postgres;
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

use super::state::restart_with_engine_keeps_the_view;

const LCM: &str = "context:\n  engine: lcm\n";

/// One value per row of a query.
fn rows(url: &str, sql: &str) -> Vec<String> {
    Postgres::psql(url, sql)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Messages and summaries of the (one) session in the SQLite store, and its messages' content
/// hashes in order.
fn sqlite_store(path: &std::path::Path) -> (u64, u64, String) {
    let db = rusqlite::Connection::open(path).unwrap();
    let count =
        |sql: &str| -> u64 { db.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64 };
    let hashes: String = db
        .query_row(
            "SELECT group_concat(hash, ',') FROM \
             (SELECT hash FROM lcm_messages ORDER BY conversation_id, seq)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    (
        count("SELECT count(*) FROM lcm_messages"),
        count("SELECT count(*) FROM lcm_summaries"),
        hashes,
    )
}

fn postgres_store(url: &str) -> (u64, u64, String) {
    let fields = rows(
        url,
        "SELECT (SELECT count(*) FROM lcm_messages), (SELECT count(*) FROM lcm_summaries), \
         (SELECT string_agg(hash, ',' ORDER BY conversation_id, seq) FROM lcm_messages)",
    );
    let fields: Vec<&str> = fields[0].split('|').collect();
    (
        fields[0].parse().unwrap(),
        fields[1].parse().unwrap(),
        fields[2].to_string(),
    )
}

#[test]
fn lcm_sessions_migrated_to_postgresql_match_and_go_on_with_the_same_view() {
    let url = Postgres::database("lcm_migrate");
    let after = format!("  state: {url}\nplugins:\n  lcm:\n    store: {url}\n");
    restart_with_engine_keeps_the_view(LCM, "", &after, |sandbox| {
        let source = sandbox.home().join("data/lcm/lcm.sqlite");
        let (messages, summaries, hashes) = sqlite_store(&source);
        assert!(
            messages > 0 && summaries > 0,
            "the gateway compacted with lcm"
        );

        let run = sandbox.ctxhost(&["sessions", "migrate", "--to", &url, "--json"]);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        let report = run.json();
        let copied = report["engine"]["copied"].as_array().unwrap();
        assert_eq!(copied.len(), 1, "{report}");
        let session = &copied[0];
        assert_eq!(session["status"], "added", "{report}");
        assert_eq!(session["messages"], json!(messages), "{report}");
        assert_eq!(session["summaries"], json!(summaries), "{report}");
        assert_eq!(session["checksum"], session["target_checksum"], "{report}");
        // Checked apart from the command's own check: the same messages in the same order.
        assert_eq!(postgres_store(&url), (messages, summaries, hashes.clone()));

        // Again: nothing added, the same checksum.
        let again = sandbox.ctxhost(&["sessions", "migrate", "--to", &url, "--json"]);
        assert_eq!(again.code, Some(0), "{}", again.stderr);
        let again = again.json();
        let repeated = &again["engine"]["copied"][0];
        assert_eq!(repeated["status"], "unchanged", "{again}");
        assert_eq!(repeated["checksum"], session["checksum"], "{again}");
        assert_eq!(postgres_store(&url), (messages, summaries, hashes));
    });
    // The gateway that went on, with both stores in PostgreSQL, wrote only there.
    let distinct = rows(
        &url,
        "SELECT count(*) = count(DISTINCT (conversation_id, prev_id, hash, head)) FROM lcm_messages",
    );
    assert_eq!(distinct, ["t"], "no message stored twice");
}

/// A model that answers every call with the same short message.
fn model() -> FakeUpstream {
    FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "ok"}), None)
    })
}

#[test]
fn three_gateways_with_lcm_store_each_message_of_a_session_once() {
    let url = Postgres::database("lcm_replicas");
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(&format!(
        "{LCM}model:\n  context_length: 16000\nplugins:\n  lcm:\n    store: {url}\n\
         serve:\n  state: {url}\n  database:\n    lease_seconds: 10\n"
    ));
    let model = model();
    let gateways: Vec<GatewayProcess> = (0..3)
        .map(|_| sandbox.serve(&model.base_url(), &[]))
        .collect();
    let messages = long_session()[..160].to_vec();
    let turns: Vec<usize> = (0..messages.len())
        .filter(|i| messages[*i]["role"] == "assistant")
        .collect();
    let client = reqwest::blocking::Client::new();
    for (n, index) in turns.iter().enumerate() {
        // Each turn to the next gateway.
        let base = gateways[n % gateways.len()].base_url();
        let response = client
            .post(format!("{base}/chat/completions"))
            .bearer_auth("sk-lcm-replicas")
            .header("x-ctxhost-session", "rotating")
            .json(&json!({"model": "gpt-4o", "messages": &messages[..*index]}))
            .send()
            .unwrap();
        let status = response.status();
        assert_eq!(status, 200, "turn {n}: {}", response.text().unwrap());
        assert_eq!(response.headers()["x-ctxhost-engine"], "lcm");
    }
    let state: Value = gateways[0].session("rotating", Some("sk-lcm-replicas"));
    let compressions = state["compressions"].as_array().unwrap();
    assert!(!compressions.is_empty(), "{state}");
    assert!(
        compressions.iter().all(|c| c.get("error").is_none()),
        "every compression ran with lcm: {state}"
    );
    // One session in lcm's store, each message once, numbered without gaps, and every one of
    // them a message the client sent.
    // (Each engine also opens an empty conversation for its default session when it starts.)
    let sessions = rows(
        &url,
        "SELECT DISTINCT c.session_id FROM lcm_conversations c \
         JOIN lcm_messages m ON m.conversation_id = c.id",
    );
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let summary = rows(
        &url,
        "SELECT count(*), count(DISTINCT (conversation_id, prev_id, hash, head)), \
         coalesce(max(seq) + 1, 0), count(DISTINCT conversation_id) FROM lcm_messages",
    );
    let fields: Vec<u64> = summary[0].split('|').map(|f| f.parse().unwrap()).collect();
    assert!(fields[0] > 0, "{summary:?}");
    assert_eq!(fields[0], fields[1], "a message stored twice: {summary:?}");
    assert_eq!(
        fields[0], fields[2],
        "sequence numbers without gaps: {summary:?}"
    );
    assert_eq!(fields[3], 1, "{summary:?}");
    // Hex: one line per message whatever its text holds.
    let stored = rows(
        &url,
        "SELECT encode(convert_to(json, 'UTF8'), 'hex') FROM lcm_messages ORDER BY seq",
    );
    for hex in &stored {
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let message: Value = serde_json::from_slice(&bytes).unwrap();
        assert!(
            messages.iter().any(|m| m["content"] == message["content"]),
            "stored something the client never sent: {message}"
        );
    }
    let doctor = sandbox.ctxhost(&["engine", "doctor"]);
    assert_eq!(doctor.code, Some(0), "{}{}", doctor.stdout, doctor.stderr);
    let doctor: Value = serde_json::from_str(&doctor.stdout).unwrap();
    assert_eq!(doctor["ok"], json!(true), "{doctor}");
    assert_eq!(doctor["backend"], json!("postgres"), "{doctor}");
    assert_eq!(
        doctor["schema_version"], doctor["schema_latest"],
        "{doctor}"
    );
}
