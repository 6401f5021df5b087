//! # ctxhost-engine-window
//!
//! The example third-party context engine, and the template to copy for a new one (see
//! `README.md`). It needs no LLM: when the prompt nears the model's window it keeps the system
//! prompt and first user message, keeps a recent tail chosen by token budget, drops the middle
//! behind one marker message, and clears old tool outputs inside the tail.
//!
//! Layout, one responsibility per file:
//! - `engine.rs`: [`WindowEngine`], the `ContextEngine` and `EnginePlugin` glue;
//! - `settings.rs`: [`Settings`], the `plugins.window` section of `config.yaml`;
//! - `window.rs`: the algorithm (where to cut, what to keep);
//! - `notes.rs`: the texts the engine writes into a conversation, and how it recognizes them.
//!
//! The crate builds both as a cdylib (what the host loads) and an rlib (so tests and benchmarks
//! can link [`WindowEngine`] directly).

mod engine;
mod notes;
mod settings;
mod window;

pub use engine::WindowEngine;
pub use settings::Settings;

// The one line that makes this crate a loadable plugin: it exports the stable-ABI root module,
// with every entry point guarded against panics.
ctxhost_protocol::export_engine!(WindowEngine);
