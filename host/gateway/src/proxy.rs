//! The provider's other `/v1/*` routes (embeddings, completions, files, a model's details, ...):
//! relayed untouched, bodies streamed both ways, with the credential handling of every relayed
//! request. The gateway manages no context there; it only keeps agents that call them working.
//! Also the answers for requests that cannot be relayed: a wrong method (JSON 405 with
//! `Allow`) and paths that show a base-URL mistake (a 404 that says so). Each in the error
//! shape of the wire whose route it came by.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::Response;
use futures_util::StreamExt;

use crate::relay_path::RelayPath;
use crate::upstream::relayed_headers;
use crate::Gateway;
use ctxhost_gateway_wire::error::{ErrorKind, ErrorShape, GatewayError};

/// `ANY /v1/{*rest}` not routed otherwise: relayed to `upstream/{rest}`; the gateway's own
/// errors in `shape` (the wire's whose route it is under).
pub async fn relay(
    State(gateway): State<Arc<Gateway>>,
    request: Request,
    shape: ErrorShape,
) -> Response {
    let (parts, body) = request.into_parts();
    let Some(rest) = parts.uri.path().strip_prefix("/v1/") else {
        return not_found(&parts.method, parts.uri.path(), BaseUrl::Fine, shape);
    };
    if rest.starts_with("v1/") {
        let doubled = BaseUrl::DoubledVersion(None);
        return not_found(&parts.method, parts.uri.path(), doubled, shape);
    }
    // Checked before anything is sent (the gateway's key would go with it).
    let rest = match RelayPath::parse(rest) {
        Ok(rest) => rest,
        Err(problem) => {
            tracing::warn!(
                "{} {}: refused, it would leave the upstream's base path: {problem}",
                parts.method,
                parts.uri.path()
            );
            return shape(GatewayError::new(
                ErrorKind::BadRequest,
                format!(
                    "{} {} is not relayed: {problem}, and could leave the upstream's base path",
                    parts.method,
                    parts.uri.path()
                ),
            ));
        }
    };
    let limit = gateway.settings.limits.max_request_bytes;
    let mut seen: u64 = 0;
    // Streamed, never held: a file upload costs the gateway no memory, and is still bounded.
    let stream = body.into_data_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        seen += chunk.len() as u64;
        if seen > limit {
            return Err(std::io::Error::other(format!(
                "the request body is over serve.limits.max_request_bytes ({limit} bytes)"
            )));
        }
        Ok::<_, std::io::Error>(chunk)
    });
    let sent = gateway
        .upstream
        .relay(
            parts.method.clone(),
            &rest,
            parts.uri.query(),
            &parts.headers,
            reqwest::Body::wrap_stream(stream),
        )
        .await;
    let upstream = match sent {
        Ok(upstream) => upstream,
        Err(error) => {
            tracing::warn!("{} /v1/{}: {error}", parts.method, rest.as_str());
            return shape(error);
        }
    };
    let status =
        StatusCode::from_u16(upstream.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let headers = relayed_headers(upstream.headers());
    let mut response = Response::new(Body::from_stream(upstream.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The answer to a route asked with a method it does not take: JSON in `shape`, with `Allow`.
pub fn method_not_allowed(
    method: &Method,
    path: &str,
    allow: &'static str,
    shape: ErrorShape,
) -> Response {
    let error = GatewayError::new(
        ErrorKind::MethodNotAllowed,
        format!("{path} takes {allow}, not {method}"),
    );
    let mut response = shape(error);
    response
        .headers_mut()
        .insert(axum::http::header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// How the clients of a wire are pointed at the gateway ([`ctxhost_gateway_wire::Wire::client_setup`]).
pub type ClientSetup = fn(&str) -> String;

/// What a path the gateway has no route for shows about the client's base URL, with how the
/// clients of the wire whose route it is are set up.
#[derive(Debug, Clone, Copy)]
pub enum BaseUrl {
    /// Nothing.
    Fine,
    /// An endpoint without `/v1`: the base URL lacks it.
    LacksVersion(ClientSetup),
    /// `/v1/v1/...`: the base URL has it and the client adds its own (on a route of no wire
    /// in particular: `None`).
    DoubledVersion(Option<ClientSetup>),
}

/// No such route; when the path shows a client's base URL set wrong, the message says how.
pub fn not_found(method: &Method, path: &str, base_url: BaseUrl, shape: ErrorShape) -> Response {
    const ORIGIN: &str = "http://HOST:PORT";
    let hint = match base_url {
        BaseUrl::Fine => String::new(),
        BaseUrl::LacksVersion(setup) => format!(
            "; the client's base URL lacks the /v1 segment: {}",
            setup(ORIGIN)
        ),
        BaseUrl::DoubledVersion(setup) => format!(
            "; the client's base URL ends in /v1 and the client adds another: {}",
            setup.map_or_else(
                || "drop /v1 from its base URL".to_string(),
                |setup| setup(ORIGIN)
            )
        ),
    };
    shape(GatewayError::new(
        ErrorKind::NotFound,
        format!("ctxhost serve has no route {method} {path}{hint}"),
    ))
}
