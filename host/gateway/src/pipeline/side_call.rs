//! Hermes Agent's compression call under `serve.client_compaction: engine`: a side call that
//! names no session and carries no history of its own (one user message quoting the turns to
//! summarise). It is answered from the engine of the session it is for (the one it names, else
//! the last one served for its credential whose turns it quotes), from the history that
//! session last served; with no such session it goes upstream as sent, with a log line.

use std::sync::Arc;

use axum::response::Response;
use ctxhost_agents::compaction::Compaction;
use ctxhost_agents::hermes;

use super::unmanaged::{self, Unmanaged};
use super::Request;
use crate::compaction::{self, Answering, Shape};
use crate::turn::{names_session, session_name, AnsweredBy, Turn, TurnRequest};
use crate::Gateway;
use ctxhost_gateway_wire::error::GatewayError;
use ctxhost_gateway_wire::{Parsed, Wire};

pub(super) async fn hermes_compaction<W: Wire>(
    gateway: Arc<Gateway>,
    parsed: Parsed<W::Request>,
    request: Request<'_>,
) -> Result<Response, GatewayError> {
    let quote = hermes::quote(&parsed.history);
    let header = request.agent.session_header();
    let name = if names_session(&request.headers, header) {
        Ok(session_name(&request.headers, header, &parsed.history)?)
    } else {
        gateway
            .served
            .find(&request.credential, &quote)
            .map_err(|e| e.to_string())
    };
    let begun = match name {
        Ok(name) => {
            let turn = TurnRequest {
                name: name.clone(),
                history: &[],
                model: &parsed.model,
                output_budget: parsed.output_budget,
                resumed: None,
                agent_compaction: Some(AnsweredBy::Engine),
                feature_window: request.feature_window,
                provider_context: W::provider_context(&parsed.request),
                cost: request.cost.clone(),
            };
            let begun = Turn::begin_served(gateway.clone(), &request.headers, turn).await?;
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
            &request.headers,
            request.query,
            request.sent,
            Unmanaged::AgentCompaction,
        )
        .await;
    };
    let shape = Shape {
        model: &parsed.model,
        stream: parsed.stream,
        compact_route: false,
    };
    let answering = Answering {
        kind: Compaction::HermesCompressor,
        shape,
    };
    Ok(compaction::answer::<W>(turn, prepared, answering).await)
}
