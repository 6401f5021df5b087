//! Token counting routes (Anthropic's `POST /v1/messages/count_tokens`, OpenAI's
//! `POST /v1/responses/input_tokens`). With `serve.count_tokens: view` (the default) they answer
//! for what the gateway would send upstream for that history, the session's view plus the new
//! messages, so a client's meter (Claude Code decides when to compact from it) agrees with the
//! `usage` it receives. The session is only read: nothing is compressed, advanced or created,
//! and a history the session does not know is counted whole. The provider counts when it has
//! the route; else the gateway counts with its own tokenizer. The engine's own tools, which a
//! turn offers too, are not counted: the session's engine is not asked here.
//! With `passthrough` the client's request is relayed as it came.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use ctxhost_agents::Agent;
use ctxhost_sdk::Message;
use serde_json::Value;

use crate::auth::credential_of;
use crate::record::{SessionKey, SessionRecord};
use crate::turn::{relay, session_name};
use crate::upstream::{read_body, relayed_headers};
use crate::Gateway;
use ctxhost_config::serve::CountTokens;
use ctxhost_gateway_wire::count::Counting;
use ctxhost_gateway_wire::error::{ErrorKind, GatewayError};
use ctxhost_gateway_wire::Incoming;

/// The route's handler, its failures in the shape `W`'s clients parse.
pub async fn count_tokens<W: Counting>(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    let counted = async {
        let bytes = gateway.read_request(&headers, body).await?;
        match gateway.settings.count_tokens {
            CountTokens::Passthrough => {
                relayed(&gateway, W::COUNT_PATH, &headers, uri.query(), bytes).await
            }
            CountTokens::View => of_view::<W>(&gateway, headers, uri.query(), bytes).await,
        }
    };
    counted.await.unwrap_or_else(W::error_response)
}

/// The request relayed as it came; the provider's answer as it came.
async fn relayed(
    gateway: &Gateway,
    path: &str,
    headers: &HeaderMap,
    query: Option<&str>,
    bytes: Bytes,
) -> Result<Response, GatewayError> {
    let response = gateway
        .upstream
        .send(Method::POST, path, query, headers, Some(bytes))
        .await?;
    relay_answer(gateway, response).await
}

async fn relay_answer(
    gateway: &Gateway,
    response: reqwest::Response,
) -> Result<Response, GatewayError> {
    let status = response.status();
    let upstream_headers = relayed_headers(response.headers());
    let body = read_body(response, gateway.settings.limits.max_response_bytes).await?;
    Ok(relay(status, upstream_headers, &HeaderMap::new(), body))
}

/// The count of what a turn with this history would send upstream.
async fn of_view<W: Counting>(
    gateway: &Arc<Gateway>,
    mut headers: HeaderMap,
    query: Option<&str>,
    bytes: Bytes,
) -> Result<Response, GatewayError> {
    let parsed = match W::parse(bytes.clone(), &gateway.settings) {
        Ok(Incoming::Turn(parsed)) => parsed,
        // The provider's own state, or a body no turn would take (a count of tools alone):
        // the provider's own count of it, or its own error.
        Ok(Incoming::Unmanaged(_)) | Err(_) => {
            return relayed(gateway, W::COUNT_PATH, &headers, query, bytes).await
        }
    };
    // The headers a turn would carry (Anthropic betas).
    W::upstream_headers(&mut headers, &parsed.model, &gateway.settings);
    let agent = Agent::of_headers(W::AGENTS, &headers, W::fields(&parsed.request));
    let name = session_name(&headers, agent.session_header(), &parsed.history)?;
    let key = SessionKey {
        credential: credential_of(&headers),
        name,
    };
    let record = latest(gateway, key).await?;
    let messages = record
        .and_then(|record| record.conversation.peek(&parsed.history))
        .unwrap_or(parsed.history);
    let mut request = parsed.request;
    W::for_count(&mut request);
    let body = W::upstream_body(&request, &messages, &[]);
    let response = gateway
        .upstream
        .send(Method::POST, W::COUNT_PATH, query, &headers, Some(body))
        .await?;
    // Any other answer is the provider's (its count, or its error for the client).
    if !matches!(response.status().as_u16(), 404 | 405 | 501) {
        return relay_answer(gateway, response).await;
    }
    let tokens = count_here(gateway, &messages, W::tools(&request));
    Ok(Json(W::counted(tokens)).into_response())
}

/// The gateway's own count: the messages as the engines count them, and the tool definitions.
fn count_here(gateway: &Gateway, messages: &[Message], tools: Option<&Value>) -> u64 {
    let counter = gateway.engines.services().tokens();
    let tools = tools
        .filter(|tools| !tools.is_null())
        .map(|tools| counter.count(&tools.to_string()))
        .unwrap_or(0);
    counter.count_messages(messages) + tools
}

/// The session's latest record, read only (a session that does not exist is not created).
async fn latest(
    gateway: &Arc<Gateway>,
    key: SessionKey,
) -> Result<Option<Arc<SessionRecord>>, GatewayError> {
    let published = gateway.live.published(&key);
    if gateway.coordination.is_none() && published.is_some() {
        // Alone on its store, this gateway's own record is the latest.
        return Ok(published);
    }
    let stored = gateway
        .store
        .load(&key)
        .await
        .map_err(|e| GatewayError::new(ErrorKind::Internal, e.to_string()))?;
    Ok(match (stored, published) {
        (Some(stored), Some(own)) if own.revision > stored.revision => Some(own),
        (Some(stored), _) => Some(Arc::new(stored)),
        (None, own) => own,
    })
}
