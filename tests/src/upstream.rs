//! The suite's one stand-in for a model provider: a real HTTP server on 127.0.0.1 (axum, on its
//! own runtime thread) that records every request and answers each with what the test decides
//! (a handler, or a script of answers in order): JSON, text, a Server-Sent-Events stream, a
//! redirect, or silence. It stops when dropped, so no test can leave it running.

use std::collections::VecDeque;
use std::net::TcpListener;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

/// How long the waits below wait for what a test expects: a guard, so a broken gateway fails
/// the test instead of hanging it, far above what the awaited event takes.
const GUARD: Duration = Duration::from_secs(30);

/// A request the upstream received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// The path and query string.
    pub path: String,
    /// Names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("the request body is JSON")
    }

    /// The chat `messages` it carried.
    pub fn messages(&self) -> Vec<Value> {
        self.json()["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Whether it asked for a stream.
    pub fn streams(&self) -> bool {
        self.json()["stream"].as_bool().unwrap_or(false)
    }
}

/// What the upstream answers one request with.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A status and a JSON body.
    Json(u16, Value),
    /// A status and a `text/plain` body.
    Text(u16, String),
    /// `200 text/event-stream`: each value as a `data:` event, then `data: [DONE]`.
    Stream(Vec<Value>),
    /// `200 text/event-stream`: named events (`event: NAME` then `data:`), as Anthropic streams;
    /// no `[DONE]`.
    Events(Vec<(String, Value)>),
    /// These events, then nothing: the stream stays open until the client goes away.
    StreamThenHang(Vec<Value>),
    /// `200 text/event-stream`: this event again and again until the client goes away (a
    /// client that leaves mid-stream is then noticed as it leaves: the next write fails).
    StreamEndless(Value),
    /// These named events, then nothing, as [`Answer::StreamThenHang`].
    EventsThenHang(Vec<(String, Value)>),
    /// No answer at all, until the client goes away.
    Hang,
    /// `307 Temporary Redirect` to this URL.
    Redirect(String),
    /// `200 application/json` whose body never ends: 64 KiB chunks until the client goes away.
    Endless,
    /// This answer after a pause, as a real model takes time to answer (benchmarks, and
    /// clients' timeouts).
    After(Duration, Box<Answer>),
    /// This answer with these response headers added.
    WithHeaders(Vec<(String, String)>, Box<Answer>),
}

impl Answer {
    /// This answer with the header `name: value` added.
    pub fn header(self, name: &str, value: &str) -> Answer {
        let header = (name.to_string(), value.to_string());
        match self {
            Answer::WithHeaders(mut headers, answer) => {
                headers.push(header);
                Answer::WithHeaders(headers, answer)
            }
            answer => Answer::WithHeaders(vec![header], Box::new(answer)),
        }
    }

    /// This answer after `pause`.
    pub fn after(self, pause: Duration) -> Answer {
        Answer::After(pause, Box::new(self))
    }
}

type Handler = dyn Fn(&Recorded) -> Answer + Send + Sync;

struct Shared {
    handler: Box<Handler>,
    received: Mutex<Vec<Recorded>>,
    /// Told each time a request is recorded.
    arrived: Condvar,
    /// Told each time a client went away from a stream or a hung request.
    abandoned: Mutex<mpsc::Sender<()>>,
}

/// The running upstream; stops when dropped.
pub struct FakeUpstream {
    port: u16,
    shared: Arc<Shared>,
    abandoned: mpsc::Receiver<()>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FakeUpstream {
    pub fn start(handler: impl Fn(&Recorded) -> Answer + Send + Sync + 'static) -> Self {
        let (abandoned_tx, abandoned) = mpsc::channel();
        let shared = Arc::new(Shared {
            handler: Box::new(handler),
            received: Mutex::default(),
            arrived: Condvar::new(),
            abandoned: Mutex::new(abandoned_tx),
        });
        let (port_tx, port_rx) = mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = shared.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime for the fake upstream");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind 127.0.0.1");
                port_tx.send(listener.local_addr().unwrap().port()).unwrap();
                let app = axum::Router::new().fallback(answer).with_state(state);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        let port = port_rx.recv().expect("the fake upstream started");
        FakeUpstream {
            port,
            shared,
            abandoned,
            stop: Some(stop),
        }
    }

