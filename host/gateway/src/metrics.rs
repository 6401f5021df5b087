//! The gateway's Prometheus metrics: a few counters and histograms, rendered in the text
//! exposition format (version 0.0.4) at `GET /metrics`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Latency buckets, in seconds: from well under a millisecond (the gateway's own overhead) to a
/// long model call.
const BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 120.0,
];

#[derive(Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS.len()];
        }
        for (count, bound) in self.counts.iter_mut().zip(BUCKETS) {
            if seconds <= *bound {
                *count += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }
}

/// Labels, rendered in order.
type Labels = Vec<(&'static str, String)>;

/// Every metric the gateway exports.
#[derive(Default)]
pub struct Metrics {
    counters: Mutex<BTreeMap<(&'static str, Labels), u64>>,
    histograms: Mutex<BTreeMap<(&'static str, Labels), Histogram>>,
    /// Sessions held in memory.
    pub live_sessions: AtomicU64,
}

/// What each metric means, for the `# HELP` lines.
const HELP: &[(&str, &str, &str)] = &[
    (
        "ctxhost_requests_total",
        "counter",
        "Requests answered, by route and status.",
    ),
    (
        "ctxhost_request_duration_seconds",
        "histogram",
        "Time to answer a request (to its last byte), by route.",
    ),
    (
        "ctxhost_upstream_duration_seconds",
        "histogram",
        "Time from sending a model call upstream to its response headers.",
    ),
    (
        "ctxhost_upstream_errors_total",
        "counter",
        "Upstream answers that were errors, by kind.",
    ),
    (
        "ctxhost_compressions_total",
        "counter",
        "Compressions, by engine and outcome.",
    ),
    (
        "ctxhost_engine_failures_total",
        "counter",
        "Engine operations that failed, by engine.",
    ),
    (
        "ctxhost_engine_tool_calls_total",
        "counter",
        "Engine tool calls the gateway answered, by tool.",
    ),
    (
        "ctxhost_tokens_received_total",
        "counter",
        "Tokens of the histories clients sent.",
    ),
    (
        "ctxhost_tokens_sent_total",
        "counter",
        "Tokens of the prompts sent upstream.",
    ),
    (
        "ctxhost_cache_read_tokens_total",
        "counter",
        "Prompt tokens the provider reported reading from its prompt cache.",
    ),
    (
        "ctxhost_cache_write_tokens_total",
        "counter",
        "Prompt tokens the provider reported writing to its prompt cache.",
    ),
    (
        "ctxhost_compressions_deferred_total",
        "counter",
        "Compressions not applied because they saved fewer tokens than serve.cache.min_tokens_saved.",
    ),
    (
        "ctxhost_new_lineages_total",
        "counter",
        "Requests whose history did not extend the session's lineage.",
    ),
    ("ctxhost_sessions", "gauge", "Sessions held in memory."),
];

impl Metrics {
    pub fn add(&self, name: &'static str, labels: &[(&'static str, &str)], value: u64) {
        let labels = labels.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        *counters.entry((name, labels)).or_default() += value;
    }

    pub fn observe(&self, name: &'static str, labels: &[(&'static str, &str)], took: Duration) {
        let labels = labels.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let mut histograms = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        histograms
            .entry((name, labels))
            .or_default()
            .observe(took.as_secs_f64());
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        let counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let histograms = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        for (name, kind, help) in HELP {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            match *kind {
                "counter" => {
                    for ((_, labels), value) in counters.iter().filter(|((n, _), _)| n == name) {
                        let _ = writeln!(out, "{name}{} {value}", render_labels(labels, None));
                    }
                }
                "histogram" => {
                    for ((_, labels), histogram) in
                        histograms.iter().filter(|((n, _), _)| n == name)
                    {
                        for (bound, count) in BUCKETS.iter().zip(&histogram.counts) {
                            let le = bound.to_string();
                            let _ = writeln!(
                                out,
                                "{name}_bucket{} {count}",
                                render_labels(labels, Some(&le))
                            );
                        }
                        let _ = writeln!(
                            out,
                            "{name}_bucket{} {}",
                            render_labels(labels, Some("+Inf")),
                            histogram.count
                        );
                        let _ = writeln!(
                            out,
                            "{name}_sum{} {}",
                            render_labels(labels, None),
                            histogram.sum
                        );
                        let _ = writeln!(
                            out,
                            "{name}_count{} {}",
                            render_labels(labels, None),
                            histogram.count
                        );
                    }
                }
                _ => {
                    let _ = writeln!(out, "{name} {}", self.live_sessions.load(Ordering::Relaxed));
                }
            }
        }
        out
    }
}

fn render_labels(labels: &Labels, le: Option<&str>) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_histograms() {
        let metrics = Metrics::default();
        metrics.add(
            "ctxhost_requests_total",
            &[("route", "chat"), ("status", "200")],
            2,
        );
        metrics.observe(
            "ctxhost_request_duration_seconds",
            &[("route", "chat")],
            Duration::from_millis(3),
        );
        let text = metrics.render();
        assert!(text.contains("ctxhost_requests_total{route=\"chat\",status=\"200\"} 2\n"));
        assert!(text
            .contains("ctxhost_request_duration_seconds_bucket{route=\"chat\",le=\"0.005\"} 1\n"));
        assert!(text
            .contains("ctxhost_request_duration_seconds_bucket{route=\"chat\",le=\"0.0025\"} 0\n"));
        assert!(text.contains("ctxhost_request_duration_seconds_count{route=\"chat\"} 1\n"));
        assert!(text.contains("# TYPE ctxhost_sessions gauge\nctxhost_sessions 0\n"));
    }
}
