//! The words of a message as the lcm store's PostgreSQL full-text index holds them. The
//! engine finds them itself (`words.rs`: the server's own parser cost more than everything else
//! storing a message did), as SQLite's `unicode61` tokenizer finds them, so a search finds the
//! same messages on both databases; the index holds them a span of messages at a time
//! (`spans.rs`), and searches ask for them in the same words.

mod spans;
mod words;

pub use spans::{spans, Span, SPAN_MESSAGES};
pub use words::{cjk, has_cjk, tsquery_term, without_phrases, words, Words};