    /// An upstream that answers the requests it receives with `script`, one answer each, in
    /// order; a request beyond the script gets a 500 saying so (and is recorded, so a test that
    /// counts requests sees it).
    pub fn scripted(script: Vec<Answer>) -> Self {
        let script = Mutex::new(VecDeque::from(script));
        FakeUpstream::start(move |_| {
            script.lock().unwrap().pop_front().unwrap_or_else(|| {
                Answer::Json(
                    500,
                    json!({"error": {"message": "the fake upstream's script has no answer left"}}),
                )
            })
        })
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn received(&self) -> Vec<Recorded> {
        self.shared.received.lock().unwrap().clone()
    }

    /// The chat-completions requests received, in order.
    pub fn chat_requests(&self) -> Vec<Recorded> {
        self.received()
            .into_iter()
            .filter(|r| r.path.starts_with("/v1/chat/completions"))
            .collect()
    }

    /// The Anthropic Messages requests received (not `count_tokens`), in order.
    pub fn messages_requests(&self) -> Vec<Recorded> {
        self.received()
            .into_iter()
            .filter(|r| r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens"))
            .collect()
    }

    /// The Responses API requests received, in order.
    pub fn responses_requests(&self) -> Vec<Recorded> {
        self.received()
            .into_iter()
            .filter(|r| r.path.starts_with("/v1/responses"))
            .collect()
    }

    /// Waits until a client has gone away from a stream or a hung request (bounded by
    /// [`GUARD`]).
    pub fn wait_abandoned(&self) -> bool {
        self.abandoned.recv_timeout(GUARD).is_ok()
    }

    /// Waits until `count` requests have been received, woken by each one as it arrives
    /// (bounded by [`GUARD`]); says whether they all came.
    pub fn wait_received(&self, count: usize) -> bool {
        let received = self.shared.received.lock().unwrap();
        let (received, _) = self
            .shared
            .arrived
            .wait_timeout_while(received, GUARD, |received| received.len() < count)
            .unwrap();
        received.len() >= count
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Tells the test when the body it guards is dropped before it ended.
struct Guard {
    shared: Arc<Shared>,
    finished: bool,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.shared.abandoned.lock().unwrap().send(());
        }
    }
}

async fn answer(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let received = Recorded {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).to_string(),
                )
            })
            .collect(),
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let mut answer = (shared.handler)(&received);
    shared.received.lock().unwrap().push(received);
    shared.arrived.notify_all();
    let mut headers = Vec::new();
    loop {
        match answer {
            Answer::After(pause, then) => {
                // A thread's sleep, not the runtime's timer: the timer rounds every pause up to
                // its next millisecond tick, which in a closed loop locks onto the caller's
                // phase and skews a benchmark's comparisons by up to a millisecond.
                let _ = tokio::task::spawn_blocking(move || std::thread::sleep(pause)).await;
                answer = *then;
            }
            Answer::WithHeaders(more, then) => {
                headers.extend(more);
                answer = *then;
            }
            Answer::Hang => {
                let _guard = Guard {
                    shared,
                    finished: false,
                };
                return std::future::pending().await;
            }
            _ => break,
        }
    }
    let mut response = respond(shared, answer);
    for (name, value) in headers {
        response.headers_mut().append(
            axum::http::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
            axum::http::HeaderValue::from_str(&value).expect("a header value"),
        );
    }
    response
}

/// The response `answer` stands for (pauses and added headers already taken off).
fn respond(shared: Arc<Shared>, answer: Answer) -> Response {
    match answer {
        Answer::Json(status, value) => Response::builder()
            .status(StatusCode::from_u16(status).unwrap())
            .header("content-type", "application/json")
            .header("x-request-id", "req-fake")
            .body(Body::from(value.to_string()))
            .unwrap(),
        Answer::Text(status, text) => Response::builder()
            .status(StatusCode::from_u16(status).unwrap())
            .header("content-type", "text/plain")
            .body(Body::from(text))
            .unwrap(),
        Answer::Redirect(location) => Response::builder()
            .status(StatusCode::TEMPORARY_REDIRECT)
            .header("location", location)
            .body(Body::empty())
            .unwrap(),
        Answer::Endless => {
            let stream = async_stream::stream! {
                let _guard = Guard { shared, finished: false };
                let chunk = Bytes::from(vec![b' '; 64 * 1024]);
                yield Ok::<_, std::convert::Infallible>(Bytes::from_static(b"{\"choices\": ["));
                loop {
                    yield Ok(chunk.clone());
                }
            };
            Response::builder()
                .header("content-type", "application/json")
                .body(Body::from_stream(stream))
                .unwrap()
        }
        Answer::Stream(events) => sse(shared, events, false),
        Answer::Events(events) => named_sse(shared, events, false),
        Answer::EventsThenHang(events) => named_sse(shared, events, true),
        Answer::After(..) | Answer::WithHeaders(..) => unreachable!("taken off by the caller"),
        Answer::StreamThenHang(events) => sse(shared, events, true),
        Answer::StreamEndless(event) => {
            let stream = async_stream::stream! {
                let _guard = Guard { shared, finished: false };
                let event = Bytes::from(format!("data: {event}\n\n"));
                loop {
                    yield Ok::<_, std::convert::Infallible>(event.clone());
                }
            };
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }
        Answer::Hang => unreachable!("the caller never answers it"),
    }
}

