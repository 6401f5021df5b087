//! The end-to-end suite: the real `ctxhost` binary, real cdylib plugins built by the suite, and
//! the shared corpus of agent transcripts.

mod abi;
mod agent_logs;
mod architecture;
mod compress_again;
mod compress_budget;
mod config_cmd;
mod config_errors;
mod costs;
mod dependencies;
mod embedding;
mod install;
mod isolation;
mod lcm;
mod lcm_integrity;
mod loading;
mod output;
mod picker;
mod plugin_libraries;
mod plugins_cmd;
mod postgres_secrets;
mod project_trust;
mod quality;
mod readme;
mod registry;
mod run;
mod serve;
mod sessions;
mod summarizer;
mod swap;
mod tokens;
