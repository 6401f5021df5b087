//! lcm's engine, tool, session and corpus tests once more, with the store in PostgreSQL (a
//! throwaway cluster from `ctxhost-test-postgres`): both stores must answer the same. The test
//! files are included as modules; their shared helpers (`common`) see from their module path
//! that they run here and give every engine a database of its own. Without PostgreSQL's
//! programs these tests fail, saying what to install.

// Each included file brings its own copy of the shared helpers, as it does in its own binary.
#![allow(clippy::duplicate_mod)]

#[path = "blocks.rs"]
mod blocks;
#[path = "corpus.rs"]
mod corpus;
#[path = "engine.rs"]
mod engine;
#[path = "recall.rs"]
mod recall;
#[path = "sessions.rs"]
mod sessions;
#[path = "standing.rs"]
mod standing;
#[path = "writers.rs"]
mod writers;
