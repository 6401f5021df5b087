//! Several gateways on one PostgreSQL database serve one session: any of them takes any turn,
//! one compresses a session at a time, each turn is entered once, a gateway killed in the middle
//! of a compression loses nothing, and a database restarted under load is survived.

use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};

use ctxhost_test_postgres::Postgres;
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{completion, reply, Answer, FakeUpstream};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

const WINDOW: u64 = 16_000;
const CREDENTIAL: &str = "sk-replicas";

/// Gateways on `url` whose leases last `lease_seconds` without renewal.
fn config(url: &str, lease_seconds: u32, extra: &str) -> String {
    format!(
        "model:\n  context_length: {WINDOW}\nserve:\n  state: {url}\n  database:\n    \
         lease_seconds: {lease_seconds}\n{extra}"
    )
}

/// A model that answers every call with the same short message: the client replays recorded
/// turns, so what the model says does not matter here.
fn model() -> FakeUpstream {
    FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "ok"}), None)
    })
}

/// The history up to each recorded assistant message: one request each.
fn turns(messages: &[Value]) -> Vec<usize> {
    (0..messages.len())
        .filter(|i| messages[*i]["role"] == "assistant")
        .collect()
}

fn send(base: &str, session: &str, history: &[Value]) -> reqwest::blocking::Response {
    reqwest::blocking::Client::new()
        .post(format!("{base}/chat/completions"))
        .bearer_auth(CREDENTIAL)
        .header("x-ctxhost-session", session)
        .json(&json!({"model": "gpt-4o", "messages": history}))
        .send()
        .expect("the gateway answers")
}

fn replica(gateway: &GatewayProcess) -> String {
    let (_, health) = gateway.get_json("/healthz", None);
    health["replica"]
        .as_str()
        .expect("a replica name")
        .to_string()
}

/// One row of a query: its fields.
fn row(url: &str, sql: &str) -> Vec<String> {
    Postgres::psql(url, sql)
        .trim()
        .split('|')
        .map(str::to_string)
        .collect()
}

/// The session's turns in the ledger: (rows, distinct turns, distinct replicas).
fn ledger(url: &str, session: &str) -> (u64, u64, u64) {
    let fields = row(
        url,
        &format!(
            "SELECT count(*), count(DISTINCT turn), count(DISTINCT replica) \
             FROM ctxhost_gateway_turns WHERE name = '{session}'"
        ),
    );
    let n = |i: usize| fields[i].parse::<u64>().unwrap();
    (n(0), n(1), n(2))
}

/// Checks what every session must show: all its turns, each once; never over the window; its
/// compressions one at a time.
fn check_session(gateway: &GatewayProcess, url: &str, session: &str, history_len: usize) -> Value {
    let state = gateway.session(session, Some(CREDENTIAL));
    assert_eq!(
        state["messages_seen"].as_u64().unwrap() as usize,
        history_len,
        "{session}: the lineage holds every message the client sent: {state}"
    );
    assert!(
        state["stats"]["peak_prompt_tokens"].as_u64().unwrap() <= WINDOW,
        "{session}: the upstream got more than the window: {state}"
    );
    let compressions = state["compressions"].as_array().unwrap();
    assert!(!compressions.is_empty(), "{session}: {state}");
    let mut spans: Vec<(u64, u64)> = compressions
        .iter()
        .filter(|c| c.get("error").is_none())
        .map(|c| {
            assert!(c["replica"].is_string(), "{c}");
            (
                c["started_at_ms"].as_u64().unwrap(),
                c["finished_at_ms"].as_u64().unwrap(),
            )
        })
        .collect();
    spans.sort();
    for pair in spans.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "{session}: two compressions ran at once: {pair:?}"
        );
    }
    let (rows, distinct, _) = ledger(url, session);
    assert_eq!(rows, distinct);
    state
}

