//! `ctxhost run` end to end in-process: replaying the long corpus session through the built-in
//! compressor with the offline summarizer, at one and four times its length. Throughput is per
//! model call, so the two figures show whether per-call overhead grows with session length.
//! Each length runs twice: as is, and priced against gpt-4o's simulated prompt cache (the
//! token-only policy, so both make the same compressions and the difference is the
//! simulation's own cost; `ctxhost run` must not slow by more than 10% for it).
//!
//! Run: `cargo bench -p ctxhost-tests --bench replay`

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ctxhost_config::Config;
use ctxhost_core::costing::Costing;
use ctxhost_core::replay::replay;
use ctxhost_core::services::{HostServicesImpl, LogSink};
use ctxhost_core::{Engines, SessionOptions};
use ctxhost_costs::cache::Ttl;
use ctxhost_costs::price::price_of;
use ctxhost_offline_summary::OfflineSummarizer;
use ctxhost_sdk::Message;
use ctxhost_tests::long_session;
use ctxhost_tokens::TokenCounter;

fn session(times: usize) -> Vec<Message> {
    let once: Vec<Message> =
        serde_json::from_value(serde_json::Value::Array(long_session())).unwrap();
    let mut messages = vec![once[0].clone()];
    for _ in 0..times {
        messages.extend_from_slice(&once[1..]);
    }
    messages
}

fn bench_replay(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let services = Arc::new(HostServicesImpl::new(
        TokenCounter::new("o200k_base"),
        LogSink::stderr(false),
        Some(Arc::new(OfflineSummarizer)),
    ));
    let engines = Engines::new(Config::defaults(), std::env::temp_dir(), services.clone());
    let mut group = c.benchmark_group("replay_long_session");
    group.sample_size(10);
    let costing = Costing {
        model: "gpt-4o".to_string(),
        price: price_of("gpt-4o", None).unwrap(),
        ttl: Ttl::FiveMinutes,
        pace_seconds: 30.0,
        pauses: Vec::new(),
        times: Vec::new(),
        policy: None,
        summarizer: None,
    };
    for times in [1usize, 4] {
        let messages = session(times);
        let calls = messages.iter().filter(|m| m.is_assistant()).count() as u64;
        group.throughput(Throughput::Elements(calls));
        for (label, costing) in [("", None), ("_priced", Some(&costing))] {
            group.bench_function(
                format!("compressor_x{times}_{}_messages{label}", messages.len()),
                |b| {
                    b.iter(|| {
                        let mut session = engines
                            .open_session("compressor", SessionOptions::new("bench").temporary())
                            .unwrap();
                        let report =
                            runtime.block_on(replay(&mut session, &messages, costing, |_, _| {}));
                        assert!(report.errors.is_empty());
                        assert_eq!(report.cost.is_some(), costing.is_some());
                        report
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench_replay);
criterion_main!(benches);
