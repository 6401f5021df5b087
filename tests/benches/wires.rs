//! The same conversations through each wire `ctxhost serve` speaks, side by side: what the
//! gateway adds to a model call on chat completions, Anthropic Messages and Responses, for a
//! short history (10 messages) and a long one (the corpus' first turns, 300 KB as a chat
//! body), against one fake upstream on loopback that answers each wire in its own shape. Each
//! session resends the same history every time (a retry-like turn: the gateway still converts
//! it, hashes it, checks the lineage, asks the engine and saves the session).
//!
//! Requests are paired: each round sends one request per wire straight to the upstream and
//! the same one through the gateway, so the "added" figure of a row is the median of
//! differences taken moments apart, and the wires share whatever load the machine is under.
//! The last column is each wire's added time over chat's for the same history.
//!
//! Wall-clock figures move with the machine's load. `WIRES_BENCH_CALLGRIND=1` runs the gateway
//! under valgrind's callgrind instead and reports the instructions it executes per request on
//! each wire (counted between `callgrind_control` zero and dump, every thread of the process),
//! a count that does not depend on the load; the dumps stay in the printed directory for
//! `callgrind_annotate`.
//!
//! Run: `cargo bench -p ctxhost-tests --bench wires` (a minute or two), or
//! `WIRES_BENCH_CALLGRIND=1 cargo bench -p ctxhost-tests --bench wires` (valgrind installed).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::FakeUpstream;
use ctxhost_tests::wire::{Usage, Wire};
use ctxhost_tests::{long_session, Sandbox};
use reqwest::blocking::Client;
use serde_json::{json, Value};

/// The long history's size as a chat completions body.
const LONG_BYTES: usize = 300_000;
/// Paired rounds per history (each: one request per wire, direct and through the gateway).
const ROUNDS_SHORT: usize = 400;
const ROUNDS_LONG: usize = 100;
/// Requests counted per wire and history under callgrind (after two uncounted ones).
const COUNTED: usize = 5;
const API_KEY: &str = "sk-bench-wires";
/// A window no history here comes near, so no request compresses.
const CONFIG: &str = "serve:\n  models:\n    gpt-4o: 2000000\n";

/// One history as each wire's client sends it.
struct History {
    name: String,
    bodies: Vec<(Wire, Vec<u8>)>,
}

impl History {
    fn new(messages: &[Value]) -> History {
        let bodies: Vec<(Wire, Vec<u8>)> = Wire::ALL
            .iter()
            .map(|wire| {
                let body = wire.body(messages, &[], false);
                (*wire, serde_json::to_vec(&body).unwrap())
            })
            .collect();
        let chat_bytes = bodies[0].1.len();
        History {
            name: format!("{} messages, {} KB", messages.len(), chat_bytes / 1000),
            bodies,
        }
    }
}

/// The shortest prefix of the long session whose chat body reaches `bytes`.
fn long_history(bytes: usize) -> Vec<Value> {
    let session = long_session();
    let mut size = 0;
    for (index, message) in session.iter().enumerate() {
        size += message.to_string().len() + 1;
        if size >= bytes {
            return session[..=index].to_vec();
        }
    }
    panic!("the corpus holds less than {bytes} bytes of messages");
}

/// Which wire an upstream request came by.
fn wire_of(path: &str) -> Wire {
    Wire::ALL
        .into_iter()
        .find(|wire| path.starts_with(&format!("/v1{}", wire.path())))
        .unwrap_or_else(|| panic!("no wire is served at {path}"))
}

fn upstream() -> FakeUpstream {
    FakeUpstream::start(|request| {
        let answer =
            json!({"role": "assistant", "content": "A short answer from the fake upstream."});
        let usage = Usage {
            input: 100,
            output: 8,
        };
        wire_of(&request.path).reply(request, &answer, Some(usage))
    })
}