fn sse(shared: Arc<Shared>, events: Vec<Value>, hang: bool) -> Response {
    let stream = async_stream::stream! {
        let mut guard = Guard { shared, finished: false };
        for event in events {
            yield Ok::<_, std::convert::Infallible>(Bytes::from(format!("data: {event}\n\n")));
        }
        if hang {
            std::future::pending::<()>().await;
        }
        yield Ok(Bytes::from_static(b"data: [DONE]\n\n"));
        guard.finished = true;
    };
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

fn named_sse(shared: Arc<Shared>, events: Vec<(String, Value)>, hang: bool) -> Response {
    let stream = async_stream::stream! {
        let mut guard = Guard { shared, finished: false };
        for (name, data) in events {
            yield Ok::<_, std::convert::Infallible>(Bytes::from(format!("event: {name}\ndata: {data}\n\n")));
        }
        if hang {
            std::future::pending::<()>().await;
        }
        guard.finished = true;
    };
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("request-id", "req-fake")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// An upstream that answers every chat call with the recorded session's next assistant
/// message, in order (a session replayed turn by turn).
pub fn recorded_upstream(messages: &[Value]) -> FakeUpstream {
    let replies: std::collections::VecDeque<Value> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .cloned()
        .collect();
    let replies = Arc::new(Mutex::new(replies));
    FakeUpstream::start(move |_| {
        let message = replies
            .lock()
            .unwrap()
            .pop_front()
            .expect("a recorded reply");
        Answer::Json(200, completion(message, None))
    })
}

/// A non-streamed chat completion with `message` as its only choice.
pub fn completion(message: Value, usage: Option<Value>) -> Value {
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    let mut answer = json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    });
    if let Some(usage) = usage {
        answer["usage"] = usage;
    }
    answer
}

/// The same message as a stream of chunks, the way OpenAI streams it: the role, the content in
/// pieces, each tool call's id and name then its arguments in pieces, the finish reason, and
/// (when asked for) a usage chunk.
pub fn chunks(message: &Value, usage: Option<Value>) -> Vec<Value> {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if let Some(text) = message["content"].as_str() {
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(16) {
            out.push(chunk(
                json!({"content": piece.iter().collect::<String>()}),
                Value::Null,
            ));
        }
    }
    let calls = message["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (index, call) in calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{
                "index": index, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""}
            }]}),
            Value::Null,
        ));
        let arguments: Vec<char> = call["function"]["arguments"]
            .as_str()
            .unwrap_or_default()
            .chars()
            .collect();
        for piece in arguments.chunks(8) {
            out.push(chunk(
                json!({"tool_calls": [{
                    "index": index,
                    "function": {"arguments": piece.iter().collect::<String>()}
                }]}),
                Value::Null,
            ));
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out.push(chunk(json!({}), json!(finish)));
    if let Some(usage) = usage {
        out.push(json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "fake-model",
            "choices": [],
            "usage": usage,
        }));
    }
    out
}

/// Answers `message` the way the request asks: streamed (with usage when asked) or not.
pub fn reply(request: &Recorded, message: Value, usage: Option<Value>) -> Answer {
    let body = request.json();
    if body["stream"].as_bool().unwrap_or(false) {
        let wants_usage = body["stream_options"]["include_usage"]
            .as_bool()
            .unwrap_or(false);
        Answer::Stream(chunks(&message, usage.filter(|_| wants_usage)))
    } else {
        Answer::Json(200, completion(message, usage))
    }
}

/// A whole chat completion answering `content`, with usage.
pub fn chat_reply(content: &str) -> Answer {
    Answer::Json(
        200,
        completion(
            json!({"role": "assistant", "content": content}),
            Some(json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})),
        ),
    )
}

/// A port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    listener.local_addr().expect("a bound address").port()
}

/// An assistant message calling one tool.
pub fn tool_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}})
}
