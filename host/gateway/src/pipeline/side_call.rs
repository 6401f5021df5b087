//! Hermes Agent's compression call under `serve.client_compaction: engine`: a side call that
//! names no session and carries no history of its own (one user message quoting the turns to
//! summarise). It is answered from the engine of the session it is for (the one it names, else
//! the last one served for its credential whose turns it quotes), from the history that
//! session last served; with no such session it goes upstream as sent, with a log line.

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;

use super::unmanaged::{self, Unmanaged};
use crate::compaction::render::Shape;
use crate::compaction::{self, AgentCompaction, Answering};
use crate::error::GatewayError;
use crate::turn::{names_session, session_name, Turn, TurnRequest};
use crate::wire::{Parsed, Wire};
use crate::Gateway;
use ctxhost_wire::client_compaction::ClientCompaction;

/// What the call came with, beside its parsed body.
pub(super) struct SideCall<'a> {
    pub headers: &'a HeaderMap,
    pub query: Option<&'a str>,
    /// The body as it came, for the upstream when no session is found.
    pub sent: Bytes,
    pub credential: &'a str,
    pub agent: Option<AgentCompaction>,
    pub feature_window: Option<u64>,
}

pub(super) async fn hermes_compression<W: Wire>(
    gateway: Arc<Gateway>,
    parsed: Parsed<W::Request>,
    call: SideCall<'_>,
) -> Result<Response, GatewayError> {
    let quote = parsed
        .history
        .last()
        .map(|m| m.content_text())
        .unwrap_or_default();
    let name = if names_session(call.headers, W::CLIENT_SESSION_HEADER) {
        Ok(session_name(
            call.headers,
            W::CLIENT_SESSION_HEADER,
            &parsed.history,
        )?)
    } else {
        gateway
            .served
            .find(call.credential, &quote)
            .map_err(|e| e.to_string())
    };
    let begun = match name {
        Ok(name) => {
            let request = TurnRequest {
                name: name.clone(),
                history: &[],
                model: &parsed.model,
                output_budget: parsed.output_budget,
                resumed: None,
                agent_compaction: call.agent,
                feature_window: call.feature_window,
                provider_context: W::provider_context(&parsed.request),
            };
            let begun = Turn::begin_served(gateway.clone(), call.headers, request).await?;
            if begun.is_none() {
                tracing::info!(session = %name, "Hermes' compression call: its session holds no chat-wire history at its lineage to answer from (reopened, or served elsewhere since): relayed upstream");
            }
            begun
        }
        Err(why) => {
            tracing::info!("Hermes' compression call names no session and none was found for it ({why}): relayed upstream");
            None
        }
    };
    let Some((turn, prepared)) = begun else {
        return unmanaged::pass_through(
            &gateway,
            W::PATH,
            call.headers,
            call.query,
            call.sent,
            Unmanaged::AgentCompaction,
        )
        .await;
    };
    let shape = Shape {
        api: W::API,
        model: &parsed.model,
        stream: parsed.stream,
        compact_route: false,
    };
    let answering = Answering {
        kind: ClientCompaction::HermesCompression,
        shape,
    };
    Ok(compaction::answer(turn, prepared, answering).await)
}
