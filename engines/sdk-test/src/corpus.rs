//! The corpus in tests: `ctxhost_quality::corpus` read with one policy, **a missing or
//! unreadable corpus is a panic** saying where it looked and how to point at it, never a
//! silently skipped test.
//!
//! Which corpus: `$CTXHOST_CORPUS` when set, else the one the ctxhost checkout holding this
//! crate ships ([`ctxhost_quality::corpus::SHIPPED`]), so an engine built outside the checkout
//! against this crate by path finds it too.

use std::path::{Path, PathBuf};

use ctxhost_quality::corpus::{Corpus, Transcript};
use ctxhost_sdk::Message;

/// Where this crate's sources are: the search for the checkout's corpus starts there. Test
/// support only; the `ctxhost` binary finds its corpus from the current directory.
const SOURCES: &str = env!("CARGO_MANIFEST_DIR");

fn corpus() -> Corpus {
    Corpus::locate(None, Path::new(SOURCES)).unwrap_or_else(|error| fail(&error))
}

/// The corpus directory.
///
/// # Panics
/// When `$CTXHOST_CORPUS` is unset and the checkout's corpus is not there.
pub fn dir() -> PathBuf {
    corpus().dir().to_path_buf()
}

/// Every transcript of the corpus, sorted by file name.
///
/// # Panics
/// When the corpus is missing, holds no `*.json` file, or a file is not a JSON array of chat
/// messages; the message says where it looked and how to point at the corpus.
pub fn transcripts() -> Vec<Transcript> {
    corpus().transcripts().unwrap_or_else(|error| fail(&error))
}

/// The transcript named `name` (a file name, with or without `.json`).
///
/// # Panics
/// As [`transcripts`], and when no transcript has that name (the message lists them).
pub fn transcript(name: &str) -> Vec<Message> {
    corpus()
        .transcript(name)
        .unwrap_or_else(|error| fail(&error))
}

/// One long session of every transcript (`ctxhost_quality::corpus::concatenate`). Long
/// enough to make any engine compact many times.
///
/// # Panics
/// As [`transcripts`].
pub fn long_session() -> Vec<Message> {
    corpus().long_session().unwrap_or_else(|error| fail(&error))
}

fn fail(error: &dyn std::fmt::Display) -> ! {
    panic!(
        "the ctxhost test corpus: {error} (set {} to a directory of OpenAI chat-format \
         *.json transcripts, or restore {} in the checkout)",
        ctxhost_quality::corpus::CORPUS_ENV,
        ctxhost_quality::corpus::SHIPPED
    )
}
