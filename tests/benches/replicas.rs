//! Several gateways on one PostgreSQL database against one gateway on SQLite: what each adds
//! to a model call at 64 concurrent sessions (p50, p99), and how many turns a second they
//! commit. With three replicas every session's turns go to them in rotation, so nearly every
//! request finds its session saved by another replica (a lease, a reload, a revisioned save
//! and a ledger entry each time): the worst case for the shared store.
//!
//! The upstream answers after `UPSTREAM_PAUSE` (a model takes time) or at once (the machine
//! saturates; the figure is then throughput). Client, gateways, upstream and PostgreSQL share
//! this machine's cores.
//!
//! Run: `cargo bench -p ctxhost-tests --bench replicas` (a throwaway PostgreSQL cluster is
//! started as in the suite).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_test_postgres::Postgres;
use ctxhost_tests::bench::added_latency_cells;
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{reply, Answer, FakeUpstream};
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

const SESSIONS: usize = 64;
const TURNS_PER_SESSION: usize = 30;
const UPSTREAM_PAUSE: Duration = Duration::from_millis(100);

/// The history of turn `turn`: it grows by a question and an answer each turn.
fn history(turn: usize) -> Vec<Value> {
    let mut messages = vec![json!({"role": "system", "content": "You are a benchmark."})];
    for i in 0..=turn {
        messages.push(json!({"role": "user", "content": format!("question {i}: how does the parser handle nested blocks?")}));
        if i < turn {
            messages.push(json!({"role": "assistant", "content": format!("answer {i}: it keeps a stack of open blocks.")}));
        }
    }
    messages
}

/// Runs every session's turns, turn `n` of session `s` to `urls[(n + s) % len]`; returns the
/// sorted latencies and the wall time.
async fn drive(client: &reqwest::Client, urls: &[String], tag: &str) -> (Vec<Duration>, Duration) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for s in 0..SESSIONS {
        let (client, urls) = (client.clone(), urls.to_vec());
        let session = format!("{tag}-{s}");
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(TURNS_PER_SESSION);
            for turn in 0..TURNS_PER_SESSION {
                let url = &urls[(turn + s) % urls.len()];
                let t = Instant::now();
                let response = client
                    .post(url)
                    .header("x-ctxhost-session", &session)
                    .json(&json!({"model": "gpt-4o", "messages": history(turn)}))
                    .send()
                    .await
                    .expect("the request is answered");
                let status = response.status();
                let body = response.bytes().await.unwrap();
                assert!(
                    status.is_success(),
                    "{status}: {}",
                    String::from_utf8_lossy(&body)
                );
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort();
    (all, started.elapsed())
}

fn chat_url(gateway: &GatewayProcess) -> String {
    format!("{}/chat/completions", gateway.base_url())
}

fn main() {
    let pause_ms = Arc::new(AtomicU64::new(0));
    let upstream = {
        let pause_ms = pause_ms.clone();
        FakeUpstream::start(move |request| {
            let answer = reply(
                request,
                json!({"role": "assistant", "content": "A short answer."}),
                Some(json!({"prompt_tokens": 100, "completion_tokens": 4, "total_tokens": 104})),
            );
            match pause_ms.load(Ordering::Relaxed) {
                0 => answer,
                pause => Answer::After(Duration::from_millis(pause), Box::new(answer)),
            }
        })
    };
    let sqlite = Sandbox::new();
    let single = sqlite.serve(&upstream.base_url(), &[]);
    let url = Postgres::database("bench_replicas");
    let shared = Sandbox::new();
    shared.write_config(&format!("serve:\n  state: {url}\n"));
    let replicas: Vec<GatewayProcess> = (0..3)
        .map(|_| shared.serve(&upstream.base_url(), &[]))
        .collect();
    let setups: Vec<(&str, Vec<String>)> = vec![
        ("1 gateway, SQLite", vec![chat_url(&single)]),
        ("1 gateway, PostgreSQL", vec![chat_url(&replicas[0])]),
        (
            "3 gateways, PostgreSQL, turns in rotation",
            replicas.iter().map(chat_url).collect(),
        ),
    ];
    let direct = vec![format!("{}/chat/completions", upstream.base_url())];
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    println!(
        "| upstream pause | setup | direct p50 / p99 ms | via p50 / p99 ms | added p50 / p99 ms | turns/s |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    runtime.block_on(async {
        for pause in [UPSTREAM_PAUSE, Duration::ZERO] {
            pause_ms.store(pause.as_millis() as u64, Ordering::Relaxed);
            let tag = format!("p{}", pause.as_millis());
            let (d, _) = drive(&client, &direct, &format!("{tag}-direct")).await;
            for (name, urls) in &setups {
                let (v, wall) = drive(&client, urls, &format!("{tag}-{}", name.len())).await;
                println!(
                    "| {} ms | {name} | {} | {:.0} |",
                    pause.as_millis(),
                    added_latency_cells(&d, &v),
                    v.len() as f64 / wall.as_secs_f64(),
                );
            }
        }
    });
    println!(
        "\n{SESSIONS} sessions x {TURNS_PER_SESSION} turns per row; each turn's history grows by two messages."
    );
}
