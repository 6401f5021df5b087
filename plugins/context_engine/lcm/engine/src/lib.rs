//! # ctxhost-engine-lcm
//!
//! Lossless context management (LCM) for ctxhost: a context engine that never forgets. Every
//! message the host passes is stored verbatim (in SQLite, or PostgreSQL); when the context
//! nears the window, the oldest turns are replaced in the model's view by summaries that form
//! a DAG pointing back to their sources; the agent gets tools to search (`lcm_grep`), inspect
//! (`lcm_describe`) and recover (`lcm_expand`, `lcm_expand_query`) anything.
//!
//! Layout, one responsibility per file:
//! - `engine.rs`: [`LcmEngine`], the `ContextEngine` and `EnginePlugin` glue;
//! - `settings.rs`: [`Settings`], the `plugins.lcm` section of `config.yaml`;
//! - `ingest.rs`: storing what the host sends, exactly once;
//! - `context.rs`: the context list in memory;
//! - `compaction.rs`: leaf and condensed passes, incremental and bounded;
//! - `summarize.rs`: one summary, escalating normal → aggressive → truncation;
//! - `held.rs`: the standing facts a block's span holds, read down the DAG (what a small room
//!   cut from a block comes back from);
//! - `blocks.rs`: the summary blocks written into the model's view, and recognising them;
//! - `assemble.rs`: the message list the model sees;
//! - `tools/`: the agent's tools;
//! - `telemetry.rs`: the compaction report as the contract's `CompressionReport`;
//! - `ops.rs`: `status`, `doctor`, `backup`, `last_compaction` through `invoke`.
//!
//! The store (SQLite or PostgreSQL, its rows, its doctor, session locks, content hashes and
//! summary ids, migration between the databases) is the crate `ctxhost-lcm-store`.
//!
//! The crate builds both as a cdylib (what the host loads) and an rlib (so tests and benchmarks
//! link [`LcmEngine`] directly).

mod assemble;
mod blocks;
mod compaction;
mod context;
mod engine;
mod held;
mod ingest;
mod ops;
mod recall;
mod settings;
mod summarize;
mod telemetry;
mod tools;

pub use compaction::Report as CompactionReport;
pub use engine::{LcmEngine, DATABASE_FILE, DEFAULT_SESSION, NAME};
pub use settings::Settings;

// The one line that makes this crate a loadable plugin: it exports the stable-ABI root module,
// with every entry point guarded against panics.
ctxhost_protocol::export_engine!(LcmEngine);
