//! Errors the gateway itself answers with, in the shape OpenAI clients parse:
//! `{"error": {"message", "type", "code"}}` (a wire whose clients parse another says so in its
//! `Wire::error_response`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// What went wrong, as a closed set: each has its status, type and code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The body is not what the endpoint takes.
    BadRequest,
    /// A gateway token is missing or wrong.
    Unauthorized,
    /// No such route.
    NotFound,
    /// The route exists, not for this method.
    MethodNotAllowed,
    /// The conversation is over the model's window even after the engine compressed it.
    OverWindow,
    /// The body is over `serve.limits.max_request_bytes`.
    TooLarge,
    /// The upstream could not be reached, broke off, or answered with something unusable.
    BadGateway,
    /// The upstream went silent past `serve.limits.idle_timeout_seconds`.
    UpstreamTimeout,
    /// The gateway's own state failed (its store).
    Internal,
    /// The gateway is shutting down.
    Unavailable,
    /// The session's database is unreachable (the request may be retried).
    StoreUnavailable,
    /// Another gateway on the same database kept the session past
    /// `serve.database.lease_wait_seconds`.
    SessionBusy,
}

impl ErrorKind {
    fn status(&self) -> StatusCode {
        match self {
            ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
            ErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorKind::OverWindow => StatusCode::BAD_REQUEST,
            ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorKind::BadGateway => StatusCode::BAD_GATEWAY,
            ErrorKind::UpstreamTimeout => StatusCode::GATEWAY_TIMEOUT,
            ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::Unavailable | ErrorKind::StoreUnavailable | ErrorKind::SessionBusy => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    pub fn type_and_code(&self) -> (&'static str, &'static str) {
        match self {
            ErrorKind::BadRequest => ("invalid_request_error", "invalid_request"),
            ErrorKind::Unauthorized => ("invalid_request_error", "invalid_gateway_token"),
            ErrorKind::NotFound => ("invalid_request_error", "unknown_url"),
            ErrorKind::MethodNotAllowed => ("invalid_request_error", "method_not_allowed"),
            ErrorKind::OverWindow => ("invalid_request_error", "context_length_exceeded"),
            ErrorKind::TooLarge => ("invalid_request_error", "request_too_large"),
            ErrorKind::BadGateway => ("upstream_error", "upstream_unreachable"),
            ErrorKind::UpstreamTimeout => ("upstream_error", "upstream_timeout"),
            ErrorKind::Internal => ("server_error", "gateway_state_error"),
            ErrorKind::Unavailable => ("server_error", "shutting_down"),
            ErrorKind::StoreUnavailable => ("server_error", "session_store_unavailable"),
            ErrorKind::SessionBusy => ("server_error", "session_busy"),
        }
    }
}

/// An error the gateway answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct GatewayError {
    pub kind: ErrorKind,
    pub message: String,
}

impl GatewayError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        GatewayError {
            kind,
            message: message.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        self.kind.status()
    }

    /// The JSON body, also sent as an SSE event when a stream fails after it started.
    pub fn body(&self) -> serde_json::Value {
        let (kind, code) = self.kind.type_and_code();
        json!({"error": {"message": self.message, "type": kind, "code": code}})
    }
}

/// How a route's clients read the gateway's own errors: its wire's `error_response`.
pub type ErrorShape = fn(GatewayError) -> Response;

/// The shape of the gateway's own routes and of those no wire has: OpenAI's.
pub const OWN_SHAPE: ErrorShape = <GatewayError as IntoResponse>::into_response;

impl IntoResponse for GatewayError {
    fn into_response(self) -> Response {
        (self.status(), axum::Json(self.body())).into_response()
    }
}
