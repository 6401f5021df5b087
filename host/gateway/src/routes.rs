//! The gateway's routes: each wire's (made from its endpoints, in its error shape), the rest
//! of the provider's API relayed, and the gateway's own endpoints (health, metrics, sessions).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Path, Request, State};
use axum::handler::Handler;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post, MethodRouter};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::auth::credential_of;
use super::pipeline::count::count_tokens;
use super::pipeline::{handle, handle_compact};
use super::proxy::{self, BaseUrl, ClientSetup};
use super::record::{SessionKey, SessionRecord};
use super::request_log::{RequestCost, RequestLog};
use super::turn::{set_header, SESSION_HEADER};
use super::upstream::{read_body, relayed_headers};
use super::Gateway;
use crate::engine_check::{EngineStatus, ENGINE_ERROR_HEADER};
use ctxhost_gateway_wire::chat::Chat;
use ctxhost_gateway_wire::count::Counting;
use ctxhost_gateway_wire::error::{ErrorKind, ErrorShape, GatewayError, OWN_SHAPE};
use ctxhost_gateway_wire::responses::Responses;
use ctxhost_gateway_wire::{each_wire, EachWire, Wire, SHARED_ENDPOINTS};
use ctxhost_metrics::Metric;

pub fn router(gateway: Arc<Gateway>) -> Router {
    let mut wires = WireRoutes {
        gateway: &gateway,
        routes: Router::new(),
    };
    each_wire(&mut wires);
    let wires = wires.routes;
    let compact = Router::new().route(
        "/v1/responses/compact",
        post_only(handle_compact, Responses::error_response),
    );
    let mut own = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/{*rest}", relayed(OWN_SHAPE));
    // Routes every API has (a model list): OpenAI clients are the ones that ask without /v1.
    for endpoint in SHARED_ENDPOINTS {
        own = base_url_hints(own, endpoint, OWN_SHAPE, Chat::client_setup);
    }
    let own = own
        .route("/ctxhost/sessions", get(list_sessions))
        .route("/ctxhost/sessions/{id}", get(show_session))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .fallback(not_found);
    observed(own, &gateway, OWN_SHAPE)
        .merge(observed(compact, &gateway, Responses::error_response))
        .merge(wires)
        .with_state(gateway)
}

/// Each wire's routes: its turn, its token count if it has one, the rest of its API relayed,
/// and the base-URL mistakes of its clients named; the gateway's own errors in its shape.
struct WireRoutes<'a> {
    gateway: &'a Arc<Gateway>,
    routes: Router<Arc<Gateway>>,
}

impl WireRoutes<'_> {
    fn add<W: Wire>(&mut self, routes: Router<Arc<Gateway>>) {
        let shape: ErrorShape = W::error_response;
        let mut routes = routes
            .route(&format!("/v1/{}", W::PATH), post_only(handle::<W>, shape))
            .route(&format!("/v1/{}/{{*rest}}", W::PATH), relayed(shape));
        for endpoint in W::ENDPOINTS {
            routes = base_url_hints(routes, endpoint, shape, W::client_setup);
        }
        let routes = observed(routes, self.gateway, shape);
        self.routes = std::mem::take(&mut self.routes).merge(routes);
    }
}

impl EachWire for WireRoutes<'_> {
    fn wire<W: Wire>(&mut self) {
        self.add::<W>(Router::new());
    }

    fn counting<W: Counting>(&mut self) {
        let count = post_only(count_tokens::<W>, W::error_response);
        self.add::<W>(Router::new().route(&format!("/v1/{}", W::COUNT_PATH), count));
    }
}

/// `routes` checked, timed, counted and logged, the gateway's own refusals in `shape`.
fn observed(
    routes: Router<Arc<Gateway>>,
    gateway: &Arc<Gateway>,
    shape: ErrorShape,
) -> Router<Arc<Gateway>> {
    routes.layer(axum::middleware::from_fn_with_state(
        (gateway.clone(), shape),
        observe,
    ))
}

/// `handler` for POST; other methods refused in `shape`.
fn post_only<H, T>(handler: H, shape: ErrorShape) -> MethodRouter<Arc<Gateway>>
where
    H: Handler<T, Arc<Gateway>>,
    T: 'static,
{
    post(handler).fallback(move |method: Method, uri: Uri| async move {
        proxy::method_not_allowed(&method, uri.path(), "POST", shape)
    })
}

/// Any method relayed upstream as it came.
fn relayed(shape: ErrorShape) -> MethodRouter<Arc<Gateway>> {
    any(move |state: State<Arc<Gateway>>, request: Request| proxy::relay(state, request, shape))
}

