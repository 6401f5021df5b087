//! What `ctxhost serve` adds on `POST /v1/messages` (Anthropic Messages), against a fake
//! Anthropic upstream on loopback:
//! (a) added latency (p50, p99) at 1 and 16 concurrent sessions, with an upstream that answers
//!     at once and one that takes `UPSTREAM_PAUSE`, and the added time to first byte when
//!     streaming; each figure measured directly against the upstream and through the gateway
//!     with the same requests;
//! (b) the latency of the request that takes a session over its threshold when the summarizer
//!     (an OpenAI-compatible fake on 127.0.0.1) takes `SUMMARIZER_PAUSE`, with
//!     `serve.compression.background` on (the agent's own time between turns, while a
//!     compression is being prepared, stands for the tools it runs) and off;
//! (c) the prompt cache's hit ratio over the example session (`examples/session.json`)
//!     replayed turn by turn with the compressor and with lcm, the upstream reporting cache
//!     reads and writes from the request's breakpoints as Anthropic does ([`PromptCache`]).
//!
//! Run: `cargo bench -p ctxhost-tests --bench anthropic_gateway` (a few minutes).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ctxhost_tests::anthropic_upstream::{assistant_blocks, from_openai, reply, PromptCache};
use ctxhost_tests::bench::{added_latency_cells, first_byte, load, ms, percentile, Route};
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{completion, Answer, FakeUpstream};
use ctxhost_tests::{read_json, workspace_root, Sandbox};
use serde_json::{json, Value};

const REQUESTS_PER_LEVEL: usize = 1_000;
const UPSTREAM_PAUSE: Duration = Duration::from_millis(100);
const SUMMARIZER_PAUSE: Duration = Duration::from_secs(3);
const MODEL: &str = "claude-bench";
const API_KEY: &str = "sk-ant-bench";
/// The window of the threshold runs (b): the example session crosses half of it early on.
const THRESHOLD_WINDOW: u64 = 16_000;
/// The window of the cache runs (c): the example session compresses several times in it.
const CACHE_WINDOW: u64 = 32_000;

/// The example session: OpenAI messages.
fn example_session() -> Vec<Value> {
    read_json(&workspace_root().join("examples/session.json"))
        .as_array()
        .expect("examples/session.json is an array of messages")
        .clone()
}

/// A Messages request for OpenAI `messages`.
fn request(messages: &[Value], stream: bool) -> Value {
    let (system, turns) = from_openai(messages);
    let mut body = json!({"model": MODEL, "max_tokens": 1024, "messages": turns});
    if let Some(system) = system {
        body["system"] = system;
    }
    if stream {
        body["stream"] = json!(true);
    }
    body
}

fn messages_route(name: &'static str, base_url: &str) -> Route {
    Route::new(name, format!("{base_url}/messages"))
        .header("x-api-key", API_KEY)
        .header("anthropic-version", "2023-06-01")
}

