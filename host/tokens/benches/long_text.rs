//! Counting one long piece against counting as many bytes of words: time and peak memory.
//!
//! `cargo bench -p ctxhost-tokens --bench long_text` (`CTXHOST_BENCH_MB=20` for a quick run;
//! 100 by default). `seconds` is the wall clock, `cpu s` the CPU time counting took (what to
//! compare on a busy machine). Each case runs in a process of its own, so its peak resident memory
//! (`VmHWM`, Linux) is its own; the text itself is part of that peak. Cases: `words` (prose: made-up words by Zipf's law),
//! `base64` (one piece of random base64 letters, no spaces), `run` (one character repeated),
//! `cjk` (CJK text with no spaces, a phrase repeated), `cjk-random` (random CJK ideographs, no
//! spaces: no segment repeats), each counted with the default counter (`o200k_base`) and
//! with the tiktoken backend.

use std::process::Command;
use std::time::Instant;

use ctxhost_config::tokens::Backend;
use ctxhost_tokens::TokenCounter;

const CASES: &[&str] = &["words", "base64", "run", "cjk", "cjk-random"];
const BACKENDS: &[&str] = &["auto", "tiktoken"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--case") {
        let case = &args[at + 1];
        let backend = &args[at + 2];
        let megabytes: usize = args[at + 3].parse().expect("a size in MB");
        measure(case, backend, megabytes);
        return;
    }
    let megabytes: usize = std::env::var("CTXHOST_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    println!(
        "{:<10} {:<9} {:>6} {:>12} {:>9} {:>9} {:>10}",
        "case", "backend", "MB", "tokens", "seconds", "cpu s", "peak MiB"
    );
    let me = std::env::current_exe().expect("the bench's own path");
    for backend in BACKENDS {
        for case in CASES {
            let output = Command::new(&me)
                .args(["--case", case, backend, &megabytes.to_string()])
                .output()
                .expect("the bench runs itself");
            print!("{}", String::from_utf8_lossy(&output.stdout));
            if !output.status.success() {
                println!(
                    "{case:<10} {backend:<9} failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                );
            }
        }
    }
}

fn measure(case: &str, backend: &str, megabytes: usize) {
    let text = text(case, megabytes << 20);
    let backend = match backend {
        "tiktoken" => Backend::Tiktoken,
        _ => Backend::Auto,
    };
    let counter = TokenCounter::with_backend("o200k_base", backend);
    counter.warm();
    let (started, cpu_started) = (Instant::now(), cpu_seconds());
    let tokens = counter.count(&text);
    let seconds = started.elapsed().as_secs_f64();
    let cpu = match (cpu_started, cpu_seconds()) {
        (Some(start), Some(end)) => format!("{:.2}", end - start),
        _ => "?".to_string(),
    };
    let peak = peak_mib().map_or("?".to_string(), |m| format!("{m:.0}"));
    println!(
        "{case:<10} {:<9} {megabytes:>6} {tokens:>12} {seconds:>9.2} {cpu:>9} {peak:>10}",
        format!("{backend:?}").to_lowercase()
    );
}

fn text(case: &str, bytes: usize) -> String {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    match case {
        "words" => {
            // Prose's shape: a long tail of distinct words drawn by Zipf's law (the most
            // common word about one in ten), so the count pays for new pieces as real text
            // does, not only for the few a short vocabulary repeats.
            let vocabulary = vocabulary(&mut next, 50_000);
            let weights: Vec<f64> = (1..=vocabulary.len()).map(|r| 1.0 / r as f64).collect();
            let total: f64 = weights.iter().sum();
            let mut cumulative = Vec::with_capacity(weights.len());
            let mut sum = 0.0;
            for weight in weights {
                sum += weight / total;
                cumulative.push(sum);
            }
            let mut text = String::with_capacity(bytes + 32);
            while text.len() < bytes {
                let draw = (next() >> 11) as f64 / (1u64 << 53) as f64;
                let rank = cumulative.partition_point(|&c| c < draw);
                text.push_str(&vocabulary[rank.min(vocabulary.len() - 1)]);
                text.push_str(match next() % 16 {
                    0 => ". ",
                    1 => ", ",
                    _ => " ",
                });
            }
            text
        }
        "base64" => {
            let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
            (0..bytes)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
                .collect()
        }
        "run" => "x".repeat(bytes),
        "cjk" => "日本語のテキスト中文文本".repeat(bytes / 36),
        "cjk-random" => (0..bytes / 3)
            .map(|_| char::from_u32(0x4e00 + (next() % 0x51a6) as u32).expect("a CJK ideograph"))
            .collect(),
        other => panic!("no case {other}"),
    }
}

/// `count` distinct made-up words of one to four syllables.
fn vocabulary(next: &mut impl FnMut() -> u64, count: usize) -> Vec<String> {
    const ONSETS: &[&str] = &[
        "", "b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v", "st", "tr", "pl",
        "ch", "th",
    ];
    const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ea", "ou", "io"];
    const CODAS: &[&str] = &["", "n", "r", "s", "t", "l", "nd", "ng", "st", "ct"];
    let mut seen = std::collections::HashSet::new();
    while seen.len() < count {
        let syllables = 1 + next() % 4;
        let word: String = (0..syllables)
            .map(|_| {
                let pick =
                    |parts: &[&'static str], n: u64| parts[(n % parts.len() as u64) as usize];
                let n = next();
                [pick(ONSETS, n), pick(VOWELS, n >> 16), pick(CODAS, n >> 32)].concat()
            })
            .collect();
        seen.insert(word);
    }
    let mut words: Vec<String> = seen.into_iter().collect();
    words.sort();
    // A fixed order that is not alphabetical: the ranks of Zipf's law fall on any word.
    for at in (1..words.len()).rev() {
        words.swap(at, (next() % (at as u64 + 1)) as usize);
    }
    words
}

/// The CPU time this process has run for (`/proc/self/schedstat`, Linux), in seconds: on a
/// shared machine, what counting cost, where the wall clock also counts waiting for a core.
fn cpu_seconds() -> Option<f64> {
    let schedstat = std::fs::read_to_string("/proc/self/schedstat").ok()?;
    let nanoseconds: f64 = schedstat.split_whitespace().next()?.parse().ok()?;
    Some(nanoseconds / 1e9)
}

/// This process's peak resident memory (`VmHWM`), in MiB.
fn peak_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
