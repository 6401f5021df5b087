//! What a request is, told once: the request taken apart by its wire, the agent that sent it
//! (its headers, on the wire it speaks), and whether it is that agent's own compaction (in the
//! shape the agent sends it) and who takes that under `serve.client_compaction`. The pipeline
//! then hands it to one handler.

use axum::http::HeaderMap;
use bytes::Bytes;
use ctxhost_agents::compaction::{self, Compaction, Recognised};
use ctxhost_agents::Agent;
use ctxhost_config::serve::{ClientCompactionMode, ServeSettings};

use super::unmanaged::Unmanaged;
use super::Route;
use ctxhost_gateway_wire::error::GatewayError;
use ctxhost_gateway_wire::{Incoming, Parsed, Wire};

/// A request, classified.
pub(super) enum Classified<R> {
    /// Sent on to the provider as it came (`body`), the session untouched.
    Relay { why: Unmanaged, body: Bytes },
    /// A request the gateway manages: the agent that sent it, and what it is.
    Managed {
        parsed: Parsed<R>,
        /// The body as it came (a side call goes on as sent when no session is found for it).
        sent: Bytes,
        agent: Agent,
        kind: Kind,
    },
}

/// What a managed request is.
pub(super) enum Kind {
    /// A turn of the session: the model answers it with the view plus what is new.
    Turn,
    /// The agent's own compaction, sent on as a turn the engine leaves uncompressed
    /// (`client_compaction: upstream`).
    CompactionUpstream,
    /// The agent's own compaction, answered by the engine with no model call.
    Compaction(Recognised),
    /// Hermes' compression call, a side call answered by the engine of the session it quotes.
    SideCall,
}

pub(super) fn classify<W: Wire>(
    bytes: Bytes,
    headers: &HeaderMap,
    route: Route,
    settings: &ServeSettings,
) -> Result<Classified<W::Request>, GatewayError> {
    // A cheap handle on the same bytes.
    let sent = bytes.clone();
    let parsed = match W::parse(bytes, settings)? {
        Incoming::Turn(parsed) => parsed,
        Incoming::Unmanaged(body) => {
            let why = Unmanaged::StoredState;
            return Ok(Classified::Relay { why, body });
        }
    };
    let fields = W::fields(&parsed.request);
    let agent = Agent::of_headers(W::AGENTS, headers, fields);
    let recognised = agent.compaction(&compaction::Request {
        headers,
        fields,
        history: &parsed.history,
        compact_route: route == Route::Compact,
    });
    let kind = match recognised {
        None => Kind::Turn,
        Some(recognised) => match owner(recognised.kind, settings.client_compaction) {
            Owner::Relay => {
                let why = Unmanaged::AgentCompaction;
                return Ok(Classified::Relay { why, body: sent });
            }
            Owner::Upstream => Kind::CompactionUpstream,
            Owner::Engine if recognised.kind.is_side_call() => Kind::SideCall,
            Owner::Engine => Kind::Compaction(recognised),
        },
    };
    Ok(Classified::Managed {
        parsed,
        sent,
        agent,
        kind,
    })
}

/// Who takes an agent's compaction request, under `serve.client_compaction`.
#[derive(Debug, PartialEq, Eq)]
enum Owner {
    /// The engine answers it.
    Engine,
    /// It goes upstream as a turn of the session, the engine leaving it uncompressed.
    Upstream,
    /// Relayed to the provider exactly as sent, the session untouched: the provider's own
    /// compaction under `passthrough` (a trigger, the compact route), the compact route under
    /// `upstream` too (it has no managed form), and Hermes' compression call under `upstream`
    /// and `passthrough` (a side call that quotes the turns it summarises, not the conversation
    /// itself).
    Relay,
}

fn owner(kind: Compaction, mode: ClientCompactionMode) -> Owner {
    match (kind, mode) {
        (_, ClientCompactionMode::Engine) => Owner::Engine,
        (Compaction::HermesCompressor | Compaction::CompactRoute, _) => Owner::Relay,
        (kind, ClientCompactionMode::Passthrough) if kind.provider_owned() => Owner::Relay,
        _ => Owner::Upstream,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_gives_each_compaction_one_owner() {
        use ClientCompactionMode::{Engine, Passthrough, Upstream};
        let cases = [
            (Compaction::ClaudeSummary, Engine, Owner::Engine),
            (Compaction::ClaudeSummary, Upstream, Owner::Upstream),
            (Compaction::ClaudeSummary, Passthrough, Owner::Upstream),
            (Compaction::CompactionTrigger, Upstream, Owner::Upstream),
            (Compaction::CompactionTrigger, Passthrough, Owner::Relay),
            (Compaction::CompactRoute, Engine, Owner::Engine),
            (Compaction::CompactRoute, Upstream, Owner::Relay),
            (Compaction::HermesCompressor, Engine, Owner::Engine),
            (Compaction::HermesCompressor, Upstream, Owner::Relay),
        ];
        for (kind, mode, expected) in cases {
            assert_eq!(owner(kind, mode), expected, "{kind:?} under {mode:?}");
        }
    }
}