/// The paths a client whose base URL is off sends `endpoint` to: without `/v1`, or with it
/// twice; answered with a 404 that says so.
fn base_url_hints(
    routes: Router<Arc<Gateway>>,
    endpoint: &str,
    shape: ErrorShape,
    setup: ClientSetup,
) -> Router<Arc<Gateway>> {
    let hint = |base_url| {
        any(move |method: Method, uri: Uri| async move {
            proxy::not_found(&method, uri.path(), base_url, shape)
        })
    };
    routes
        .route(&format!("/{endpoint}"), hint(BaseUrl::LacksVersion(setup)))
        .route(
            &format!("/v1/v1/{endpoint}"),
            hint(BaseUrl::DoubledVersion(Some(setup))),
        )
}

/// Checks the gateway token, then times, counts and logs every request (never its body).
async fn observe(
    State((gateway, shape)): State<(Arc<Gateway>, ErrorShape)>,
    mut request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let open = route == "/healthz";
    if !open
        && !gateway
            .tokens
            .admits(request.headers(), gateway.upstream.holds_key())
    {
        let error = GatewayError::new(
            ErrorKind::Unauthorized,
            "this gateway needs a token: send it in the x-ctxhost-token header",
        );
        let mut response = shape(error);
        mark_engine_problem(&gateway, &mut response);
        count(&gateway, &route, &response, started);
        return response;
    }
    let path = request.uri().path().to_string();
    // Logs the request when it ends, even if the client leaves before its headers, with what
    // its turn's model calls cost.
    let cost = RequestCost::default();
    request.extensions_mut().insert(cost.clone());
    let log = RequestLog::new(method, path, started, cost);
    let mut response = next.run(request).await;
    mark_engine_problem(&gateway, &mut response);
    count(&gateway, &route, &response, started);
    let session = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_string();
    log.answered(response, &session)
}

/// While the gateway runs another engine than configured, every response says why (a turn's
/// own engine failure, already set, says more).
fn mark_engine_problem(gateway: &Gateway, response: &mut Response) {
    if let Some(problem) = gateway.engine_status.problem() {
        if !response.headers().contains_key(ENGINE_ERROR_HEADER) {
            // Cut to one line as the turn's own engine errors are.
            set_header(response.headers_mut(), ENGINE_ERROR_HEADER, problem);
        }
    }
}

fn count(gateway: &Gateway, route: &str, response: &Response, started: Instant) {
    let status = response.status().as_u16().to_string();
    gateway.metrics.add(
        Metric::Requests,
        &[("route", route), ("status", &status)],
        1,
    );
    gateway.metrics.observe(
        Metric::RequestDuration,
        &[("route", route)],
        started.elapsed(),
    );
}

/// `GET /healthz`: 200 while the gateway and its store answer, 503 (same body) when the store
/// does not.
async fn healthz(State(gateway): State<Arc<Gateway>>) -> Response {
    let store = gateway.store.health().await;
    let store_ok = store.ok;
    // Without its store the gateway cannot serve (503); on the fallback engine it serves, but
    // not as configured.
    let (status, health) = match (store_ok, gateway.engine_status.problem()) {
        (false, _) => (StatusCode::SERVICE_UNAVAILABLE, Health::Degraded),
        (true, Some(_)) => (StatusCode::OK, Health::Degraded),
        (true, None) => (StatusCode::OK, Health::Ok),
    };
    let mut body = json!({
        "status": health,
        "engine": gateway.engine,
        "replica": gateway.replica,
        "sessions": gateway.live.len(),
        "store": store,
    });
    if let EngineStatus::FellBack { configured, reason } = &gateway.engine_status {
        body["configured_engine"] = json!(configured);
        body["engine_error"] = json!(reason);
    }
    (status, Json(body)).into_response()
}

/// `/healthz`'s `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum Health {
    Ok,
    /// The store does not answer, or the configured engine is not the one running.
    Degraded,
}

async fn metrics(State(gateway): State<Arc<Gateway>>) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        gateway.metrics.render(),
    )
        .into_response()
}

async fn not_found(method: Method, uri: Uri) -> Response {
    proxy::not_found(&method, uri.path(), BaseUrl::Fine, OWN_SHAPE)
}

