//! Whether an agent's turn waits for the summarizer through `ctxhost serve`: the example
//! session (`examples/session.json`) replayed turn by turn on each wire (chat completions,
//! messages, responses) at a 12K window, with the compressor, a summarizer (an
//! OpenAI-compatible fake on 127.0.0.1) that takes 3 s to answer, and an agent that pauses
//! 3.5 s between turns (the tools it runs). What the gateway sent upstream for each turn is sent
//! to the upstream again, straight, for the upstream's own time; the turn's added latency is its
//! time through the gateway less that. Per wire: the slowest turn's added latency, its p50 and
//! p99, and the turns that waited for a compression (as the gateway counts them,
//! `stats.turns_waited`): only a turn whose last view plus what is new would not fit the window
//! may wait (one of the session's tool outputs alone is most of a 12K window). Target: the
//! slowest of the other turns adds under 100 ms.
//!
//! The wires run at once, each with its own gateway, upstream and summarizer (the pauses, not
//! the machine, set the pace).
//!
//! Run: `cargo bench -p ctxhost-tests --bench compaction_wait` (the whole session: about 15
//! minutes). Quick: `CTXHOST_BENCH_TURNS=40` replays only the first 40 turns. `--profile dev`
//! measures the debug build the test suite uses (no release build needed; slower per request).

use std::time::{Duration, Instant};

use ctxhost_tests::bench::{ms, percentile};
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{completion, Answer, FakeUpstream};
use ctxhost_tests::wire::Wire;
use ctxhost_tests::{read_json, workspace_root, Sandbox};
use serde_json::{json, Value};

const WINDOW: u64 = 12_000;
const SUMMARIZER_PAUSE: Duration = Duration::from_secs(3);
const AGENT_PAUSE: Duration = Duration::from_millis(3_500);
const CREDENTIAL: &str = "sk-bench-wait";
const SESSION: &str = "replayed";
/// The target: what the slowest turn may add over the upstream's own time.
const TARGET: Duration = Duration::from_millis(100);

/// What replaying one wire showed.
struct WireRun {
    wire: Wire,
    /// Per turn, what going through the gateway added over the upstream's own time, and
    /// whether the gateway counted it as waiting for a compression.
    added: Vec<(Duration, bool)>,
    compressions: usize,
}

/// The example session: OpenAI messages.
fn example_session() -> Vec<Value> {
    read_json(&workspace_root().join("examples/session.json"))
        .as_array()
        .expect("examples/session.json is an array of messages")
        .clone()
}

/// The turns to replay: each point where the recorded assistant answers, all of them unless
/// `CTXHOST_BENCH_TURNS` says fewer.
fn turns(session: &[Value]) -> Vec<usize> {
    let all = (0..session.len()).filter(|i| session[*i]["role"] == "assistant");
    match std::env::var("CTXHOST_BENCH_TURNS") {
        Ok(n) => all
            .take(n.parse().expect("CTXHOST_BENCH_TURNS is a number of turns"))
            .collect(),
        Err(_) => all.collect(),
    }
}

/// Sends `body` (JSON) on `wire` to `url` (the gateway or the upstream itself); its latency.
fn timed(client: &reqwest::blocking::Client, wire: Wire, url: &str, body: String) -> Duration {
    let request = client
        .post(format!("{url}{}", wire.path()))
        .header("x-ctxhost-session", SESSION)
        .header("content-type", "application/json");
    let started = Instant::now();
    let response = wire
        .authorize(request, Some(CREDENTIAL))
        .body(body)
        .send()
        .expect("an answer");
    let status = response.status();
    let text = response.text().expect("a body");
    let elapsed = started.elapsed();
    assert!(status.is_success(), "{wire:?} {status}: {text}");
    elapsed
}

