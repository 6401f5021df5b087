//! `ctxhost serve`: the gateway, driven over real HTTP on 127.0.0.1 against a scripted upstream.

mod agents;
mod anthropic;
mod background;
mod basics;
mod cache;
mod client_compaction;
mod client_compaction_hermes;
mod clients;
mod compaction_shapes;
mod engine_tools;
mod failures;
mod handoff;
mod lcm_grep;
mod lcm_postgres;
mod limits;
mod meter;
mod passthrough;
mod replay;
mod replicas;
mod request_log;
mod responses;
mod secrets;
mod startup;
mod state;
mod windows;
