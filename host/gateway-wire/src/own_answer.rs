//! The gateway's own answer, when no model is called (the handoff answering an agent's
//! compaction): what every wire's rendering of it shares. Each wire renders it in its own
//! shape ([`super::Wire::text_answer`], [`super::Wire::handoff_answer`]); `usage` says what
//! the engine holds (input) and what the answer is (output).

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use serde_json::Value;

/// The answer's token counts: the view the engine holds, and the answer itself.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    pub input: u64,
    pub output: u64,
}

/// What an answer of the gateway's own carries beside its text.
pub struct OwnAnswer<'a> {
    /// The random part of its ids (each wire prefixes it as that API's ids are).
    pub id: String,
    /// When it was made, in Unix seconds.
    pub created: u64,
    pub model: &'a str,
    /// Streamed, as the request asked.
    pub stream: bool,
    /// It answers `POST /v1/responses/compact` (always whole).
    pub compact_route: bool,
    pub counts: Counts,
}

/// A whole JSON answer.
pub fn whole_answer(body: Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A streamed answer of these server-sent event frames.
pub fn streamed_answer(frames: Vec<String>) -> Response {
    let mut response = Response::new(Body::from(frames.concat()));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
