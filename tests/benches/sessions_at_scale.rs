//! `ctxhost serve` holding many sessions: one gateway on the lossless engine isolated (its
//! plugin's processes each serve many sessions), one on the window engine isolated (a plugin
//! whose instances hold next to nothing: what isolation itself costs) and one on the built-in
//! compressor, in one run. Each opens `CTXHOST_BENCH_SESSIONS` sessions (10,000 by default; one turn each, so
//! each session is live with its engine instance and then idle), and the report gives, at 300
//! sessions and at the full count: the processes of the gateway's tree, the resident memory
//! (RSS) of the whole tree, and the RSS each idle session adds. Then what the gateway adds to a
//! model call (p50 / p99, against the fake upstream directly) at 1, 16 and 64 concurrent
//! clients, with all those sessions live.
//!
//! Run: `cargo bench -p ctxhost-tests --bench sessions_at_scale`;
//! `CTXHOST_BENCH_SESSIONS=2000` for a shorter run, `CTXHOST_BENCH_ENGINES=window,compressor`
//! for some of the engines only, `CTXHOST_BENCH_ISOLATION=in_process` to run the plugins in the
//! gateway's own process instead (what isolation costs). The budgets: 300 sessions under 400 MiB
//! for the whole tree, 10,000 under 1 GiB.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_tests::bench::{added_latency_cells, load, Route};
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

/// Requests per concurrency level for the latency table.
const REQUESTS_PER_LEVEL: usize = 640;
/// Clients opening sessions at once.
const OPENERS: usize = 16;

fn history() -> Value {
    json!([
        {"role": "system", "content": "You are a benchmark."},
        {"role": "user", "content": "question 1: how does the parser handle nested blocks?"},
        {"role": "assistant", "content": "answer 1: it keeps a stack of open blocks."},
        {"role": "user", "content": "question 2: and unterminated ones?"}
    ])
}

/// A process's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// `pid` and every process under it.
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut at = 0;
    while at < all.len() {
        let parent = all[at];
        at += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            all.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    all
}

/// The processes of the gateway's tree, their RSS together and the gateway's own, in KiB.
fn footprint(gateway: &GatewayProcess) -> (usize, u64, u64) {
    let processes = tree(gateway.pid());
    let rss = processes.iter().map(|pid| rss_kib(*pid)).sum();
    (processes.len(), rss, rss_kib(gateway.pid()))
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// Opens sessions `from..to` on `route`, `OPENERS` at a time, one turn each.
async fn open_sessions(client: &reqwest::Client, route: &Route, from: usize, to: usize) {
    let body = Arc::new(json!({"model": "gpt-4o", "messages": history()}));
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(from));
    let mut tasks = Vec::new();
    for _ in 0..OPENERS {
        let (client, route, body, next) =
            (client.clone(), route.clone(), body.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let session = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if session >= to {
                    return;
                }
                let response = route
                    .request(&client, &format!("idle-{session}"))
                    .json(&*body)
                    .send()
                    .await
                    .expect("the request is answered");
                let status = response.status();
                let engine_error = response.headers().get("x-ctxhost-engine-error").cloned();
                assert!(status.is_success(), "session {session}: {status}");
                assert!(
                    engine_error.is_none(),
                    "session {session}: {engine_error:?}"
                );
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

fn main() {
    let sessions: usize = std::env::var("CTXHOST_BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
        .max(301);
    let upstream = FakeUpstream::start(|request| {
        reply(
            request,
            json!({"role": "assistant", "content": "A short answer from the fake upstream."}),
            Some(json!({"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108})),
        )
    });
    let direct = Route::new(
        "upstream",
        format!("{}/chat/completions", upstream.base_url()),
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = reqwest::Client::new();
    let mut footprints = Vec::new();
    let mut latencies = Vec::new();
    let engines = std::env::var("CTXHOST_BENCH_ENGINES")
        .unwrap_or_else(|_| "lcm,window,compressor".to_string());
    // `in_process` shows what isolation itself costs, beside the same engines in the gateway.
    let isolation =
        std::env::var("CTXHOST_BENCH_ISOLATION").unwrap_or_else(|_| "process".to_string());
    for engine in engines.split(',') {
        let sandbox = Sandbox::new();
        if engine != "compressor" {
            sandbox.add_plugin(engine, &format!("ctxhost_engine_{engine}"));
        }
        sandbox.write_config(&format!(
            "context:\n  engine: {engine}\nplugins:\n  {engine}:\n    isolation: {isolation}\n"
        ));
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let via = Route::new(
            "ctxhost serve",
            format!("{}/chat/completions", gateway.base_url()),
        );
        let started = Instant::now();
        runtime.block_on(open_sessions(&client, &via, 0, 300));
        let (processes, at_300, gateway_300) = footprint(&gateway);
        footprints.push(format!(
            "| {engine} | 300 | {processes} | {} | {} | |",
            mib(at_300),
            mib(gateway_300)
        ));
        runtime.block_on(open_sessions(&client, &via, 300, sessions));
        let opening = started.elapsed();
        let (processes, rss, gateway_rss) = footprint(&gateway);
        // From 300 on: the threads and buffers of a busy process are there by then.
        footprints.push(format!(
            "| {engine} | {sessions} | {processes} | {} | {} | {:.1} |",
            mib(rss),
            mib(gateway_rss),
            rss.saturating_sub(at_300) as f64 / (sessions - 300) as f64
        ));
        eprintln!(
            "{engine}: {sessions} sessions opened in {:.1}s",
            opening.as_secs_f64()
        );
        let body = Arc::new(json!({"model": "gpt-4o", "messages": history()}));
        for concurrency in [1, 16, 64] {
            let total = if concurrency == 1 {
                REQUESTS_PER_LEVEL / 4
            } else {
                REQUESTS_PER_LEVEL
            };
            let (straight, _) = runtime.block_on(load(
                &client,
                &direct,
                concurrency,
                total,
                body.clone(),
                "direct",
                Duration::ZERO,
            ));
            let (through, wall) = runtime.block_on(load(
                &client,
                &via,
                concurrency,
                total,
                body.clone(),
                &format!("busy-{concurrency}"),
                Duration::ZERO,
            ));
            latencies.push(format!(
                "| {engine} | {concurrency} | {} | {:.0} |",
                added_latency_cells(&straight, &through),
                through.len() as f64 / wall.as_secs_f64()
            ));
        }
        let (processes, rss, gateway_rss) = footprint(&gateway);
        footprints.push(format!(
            "| {engine} | {sessions} + load | {processes} | {} | {} | |",
            mib(rss),
            mib(gateway_rss)
        ));
        drop(gateway);
    }
    println!(
        "## Sessions held by `ctxhost serve` (plugins' isolation: {isolation}, 1 process each)\n"
    );
    println!(
        "| engine | sessions | processes in the tree | RSS of the tree (MiB) | of which the \
         gateway (MiB) | KiB per idle session (300 to all) |"
    );
    println!("|---|---|---|---|---|---|");
    for line in footprints {
        println!("{line}");
    }
    println!("\n## Added latency with those sessions live (ms)\n");
    println!("| engine | concurrent clients | direct p50 / p99 | via p50 / p99 | added p50 / p99 | req/s |");
    println!("|---|---|---|---|---|---|");
    for line in latencies {
        println!("{line}");
    }
}
