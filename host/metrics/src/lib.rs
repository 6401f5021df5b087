//! What ctxhost's gateway counts: every metric declared once here (its name, kind and
//! meaning), the counters and histograms, rendered in Prometheus' text exposition format
//! (version 0.0.4) at `GET /metrics`. A crate of its own: counting and exposition are one job,
//! apart from serving turns.

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

/// How a metric is exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Histogram,
    Gauge,
}

/// Every metric the gateway exports: its name, kind and meaning are written here once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    Requests,
    RequestDuration,
    UpstreamDuration,
    UpstreamErrors,
    Compressions,
    EngineFailures,
    EngineToolCalls,
    TokensReceived,
    TokensSent,
    CacheReadTokens,
    CacheWriteTokens,
    CostMicrodollars,
    NoEngineCostMicrodollars,
    CompressionsDeferred,
    CacheDecisions,
    BackgroundCompressionsStarted,
    NewLineages,
    UnverifiedReferences,
    RecalledItems,
    SessionReloads,
    StoreErrors,
    StoreConflicts,
    Sessions,
}

impl Metric {
    /// In the order they are rendered.
    const ALL: [Metric; 23] = [
        Metric::Requests,
        Metric::RequestDuration,
        Metric::UpstreamDuration,
        Metric::UpstreamErrors,
        Metric::Compressions,
        Metric::EngineFailures,
        Metric::EngineToolCalls,
        Metric::TokensReceived,
        Metric::TokensSent,
        Metric::CacheReadTokens,
        Metric::CacheWriteTokens,
        Metric::CostMicrodollars,
        Metric::NoEngineCostMicrodollars,
        Metric::CompressionsDeferred,
        Metric::CacheDecisions,
        Metric::BackgroundCompressionsStarted,
        Metric::NewLineages,
        Metric::UnverifiedReferences,
        Metric::RecalledItems,
        Metric::SessionReloads,
        Metric::StoreErrors,
        Metric::StoreConflicts,
        Metric::Sessions,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Requests => "ctxhost_requests_total",
            Metric::RequestDuration => "ctxhost_request_duration_seconds",
            Metric::UpstreamDuration => "ctxhost_upstream_duration_seconds",
            Metric::UpstreamErrors => "ctxhost_upstream_errors_total",
            Metric::Compressions => "ctxhost_compressions_total",
            Metric::EngineFailures => "ctxhost_engine_failures_total",
            Metric::EngineToolCalls => "ctxhost_engine_tool_calls_total",
            Metric::TokensReceived => "ctxhost_tokens_received_total",
            Metric::TokensSent => "ctxhost_tokens_sent_total",
            Metric::CacheReadTokens => "ctxhost_cache_read_tokens_total",
            Metric::CacheWriteTokens => "ctxhost_cache_write_tokens_total",
            Metric::CostMicrodollars => "ctxhost_cost_microdollars_total",
            Metric::NoEngineCostMicrodollars => "ctxhost_no_engine_cost_microdollars_total",
            Metric::CompressionsDeferred => "ctxhost_compressions_deferred_total",
            Metric::CacheDecisions => "ctxhost_cache_decisions_total",
            Metric::BackgroundCompressionsStarted => {
                "ctxhost_background_compressions_started_total"
            }
            Metric::NewLineages => "ctxhost_new_lineages_total",
            Metric::UnverifiedReferences => "ctxhost_unverified_references_total",
            Metric::RecalledItems => "ctxhost_recalled_items_total",
            Metric::SessionReloads => "ctxhost_session_reloads_total",
            Metric::StoreErrors => "ctxhost_store_errors_total",
            Metric::StoreConflicts => "ctxhost_store_conflicts_total",
            Metric::Sessions => "ctxhost_sessions",
        }
    }

    fn kind(self) -> Kind {
        match self {
            Metric::RequestDuration | Metric::UpstreamDuration => Kind::Histogram,
            Metric::Sessions => Kind::Gauge,
            _ => Kind::Counter,
        }
    }

    /// The `# HELP` line.
    fn help(self) -> &'static str {
        match self {
            Metric::Requests => "Requests answered, by route and status.",
            Metric::RequestDuration => "Time to answer a request (to its last byte), by route.",
            Metric::UpstreamDuration => {
                "Time from sending a model call upstream to its response headers."
            }
            Metric::UpstreamErrors => "Upstream answers that were errors, by kind.",
            Metric::Compressions => "Compressions, by engine and outcome.",
            Metric::EngineFailures => "Engine operations that failed, by engine.",
            Metric::EngineToolCalls => "Engine tool calls the gateway answered, by tool.",
            Metric::TokensReceived => "Tokens of the histories clients sent.",
            Metric::TokensSent => "Tokens of the prompts sent upstream.",
            Metric::CacheReadTokens => {
                "Prompt tokens the provider reported reading from its prompt cache."
            }
            Metric::CacheWriteTokens => {
                "Prompt tokens the provider reported writing to its prompt cache."
            }
            Metric::CostMicrodollars => {
                "What model calls cost, in millionths of a dollar: their reported usage at the model's prices (serve.models.<name>.price, else the built-in table)."
            }
            Metric::NoEngineCostMicrodollars => {
                "What the same calls would have cost with no engine, estimated (the client's whole history against the same prompt cache), in millionths of a dollar."
            }
            Metric::CompressionsDeferred => {
                "Compressions not applied because they saved fewer tokens than serve.cache.min_tokens_saved."
            }
            Metric::CacheDecisions => {
                "What the cache-aware policy decided when a compression was asked for or the cache had expired, by outcome (cold_cache, cold_cache_early, window_requires, pays_back, would_not_pay_back, ratio_unknown)."
            }
            Metric::BackgroundCompressionsStarted => {
                "Compressions started in the background as a session neared or crossed its threshold."
            }
            Metric::NewLineages => "Requests whose history did not extend the session's lineage.",
            Metric::UnverifiedReferences => {
                "Handoff references in requests that did not verify (read as text, resuming nothing)."
            }
            Metric::RecalledItems => {
                "Stored summaries and messages the engine brought back into requests (select_context)."
            }
            Metric::SessionReloads => {
                "Sessions read again from the store because another gateway saved them since."
            }
            Metric::StoreErrors => "Session saves that failed.",
            Metric::StoreConflicts => {
                "Session saves refused because another gateway saved the session first."
            }
            Metric::Sessions => "Sessions held in memory.",
        }
    }
}

