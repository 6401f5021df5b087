//! One log line per request, written when it ends, with how it really ended: a stream's
//! `200` goes out with its headers, but the stream may still be cut by the client or broken
//! off by the upstream, and a request may be dropped before it had headers at all.
//!
//! The line carries what the request's model calls cost, and what no engine would have paid
//! for them. A stream's usage comes with its last events, so its dollars are known only at its
//! end, where its one line is written: one line per request, summed over its rounds, is what
//! an operator greps and adds up (a second line for a stream's cost would be counted twice).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::http::Method;
use axum::response::Response;
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Its whole answer went out.
    Completed,
    /// The client went away while its answer was being sent.
    CutByClient,
    /// The upstream broke off (or failed) while the answer was being sent.
    CutByUpstream,
    /// The client went away before the answer's headers.
    CancelledBeforeHeaders,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::CutByClient => "cut_by_client",
            Outcome::CutByUpstream => "cut_by_upstream",
            Outcome::CancelledBeforeHeaders => "cancelled_before_headers",
        }
    }
}

tokio::task_local! {
    /// The request whose answer is being sent, so the turn that sees its upstream break off
    /// mid-answer can say so (set while its body is polled: before, a failure shows in the
    /// status).
    static CURRENT: Arc<AtomicBool>;
}

/// Marks the request being answered as broken off by the upstream; nothing outside one.
pub fn upstream_broke_off() {
    let _ = CURRENT.try_with(|cut| cut.store(true, Ordering::Relaxed));
}

/// What one request's model calls cost, in millionths of a dollar: added to by its turn as
/// each call is priced (while its answer streams, too), read when its line is written.
#[derive(Debug, Clone, Default)]
pub struct RequestCost(Arc<Summed>);

#[derive(Debug, Default)]
struct Summed {
    priced_calls: AtomicU64,
    microdollars: AtomicU64,
    no_engine_microdollars: AtomicU64,
}

impl RequestCost {
    /// One model call of the request priced: `microdollars`, against `no_engine_microdollars`.
    pub fn add(&self, microdollars: u64, no_engine_microdollars: u64) {
        let summed = &self.0;
        summed
            .microdollars
            .fetch_add(microdollars, Ordering::Relaxed);
        summed
            .no_engine_microdollars
            .fetch_add(no_engine_microdollars, Ordering::Relaxed);
        summed.priced_calls.fetch_add(1, Ordering::Relaxed);
    }

    /// The request's dollars and no engine's, once a call was priced.
    fn dollars(&self) -> Option<(f64, f64)> {
        let summed = &self.0;
        if summed.priced_calls.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let dollars = |micro: &AtomicU64| micro.load(Ordering::Relaxed) as f64 / 1e6;
        Some((
            dollars(&summed.microdollars),
            dollars(&summed.no_engine_microdollars),
        ))
    }
}

/// A request being answered: logs its line once, when it ends.
pub struct RequestLog {
    method: Method,
    path: String,
    started: Instant,
    status: Option<u16>,
    session: String,
    upstream_cut: Arc<AtomicBool>,
    cost: RequestCost,
    written: bool,
}

impl RequestLog {
    /// `cost` is what the request's turn adds its priced calls to.
    pub fn new(method: Method, path: String, started: Instant, cost: RequestCost) -> Self {
        RequestLog {
            method,
            path,
            started,
            status: None,
            session: "-".to_string(),
            upstream_cut: Arc::default(),
            cost,
            written: false,
        }
    }

    /// The response's headers are out: its body carries the log line to its end.
    pub fn answered(mut self, response: Response, session: &str) -> Response {
        self.status = Some(response.status().as_u16());
        self.session = session.to_string();
        let (parts, body) = response.into_parts();
        let body = Body::new(Logged {
            inner: body,
            log: Some(self),
        });
        Response::from_parts(parts, body)
    }

    fn write(&mut self, outcome: Outcome) {
        if std::mem::replace(&mut self.written, true) {
            return;
        }
        let outcome = match outcome {
            Outcome::Completed if self.upstream_cut.load(Ordering::Relaxed) => {
                Outcome::CutByUpstream
            }
            other => other,
        };
        let elapsed_ms = (self.started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
        // Without a priced call (a relay, a model without a price) the fields are left out.
        let (dollars, no_engine_dollars) = match self.cost.dollars() {
            Some((dollars, no_engine)) => (Some(dollars), Some(no_engine)),
            None => (None, None),
        };
        match self.status {
            Some(status) => tracing::info!(
                method = %self.method,
                path = %self.path,
                status,
                outcome = %outcome.as_str(),
                session = %self.session,
                elapsed_ms,
                dollars,
                no_engine_dollars,
                "request"
            ),
            None => tracing::info!(
                method = %self.method,
                path = %self.path,
                outcome = %outcome.as_str(),
                session = %self.session,
                elapsed_ms,
                dollars,
                no_engine_dollars,
                "request"
            ),
        }
    }
}

impl Drop for RequestLog {
    /// Dropped unwritten: the handler was dropped (the client left) before the headers.
    fn drop(&mut self) {
        let outcome = if self.status.is_some() {
            Outcome::CutByClient
        } else {
            Outcome::CancelledBeforeHeaders
        };
        self.write(outcome);
    }
}

/// A response body that writes its request's line when it ends or is dropped.
struct Logged {
    inner: Body,
    log: Option<RequestLog>,
}

impl HttpBody for Logged {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let polled = match &this.log {
            Some(log) => CURRENT.sync_scope(log.upstream_cut.clone(), || {
                Pin::new(&mut this.inner).poll_frame(cx)
            }),
            None => Pin::new(&mut this.inner).poll_frame(cx),
        };
        match &polled {
            Poll::Ready(None) => this.end(Outcome::Completed),
            Poll::Ready(Some(Err(_))) => this.end(Outcome::CutByUpstream),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Logged {
    fn end(&mut self, outcome: Outcome) {
        if let Some(mut log) = self.log.take() {
            log.write(outcome);
        }
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        // A body whose last frame went out may be dropped without being polled to its end.
        let outcome = if self.inner.is_end_stream() {
            Outcome::Completed
        } else {
            Outcome::CutByClient
        };
        self.end(outcome);
    }
}
