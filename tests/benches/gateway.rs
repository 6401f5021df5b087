//! What `ctxhost serve` adds to a model call, against a fake upstream on loopback that answers
//! at once: latency (p50, p99) at 1, 16 and 64 concurrent sessions without compression, the
//! latency of a request that compresses, time to first byte when streaming, throughput at 64
//! sessions, and resident memory per 1,000 idle sessions. Each figure is measured directly
//! against the upstream and through the gateway, in the same run, with the same requests.
//!
//! Each session resends the same 10-message history every time (a retry-like turn: the gateway
//! still hashes the history, checks the lineage, asks the engine and saves the session).
//!
//! Run: `cargo bench -p ctxhost-tests --bench gateway` (release build of the binary first).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

const REQUESTS_PER_LEVEL: usize = 2_000;

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

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

/// Sends `total` requests from `concurrency` sessions; returns each latency and the wall time.
async fn load(
    client: &reqwest::Client,
    url: &str,
    concurrency: usize,
    total: usize,
    body: Arc<Value>,
    tag: &str,
) -> (Vec<Duration>, Duration) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (client, url, body) = (client.clone(), url.to_string(), body.clone());
        let session = format!("{tag}-{worker}");
        let count = total / concurrency;
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(count);
            for _ in 0..count {
                let t = Instant::now();
                let response = client
                    .post(&url)
                    .header("x-ctxhost-session", &session)
                    .json(&*body)
                    .send()
                    .await
                    .expect("the request goes through");
                assert!(response.status().is_success(), "{}", response.status());
                response.bytes().await.unwrap();
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

async fn first_byte(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    runs: usize,
) -> Vec<Duration> {
    let mut times = Vec::new();
    for i in 0..runs {
        let t = Instant::now();
        let mut response = client
            .post(url)
            .header("x-ctxhost-session", format!("ttfb-{i}"))
            .json(body)
            .send()
            .await
            .unwrap();
        let _ = response.chunk().await.unwrap();
        times.push(t.elapsed());
        while response.chunk().await.unwrap().is_some() {}
    }
    times.sort();
    times
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

fn main() {
    let upstream = FakeUpstream::start(|request| {
        reply(
            request,
            json!({"role": "assistant", "content": "A short answer from the fake upstream."}),
            Some(json!({"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108})),
        )
    });
    let sandbox = Sandbox::new();
    // A small window for the model the compression run uses; the others get gpt-4o's.
    sandbox.write_config("serve:\n  models:\n    small-model: 4096\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let direct = format!("{}/chat/completions", upstream.base_url());
    let via = format!("{}/chat/completions", gateway.base_url());
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
        // Warm up both paths.
        load(&client, &direct, 4, 200, body.clone(), "warm").await;
        load(&client, &via, 4, 200, body.clone(), "warm").await;
        for concurrency in [1, 16, 64] {
            let (d, _) = load(
                &client,
                &direct,
                concurrency,
                REQUESTS_PER_LEVEL,
                body.clone(),
                "d",
            )
            .await;
            let (g, wall) = load(
                &client,
                &via,
                concurrency,
                REQUESTS_PER_LEVEL,
                body.clone(),
                &format!("g{concurrency}"),
            )
            .await;
            rows.push(format!(
                "| {concurrency} | {} | {} | {} | {} | {} | {} | {:.0} |",
                ms(percentile(&d, 0.5)),
                ms(percentile(&d, 0.99)),
                ms(percentile(&g, 0.5)),
                ms(percentile(&g, 0.99)),
                ms(percentile(&g, 0.5).saturating_sub(percentile(&d, 0.5))),
                ms(percentile(&g, 0.99).saturating_sub(percentile(&d, 0.99))),
                g.len() as f64 / wall.as_secs_f64(),
            ));
        }
    });
    println!("## ctxhost serve vs direct, fake upstream on loopback ({REQUESTS_PER_LEVEL} requests per level)\n");
    println!("| sessions | direct p50 ms | direct p99 ms | gateway p50 ms | gateway p99 ms | added p50 ms | added p99 ms | gateway req/s |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for row in &rows {
        println!("{row}");
    }

    // Requests that compress: fresh sessions whose history is over the small model's window.
    let long: Vec<Value> = long_session()[..40].to_vec();
    let compressing = json!({"model": "small-model", "messages": long});
    let plain_long = json!({"model": "gpt-4o", "messages": long});
    runtime.block_on(async {
        let (d, _) = load(&client, &direct, 1, 100, Arc::new(plain_long.clone()), "cd").await;
        let mut times = Vec::new();
        for i in 0..100 {
            let t = Instant::now();
            let response = client
                .post(&via)
                .header("x-ctxhost-session", format!("compress-{i}"))
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

        let mut stream = json!({"model": "gpt-4o", "messages": history(10), "stream": true});
        let d = first_byte(&client, &direct, &stream, 200).await;
        stream["stream_options"] = json!({"include_usage": false});
        let g = first_byte(&client, &via, &stream, 200).await;
        println!(
            "\n## streaming, time to first byte (200 streams)\n\ndirect p50 {} ms p99 {} ms; gateway p50 {} ms p99 {} ms; added p50 {} ms",
            ms(percentile(&d, 0.5)),
            ms(percentile(&d, 0.99)),
            ms(percentile(&g, 0.5)),
            ms(percentile(&g, 0.99)),
            ms(percentile(&g, 0.5).saturating_sub(percentile(&d, 0.5)))
        );

        let before = rss_kib(gateway.pid());
        for i in 0..1_000 {
            client
                .post(&via)
                .header("x-ctxhost-session", format!("idle-{i}"))
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
            "\n## memory\n\nresident {:.1} MiB before, {:.1} MiB after 1,000 more idle sessions: {:.1} MiB per 1,000",
            before as f64 / 1024.0,
            after as f64 / 1024.0,
            after.saturating_sub(before) as f64 / 1024.0
        );
    });
    println!("\nLiteLLM reference: not run by this bench (see the closing note of the session that added it).");
}
