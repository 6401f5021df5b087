//! The end-to-end suite: the real `ctxhost` binary, real cdylib plugins built by the suite, and
//! the shared corpus of agent transcripts.

mod abi;
mod config_errors;
mod lcm;
mod loading;
mod registry;
mod run;
mod summarizer;
mod swap;
