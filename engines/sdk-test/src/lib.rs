//! # ctxhost-sdk-test
//!
//! Test support for context-engine authors, as a dev-dependency beside `ctxhost-sdk`:
//!
//! - [`FakeHost`]: the host an engine meets in its tests: a config section, a model and its
//!   window, a temporary data directory, a deterministic token counter (one rule, in
//!   [`tokens`]: a character count divided by four, rounded up), a scripted summarizer that
//!   records every request, and captured logs;
//! - [`corpus`]: the corpus of real agent transcripts (read by `ctxhost_quality::corpus`),
//!   with one policy: a missing corpus is a panic that says where it looked and how to point
//!   at it, never a skipped test;
//! - [`contract`]: the checks every engine must pass (a valid chat sequence out, nothing lost
//!   that the contract protects, unchanged under the threshold, idempotent on its own output,
//!   never larger even with little to compress),
//!   each failing with a typed [`Violation`], and [`check_engine`] / [`check_plugin`] to run
//!   them all over the corpus;
//! - [`EngineSubject`]: an engine on the fake host as the quality harness (`ctxhost-quality`:
//!   typed facts planted in a session, compacted round after round at a fixed budget, probed
//!   in every output) measures it;
//! - [`Rewrite`]: an engine whose every compression is one given function, for tests that
//!   must know exactly what an engine did.
//!
//! An engine under test, with a summarizer that fails once and then answers:
//!
//! ```
//! use ctxhost_sdk::{CompressOptions, ContextEngine, EngineError, EngineStatus, ErrorKind};
//! use ctxhost_sdk::{HostServices, Message, SummarizeRequest, TokenTracker};
//! use ctxhost_sdk_test::contract::{self, EngineCheck};
//! use ctxhost_sdk_test::{Answer, FakeHost};
//!
//! /// Replaces everything between the first ask and the last two messages with a summary.
//! struct Summarizing {
//!     services: HostServices,
//!     tracker: TokenTracker,
//! }
//!
//! impl Summarizing {
//!     fn create(services: HostServices) -> Result<Self, EngineError> {
//!         let tracker = TokenTracker::new(services.model().context_length, 0.75);
//!         Ok(Summarizing { services, tracker })
//!     }
//! }
//!
//! impl ContextEngine for Summarizing {
//!     fn name(&self) -> &str { "summarizing" }
//!     fn should_compress(&mut self, tokens: u64) -> Result<bool, EngineError> {
//!         Ok(self.tracker.over_threshold(tokens))
//!     }
//!     fn compress(&mut self, m: &[Message], o: &CompressOptions) -> Result<Vec<Message>, EngineError> {
//!         let tokens = o.current_tokens.unwrap_or_else(|| self.services.count_messages_tokens(m));
//!         let middle = 2..m.len().saturating_sub(2);
//!         if (!o.force && !self.tracker.over_threshold(tokens)) || middle.len() < 2 {
//!             return Ok(m.to_vec());
//!         }
//!         let content = m[middle.clone()].iter().map(|m| m.content_text()).collect::<Vec<_>>();
//!         let request = SummarizeRequest { content: content.join("\n"), max_tokens: 20, ..Default::default() };
//!         let summary = match self.services.summarize(&request) {
//!             Ok(summary) => summary.text,
//!             Err(error) => {
//!                 self.services.warn(&format!("summarizer failed: {error}"));
//!                 return Ok(m.to_vec());
//!             }
//!         };
//!         let mut out = m[..2].to_vec();
//!         out.push(Message::assistant(summary));
//!         out.extend_from_slice(&m[middle.end..]);
//!         Ok(out)
//!     }
//!     fn status(&mut self) -> Result<EngineStatus, EngineError> { Ok(self.tracker.status()) }
//! }
//!
//! let mut chat = vec![Message::system("be brief"), Message::user("first ask")];
//! for i in 0..10 {
//!     chat.push(Message::assistant(format!("answer {i}: {}", "words ".repeat(20))));
//!     chat.push(Message::user(format!("question {i}")));
//! }
//!
//! // A host whose summarizer times out once, then digests what it is given.
//! let host = FakeHost::builder("summarizing")
//!     .context_length(200)
//!     .answer(Answer::error(ErrorKind::Unavailable, "timed out"))
//!     .build();
//! let mut engine = Summarizing::create(host.services()).unwrap();
//! let force = CompressOptions { force: true, ..Default::default() };
//!
//! assert_eq!(engine.compress(&chat, &force).unwrap(), chat);
//! assert!(host.logs()[0].message.contains("timed out"));
//! let out = engine.compress(&chat, &force).unwrap();
//! assert!(out[2].content_text().starts_with("summary: answer 0"));
//! assert_eq!(host.summarize_calls(), 2);
//! contract::check_output(&chat, &out).unwrap();
//!
//! // Every check at once, on this conversation (without `.conversation`, on the corpus).
//! let report = EngineCheck::new("summarizing", Summarizing::create)
//!     .context_length(200)
//!     .conversation("chat", chat)
//!     .run()
//!     .unwrap();
//! assert_eq!(report.shrunk, 1);
//! ```
//!
//! A plugin's own tests usually end with the corpus-wide check,
//! `ctxhost_sdk_test::check_plugin::<MyEngine>()`, asserting that the report's `shrunk` is not
//! zero so the check was not vacuous.

#![warn(missing_docs)]

mod cdylib;
pub mod contract;
pub mod corpus;
mod fake_host;
mod quality_subject;
mod rewrite;
pub mod tokens;

pub use cdylib::built_library;
pub use contract::{check_engine, check_plugin, ContractFailure, Violation};
pub use fake_host::{
    digest, Answer, AnswerFn, FakeHost, FakeHostBuilder, LogLine, FAKE_SUMMARIZER,
};
pub use quality_subject::EngineSubject;
pub use rewrite::Rewrite;
