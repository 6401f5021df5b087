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
//! - [`EnginePlugin`] and [`export_engine!`]: turn an engine into a loadable cdylib;
//! - [`CompressionReport`] and [`SessionInfo`]: what an engine tells the host about its work;
//! - [`protocol`]: every operation as data (one call enum, one reply enum), for hosts that reach
//!   an engine running elsewhere.
//!
//! A minimal plugin (the crate is a `cdylib`; `ctxhost plugins new` writes one for you):
//!
//! ```
//! use ctxhost_sdk::*;
//!
//! pub struct KeepAll(TokenTracker);
//!
//! impl ContextEngine for KeepAll {
//!     fn name(&self) -> &str { "keep-all" }
//!     fn should_compress(&mut self, tokens: u64) -> Result<bool, EngineError> {
//!         Ok(self.0.over_threshold(tokens))
//!     }
//!     fn compress(&mut self, m: &[Message], _: &CompressOptions) -> Result<Vec<Message>, EngineError> {
//!         Ok(m.to_vec())
//!     }
//!     fn status(&mut self) -> Result<EngineStatus, EngineError> { Ok(self.0.status()) }
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
//!
//! export_engine!(KeepAll);
//! # fn main() {
//! #     assert_eq!(KeepAll::manifest().name, "keep-all");
//! # }
//! ```
//!
//! The host's side of the boundary (loading a library, checking its interface, calling its
//! engine) lives in the host, not here.

#![warn(missing_docs)]

// The frozen layout both sides of the plugin boundary compile against. It is public because the
// host-side crate (`ctxhost-plugin-host`) and `export_engine!`'s expansion need it; authors never
// do, so it stays out of their docs.
#[doc(hidden)]
pub mod abi;
pub mod contract;
mod engine;
mod error;
mod manifest;
mod message;
mod plugin;
pub mod protocol;
pub mod sequence;
mod services;
mod telemetry;

pub use engine::{CompressOptions, ContextEngine, EngineStatus, SessionStart, TokenTracker, Usage};
pub use error::{EngineError, ErrorKind, SettingFault};
pub use manifest::{ConfigKey, Manifest, API_LEVEL};
pub use message::{role, Content, Message, MessageError, Stamp, ToolCall};
pub use plugin::EnginePlugin;
pub use services::{
    EngineSetup, HostBackend, HostServices, LogLevel, ModelInfo, SummarizeRequest, Summary,
    SummaryShape, MESSAGE_OVERHEAD_TOKENS,
};
pub use telemetry::{CompressionReport, Escalation, SessionInfo};