#[test]
fn three_gateways_share_sixteen_sessions_turn_by_turn() {
    let url = Postgres::database("replicas");
    let sandbox = Sandbox::new();
    // Leases far longer than a turn, even on a loaded machine: none lapses while it is served.
    sandbox.write_config(&config(&url, 10, ""));
    let model = model();
    let gateways: Vec<GatewayProcess> = (0..3)
        .map(|_| sandbox.serve(&model.base_url(), &[]))
        .collect();
    let names: Vec<String> = gateways.iter().map(replica).collect();
    assert!(
        names[0] != names[1] && names[1] != names[2] && names[0] != names[2],
        "{names:?}"
    );
    let messages = long_session()[..140].to_vec();
    let turns = turns(&messages);
    let bases: Vec<String> = gateways.iter().map(GatewayProcess::base_url).collect();
    std::thread::scope(|scope| {
        for s in 0..16 {
            let (bases, messages, turns) = (&bases, &messages, &turns);
            scope.spawn(move || {
                let session = format!("shared-{s}");
                for (n, index) in turns.iter().enumerate() {
                    // Each turn to the next gateway, each session starting elsewhere.
                    let base = &bases[(n + s) % bases.len()];
                    let response = send(base, &session, &messages[..*index]);
                    let status = response.status();
                    assert_eq!(
                        status,
                        200,
                        "{session} turn {n}: {}",
                        response.text().unwrap()
                    );
                }
            });
        }
    });
    let mut compressing_replicas = std::collections::BTreeSet::new();
    for s in 0..16 {
        let session = format!("shared-{s}");
        // Asked of the gateway that served the last turn (its save may still be landing).
        let last = (turns.len() - 1 + s) % 3;
        let state = check_session(&gateways[last], &url, &session, turns[turns.len() - 1]);
        assert_eq!(
            state["stats"]["requests"].as_u64().unwrap() as usize,
            turns.len(),
            "{session}: {state}"
        );
        for compression in state["compressions"].as_array().unwrap() {
            compressing_replicas.insert(compression["replica"].as_str().unwrap().to_string());
        }
        let (rows, _, replicas) = ledger(&url, &session);
        assert_eq!(
            rows as usize,
            turns.len(),
            "{session}: each turn entered once"
        );
        assert_eq!(replicas, 3, "{session}: every gateway served it");
    }
    assert!(
        compressing_replicas.len() >= 2,
        "compressions ran on several gateways: {compressing_replicas:?}"
    );
}

/// Events the kill test waits on, from the client's thread and from the summarizer.
enum Event {
    Answered(u16),
    Failed,
    Summarizing,
}

#[test]
fn a_gateway_killed_while_compressing_loses_nothing_and_another_completes_it() {
    let url = Postgres::database("killed");
    let (events_tx, events) = mpsc::channel();
    let summarizer_events = Mutex::new(events_tx.clone());
    let calls = Mutex::new(0);
    // The first summary never comes (its gateway dies waiting); the others come at once.
    let summarizer = FakeUpstream::start(move |_| {
        let mut calls = calls.lock().unwrap();
        *calls += 1;
        if *calls == 1 {
            let _ = summarizer_events.lock().unwrap().send(Event::Summarizing);
            return Answer::Hang;
        }
        Answer::Json(
            200,
            completion(
                json!({"role": "assistant", "content": "## Goal\nFix the parser.\n## Progress\nRead the files."}),
                None,
            ),
        )
    });
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "{}auxiliary:\n  compression:\n    provider: custom\n    model: summarizer\n    \
         base_url: {}\n    timeout: 600\n    max_retries: 0\n",
        // The survivor takes over two seconds after the dead gateway's last renewal.
        config(&url, 2, "  compaction:\n    background: false\n"),
        summarizer.base_url()
    ));
    let model = model();
    let mut gateways: Vec<GatewayProcess> = (0..2)
        .map(|_| sandbox.serve(&model.base_url(), &[]))
        .collect();
    let messages = long_session()[..140].to_vec();
    let turns = turns(&messages);
    let mut killed_at = None;
    for (n, index) in turns.iter().enumerate() {
        let serving = n % gateways.len();
        let base = gateways[serving].base_url();
        let history = messages[..*index].to_vec();
        let answered = events_tx.clone();
        std::thread::spawn(move || {
            let event = match reqwest::blocking::Client::new()
                .post(format!("{base}/chat/completions"))
                .bearer_auth(CREDENTIAL)
                .header("x-ctxhost-session", "killed")
                .json(&json!({"model": "gpt-4o", "messages": history}))
                .send()
            {
                Ok(response) => Event::Answered(response.status().as_u16()),
                Err(_) => Event::Failed,
            };
            let _ = answered.send(event);
        });
        match events.recv().unwrap() {
            Event::Answered(status) => assert_eq!(status, 200, "turn {n}"),
            Event::Failed => panic!("turn {n} failed"),
            Event::Summarizing => {
                // This gateway is compressing the session: it dies here.
                gateways[serving].kill();
                assert!(matches!(events.recv().unwrap(), Event::Failed));
                killed_at = Some((n, serving));
                break;
            }
        }
    }
    let (n, dead) = killed_at.expect("a compression started");
    let survivor = &gateways[1 - dead];
    let survivor_name = replica(survivor);
    // The client retries the turn elsewhere: the survivor waits for the dead gateway's lease
    // to lapse, then compresses and answers.
    let response = send(&survivor.base_url(), "killed", &messages[..turns[n]]);
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-compressed"], "true");
    // The session goes on, on the survivor and on a replacement gateway.
    gateways[dead] = sandbox.serve(&model.base_url(), &[]);
    for (m, index) in turns.iter().enumerate().skip(n + 1) {
        let response = send(&gateways[m % 2].base_url(), "killed", &messages[..*index]);
        assert_eq!(response.status(), 200, "turn {m}");
    }
    let state = check_session(&gateways[0], &url, "killed", turns[turns.len() - 1]);
    let first = &state["compressions"][0];
    assert_eq!(first["replica"], survivor_name.as_str(), "{state}");
    assert!(first.get("error").is_none(), "{state}");
    assert_eq!(
        first["request"].as_u64().unwrap() as usize,
        n + 1,
        "{state}"
    );
    let (rows, _, _) = ledger(&url, "killed");
    assert_eq!(rows as usize, turns.len(), "each turn entered once");
}

