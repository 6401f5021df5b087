//! What the plugin boundary costs: `compress` on a ~200K-token conversation through the window
//! engine loaded as a cdylib, against the same engine linked in, and against the cdylib isolated
//! in a child process (`isolation: process`); and the per-turn check
//! (`should_compress_preflight`) in process and isolated. All get the host's real services
//! (tiktoken counts, cached), so the differences are the crossings.
//!
//! Criterion measures each variant in a block of its own, minutes apart, and on a shared
//! machine the load moves more than the crossing costs. So the bench ends with paired
//! measurements: each variant is called in turn, alternating which goes first, and the
//! median of the per-pair ratios (and differences) is printed. Both sides of a pair see the
//! same load, so that figure holds still where the criterion medians wander.
//!
//! Run: `cargo bench -p ctxhost-tests --bench abi_crossing`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use ctxhost_config::Config;
use ctxhost_core::services::{HostServicesImpl, LogSink};
use ctxhost_engine_window::WindowEngine;
use ctxhost_isolation::parent::{ChildProcess, ChildSpec};
use ctxhost_isolation::protocol::{Init, Purpose};
use ctxhost_plugin_host::load_library;
use ctxhost_sdk::{
    CompressOptions, ContextEngine, EnginePlugin, EngineSetup, HostBackend, HostServices, Message,
    ModelInfo,
};
use ctxhost_tests::{binary, library, long_session, Sandbox};
use ctxhost_tokens::TokenCounter;

/// About 200K tokens: the corpus session, repeated.
fn conversation(host: &HostServicesImpl) -> Vec<Message> {
    let once: Vec<Message> = serde_json::from_value(serde_json::Value::Array(long_session()))
        .expect("the corpus is messages");
    let mut messages = vec![once[0].clone()];
    let mut tokens = 0;
    while tokens < 200_000 {
        for message in &once[1..] {
            tokens += host.count_tokens(&message.searchable_text());
            messages.push(message.clone());
        }
    }
    messages
}

fn setup() -> EngineSetup {
    EngineSetup {
        engine: "window".to_string(),
        data_dir: std::env::temp_dir(),
        config: serde_json::Value::Null,
        model: ModelInfo {
            name: "bench".to_string(),
            context_length: 128_000,
        },
    }
}

fn abi_crossing(c: &mut Criterion) {
    let host = Arc::new(HostServicesImpl::new(
        TokenCounter::new("o200k_base"),
        LogSink::stderr(false),
        None,
    ));
    let messages = conversation(&host);
    let options = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };

    let mut linked =
        WindowEngine::create(HostServices::new(host.clone(), setup())).expect("window starts");
    let plugin = load_library(&library("ctxhost_engine_window")).expect("window cdylib loads");
    let mut loaded = plugin
        .instantiate(host.clone(), setup())
        .expect("window cdylib starts");
    // Warm the token cache the way a live session has it.
    linked.compress(&messages, &options).unwrap();

    let sandbox = Sandbox::new();
    sandbox.add_plugin("window", "ctxhost_engine_window");
    let config = "plugins:\n  window:\n    isolation: process\n";
    sandbox.write_config(config);
    let (mut isolated, _) = ChildProcess::start(
        ChildSpec {
            program: binary(),
            init: Init {
                config: Config::load(&sandbox.config_path()).expect("the config reads"),
                home: sandbox.home(),
                name: "window".to_string(),
                data_root: sandbox.path().join("data"),
                verbose: false,
                purpose: Purpose::Engine,
            },
            timeout: std::time::Duration::from_secs(300),
            check_timeout: std::time::Duration::from_secs(300),
            memory_limit: None,
            max_reply_bytes: u64::MAX,
        },
        host.clone(),
    )
    .expect("the isolated window starts");
    isolated.compress(&messages, &options).unwrap();

    let mut group = c.benchmark_group("compress_200k_tokens");
    group.sample_size(30);
    group.bench_function("linked_in", |b| {
        b.iter(|| linked.compress(&messages, &options).unwrap())
    });
    group.bench_function("cdylib", |b| {
        b.iter(|| loaded.compress(&messages, &options).unwrap())
    });
    group.bench_function("cdylib_isolated", |b| {
        b.iter(|| isolated.compress(&messages, &options).unwrap())
    });
    group.finish();

    // The per-turn check on the same conversation (the isolated child already holds it, as it
    // does in a session where each turn adds a message or two).
    let mut group = c.benchmark_group("preflight_200k_tokens");
    group.bench_function("cdylib", |b| {
        b.iter(|| loaded.should_compress_preflight(&messages).unwrap())
    });
    group.bench_function("cdylib_isolated", |b| {
        b.iter(|| isolated.should_compress_preflight(&messages).unwrap())
    });
    group.finish();

    // Paired: the same variants, one call of each in turn.
    let pairs = 300;
    paired(
        "compress_200k_tokens: cdylib_isolated vs cdylib",
        pairs,
        || isolated.compress(&messages, &options).unwrap(),
        || loaded.compress(&messages, &options).unwrap(),
    );
    paired(
        "compress_200k_tokens: cdylib vs linked_in",
        pairs,
        || loaded.compress(&messages, &options).unwrap(),
        || linked.compress(&messages, &options).unwrap(),
    );
    paired(
        "preflight_200k_tokens: cdylib_isolated vs cdylib",
        pairs,
        || isolated.should_compress_preflight(&messages).unwrap(),
        || loaded.should_compress_preflight(&messages).unwrap(),
    );
}

/// Calls `a` and `b` `pairs` times each, in turn (every other pair `b` first, so neither side
/// always runs on a core the other has just warmed), and prints the medians of each side, of
/// the per-pair ratio `a / b` and of the per-pair difference `a - b`.
fn paired<A, B>(label: &str, pairs: usize, mut a: impl FnMut() -> A, mut b: impl FnMut() -> B) {
    // The answer is dropped inside the timing, as criterion's `iter` does.
    fn timed<T>(f: &mut impl FnMut() -> T) -> Duration {
        let start = Instant::now();
        black_box(f());
        start.elapsed()
    }
    let mut times = Vec::with_capacity(pairs);
    for pair in 0..pairs {
        let (ta, tb) = if pair % 2 == 0 {
            let ta = timed(&mut a);
            (ta, timed(&mut b))
        } else {
            let tb = timed(&mut b);
            (timed(&mut a), tb)
        };
        times.push((ta.as_secs_f64() * 1e6, tb.as_secs_f64() * 1e6));
    }
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let a_median = median(times.iter().map(|t| t.0).collect());
    let b_median = median(times.iter().map(|t| t.1).collect());
    let ratio = median(times.iter().map(|t| t.0 / t.1).collect());
    let difference = median(times.iter().map(|t| t.0 - t.1).collect());
    println!(
        "{label} ({pairs} pairs): {a_median:.0} µs vs {b_median:.0} µs, \
         median ratio {ratio:.3}, median difference {difference:+.0} µs"
    );
}

criterion_group!(benches, abi_crossing);
criterion_main!(benches);
