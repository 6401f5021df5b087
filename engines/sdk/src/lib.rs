//! # ctxhost-sdk
//!
//! Everything a context-engine author depends on:
//!
//! - [`Message`]: OpenAI chat-format messages that survive every round trip, unknown fields and
//!   multimodal parts included;
//! - [`ContextEngine`]: the engine contract (Hermes Agent's interface, in Rust);
//! - [`HostServices`]: summarizing, token counting, logging, data directory and config, all
//!   served by the host;
//! - [`sequence`]: the chat-sequence rules an engine's output must keep, with helpers;
//! - [`EnginePlugin`]: what makes an engine a loadable plugin (the `ctxhost-protocol` crate's
//!   `export_engine!` exports it from a cdylib);
//! - [`EngineSettings`]: an engine's settings read from its config section, with defaults and
//!   errors naming the key at fault;
//! - [`CompressionReport`] and [`SessionInfo`]: what an engine tells the host about its work;
//! - [`budget`]: the order in which an engine spends a size budget (facts before the tail).
//!
//! A minimal plugin (the crate is a `cdylib` that also depends on `ctxhost-protocol`, for
//! `ctxhost_protocol::export_engine!(KeepAll);`; `ctxhost plugins new` writes one for you). It
//! keeps a [`TokenTracker`], so the trait's defaults do the host's bookkeeping (usage, threshold,
//! window, status):
//!
//! ```
//! use ctxhost_sdk::*;
//!
//! pub struct KeepAll(TokenTracker);
//!
//! impl ContextEngine for KeepAll {
//!     fn name(&self) -> &str { "keep-all" }
//!     fn tracker(&mut self) -> Option<&mut TokenTracker> { Some(&mut self.0) }
//!     fn compress(&mut self, m: &[Message], _: &CompressOptions) -> Result<Vec<Message>, EngineError> {
//!         Ok(m.to_vec())
//!     }
//! }
//!
//! impl EnginePlugin for KeepAll {
//!     fn manifest() -> Manifest {
//!         Manifest::new("keep-all", env!("CARGO_PKG_VERSION"), "Keeps everything.")
//!     }
//!     fn create(services: HostServices) -> Result<Self, EngineError> {
//!         Ok(KeepAll(TokenTracker::new(services.model().context_length, 0.75)))
//!     }
//! }
//! # fn main() {
//! #     assert_eq!(KeepAll::manifest().name, "keep-all");
//! #     let mut engine = KeepAll(TokenTracker::new(1000, 0.75));
//! #     engine.update_from_response(&Usage { prompt_tokens: 800, ..Usage::default() }).unwrap();
//! #     assert!(engine.should_compress(800).unwrap());
//! #     assert_eq!(engine.status().unwrap().last_prompt_tokens, 800);
//! # }
//! ```
//!
//! The engine-call protocol (every operation as data, for hosts that reach an engine running
//! elsewhere) is the `ctxhost-protocol` crate; the host's side of the boundary (loading a
//! library, checking its interface, calling its engine) lives in the host, not here.

#![warn(missing_docs)]

// The frozen layout both sides of the plugin boundary compile against. It is public because the
// host-side crate (`ctxhost-plugin-host`) and the protocol's `export_engine!` need it; authors
// never do, so it stays out of their docs.
#[doc(hidden)]
pub mod abi;
pub mod budget;
pub mod contract;
mod engine;
mod error;
mod manifest;
mod message;
mod plugin;
mod selection;
pub mod sequence;
mod services;
mod settings;
mod telemetry;

pub use engine::{CompressOptions, ContextEngine, EngineStatus, SessionStart, TokenTracker, Usage};
pub use error::{EngineError, ErrorKind, SettingFault};
pub use manifest::{ConfigKey, Manifest, API_LEVEL};
pub use message::{role, Content, Message, MessageError, Stamp, ToolCall};
pub use plugin::EnginePlugin;
pub use selection::{
    is_recalled, ContextSelection, Recalled, RecalledSource, SelectRequest, SelectionViolation,
    RECALLED_MARKER,
};
pub use services::{
    EngineSetup, HostBackend, HostServices, LogLevel, ModelInfo, SummarizeRequest, Summary,
    SummaryShape, MESSAGE_OVERHEAD_TOKENS,
};
pub use settings::{read_section, EngineSettings};
pub use telemetry::{CompressionReport, Escalation, SessionInfo};