fn replay(wire: Wire, session: &[Value], turns: &[usize]) -> WireRun {
    let summarizer = FakeUpstream::start(|_| {
        let summary = completion(
            json!({"role": "assistant", "content": "## Goal\nSolve the challenge.\n## Progress\nRead the files."}),
            None,
        );
        Answer::After(SUMMARIZER_PAUSE, Box::new(Answer::Json(200, summary)))
    });
    // The answer's words do not matter (the agent sends the recorded history on): a short one,
    // in the wire's shape, with no usage (the gateway counts what it sent).
    let upstream = FakeUpstream::start(move |request| {
        wire.reply(
            request,
            &json!({"role": "assistant", "content": "Done."}),
            None,
        )
    });
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "auxiliary:\n  compression:\n    provider: custom\n    model: slow-summarizer\n    \
         base_url: {}\n    timeout: 60\n    max_retries: 0\n\
         compression:\n  protect_last_n: 4\n\
         serve:\n  models:\n    gpt-4o: {WINDOW}\n",
        summarizer.base_url()
    ));
    let gateway: GatewayProcess = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap();
    let upstream_url = upstream.base_url();
    let mut added = Vec::with_capacity(turns.len());
    let mut waited_so_far = 0;
    for (n, index) in turns.iter().enumerate() {
        if n > 0 {
            std::thread::sleep(AGENT_PAUSE);
        }
        let body = wire.body(&session[..*index], &[], false).to_string();
        let via = timed(&client, wire, &gateway.base_url(), body);
        let sent = upstream
            .received()
            .pop()
            .expect("the gateway called the upstream");
        let direct = timed(&client, wire, &upstream_url, sent.body);
        // Asked after the turn is timed (the agent's pause covers it).
        let state = wire.session(&gateway, SESSION, Some(CREDENTIAL));
        let turns_waited = state["stats"]["turns_waited"].as_u64().unwrap_or_default();
        added.push((via.saturating_sub(direct), turns_waited > waited_so_far));
        waited_so_far = turns_waited;
    }
    let state = wire.session(&gateway, SESSION, Some(CREDENTIAL));
    WireRun {
        wire,
        added,
        compressions: state["compressions"].as_array().map_or(0, Vec::len),
    }
}

fn main() {
    let session = example_session();
    let turns = turns(&session);
    let runs: Vec<WireRun> = std::thread::scope(|scope| {
        let handles: Vec<_> = Wire::ALL
            .iter()
            .map(|wire| {
                let (session, turns) = (&session, &turns);
                scope.spawn(move || replay(*wire, session, turns))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    println!(
        "## Turns waiting for the summarizer: examples/session.json, {} turns, {WINDOW}-token \
         window, summarizer {} s, agent pause {} s\n",
        turns.len(),
        SUMMARIZER_PAUSE.as_secs_f64(),
        AGENT_PAUSE.as_secs_f64(),
    );
    println!("| wire | turns | compressions | added p50 / p99 ms | slowest turn added ms | turns waited (would not fit): added ms |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut missed = Vec::new();
    for run in runs {
        let mut all: Vec<Duration> = run.added.iter().map(|(d, _)| *d).collect();
        all.sort();
        let slowest = run
            .added
            .iter()
            .filter(|(_, waited)| !waited)
            .map(|(d, _)| *d)
            .max()
            .unwrap_or_default();
        let waited: Vec<String> = run
            .added
            .iter()
            .filter(|(_, waited)| *waited)
            .map(|(d, _)| ms(*d))
            .collect();
        println!(
            "| {} | {} | {} | {} / {} | **{}** | {}: {} |",
            run.wire.route(),
            all.len(),
            run.compressions,
            ms(percentile(&all, 0.5)),
            ms(percentile(&all, 0.99)),
            ms(slowest),
            waited.len(),
            if waited.is_empty() {
                "-".to_string()
            } else {
                waited.join(", ")
            },
        );
        if slowest >= TARGET {
            missed.push(run.wire.route());
        }
    }
    if missed.is_empty() {
        println!(
            "\nOn every wire, the slowest turn that fit the window added under {} ms.",
            TARGET.as_millis()
        );
    } else {
        println!(
            "\nOver the {} ms target on: {}",
            TARGET.as_millis(),
            missed.join(", ")
        );
    }
}
