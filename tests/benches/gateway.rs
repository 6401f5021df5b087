//! What `ctxhost serve` adds to a model call, against a fake upstream on loopback, beside
//! LiteLLM's proxy in front of the same upstream in the same run: latency (p50, p99) at 1, 16
//! and 64 concurrent sessions without compression, the latency of a request that compresses,
//! time to first byte when streaming, throughput, and resident memory per 1,000 idle sessions.
//! Every figure is measured directly against the upstream and through each proxy, with the same
//! requests, so "added" is the proxy's share.
//!
//! Two upstreams: one that answers at once (the machine saturates: with the client, the
//! upstream and the proxy on the same cores, added latency is then mostly queueing) and one
//! that takes `UPSTREAM_PAUSE` to answer, as a real model does (much longer, in fact), so 64
//! concurrent sessions are 64 agents waiting on their model, not a CPU-bound loop.
//!
//! Each session resends the same 10-message history every time (a retry-like turn: the gateway
//! still hashes the history, checks the lineage, asks the engine and saves the session).
//!
//! Run: `cargo bench -p ctxhost-tests --bench gateway`. The first run installs LiteLLM
//! (`litellm[proxy]` from PyPI) into a virtualenv under the target directory;
//! `GATEWAY_BENCH_LITELLM=0` leaves LiteLLM out (the report says so).

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_tests::bench::{added_latency_cells, first_byte, load, ms, percentile, Route};
use ctxhost_tests::python::{virtualenv, Requirements};
use ctxhost_tests::upstream::{reply, Answer, FakeUpstream};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

const REQUESTS_PER_LEVEL: usize = 2_000;
const UPSTREAM_PAUSE: Duration = Duration::from_millis(100);
const LITELLM_PACKAGES: &[&str] = &["litellm[proxy]>=1.40,<2"];
/// LiteLLM's proxy refuses to start without a master key; clients send it as their bearer.
const LITELLM_KEY: &str = "sk-ctxhost-bench-litellm-master-key";

fn history(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            if i == 0 {
                json!({"role": "system", "content": "You are a benchmark."})
            } else if i % 2 == 1 {
                json!({"role": "user", "content": format!("question {i}: how does the parser handle nested blocks?")})
            } else {
                json!({"role": "assistant", "content": format!("answer {i}: it keeps a stack of open blocks and pops on close.")})
            }
        })
        .collect()
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// LiteLLM's proxy in front of `upstream`, one uvicorn worker (its default); killed on drop.
struct LiteLlm {
    child: Child,
    port: u16,
}

impl LiteLlm {
    fn start(upstream: &str, dir: &Path) -> LiteLlm {
        let python = virtualenv(
            "ctxhost-litellm-venv",
            Requirements::Unlocked(LITELLM_PACKAGES),
            "the gateway bench's LiteLLM reference (GATEWAY_BENCH_LITELLM=0 leaves it out)",
        );
        let litellm = python.with_file_name("litellm");
        let config = dir.join("litellm.yaml");
        std::fs::write(
            &config,
            format!(
                "model_list:\n  - model_name: gpt-4o\n    litellm_params:\n      model: openai/gpt-4o\n      \
                 api_base: {upstream}\n      api_key: sk-fake-upstream\n\
                 litellm_settings:\n  telemetry: false\n\
                 general_settings:\n  master_key: {LITELLM_KEY}\n"
            ),
        )
        .unwrap();
        // LiteLLM takes a port, not a listener: ask the kernel for a free one and hand it over.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(dir.join("litellm.log")).unwrap();
        let child = Command::new(&litellm)
            .arg("--config")
            .arg(&config)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            // Offline: the model price map ships in the package.
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", litellm.display()));
        let mut proxy = LiteLlm { child, port };
        proxy.wait_ready(&dir.join("litellm.log"));
        proxy
    }

