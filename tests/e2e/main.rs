//! The end-to-end suite: the real `ctxhost` binary, real cdylib plugins built by the suite, and
//! the shared corpus of agent transcripts.

mod abi;
mod config_cmd;
mod config_errors;
mod lcm;
mod loading;
mod picker;
mod plugins_cmd;
mod registry;
mod run;
mod summarizer;
mod swap;
mod tokens;
