//! Benchmarks of the lossless engine on a store built from the shared corpus: ingest rate,
//! `lcm_grep` latency (full-text and regex), `lcm_expand` of a depth-2 summary, and a
//! compaction (the summarizer is an instant fake, so this is the engine's own time).
//!
//! Run with `cargo bench -p ctxhost-engine-lcm`. Set `LCM_BENCH_MESSAGES` to change the store
//! size (default 20,000 messages). The setup also prints one timed ingest of the whole store,
//! the database size relative to the raw JSON and p50/p99 grep latencies; at a million
//! messages, skip the sampled ingest group with a filter: `-- 'lcm_grep|lcm_expand'`.
//!
//! Set `LCM_BENCH_SCALE` to a list of sizes (`250000,1000000`) for the scale figures only, no
//! sampled groups: for each size, the transcript fed as an agent loop feeds it (the context
//! so far plus the next turns, compacted when over the threshold, as `ctxhost run` does: every
//! new message is looked up in the store, the path that once made ingest quadratic), then
//! one whole-transcript ingest into an empty store, then `lcm_grep` p50/p99 on the first store.
//!
//! Set `LCM_BENCH_POSTGRES` to run on PostgreSQL instead of SQLite: a `postgres://` URL (its
//! `default` session is emptied before each ingest), or `throwaway` for a server of the
//! bench's own (a temporary cluster, as the tests use).

use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use ctxhost_engine_lcm::LcmEngine;
use ctxhost_sdk::{
    CompressOptions, ContextEngine, EngineError, EnginePlugin, EngineSetup, HostBackend,
    HostServices, LogLevel, Message, ModelInfo, SummarizeRequest, Summary,
};
use serde_json::{json, Value};

/// One token per 4 characters; an instant extractive "summarizer".
struct Backend;

impl HostBackend for Backend {
    fn count_tokens(&self, text: &str) -> u64 {
        (text.len() as u64).div_ceil(4)
    }

    fn log(&self, _: &str, _: LogLevel, _: &str) {}

    fn call(&self, _service: &str, payload: &str) -> Result<String, EngineError> {
        let request: SummarizeRequest = serde_json::from_str(payload)?;
        let text: String = request
            .content
            .chars()
            .take((request.max_tokens as usize) * 2)
            .collect();
        Ok(serde_json::to_string(&Summary {
            text,
            summarizer: "bench".into(),
            ..Summary::default()
        })?)
    }
}

const WINDOW: u64 = 100_000;

/// The PostgreSQL store to run on (`LCM_BENCH_POSTGRES`), if any.
fn postgres_store() -> Option<&'static str> {
    static STORE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    STORE
        .get_or_init(
            || match std::env::var("LCM_BENCH_POSTGRES").ok()?.as_str() {
                "throwaway" => Some(ctxhost_test_postgres::Postgres::database("lcm_bench")),
                url => Some(url.to_string()),
            },
        )
        .as_deref()
}

/// An engine on an empty store: a new file in `dir`, or the PostgreSQL store emptied (its
/// tables truncated: an empty store as a new file is, not one full of deleted rows).
fn engine(dir: &Path) -> LcmEngine {
    if let Some(url) = postgres_store() {
        let mut client =
            postgres::Client::connect(url, postgres::NoTls).expect("connect to the store");
        client
            .batch_execute(
                // Every table of the engine's, whichever schema the database is at.
                "DO $$ DECLARE tables text; BEGIN \
                 SELECT string_agg(quote_ident(tablename), ', ') INTO tables FROM pg_tables \
                 WHERE schemaname = current_schema() AND tablename LIKE 'lcm\\_%'; \
                 IF tables IS NOT NULL THEN EXECUTE 'TRUNCATE ' || tables; END IF; END $$",
            )
            .expect("empty the store");
    }
    engine_on(dir)
}

fn engine_on(dir: &Path) -> LcmEngine {
    let mut config = json!({
        "fresh_tail_count": 64,
        "leaf_chunk_tokens": 4_000,
        "leaf_summary_tokens": 200,
        "condensed_summary_tokens": 300,
        "condensed_min_fanout": 4,
        "max_passes": 1_000_000,
        "deadline_ms": 3_600_000,
    });
    if let Some(url) = postgres_store() {
        config["store"] = json!(url);
    }
    LcmEngine::create(HostServices::new(
        Arc::new(Backend),
        EngineSetup {
            engine: "lcm".into(),
            data_dir: dir.to_path_buf(),
            config,
            model: ModelInfo {
                name: "bench".into(),
                context_length: WINDOW,
            },
        },
    ))
    .expect("engine starts")
}

