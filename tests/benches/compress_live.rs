//! The built-in compressor in a live session: token counts already cached (as when messages
//! arrive one by one), a ~350K-token session of ~1,200 messages built from the corpus.
//!
//! - `compress`: one compression of the whole session, with the offline summarizer.
//! - `per_turn_check`: what each turn costs before the model call (count the new message,
//!   `should_compress_preflight` on the context), at two session lengths: it must not grow with
//!   the length of the session beyond the linear scan of cached counts.
//!
//! - `compress_live_http`: the same with an OpenAI-compatible summarizer, when
//!   `CTXHOST_BENCH_SUMMARIZER_URL` names one (e.g. a loopback server: `http://127.0.0.1:PORT/v1`).
//!
//! Run: `cargo bench -p ctxhost-tests --bench compress_live`

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use ctxhost_compressor::Compressor;
use ctxhost_core::services::{HostServicesImpl, LogSink};
use ctxhost_offline_summary::OfflineSummarizer;
use ctxhost_sdk::{CompressOptions, ContextEngine, EngineSetup, HostServices, Message, ModelInfo};
use ctxhost_tests::long_session;
use ctxhost_tokens::TokenCounter;

fn session(min_messages: usize) -> Vec<Message> {
    let once: Vec<Message> =
        serde_json::from_value(serde_json::Value::Array(long_session())).unwrap();
    let mut messages = vec![once[0].clone()];
    while messages.len() < min_messages {
        messages.extend_from_slice(&once[1..]);
    }
    messages
}

fn engine(host: &Arc<HostServicesImpl>) -> Compressor {
    let setup = EngineSetup {
        engine: "compressor".to_string(),
        data_dir: std::env::temp_dir(),
        config: serde_json::Value::Null,
        model: ModelInfo {
            name: "bench".to_string(),
            context_length: 128_000,
        },
    };
    Compressor::new(HostServices::new(host.clone(), setup)).unwrap()
}

fn bench(c: &mut Criterion) {
    let host = Arc::new(HostServicesImpl::new(
        TokenCounter::new("o200k_base"),
        LogSink::stderr(false),
        Some(Arc::new(OfflineSummarizer)),
    ));
    let messages = session(1_200);
    host.tokens().count_messages(&messages); // the live session has every count cached
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    let mut compressor = engine(&host);
    c.bench_function("compress_live_1200_messages", |b| {
        b.iter(|| compressor.compress(&messages, &force).unwrap())
    });

    if let Ok(url) = std::env::var("CTXHOST_BENCH_SUMMARIZER_URL") {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let settings =
            ctxhost_config::summarizer::SummarizerSettings::from_value(&serde_json::json!({
                "provider": "custom", "model": "bench", "base_url": url
            }))
            .unwrap();
        let summarizer = ctxhost_summarizer::build(&settings, runtime.handle().clone()).unwrap();
        let http_host = Arc::new(HostServicesImpl::new(
            TokenCounter::new("o200k_base"),
            LogSink::stderr(false),
            Some(summarizer),
        ));
        http_host.tokens().count_messages(&messages);
        let mut compressor = engine(&http_host);
        c.bench_function("compress_live_http_1200_messages", |b| {
            b.iter(|| compressor.compress(&messages, &force).unwrap())
        });
    }

    let mut group = c.benchmark_group("per_turn_check");
    for length in [300usize, 1_200] {
        let context = &messages[..length];
        let next = &messages[length];
        let mut compressor = engine(&host);
        group.bench_function(format!("{length}_messages"), |b| {
            b.iter(|| {
                host.tokens().count_message(next);
                compressor.should_compress_preflight(context).unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