/// Every metric's values.
#[derive(Default)]
pub struct Metrics {
    counters: Mutex<BTreeMap<(Metric, Labels), u64>>,
    histograms: Mutex<BTreeMap<(Metric, Labels), Histogram>>,
    /// Sessions held in memory.
    pub live_sessions: AtomicU64,
}

impl Metrics {
    pub fn add(&self, metric: Metric, labels: &[(&'static str, &str)], value: u64) {
        debug_assert_eq!(metric.kind(), Kind::Counter, "{metric:?} is not a counter");
        let labels = labels.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        *counters.entry((metric, labels)).or_default() += value;
    }

    pub fn observe(&self, metric: Metric, labels: &[(&'static str, &str)], took: Duration) {
        debug_assert_eq!(
            metric.kind(),
            Kind::Histogram,
            "{metric:?} is not a histogram"
        );
        let labels = labels.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let mut histograms = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        histograms
            .entry((metric, labels))
            .or_default()
            .observe(took.as_secs_f64());
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        let counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let histograms = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        for metric in Metric::ALL {
            let name = metric.name();
            let (kind, help) = (metric.kind(), metric.help());
            let _ = writeln!(out, "# HELP {name} {help}");
            let kind_name = match kind {
                Kind::Counter => "counter",
                Kind::Histogram => "histogram",
                Kind::Gauge => "gauge",
            };
            let _ = writeln!(out, "# TYPE {name} {kind_name}");
            match kind {
                Kind::Counter => {
                    for ((_, labels), value) in counters.iter().filter(|((m, _), _)| *m == metric) {
                        let _ = writeln!(out, "{name}{} {value}", render_labels(labels, None));
                    }
                }
                Kind::Histogram => {
                    for ((_, labels), histogram) in
                        histograms.iter().filter(|((m, _), _)| *m == metric)
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
                Kind::Gauge => {
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
        metrics.add(Metric::Requests, &[("route", "chat"), ("status", "200")], 2);
        metrics.observe(
            Metric::RequestDuration,
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