/// `count` messages: the corpus transcripts' turns, round after round, each round numbered so
/// no two messages are identical; a system prompt first.
fn messages(count: usize) -> Vec<Message> {
    let transcripts = ctxhost_sdk_test::corpus::transcripts();
    let system = transcripts
        .iter()
        .find_map(|t| t.messages.first().filter(|m| m.is_system()).cloned())
        .unwrap_or_else(|| Message::system("You are a careful agent."));
    let turns: Vec<Vec<Message>> = transcripts
        .into_iter()
        .map(|t| t.messages.into_iter().filter(|m| !m.is_system()).collect())
        .collect();
    let mut out = vec![system];
    let mut round = 0;
    'fill: loop {
        for transcript in &turns {
            for message in transcript {
                if out.len() >= count {
                    break 'fill;
                }
                let mut message = message.clone();
                if let Some(text) = message.text().map(str::to_string) {
                    message.set_text(format!("{text}\n[round {round}]"));
                }
                out.push(message);
            }
            round += 1;
        }
    }
    // Transcripts are cut anywhere above: keep the whole valid prefix only.
    ctxhost_sdk::sequence::repair(out)
}

fn message_count() -> usize {
    std::env::var("LCM_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

fn tool(engine: &mut LcmEngine, name: &str, args: &Value) -> Value {
    let answer = engine.handle_tool_call(name, args).expect("tool answers");
    serde_json::from_str(&answer).expect("JSON")
}

/// The store every read benchmark shares: all messages ingested and compacted into a DAG.
struct Built {
    _dir: tempfile::TempDir,
    engine: LcmEngine,
    context: Vec<Message>,
    depth2: String,
}

fn build(history: &[Message]) -> Built {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut engine = engine(dir.path());
    // Ingest alone first (session end stores without compacting), timed once: at a million
    // messages the criterion group below takes too long to sample.
    let started = Instant::now();
    engine.on_session_end("default", history).expect("ingest");
    let ingest = started.elapsed();
    eprintln!(
        "ingest: {} messages in {ingest:?} ({:.0} messages/s)",
        history.len(),
        history.len() as f64 / ingest.as_secs_f64()
    );
    // Then compaction as an agent loop meets it: the view so far plus the next turns, a few
    // thousand messages at a time (one compress over a million raw messages is no agent's
    // call, and splicing such a list is quadratic).
    let started = Instant::now();
    let mut context = vec![history[0].clone()];
    for round in history[1..].chunks(2_000) {
        context.extend_from_slice(round);
        context = ctxhost_sdk::sequence::repair(context);
        context = engine
            .compress(
                &context,
                &CompressOptions {
                    force: true,
                    ..CompressOptions::default()
                },
            )
            .expect("compress");
    }
    let took = started.elapsed();
    let status = engine.invoke("status", &Value::Null).expect("status");
    let raw: usize = history.iter().map(|m| m.to_value().to_string().len()).sum();
    let db = status["database_bytes"].as_u64().unwrap_or(0);
    eprintln!(
        "store ({}): {} messages, {} raw JSON bytes, database {} bytes ({:.2}x raw) + WAL {} \
         bytes, summaries by depth {}; then compacting it in rounds of 2,000 messages took {took:?}",
        status["backend"],
        history.len(),
        raw,
        db,
        db as f64 / raw.max(1) as f64,
        status["wal_bytes"],
        status["summaries_by_depth"],
    );
    let depth2 = find_depth2(&mut engine, &context).expect("a depth-2 summary");
    Built {
        _dir: dir,
        engine,
        context,
        depth2,
    }
}

/// Walks down from the deepest summary in the context to one of depth 2.
fn find_depth2(engine: &mut LcmEngine, context: &[Message]) -> Option<String> {
    let mut frontier: Vec<String> = context
        .iter()
        .filter_map(|m| {
            let rest = m.text()?.strip_prefix("<lcm-summary id=\"")?;
            Some(rest.get(..20)?.to_string())
        })
        .collect();
    while let Some(id) = frontier.pop() {
        let described = tool(engine, "lcm_describe", &json!({"id": id}));
        match described["depth"].as_u64()? {
            2 => return Some(id),
            d if d > 2 => frontier.extend(
                described["children"]
                    .as_array()?
                    .iter()
                    .filter_map(|c| c.as_str().map(str::to_string)),
            ),
            _ => {}
        }
    }
    None
}

fn percentiles(engine: &mut LcmEngine, label: &str, args: &Value) {
    let mut times: Vec<Duration> = (0..200)
        .map(|_| {
            let started = Instant::now();
            tool(engine, "lcm_grep", args);
            started.elapsed()
        })
        .collect();
    times.sort();
    eprintln!(
        "{label}: p50 {:?}, p99 {:?} over {} calls",
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times.len()
    );
}

/// CPU time this process has used (user and system): on a machine shared with other work the
/// wall-clock figures stretch, these do not.
fn cpu_time() -> Duration {
    // SAFETY: `getrusage` only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Turns the agent loop of [`scale`] adds between two compress calls.
const LOOP_ROUND: usize = 200;

/// The scale figures for `count` messages (`LCM_BENCH_SCALE`).
fn scale(count: usize) {
    let history = messages(count);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut looped = engine(dir.path());
    let (started, cpu) = (Instant::now(), cpu_time());
    let mut context = vec![history[0].clone()];
    for round in history[1..].chunks(LOOP_ROUND) {
        context.extend_from_slice(round);
        context = ctxhost_sdk::sequence::repair(context);
        context = looped
            .compress(&context, &CompressOptions::default())
            .expect("compress");
    }
    let (took, cpu) = (started.elapsed(), cpu_time() - cpu);
    let status = looped.invoke("status", &Value::Null).expect("status");
    eprintln!(
        "scale {count}: agent loop (rounds of {LOOP_ROUND}, compacted when over the threshold): \
         {} messages stored in {took:?} ({:.0} messages/s; CPU {cpu:?}), summaries by depth {}",
        status["messages"],
        history.len() as f64 / took.as_secs_f64(),
        status["summaries_by_depth"],
    );
    let full_text = json!({"pattern": "marshmallow fields", "scope": "both"});
    let regex = json!({"pattern": "def \\w+\\(self", "mode": "regex", "scope": "messages"});
    percentiles(
        &mut looped,
        &format!("scale {count}: grep full_text"),
        &full_text,
    );
    percentiles(&mut looped, &format!("scale {count}: grep regex"), &regex);
    drop(looped);
    drop(dir);

    let dir = tempfile::tempdir().expect("temp dir");
    let mut engine = engine(dir.path());
    let (started, cpu) = (Instant::now(), cpu_time());
    engine.on_session_end("default", &history).expect("ingest");
    let (took, cpu) = (started.elapsed(), cpu_time() - cpu);
    eprintln!(
        "scale {count}: whole transcript into an empty store: {} messages in {took:?} \
         ({:.0} messages/s; CPU {cpu:?})",
        history.len(),
        history.len() as f64 / took.as_secs_f64()
    );
}

fn benches(c: &mut Criterion) {
    if let Ok(sizes) = std::env::var("LCM_BENCH_SCALE") {
        for size in sizes.split(',').filter_map(|s| s.trim().parse().ok()) {
            scale(size);
        }
        return;
    }
    let history = messages(message_count());

    // Corpus turns as they are (about 1.1 KB of JSON each), and cut to about 100 tokens each
    // (the size the 100,000-message, 10M-token store implies).
    let short: Vec<Message> = history
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if let Some(text) = m.text().map(str::to_string) {
                let cut: String = text.chars().take(400).collect();
                m.set_text(cut);
            }
            m
        })
        .collect();
    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    for (name, batch) in [("corpus_messages", &history), ("short_messages", &short)] {
        group.throughput(Throughput::Elements(batch.len() as u64));
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().expect("temp dir");
                    let engine = engine(dir.path());
                    (dir, engine)
                },
                |(dir, mut engine)| {
                    // Session end stores without compacting: the pure ingest path.
                    engine.on_session_end("default", batch).expect("ingest");
                    (dir, engine)
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();

    let mut built = build(&history);
    let full_text = json!({"pattern": "marshmallow fields", "scope": "both"});
    let rare = json!({"pattern": "round 3", "scope": "messages", "sort": "relevance"});
    let regex = json!({"pattern": "def \\w+\\(self", "mode": "regex", "scope": "messages"});
    let regex_rare = json!({"pattern": "HTB\\{[a-z_]+\\}", "mode": "regex", "scope": "both"});
    percentiles(&mut built.engine, "grep full_text", &full_text);
    percentiles(&mut built.engine, "grep regex", &regex);

    let mut group = c.benchmark_group("lcm_grep");
    for (name, args) in [
        ("full_text", &full_text),
        ("full_text_relevance", &rare),
        ("regex", &regex),
        ("regex_rare", &regex_rare),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| tool(&mut built.engine, "lcm_grep", args))
        });
    }
    group.finish();

    let expand = json!({"id": built.depth2, "max_tokens": 100_000_000});
    let covered = tool(&mut built.engine, "lcm_expand", &expand)["total_messages"].clone();
    eprintln!("depth-2 summary {} covers {covered} messages", built.depth2);
    c.bench_function("lcm_expand/depth2", |b| {
        b.iter(|| tool(&mut built.engine, "lcm_expand", &expand))
    });

    // A compaction: ~30,000 new tokens on top of the compacted context, compacted back down.
    // Each round's new turns are tagged, so no round repeats the one before.
    let extra: Vec<Message> = messages(400).into_iter().skip(1).collect();
    let context = RefCell::new(std::mem::take(&mut built.context));
    let engine = &mut built.engine;
    let mut round = 0;
    let mut group = c.benchmark_group("compress");
    group.sample_size(10);
    group.bench_function("compaction", |b| {
        b.iter_batched(
            || {
                round += 1;
                let mut next = context.borrow().clone();
                let mut tokens = 0;
                for message in &extra {
                    if tokens > 30_000 && !message.is_tool_result() {
                        break;
                    }
                    let mut message = message.clone();
                    if let Some(text) = message.text().map(str::to_string) {
                        message.set_text(format!("{text} [extra {round}]"));
                    }
                    tokens += message.to_value().to_string().len() / 4;
                    next.push(message);
                }
                ctxhost_sdk::sequence::repair(next)
            },
            |next| {
                let compacted = engine
                    .compress(&next, &CompressOptions::default())
                    .expect("compress");
                *context.borrow_mut() = compacted;
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(lcm, benches);
criterion_main!(lcm);
