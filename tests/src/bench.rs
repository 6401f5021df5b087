//! Latency measurement the gateway benches share: requests sent from concurrent sessions to a
//! route (the upstream itself or a proxy in front of it), time to first byte of a stream, and
//! percentiles.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The `p` percentile (0 to 1) of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Milliseconds with three decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

/// The cells of a latency table's row, in ms: `direct p50 / p99 | via p50 / p99 | **added p50
/// / p99**` (added: what the proxy adds to the direct figure, never below zero).
pub fn added_latency_cells(direct: &[Duration], via: &[Duration]) -> String {
    let added = |p: f64| percentile(via, p).saturating_sub(percentile(direct, p));
    format!(
        "{} / {} | {} / {} | **{} / {}**",
        ms(percentile(direct, 0.5)),
        ms(percentile(direct, 0.99)),
        ms(percentile(via, 0.5)),
        ms(percentile(via, 0.99)),
        ms(added(0.5)),
        ms(added(0.99)),
    )
}

/// Where requests go: the upstream itself, or a proxy in front of it.
#[derive(Clone)]
pub struct Route {
    pub name: &'static str,
    /// The endpoint's URL (chat completions, messages...).
    pub url: String,
    /// Sent with every request (credentials, API version).
    pub headers: Vec<(&'static str, String)>,
}

impl Route {
    pub fn new(name: &'static str, url: String) -> Route {
        Route {
            name,
            url,
            headers: Vec::new(),
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Route {
        self.headers.push((name, value.into()));
        self
    }

    /// A POST to the route as session `session` (`x-ctxhost-session`).
    pub fn request(&self, client: &reqwest::Client, session: &str) -> reqwest::RequestBuilder {
        let mut request = client.post(&self.url).header("x-ctxhost-session", session);
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        request
    }
}

/// Sends `total` requests from `concurrency` sessions, each waiting for its answer before
/// sending the next; returns each latency (sorted) and the wall time. Sessions start spread
/// over `stagger` (the upstream's pause), as independent agents do: started together, they
/// would stay in lockstep and arrive as one burst of `concurrency` requests every pause.
pub async fn load(
    client: &reqwest::Client,
    route: &Route,
    concurrency: usize,
    total: usize,
    body: Arc<Value>,
    tag: &str,
    stagger: Duration,
) -> (Vec<Duration>, Duration) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (client, route, body) = (client.clone(), route.clone(), body.clone());
        let session = format!("{tag}-{worker}");
        let count = total / concurrency;
        let delay = stagger * worker as u32 / concurrency as u32;
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let mut latencies = Vec::with_capacity(count);
            for _ in 0..count {
                let t = Instant::now();
                let response = route
                    .request(&client, &session)
                    .json(&*body)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("a request to {} failed: {e}", route.name));
                let status = response.status();
                let text = response.bytes().await.unwrap();
                assert!(
                    status.is_success(),
                    "{} answered {status}: {}",
                    route.name,
                    String::from_utf8_lossy(&text)
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

/// The time to the first chunk of `runs` streamed answers (one fresh session each), sorted.
pub async fn first_byte(
    client: &reqwest::Client,
    route: &Route,
    body: &Value,
    runs: usize,
) -> Vec<Duration> {
    let mut times = Vec::new();
    for i in 0..runs {
        let t = Instant::now();
        let mut response = route
            .request(client, &format!("ttfb-{i}"))
            .json(body)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        let _ = response.chunk().await.unwrap();
        times.push(t.elapsed());
        while response.chunk().await.unwrap().is_some() {}
    }
    times.sort();
    times
}
