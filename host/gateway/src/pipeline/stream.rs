//! A streamed answer: the first model call made before answering (so its failure reaches the
//! client with the provider's own status and body), then every round's upstream events
//! rewritten into the client's frames by the wire's [`ClientStream`] and the round handed to
//! the [`Rounds`], and the closing frames (the usage of every round) at the very end.

use std::convert::Infallible;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use ctxhost_sdk::Message;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;

use super::rounds::Rounds;
use super::ModelCall;
use crate::turn::{with_session_headers, Called, Turn};
use crate::upstream::read_body;
use ctxhost_gateway_wire::error::{ErrorKind, GatewayError};
use ctxhost_gateway_wire::{ClientStream, StreamEvent, Wire};

#[cfg(test)]
mod golden;

pub(super) async fn stream<W: Wire>(
    mut turn: Turn,
    call: ModelCall<W>,
    messages: Vec<Message>,
) -> Result<Response, GatewayError> {
    let mut rounds = Rounds::new(&turn, call, messages);
    let sent = rounds.send(&mut turn).await;
    let (first, relayed) = match turn.take_call(sent).await? {
        Called::Success(response, relayed) => (response, relayed),
        Called::Relayed(response) => return Ok(response),
    };
    let session_headers = turn.headers.clone();
    let frames = async_stream::stream! {
        // The client may leave at any point: whenever the stream ends or is dropped, the
        // session as it stands is saved and released.
        let mut turn = ReleaseOnDrop(Some(turn));
        let turn = turn.turn();
        let mut out = W::stream(rounds.request());
        let mut budget = StreamBudget::new(turn);
        let mut upstream = first;
        let mut first_round = true;
        'rounds: loop {
            let mut events = upstream.bytes_stream().eventsource();
            let mut done = false;
            while let Some(event) = events.next().await {
                let event = match budget.take(turn, event) {
                    Ok(event) => event,
                    Err(error) => {
                        yield Ok::<_, Infallible>(out.error(&error));
                        break 'rounds;
                    }
                };
                match out.event(&event, rounds.engine_names(), first_round) {
                    StreamEvent::Frame(frame) => yield Ok(frame),
                    StreamEvent::Held => {}
                    StreamEvent::Failed(frame) => {
                        turn.upstream_error("stream");
                        yield Ok(frame);
                        break 'rounds;
                    }
                    StreamEvent::Done => {
                        done = true;
                        break;
                    }
                }
            }
            if !done {
                let error = GatewayError::new(
                    ErrorKind::BadGateway,
                    format!("the upstream's stream ended before {}", W::Stream::END),
                );
                turn.upstream_error("stream");
                yield Ok(out.error(&error));
                break;
            }
            let round = out.end_round(rounds.engine_names());
            let end = match rounds.after(turn, round.reply, &round.usage, round.complete).await {
                Some(end) => end,
                None => {
                    match rounds.send(turn).await {
                        Ok(next) if next.status().is_success() => {
                            upstream = next;
                            first_round = false;
                            continue;
                        }
                        Ok(next) => {
                            let status = next.status();
                            turn.upstream_error(&status.as_u16().to_string());
                            let body = read_body(next, budget.limit).await.unwrap_or_default();
                            yield Ok(out.refused(status, &body));
                        }
                        Err(error) => yield Ok(out.error(&error)),
                    }
                    break;
                }
            };
            // What the client saw, and what the upstream history holds in its place.
            rounds.splice(turn, round.hid, || out.visible());
            for frame in out.finish(end.engine_only(), rounds.usage()) {
                yield Ok(frame);
            }
            break;
        }
        turn.finished().await;
    };
    Ok(event_stream(frames, &relayed, &session_headers))
}

/// What the upstream may stream for one request, over all of its rounds:
/// `serve.limits.max_response_bytes` of event data.
struct StreamBudget {
    received: u64,
    limit: u64,
}

impl StreamBudget {
    fn new(turn: &Turn) -> Self {
        StreamBudget {
            received: 0,
            limit: turn.gateway.settings.limits.max_response_bytes,
        }
    }

    /// Takes in one upstream event: a stream that broke off or went over the budget is the
    /// gateway's error, counted against the session.
    fn take<E: std::fmt::Display>(
        &mut self,
        turn: &mut Turn,
        event: Result<eventsource_stream::Event, E>,
    ) -> Result<eventsource_stream::Event, GatewayError> {
        let event = event.map_err(|error| {
            turn.upstream_error("stream");
            GatewayError::new(
                ErrorKind::BadGateway,
                format!("the upstream's stream broke off: {error}"),
            )
        })?;
        self.received += event.data.len() as u64;
        if self.received > self.limit {
            turn.upstream_error("too_large");
            return Err(GatewayError::new(
                ErrorKind::BadGateway,
                format!(
                    "the upstream's response is over serve.limits.max_response_bytes ({} bytes)",
                    self.limit
                ),
            ));
        }
        Ok(event)
    }
}

/// A streamed answer's hold on its turn: the session is saved and released when the stream
/// is done with it, finished or dropped by a client that left.
struct ReleaseOnDrop(Option<Turn>);

impl ReleaseOnDrop {
    fn turn(&mut self) -> &mut Turn {
        self.0.as_mut().expect("held until dropped")
    }
}

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        if let Some(turn) = self.0.take() {
            turn.release();
        }
    }
}

/// A streamed answer: `frames` as Server-Sent Events, with the upstream's headers and the
/// session's.
fn event_stream<S>(frames: S, relayed: &HeaderMap, session_headers: &HeaderMap) -> Response
where
    S: futures_util::Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
{
    let mut response = Response::new(Body::from_stream(frames));
    let headers = response.headers_mut();
    for (name, value) in relayed {
        headers.insert(name, value.clone());
    }
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    with_session_headers(response, session_headers)
}