/// `GET /v1/models`, relayed as it is.
async fn models(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, GatewayError> {
    let response = gateway
        .upstream
        .send(Method::GET, "models", uri.query(), &headers, None)
        .await?;
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::OK);
    let relayed = relayed_headers(response.headers());
    let body = read_body(response, gateway.settings.limits.max_response_bytes).await?;
    let mut response = Response::new(axum::body::Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = relayed;
    Ok(response)
}

/// A session as the listing shows it.
fn summary(record: &SessionRecord) -> Value {
    json!({
        "id": record.key.name,
        "engine": record.engine,
        "model": record.model,
        "context_length": record.context_length,
        "requests": record.stats.requests,
        "messages_seen": record.conversation.lineage_len(),
        "tokens_received": record.stats.tokens_received,
        "tokens_sent": record.stats.tokens_sent,
        "compressions": record.compressions.len(),
        "cache": {
            "read_tokens": record.stats.cache_read_tokens,
            "write_tokens": record.stats.cache_write_tokens,
            "hit_ratio": record.stats.cache_hit_ratio(),
        },
        "cost": {
            "priced_calls": record.stats.priced_calls,
            "dollars": record.stats.cost_microdollars as f64 / 1e6,
            "no_engine_dollars": record.stats.no_engine_cost_microdollars as f64 / 1e6,
            "saving_dollars": record.stats.saving_dollars(),
        },
        "updated_at": record.updated_at,
    })
}

/// A store that failed a read, as the sessions endpoints answer it.
fn unreadable(error: super::store::StoreError) -> GatewayError {
    GatewayError::new(ErrorKind::Internal, error.to_string())
}

/// `GET /ctxhost/sessions`: the caller's sessions (those of its credential) only.
async fn list_sessions(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
) -> Result<Json<Value>, GatewayError> {
    let credential = credential_of(&headers);
    // Sessions in memory are shown as of their last exchange (its save may still be running).
    let live = gateway.live.published_of(&credential);
    let mut records = gateway.store.list(&credential).await.map_err(unreadable)?;
    for record in live {
        match records.iter_mut().find(|r| r.key == record.key) {
            // With several gateways on one database, another may have saved it since.
            Some(stored) if stored.revision > record.revision => {}
            Some(stored) => *stored = (*record).clone(),
            None => records.push((*record).clone()),
        }
    }
    records.sort_by(|a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then_with(|| a.key.name.cmp(&b.key.name))
    });
    let mut listing = json!({
        "engine": gateway.engine,
        "sessions": records.iter().map(summary).collect::<Vec<_>>(),
    });
    if records.is_empty() {
        listing["note"] = json!(SCOPED_BY_CREDENTIAL);
    }
    Ok(Json(listing))
}

/// Said with an empty listing: a caller that does not send the agent's credential sees none of
/// its sessions.
const SCOPED_BY_CREDENTIAL: &str = "sessions are listed per credential: send the key the agent \
     sends (Authorization: Bearer KEY, or x-api-key: KEY; and its x-ctxhost-token when the \
     gateway asks for one) to list its sessions";

/// `GET /ctxhost/sessions/{id}`: one of the caller's sessions, with its compressions.
async fn show_session(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, GatewayError> {
    let key = SessionKey {
        credential: credential_of(&headers),
        name: id.clone(),
    };
    let published = gateway.live.published(&key);
    let record = match published {
        // Alone on its store, this gateway's own record is the latest.
        Some(record) if gateway.coordination.is_none() => Some((*record).clone()),
        // Else whichever of its own and the stored one is newer.
        published => {
            let stored = gateway.store.load(&key).await.map_err(unreadable)?;
            match (stored, published) {
                (Some(stored), Some(own)) if own.revision > stored.revision => Some((*own).clone()),
                (Some(stored), _) => Some(stored),
                (None, own) => own.map(|own| (*own).clone()),
            }
        }
    };
    let record = record.ok_or_else(|| {
        GatewayError::new(
            ErrorKind::NotFound,
            format!("no session '{id}' for this credential"),
        )
    })?;
    let mut value = summary(&record);
    value["stats"] = serde_json::to_value(&record.stats).unwrap_or_default();
    value["view_messages"] = json!(record.conversation.view().len());
    value["view_covers"] = json!(record.conversation.covered());
    value["pending_splices"] = json!(record.conversation.pending_splices());
    value["compress_next"] = json!(record.compress_next);
    value["pending"] = json!(record.pending);
    value["last_prompt_tokens"] = json!(record.last_prompt_tokens);
    value["created_at"] = json!(record.created_at);
    value["revision"] = json!(record.revision);
    value["compressions"] = serde_json::to_value(&record.compressions).unwrap_or_default();
    value["last_recalled"] = serde_json::to_value(&record.last_recalled).unwrap_or_default();
    Ok(Json(value))
}