/// (a): added latency and time to first byte.
fn added_latency() {
    let pause_ms = Arc::new(AtomicU64::new(0));
    let upstream = {
        let pause_ms = pause_ms.clone();
        FakeUpstream::start(move |request| {
            let usage = json!({"input_tokens": 100, "output_tokens": 8});
            let answer = reply(
                request,
                json!([{"type": "text", "text": "A short answer from the fake upstream."}]),
                Some(usage),
            );
            match pause_ms.load(Ordering::Relaxed) {
                0 => answer,
                pause => Answer::After(Duration::from_millis(pause), Box::new(answer)),
            }
        })
    };
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let direct = messages_route("upstream", &upstream.base_url());
    let via = messages_route("ctxhost serve", &gateway.base_url());
    let history = example_session()[..10].to_vec();
    let body = Arc::new(request(&history, false));
    let stream = request(&history, true);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    println!("## (a) added latency on /v1/messages, fake Anthropic upstream on loopback\n");
    println!("| upstream pause | sessions | requests | direct p50 / p99 ms | via gateway p50 / p99 ms | added p50 / p99 ms |");
    println!("| --- | --- | --- | --- | --- | --- |");
    runtime.block_on(async {
        for route in [&direct, &via] {
            load(&client, route, 4, 200, body.clone(), "warm", Duration::ZERO).await;
        }
        // With the pause, one session waits on every answer: fewer requests keep it short.
        let levels = [
            (Duration::ZERO, 1, REQUESTS_PER_LEVEL),
            (Duration::ZERO, 16, REQUESTS_PER_LEVEL),
            (UPSTREAM_PAUSE, 1, 200),
            (UPSTREAM_PAUSE, 16, REQUESTS_PER_LEVEL),
        ];
        for (pause, sessions, requests) in levels {
            pause_ms.store(pause.as_millis() as u64, Ordering::Relaxed);
            let tag = format!("p{}-c{sessions}", pause.as_millis());
            let (d, _) = load(
                &client,
                &direct,
                sessions,
                requests,
                body.clone(),
                &tag,
                pause,
            )
            .await;
            let (v, _) = load(
                &client,
                &via,
                sessions,
                requests,
                body.clone(),
                &format!("{tag}-via"),
                pause,
            )
            .await;
            println!(
                "| {} ms | {sessions} | {requests} | {} |",
                pause.as_millis(),
                added_latency_cells(&d, &v),
            );
        }
        pause_ms.store(0, Ordering::Relaxed);
        let d = first_byte(&client, &direct, &stream, 200).await;
        let v = first_byte(&client, &via, &stream, 200).await;
        println!(
            "\nstreaming, time to first byte (200 streams each, no pause): direct p50 {} ms \
             p99 {} ms; via the gateway p50 {} ms p99 {} ms; added p50 {} ms",
            ms(percentile(&d, 0.5)),
            ms(percentile(&d, 0.99)),
            ms(percentile(&v, 0.5)),
            ms(percentile(&v, 0.99)),
            ms(percentile(&v, 0.5).saturating_sub(percentile(&d, 0.5))),
        );
    });
}

/// An upstream that answers each Messages call with the session's next recorded assistant
/// message, reporting cache use as Anthropic would.
fn recorded_anthropic_upstream(session: &[Value]) -> FakeUpstream {
    let replies: VecDeque<Value> = session
        .iter()
        .filter(|m| m["role"] == "assistant")
        .cloned()
        .collect();
    let replies = Mutex::new(replies);
    let cache = Mutex::new(PromptCache::default());
    FakeUpstream::start(move |request| {
        let usage = cache.lock().unwrap().usage(&request.json(), 50);
        let next = replies
            .lock()
            .unwrap()
            .pop_front()
            .expect("a recorded reply");
        reply(request, assistant_blocks(&next), Some(usage))
    })
}

/// One turn of a replayed session: its latency and whether the gateway compressed on it.
fn send(gateway: &GatewayProcess, session: &str, history: &[Value]) -> (Duration, bool) {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let started = Instant::now();
    let response = client
        .post(format!("{}/messages", gateway.base_url()))
        .header("x-api-key", API_KEY)
        .header("anthropic-version", "2023-06-01")
        .header("x-ctxhost-session", session)
        .json(&request(history, false))
        .send()
        .unwrap();
    let compressed = response.headers().contains_key("x-ctxhost-compressed");
    let status = response.status();
    let text = response.text().unwrap();
    assert!(status.is_success(), "{status}: {text}");
    (started.elapsed(), compressed)
}