    /// Polls its liveliness endpoint until it answers (it imports for several seconds).
    fn wait_ready(&mut self, log: &Path) {
        let url = format!("http://127.0.0.1:{}/health/liveliness", self.port);
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "LiteLLM exited ({status}) before it was ready:\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            if reqwest::blocking::get(&url).is_ok_and(|r| r.status().is_success()) {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "LiteLLM did not answer {url} within 3 minutes:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn route(&self) -> Route {
        Route::new(
            "litellm",
            format!("http://127.0.0.1:{}/v1/chat/completions", self.port),
        )
        .header("authorization", format!("Bearer {LITELLM_KEY}"))
    }
}

impl Drop for LiteLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One line of the latency table: a proxy against the direct figures of the same level.
fn row(
    pause: &str,
    concurrency: usize,
    proxy: &str,
    direct: &[Duration],
    via: &[Duration],
    wall: Duration,
) -> String {
    format!(
        "| {pause} | {concurrency} | {proxy} | {} | {:.0} |",
        added_latency_cells(direct, via),
        via.len() as f64 / wall.as_secs_f64(),
    )
}

fn main() {
    let pause_ms = Arc::new(AtomicU64::new(0));
    let upstream = {
        let pause_ms = pause_ms.clone();
        FakeUpstream::start(move |request| {
            // LiteLLM asks for other things too (`GET /v1/models`); only chats get answers.
            if !request.path.ends_with("/chat/completions") {
                return Answer::Json(404, json!({"error": {"message": "not served here"}}));
            }
            let answer = reply(
                request,
                json!({"role": "assistant", "content": "A short answer from the fake upstream."}),
                Some(json!({"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108})),
            );
            match pause_ms.load(Ordering::Relaxed) {
                0 => answer,
                pause => Answer::After(Duration::from_millis(pause), Box::new(answer)),
            }
        })
    };
    let sandbox = Sandbox::new();
    // A small window for the model the compression run uses; the others get gpt-4o's.
    sandbox.write_config("serve:\n  models:\n    small-model: 4096\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let direct = Route::new(
        "upstream",
        format!("{}/chat/completions", upstream.base_url()),
    );
    let via = Route::new(
        "ctxhost serve",
        format!("{}/chat/completions", gateway.base_url()),
    );
    let litellm = match std::env::var("GATEWAY_BENCH_LITELLM").as_deref() {
        Ok("0") => None,
        _ => Some(LiteLlm::start(&upstream.base_url(), &sandbox.home())),
    };
    let mut proxies = vec![via.clone()];
    proxies.extend(litellm.as_ref().map(LiteLlm::route));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(128)
        .build()
        .unwrap();
    let body = Arc::new(json!({"model": "gpt-4o", "messages": history(10)}));
    let mut rows = Vec::new();
    runtime.block_on(async {
        for route in std::iter::once(&direct).chain(&proxies) {
            load(&client, route, 4, 200, body.clone(), "warm", Duration::ZERO).await;
        }
        for pause in [Duration::ZERO, UPSTREAM_PAUSE] {
            pause_ms.store(pause.as_millis() as u64, Ordering::Relaxed);
            let pause_label = format!("{} ms", pause.as_millis());
            for concurrency in [1, 16, 64] {
                let tag = format!("p{}-c{concurrency}", pause.as_millis());
                let (d, _) = load(
                    &client,
                    &direct,
                    concurrency,
                    REQUESTS_PER_LEVEL,
                    body.clone(),
                    &tag,
                    pause,
                )
                .await;
                for route in &proxies {
                    let (v, wall) = load(
                        &client,
                        route,
                        concurrency,
                        REQUESTS_PER_LEVEL,
                        body.clone(),
                        &format!("{tag}-{}", route.name.replace(' ', "-")),
                        pause,
                    )
                    .await;
                    rows.push(row(&pause_label, concurrency, route.name, &d, &v, wall));
                }
            }
        }
        pause_ms.store(0, Ordering::Relaxed);
    });
    println!(
        "## added latency, fake upstream on loopback ({REQUESTS_PER_LEVEL} requests per row)\n"
    );
    println!("| upstream pause | sessions | proxy | direct p50 / p99 ms | via proxy p50 / p99 ms | added p50 / p99 ms | req/s via proxy |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for row in &rows {
        println!("{row}");
    }
    if litellm.is_none() {
        println!("\nLiteLLM left out (GATEWAY_BENCH_LITELLM=0).");
    }

    // Requests that compress: fresh sessions whose history is over the small model's window.
    let long: Vec<Value> = long_session()[..40].to_vec();
    let compressing = json!({"model": "small-model", "messages": long});
    let plain_long = json!({"model": "gpt-4o", "messages": long});
    runtime.block_on(async {
        let (d, _) = load(
            &client,
            &direct,
            1,
            100,
            Arc::new(plain_long.clone()),
            "cd",
            Duration::ZERO,
        )
        .await;
        let mut times = Vec::new();
        for i in 0..100 {
            let t = Instant::now();
            let response = via
                .request(&client, &format!("compress-{i}"))
                .json(&compressing)
                .send()
                .await
                .unwrap();
            assert!(response.headers().contains_key("x-ctxhost-compressed"));
            response.bytes().await.unwrap();
            times.push(t.elapsed());
        }
        times.sort();
        println!(
            "\n## a request that compresses (40 corpus messages into a 4,096-token window, built-in compressor)\n\ndirect p50 {} ms; through the gateway, compressing: p50 {} ms, p99 {} ms",
            ms(percentile(&d, 0.5)),
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99))
        );

        let stream = json!({"model": "gpt-4o", "messages": history(10), "stream": true});
        let d = first_byte(&client, &direct, &stream, 200).await;
        println!("\n## streaming, time to first byte (200 streams each)\n");
        println!(
            "direct p50 {} ms p99 {} ms",
            ms(percentile(&d, 0.5)),
            ms(percentile(&d, 0.99))
        );
        for route in &proxies {
            let v = first_byte(&client, route, &stream, 200).await;
            println!(
                "- {}: p50 {} ms p99 {} ms; added p50 {} ms",
                route.name,
                ms(percentile(&v, 0.5)),
                ms(percentile(&v, 0.99)),
                ms(percentile(&v, 0.5).saturating_sub(percentile(&d, 0.5)))
            );
        }

        let before = rss_kib(gateway.pid());
        for i in 0..1_000 {
            via.request(&client, &format!("idle-{i}"))
                .json(&*body)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
        }
        let after = rss_kib(gateway.pid());
        println!(
            "\n## memory\n\nctxhost serve resident {:.1} MiB before, {:.1} MiB after 1,000 more idle sessions: {:.1} MiB per 1,000",
            before as f64 / 1024.0,
            after as f64 / 1024.0,
            after.saturating_sub(before) as f64 / 1024.0
        );
        if let Some(proxy) = &litellm {
            println!(
                "LiteLLM proxy resident {:.1} MiB after the run",
                rss_kib(proxy.child.id()) as f64 / 1024.0
            );
        }
    });
}