/// Sends `body` on `wire` to `base_url` (the upstream's or the gateway's `/v1`); its latency.
fn send(client: &Client, base_url: &str, wire: Wire, session: &str, body: &[u8]) -> Duration {
    let request = client
        .post(format!("{base_url}{}", wire.path()))
        .header("content-type", "application/json")
        .header("x-ctxhost-session", session)
        .body(body.to_vec());
    let started = Instant::now();
    let response = wire
        .authorize(request, Some(API_KEY))
        .send()
        .unwrap_or_else(|e| panic!("{wire:?} to {base_url}: {e}"));
    let status = response.status();
    let compressed = response.headers().contains_key("x-ctxhost-compressed");
    let text = response.bytes().unwrap();
    let elapsed = started.elapsed();
    assert!(
        status.is_success(),
        "{wire:?} to {base_url} answered {status}: {}",
        String::from_utf8_lossy(&text)
    );
    assert!(!compressed, "the bench's histories must not compress");
    elapsed
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The wall-clock table: paired rounds, the added time's median per wire.
fn wall_clock(histories: &[(History, usize)]) {
    let upstream = upstream();
    let sandbox = Sandbox::new();
    sandbox.write_config(CONFIG);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = Client::new();
    println!("## added latency per wire, fake upstream on loopback (paired rounds)\n");
    println!("| history | wire | body KB | rounds | direct p50 ms | via gateway p50 ms | added p50 ms | added / chat's |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (history, rounds) in histories {
        for (wire, body) in &history.bodies {
            let session = format!("warm-{wire:?}-{}", body.len());
            for _ in 0..5 {
                send(&client, &upstream.base_url(), *wire, &session, body);
                send(&client, &gateway.base_url(), *wire, &session, body);
            }
        }
        let mut direct = vec![Vec::new(); history.bodies.len()];
        let mut via = vec![Vec::new(); history.bodies.len()];
        let mut added = vec![Vec::new(); history.bodies.len()];
        for _ in 0..*rounds {
            for (at, (wire, body)) in history.bodies.iter().enumerate() {
                let session = format!("{wire:?}-{}", body.len());
                let d = send(&client, &upstream.base_url(), *wire, &session, body);
                let v = send(&client, &gateway.base_url(), *wire, &session, body);
                direct[at].push(d.as_secs_f64() * 1000.0);
                via[at].push(v.as_secs_f64() * 1000.0);
                added[at].push((v.as_secs_f64() - d.as_secs_f64()) * 1000.0);
            }
        }
        let added: Vec<f64> = added.iter_mut().map(|a| median(a)).collect();
        for (at, (wire, body)) in history.bodies.iter().enumerate() {
            println!(
                "| {} | {wire:?} | {} | {rounds} | {:.3} | {:.3} | **{:.3}** | {:.2}x |",
                history.name,
                body.len() / 1000,
                median(&mut direct[at]),
                median(&mut via[at]),
                added[at],
                added[at] / added[0],
            );
        }
    }
}

/// Runs `callgrind_control` with `args` on the gateway's process.
fn callgrind_control(gateway: &GatewayProcess, args: &[&str]) {
    let status = Command::new("callgrind_control")
        .args(args)
        .arg(gateway.pid().to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("callgrind_control runs (valgrind installed)");
    assert!(status.success(), "callgrind_control {args:?} failed");
}

/// The instructions a callgrind dump counted.
fn dump_total(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .find_map(|line| {
            line.strip_prefix("totals: ")
                .or_else(|| line.strip_prefix("summary: "))
        })
        .and_then(|total| total.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{} holds no total", path.display()))
}

/// The instruction-count table: the gateway under callgrind, each wire's requests counted.
fn instructions(histories: &[(History, usize)]) {
    let upstream = upstream();
    let sandbox = Sandbox::new();
    sandbox.write_config(CONFIG);
    let out = sandbox.path().join("callgrind");
    std::fs::create_dir_all(&out).unwrap();
    let wrapper: Vec<String> = vec![
        "valgrind".into(),
        "--tool=callgrind".into(),
        format!("--log-file={}", out.join("valgrind.log").display()),
        format!(
            "--callgrind-out-file={}",
            out.join("callgrind.out").display()
        ),
    ];
    let gateway = sandbox.serve_under(&wrapper, &upstream.base_url(), &[], &[]);
    let client = Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    println!("## instructions the gateway executes per request, under callgrind\n");
    println!("| history | wire | body KB | requests | instructions per request | / chat's |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut dumps = 0;
    for (history, _) in histories {
        let mut counts = Vec::new();
        for (wire, body) in &history.bodies {
            let session = format!("{wire:?}-{}", body.len());
            for _ in 0..2 {
                send(&client, &gateway.base_url(), *wire, &session, body);
            }
            callgrind_control(&gateway, &["--zero"]);
            for _ in 0..COUNTED {
                send(&client, &gateway.base_url(), *wire, &session, body);
            }
            callgrind_control(&gateway, &["--dump"]);
            dumps += 1;
            let total = dump_total(&out.join(format!("callgrind.out.{dumps}")));
            counts.push(total / COUNTED as u64);
        }
        for ((wire, body), count) in history.bodies.iter().zip(&counts) {
            println!(
                "| {} | {wire:?} | {} | {COUNTED} | **{count}** | {:.2}x |",
                history.name,
                body.len() / 1000,
                *count as f64 / counts[0] as f64,
            );
        }
    }
    // Kept for `callgrind_annotate`: the sandbox is removed when the bench ends.
    let kept = std::env::temp_dir().join(format!("ctxhost-wires-callgrind-{}", gateway.pid()));
    std::fs::create_dir_all(&kept).unwrap();
    for dump in 1..=dumps {
        let name = format!("callgrind.out.{dump}");
        std::fs::copy(out.join(&name), kept.join(&name)).unwrap();
    }
    println!(
        "\ncallgrind dumps (one per row, in order): {}",
        kept.display()
    );
}

fn main() {
    let session = long_session();
    let histories = [
        (History::new(&session[..10]), ROUNDS_SHORT),
        (History::new(&long_history(LONG_BYTES)), ROUNDS_LONG),
    ];
    if std::env::var("WIRES_BENCH_CALLGRIND").as_deref() == Ok("1") {
        instructions(&histories);
    } else {
        wall_clock(&histories);
    }
}