/// (b): the request that crosses the threshold, with a slow summarizer.
fn crossing_the_threshold() {
    let session = example_session();
    println!(
        "\n## (b) the request that crosses the threshold, summarizer taking {} s \
         (compressor, {THRESHOLD_WINDOW}-token window)\n",
        SUMMARIZER_PAUSE.as_secs()
    );
    println!("| background compaction | turns | other turns p50 / max ms | crossing turn ms | agent's wait for the background compression ms |");
    println!("| --- | --- | --- | --- | --- |");
    for background in [true, false] {
        let summarizer = FakeUpstream::start(|_| {
            let summary = completion(
                json!({"role": "assistant", "content": "## Goal\nSolve the challenge.\n## Progress\nRead the files."}),
                None,
            );
            Answer::After(SUMMARIZER_PAUSE, Box::new(Answer::Json(200, summary)))
        });
        let upstream = recorded_anthropic_upstream(&session);
        let sandbox = Sandbox::new();
        sandbox.write_config(&format!(
            "auxiliary:\n  compression:\n    provider: custom\n    model: slow-summarizer\n    \
             base_url: {}\n    timeout: 60\n    max_retries: 0\n\
             compression:\n  protect_last_n: 4\n\
             serve:\n  models:\n    {MODEL}: {THRESHOLD_WINDOW}\n  compression:\n    background: {background}\n",
            summarizer.base_url()
        ));
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let (mut others, mut crossing, mut waited) = (Vec::new(), None, Duration::ZERO);
        let mut ready = 0;
        let turns = (0..session.len()).filter(|i| session[*i]["role"] == "assistant");
        for (turn, index) in turns.enumerate() {
            let (latency, compressed) = send(&gateway, "crossing", &session[..index]);
            if compressed {
                crossing = Some((turn + 1, latency));
                break;
            }
            others.push(latency);
            // The agent runs its tools: long enough for a compression being prepared.
            let state = gateway.anthropic_session("crossing", API_KEY);
            if state.get("pending").is_some_and(|p| !p.is_null()) {
                let t = Instant::now();
                ready += 1;
                gateway.wait_for_logs("a compression prepared in the background is ready", ready);
                waited += t.elapsed();
            }
        }
        let (turns, latency) = crossing.expect("the session crosses its threshold");
        others.sort();
        println!(
            "| {} | {turns} | {} / {} | **{}** | {} |",
            if background { "on" } else { "off" },
            ms(percentile(&others, 0.5)),
            ms(*others.last().unwrap()),
            ms(latency),
            ms(waited),
        );
    }
}

/// (c): cache hit ratio over the example session, per engine.
fn cache_hit_ratio() {
    let session = example_session();
    println!(
        "\n## (c) prompt cache over the example session ({} messages) through /v1/messages, \
         {CACHE_WINDOW}-token window, the gateway's breakpoints\n",
        session.len()
    );
    println!(
        "| engine | turns | compressions | cache read tokens | cache write tokens | hit ratio |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for (engine, window) in [
        ("compressor", CACHE_WINDOW),
        ("lcm", CACHE_WINDOW),
        ("compressor, window never reached", 1_000_000),
    ] {
        let upstream = recorded_anthropic_upstream(&session);
        let sandbox = Sandbox::new();
        sandbox.link_repo_plugins();
        let name = engine.split(',').next().unwrap();
        sandbox.write_config(&format!(
            "context:\n  engine: {name}\nserve:\n  models:\n    {MODEL}: {window}\n"
        ));
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let mut turns = 0;
        for index in (0..session.len()).filter(|i| session[*i]["role"] == "assistant") {
            send(&gateway, "cached", &session[..index]);
            turns += 1;
        }
        let state = gateway.anthropic_session("cached", API_KEY);
        let cache = &state["cache"];
        println!(
            "| {engine} | {turns} | {} | {} | {} | **{:.3}** |",
            state["compressions"].as_array().map_or(0, Vec::len),
            cache["read_tokens"],
            cache["write_tokens"],
            cache["hit_ratio"].as_f64().unwrap_or_default(),
        );
    }
}

fn main() {
    added_latency();
    crossing_the_threshold();
    cache_hit_ratio();
}
