//! The corpus: real agent transcripts (SWE-agent's public demonstration trajectories)
//! as OpenAI chat-format JSON, one conversation per `*.json` file.
//!
//! It ships inside this crate, in `corpus/swe-agent/` (see `corpus/README.md` for its source and
//! license); the environment variable [`CORPUS_ENV`] names another directory. One policy: **a missing or empty corpus is a
//! panic** saying where it looked and how to point at it, never a silently skipped test.

use std::path::{Path, PathBuf};

use ctxhost_sdk::Message;

/// The environment variable that names the corpus directory, overriding the default.
pub const CORPUS_ENV: &str = "CTXHOST_CORPUS";

/// One transcript of the corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    /// Its file name, e.g. `ctf__pwn__warmup.json`.
    pub name: String,
    /// Its messages, in order.
    pub messages: Vec<Message>,
}

/// The corpus directory: `$CTXHOST_CORPUS` when set (a relative path is taken from the
/// working directory, which `cargo test` sets to the crate under test), else the corpus this
/// crate ships ([`SHIPPED`]). It may not exist; [`transcripts`] says so.
pub fn dir() -> PathBuf {
    match std::env::var_os(CORPUS_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => default_dir(),
    }
}

/// The corpus shipped inside this crate: `corpus/swe-agent/` beside its `Cargo.toml`.
pub const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/swe-agent");

fn default_dir() -> PathBuf {
    PathBuf::from(SHIPPED)
}

/// Every transcript of the corpus ([`dir`]), sorted by file name.
///
/// # Panics
/// When the directory is missing, holds no `*.json` file, or a file is not a JSON array of
/// chat messages; the message says where it looked and how to point at the corpus.
pub fn transcripts() -> Vec<Transcript> {
    transcripts_in(&dir())
}

/// Every transcript in `dir`, sorted by file name. Panics as [`transcripts`] does.
pub fn transcripts_in(dir: &Path) -> Vec<Transcript> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|error| missing(dir, &error.to_string()));
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    if paths.is_empty() {
        missing(dir, "it holds no *.json transcript");
    }
    paths.sort();
    paths.iter().map(|path| read(path)).collect()
}

/// The transcript named `name` (a file name, with or without `.json`).
///
/// # Panics
/// As [`transcripts`], and when no transcript has that name (the message lists them).
pub fn transcript(name: &str) -> Vec<Message> {
    let all = transcripts();
    let wanted = name.strip_suffix(".json").unwrap_or(name);
    match all
        .iter()
        .find(|t| t.name.strip_suffix(".json") == Some(wanted))
    {
        Some(found) => found.messages.clone(),
        None => {
            let names: Vec<&str> = all.iter().map(|t| t.name.as_str()).collect();
            panic!(
                "no transcript named {name} in the corpus at {}; it has: {}",
                dir().display(),
                names.join(", ")
            )
        }
    }
}

/// One long session: the first transcript's system prompt, then every transcript's other
/// messages, one transcript after another. Long enough to make any engine compact many times.
pub fn long_session() -> Vec<Message> {
    concatenate(&transcripts())
}

/// The long session made of `transcripts`, as [`long_session`] makes it.
pub fn concatenate(transcripts: &[Transcript]) -> Vec<Message> {
    let mut session: Vec<Message> = transcripts
        .first()
        .map(|t| {
            t.messages
                .iter()
                .take_while(|m| m.is_system())
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    for transcript in transcripts {
        session.extend(
            transcript
                .messages
                .iter()
                .filter(|m| !m.is_system())
                .cloned(),
        );
    }
    session
}

fn read(path: &Path) -> Transcript {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| {
        panic!(
            "cannot read the corpus transcript {}: {error}",
            path.display()
        )
    });
    let messages: Vec<Message> = serde_json::from_str(&text).unwrap_or_else(|error| {
        panic!(
            "{}: not a JSON array of chat messages: {error}",
            path.display()
        )
    });
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Transcript { name, messages }
}

fn missing(dir: &Path, why: &str) -> ! {
    panic!(
        "the ctxhost test corpus is not at {} ({why}); restore the corpus this \
         crate ships (corpus/swe-agent in ctxhost-sdk-test) or set {CORPUS_ENV} to a \
         directory of OpenAI chat-format *.json transcripts",
        dir.display()
    )
}
