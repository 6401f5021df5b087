//! # ctxhost
//!
//! The host for pluggable LLM context engines: it reads `config.yaml`, resolves
//! `context.engine` to the built-in compressor or a cdylib plugin, serves engines the host
//! services (tokens, summarizer, logs), and runs them safely off the async runtime.

pub mod atomic;
pub mod config;
pub mod engines;
pub mod home;
pub mod plot;
pub mod plugins;
pub mod replay;
pub mod report;
pub mod runner;
pub mod services;
pub mod tokens;
pub mod transcript;

pub use config::Config;
pub use engines::{Engines, Resolved};
pub use runner::Runner;