#[test]
fn a_database_restarted_under_load_loses_and_duplicates_nothing() {
    let (mut database, url) = Postgres::dedicated("restarted");
    let sandbox = Sandbox::new();
    // Leases outlast the outage: a save retried once the database is back lands before
    // another gateway may take the session over.
    sandbox.write_config(&config(
        &url,
        10,
        "    connect_timeout_seconds: 2\n  compaction:\n    background: false\n",
    ));
    let model = model();
    let gateways: Vec<GatewayProcess> = (0..2)
        .map(|_| sandbox.serve(&model.base_url(), &[]))
        .collect();
    let bases: Vec<String> = gateways.iter().map(GatewayProcess::base_url).collect();
    let messages = long_session()[..140].to_vec();
    let turns = turns(&messages);
    let half = turns.len() / 2;
    const SESSIONS: usize = 4;
    // Every client stops halfway; the database goes down and comes back; they go on.
    let halfway = Arc::new(Barrier::new(SESSIONS + 1));
    let down = Arc::new(Barrier::new(SESSIONS + 1));
    let up = Arc::new(Barrier::new(SESSIONS + 1));
    let refused = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|scope| {
        for s in 0..SESSIONS {
            let (bases, messages, turns) = (&bases, &messages, &turns);
            let (halfway, down, up, refused) =
                (halfway.clone(), down.clone(), up.clone(), refused.clone());
            scope.spawn(move || {
                let session = format!("restart-{s}");
                for (n, index) in turns.iter().enumerate() {
                    if n == half {
                        halfway.wait();
                        down.wait();
                        // The database is down: the turn is refused clearly, nothing kept.
                        let response = send(&bases[s % 2], &session, &messages[..*index]);
                        let status = response.status().as_u16();
                        let body: Value = response.json().unwrap();
                        refused.lock().unwrap().push((status, body));
                        up.wait();
                    }
                    let base = &bases[(n + s) % 2];
                    let response = send(base, &session, &messages[..*index]);
                    assert_eq!(response.status(), 200, "{session} turn {n}");
                }
            });
        }
        halfway.wait();
        database.stop();
        down.wait();
        // Ready again before the clients go on.
        database.restart();
        up.wait();
    });
    for (status, body) in refused.lock().unwrap().iter() {
        assert_eq!(*status, 503, "{body}");
        assert_eq!(body["error"]["code"], "session_store_unavailable", "{body}");
    }
    for s in 0..SESSIONS {
        let session = format!("restart-{s}");
        let last = (turns.len() - 1 + s) % 2;
        check_session(&gateways[last], &url, &session, turns[turns.len() - 1]);
        let (rows, _, _) = ledger(&url, &session);
        let problems: Vec<String> = gateways
            .iter()
            .flat_map(|g| g.log())
            .filter(|line| line.contains("ERROR") || line.contains("WARN"))
            .collect();
        assert_eq!(
            rows as usize,
            turns.len(),
            "{session}: each turn entered once\n{problems:#?}"
        );
    }
}
