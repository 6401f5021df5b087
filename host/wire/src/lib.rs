//! Formats at ctxhost's edges, each converted losslessly to and from the engines' chat messages
//! (the SDK's [`Message`](ctxhost_sdk::Message)): Anthropic Messages blocks ([`anthropic`]), and
//! the transcripts and agents' session logs `ctxhost run` replays and writes ([`transcript`]:
//! OpenAI messages, Hermes trajectories, Claude Code and Codex session logs), and Responses API
//! items ([`responses`], on the same item model as Codex's rollouts).

pub mod anthropic;
pub mod responses;
pub mod transcript;
