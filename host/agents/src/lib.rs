//! The agents the gateway serves, one profile each ([`claude_code`], [`codex`], [`hermes`], and
//! any other client): which header names an agent's session, its own compaction in the shape
//! that agent sends it ([`compaction`]), the handoff it gets back when the engine answers that
//! compaction ([`handoff`]) and where it keeps that handoff ([`kept`]), and Hermes' compression
//! side call with the history it is answered from ([`hermes::served`]).
//!
//! Vocabulary: *compaction* is the agent's own (Codex's handoff summary, trigger and compact
//! route; Claude Code's summary request; Hermes' compressor); *compression* is the engine's.
//!
//! Which agent sent a request is told once ([`Agent::of_headers`]) from what only that agent
//! sends on its own wire (its session header, its user agent, its request metadata); a client
//! its headers do not tell is [`Agent::Unknown`], and its compaction, if any, is recognised by
//! each agent's shape in turn ([`Agent::compaction`]).

pub mod claude_code;
pub mod codex;
pub mod compaction;
pub mod handoff;
pub mod hermes;
pub mod kept;

use compaction::{Compaction, Prompt, Recognised, Request};
use ctxhost_sdk::Message;
use http::HeaderMap;
use kept::Kept;
use serde_json::{Map, Value};

/// The agent a request comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code, on Anthropic Messages.
    ClaudeCode,
    /// Codex CLI, on OpenAI Responses.
    Codex,
    /// Hermes Agent, on Chat Completions (its headers are an OpenAI SDK's: it is told by its
    /// compression call's shape only).
    Hermes,
    /// Any other client.
    Unknown,
}

impl Agent {
    /// The agent `headers` (and the body's own `fields`) tell, among `speakers`: the agents that
    /// speak the wire the request came on (a header of one agent's means nothing on another's
    /// wire).
    pub fn of_headers(
        speakers: &[Agent],
        headers: &HeaderMap,
        fields: &Map<String, Value>,
    ) -> Agent {
        let told = |agent: &Agent| match agent {
            Agent::ClaudeCode => claude_code::sent(headers),
            Agent::Codex => codex::sent(headers, fields),
            Agent::Hermes | Agent::Unknown => false,
        };
        speakers
            .iter()
            .copied()
            .find(told)
            .unwrap_or(Agent::Unknown)
    }

    /// The header this agent names its session in, if it has one.
    pub fn session_header(self) -> Option<&'static str> {
        match self {
            Agent::ClaudeCode => Some(claude_code::SESSION_HEADER),
            Agent::Codex => Some(codex::SESSION_HEADER),
            Agent::Hermes | Agent::Unknown => None,
        }
    }

    /// The compaction `request` is, if it is one: this agent's own shapes when its headers told
    /// it, else each agent's shape in turn (a client that names itself nowhere may still compact
    /// as one of them does). On the compact route it always is one.
    pub fn compaction(self, request: &Request<'_>) -> Option<Recognised> {
        if request.compact_route {
            return Some(Recognised {
                kind: Compaction::CompactRoute,
                prompt: Prompt::None,
            });
        }
        match self {
            Agent::ClaudeCode => claude_code::compaction(request.history),
            Agent::Codex => codex::compaction(request),
            Agent::Hermes => hermes::compaction(request.history),
            Agent::Unknown => codex::compaction(request)
                .or_else(|| claude_code::compaction(request.history))
                .or_else(|| hermes::compaction(request.history)),
        }
    }

    /// The text handoffs of the gateway's that `history` keeps where this agent keeps them, in
    /// order (a client its headers do not tell: where any agent would, or as the gateway
    /// rendered it). A marker line quoted inside someone's words is none.
    pub fn kept_handoffs(self, history: &[Message]) -> Vec<Kept> {
        let mut kept = match self {
            Agent::ClaudeCode => claude_code::kept(history),
            Agent::Codex => codex::kept(history),
            Agent::Hermes => hermes::kept(history),
            Agent::Unknown => [
                claude_code::kept(history),
                codex::kept(history),
                hermes::kept(history),
                kept::generic::kept(history),
            ]
            .concat(),
        };
        // Stable: where an agent's shape and the bare rendering find the same text, the
        // agent's (listed first) is kept.
        kept.sort_by_key(|k| (k.message, k.block));
        kept.dedup_by_key(|k| (k.message, k.block));
        kept
    }

    /// The agent's name (logs).
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude_code",
            Agent::Codex => "codex",
            Agent::Hermes => "hermes",
            Agent::Unknown => "unknown",
        }
    }
}

/// Whether `headers` carry `name` with a value beginning with `prefix` (case-insensitive).
fn header_starts(headers: &HeaderMap, name: &str, prefix: &str) -> bool {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.get(..prefix.len()))
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}
