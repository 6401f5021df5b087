//! Compressions prepared in the background: no turn waits for the summarizer unless what it
//! would send does not fit the window, neither one that finds a compression being prepared
//! nor the one that crosses the threshold; one that would not fit waits for it.

use std::collections::VecDeque;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Duration;

use ctxhost_tests::upstream::{completion, recorded_upstream, Answer, FakeUpstream};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

/// A summarizer on 127.0.0.1 that takes `pause` to answer (or never answers).
fn summarizer(pause: Option<Duration>) -> FakeUpstream {
    FakeUpstream::start(move |_| {
        let summary = completion(
            json!({"role": "assistant", "content": "## Goal\nFix the parser.\n## Progress\nRead the files."}),
            None,
        );
        match pause {
            Some(pause) => Answer::After(pause, Box::new(Answer::Json(200, summary))),
            None => Answer::Hang,
        }
    })
}

fn config(summarizer: &FakeUpstream, wait_seconds: f64) -> String {
    format!(
        "model:\n  context_length: 16000\nauxiliary:\n  compression:\n    provider: custom\n    \
         model: slow-summarizer\n    base_url: {}\n    timeout: 60\n    max_retries: 0\n\
         compression:\n  protect_last_n: 4\n\
         serve:\n  compaction:\n    margin: 0.2\n    wait_seconds: {wait_seconds}\n",
        summarizer.base_url()
    )
}

fn send(base: &str, session: &str, history: &[Value]) -> reqwest::blocking::Response {
    let response = reqwest::blocking::Client::new()
        .post(format!("{base}/chat/completions"))
        .bearer_auth("sk-background")
        .header("x-ctxhost-session", session)
        .json(&json!({"model": "gpt-4o", "messages": history}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    response
}

#[test]
fn no_turn_waits_for_the_summarizer_when_compressions_are_prepared_in_the_background() {
    // Up to the turn whose tool output alone takes the context past the threshold (one step
    // from well below it: that one compresses on its request, as nothing could foresee it).
    let messages = long_session()[..110].to_vec();
    let summarizer = summarizer(Some(Duration::from_secs(1)));
    let model = recorded_upstream(&messages);
    let sandbox = Sandbox::new();
    sandbox.write_config(&config(&summarizer, 2.0));
    let gateway = sandbox.serve(&model.base_url(), &[]);
    let mut ready = 0;
    for index in (0..messages.len()).filter(|i| messages[*i]["role"] == "assistant") {
        send(&gateway.base_url(), "agent", &messages[..index]);
        // The agent thinks (or runs its tools) for longer than the summarizer takes: wait
        // until whatever is being prepared is ready before the next turn.
        let session = gateway.session("agent", Some("sk-background"));
        if session.get("pending").is_some_and(|p| !p.is_null()) {
            ready += 1;
            gateway.wait_for_logs("a compression prepared in the background is ready", ready);
        }
    }
    let session = gateway.session("agent", Some("sk-background"));
    let compressions = session["compressions"].as_array().unwrap();
    assert!(!compressions.is_empty(), "{session}");
    // Every compression was prepared in the background: no request ran the summarizer.
    for compression in compressions {
        assert_eq!(
            compression["trigger"],
            "background",
            "{compression}\n{:#?}",
            gateway.log()
        );
        assert!(compression.get("error").is_none(), "{compression}");
    }
    assert!(
        !summarizer.chat_requests().is_empty(),
        "the summarizer was used"
    );
    assert_eq!(
        session["stats"]["background_compressions"]
            .as_u64()
            .unwrap(),
        compressions.len() as u64
    );
    assert!(session["stats"]["peak_prompt_tokens"].as_u64().unwrap() <= 16000);
}

#[test]
fn a_turn_that_finds_a_compression_still_being_prepared_goes_on_with_the_last_view() {
    let messages = long_session()[..140].to_vec();
    // This summarizer never answers within the test.
    let summarizer = summarizer(None);
    let model = recorded_upstream(&messages);
    let sandbox = Sandbox::new();
    sandbox.write_config(&config(&summarizer, 0.2));
    let gateway = sandbox.serve(&model.base_url(), &[]);
    let turns: Vec<usize> = (0..messages.len())
        .filter(|i| messages[*i]["role"] == "assistant")
        .collect();
    let started = turns
        .iter()
        .position(|index| {
            send(&gateway.base_url(), "busy", &messages[..*index]);
            let session = gateway.session("busy", Some("sk-background"));
            session.get("pending").is_some_and(|p| !p.is_null())
        })
        .expect("the session nears its threshold and starts preparing a compression");
    let sent_before = model.chat_requests().len();
    // The next turn finds it still being prepared and its last view fits: it goes upstream
    // with the last view and what is new, uncompressed.
    let response = send(&gateway.base_url(), "busy", &messages[..turns[started + 1]]);
    assert!(response.headers().get("x-ctxhost-compressed").is_none());
    assert_eq!(model.chat_requests().len(), sent_before + 1);
    let upstream = model.chat_requests().last().unwrap().json();
    assert_eq!(
        upstream["messages"].as_array().unwrap().len(),
        turns[started + 1],
        "nothing was compressed yet: the whole history went up"
    );
    let session = gateway.session("busy", Some("sk-background"));
    assert!(
        session["pending"].is_object(),
        "still being prepared: {session}"
    );
    assert_eq!(session["compressions"].as_array().unwrap().len(), 0);
}

/// What happened, in the order it happened, across the model upstream and the summarizer.
type Events = Arc<Mutex<Vec<String>>>;

/// A summarizer that answers only once the test opens its gate: it tells the test each time it
/// is called, and notes in `events` when it answers.
struct GatedSummarizer {
    upstream: FakeUpstream,
    gate: Arc<(Mutex<bool>, Condvar)>,
    called: mpsc::Receiver<()>,
}

impl GatedSummarizer {
    fn start(events: Events) -> GatedSummarizer {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let (called_tx, called) = mpsc::channel();
        let called_tx = Mutex::new(called_tx);
        let held = gate.clone();
        let upstream = FakeUpstream::start(move |_| {
            let _ = called_tx.lock().unwrap().send(());
            let (open, changed) = &*held;
            // Blocks a thread of the summarizer's own runtime, nothing of the gateway's; bounded
            // so a broken gateway fails the test instead of hanging it.
            let (open, _) = changed
                .wait_timeout_while(open.lock().unwrap(), Duration::from_secs(120), |open| {
                    !*open
                })
                .unwrap();
            drop(open);
            events
                .lock()
                .unwrap()
                .push("summarizer answered".to_string());
            let summary = completion(
                json!({"role": "assistant", "content": "## Goal\nFix the parser.\n## Progress\nRead the files."}),
                None,
            );
            Answer::Json(200, summary)
        });
        GatedSummarizer {
            upstream,
            gate,
            called,
        }
    }

    /// Waits until the gateway has called the summarizer (bounded).
    fn wait_called(&self) {
        self.called
            .recv_timeout(Duration::from_secs(60))
            .expect("the gateway calls the summarizer");
    }

    fn open(&self) {
        let (open, changed) = &*self.gate;
        *open.lock().unwrap() = true;
        changed.notify_all();
    }
}

/// A model upstream answering each call with the recorded session's next assistant message,
/// noting in `events` how many messages each call carried.
fn noting_upstream(messages: &[Value], events: Events) -> FakeUpstream {
    let replies: VecDeque<Value> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .cloned()
        .collect();
    let replies = Mutex::new(replies);
    FakeUpstream::start(move |request| {
        let sent = request.json()["messages"].as_array().map_or(0, Vec::len);
        events.lock().unwrap().push(format!("upstream {sent}"));
        let message = replies
            .lock()
            .unwrap()
            .pop_front()
            .expect("a recorded reply");
        Answer::Json(200, completion(message, None))
    })
}

/// Compressions start only as a request crosses the threshold (no margin: none is prepared
/// near it), on a 16K window.
fn crossing_config(summarizer: &FakeUpstream, wait_seconds: f64) -> String {
    format!(
        "model:\n  context_length: 16000\nauxiliary:\n  compression:\n    provider: custom\n    \
         model: gated-summarizer\n    base_url: {}\n    timeout: 200\n    max_retries: 0\n\
         compression:\n  protect_last_n: 4\n\
         serve:\n  compaction:\n    margin: 0\n    wait_seconds: {wait_seconds}\n",
        summarizer.base_url()
    )
}

#[test]
fn the_request_that_crosses_the_threshold_goes_upstream_while_its_compression_is_prepared() {
    let messages = long_session()[..140].to_vec();
    let events = Events::default();
    let summarizer = GatedSummarizer::start(events.clone());
    let model = noting_upstream(&messages, events.clone());
    let sandbox = Sandbox::new();
    sandbox.write_config(&crossing_config(&summarizer.upstream, 30.0));
    let gateway = sandbox.serve(&model.base_url(), &[]);
    let turns: Vec<usize> = (0..messages.len())
        .filter(|i| messages[*i]["role"] == "assistant")
        .collect();
    // Turn by turn until one crosses the threshold: it is answered while the summarizer is
    // still held at its gate, so it did not wait for the compression it started.
    let crossing = turns
        .iter()
        .position(|index| {
            let response = send(&gateway.base_url(), "crossing", &messages[..*index]);
            assert!(response.headers().get("x-ctxhost-compressed").is_none());
            let session = gateway.session("crossing", Some("sk-background"));
            session.get("pending").is_some_and(|p| !p.is_null())
        })
        .expect("the session crosses its threshold");
    gateway.wait_for_log("past the threshold: preparing a compression in the background");
    summarizer.wait_called();
    assert_eq!(
        *events.lock().unwrap().last().unwrap(),
        format!("upstream {}", turns[crossing]),
        "the crossing request went upstream whole, before the summarizer answered: {:?}",
        events.lock().unwrap()
    );
    assert!(!events
        .lock()
        .unwrap()
        .contains(&"summarizer answered".to_string()));

    // The agent takes its time; the compression is ready before the next turn, which takes
    // it in.
    summarizer.open();
    gateway.wait_for_log("a compression prepared in the background is ready");
    let next = turns[crossing + 1];
    let response = send(&gateway.base_url(), "crossing", &messages[..next]);
    assert_eq!(response.headers()["x-ctxhost-compressed"], "true");
    let sent = model.chat_requests().last().unwrap().json()["messages"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        sent < next,
        "the compressed view went up: {sent} of {next} messages"
    );
    let session = gateway.session("crossing", Some("sk-background"));
    let compressions = session["compressions"].as_array().unwrap();
    assert_eq!(compressions.len(), 1, "{session}");
    assert_eq!(compressions[0]["trigger"], "background");
    assert_eq!(compressions[0]["request"], crossing as u64 + 2);
    assert_eq!(session["stats"]["turns_waited"], 0, "{session}");
}

#[test]
fn a_request_that_would_not_fit_waits_for_its_compression() {
    let messages = long_session()[..140].to_vec();
    let events = Events::default();
    let summarizer = GatedSummarizer::start(events.clone());
    let model = noting_upstream(&messages, events.clone());
    let sandbox = Sandbox::new();
    // A bound far shorter than the summarizer is held: the request waits past it.
    sandbox.write_config(&crossing_config(&summarizer.upstream, 0.1));
    let gateway = sandbox.serve(&model.base_url(), &[]);
    let last = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .unwrap();
    // The whole history in one request: far over the window.
    let base = gateway.base_url();
    std::thread::scope(|scope| {
        let request = scope.spawn(|| send(&base, "over", &messages[..last]));
        summarizer.wait_called();
        gateway.wait_for_log(
            "does not fit the window without the compression being prepared: waiting on",
        );
        summarizer.open();
        let response = request.join().unwrap();
        assert_eq!(response.headers()["x-ctxhost-compressed"], "true");
    });
    let events = events.lock().unwrap().clone();
    let answered = events
        .iter()
        .position(|e| e == "summarizer answered")
        .expect("the summarizer answered");
    let upstream = events
        .iter()
        .position(|e| e.starts_with("upstream "))
        .expect("the request went upstream");
    assert!(
        answered < upstream,
        "the request went upstream only once compressed: {events:?}"
    );
    let sent = model.chat_requests()[0].json()["messages"]
        .as_array()
        .unwrap()
        .len();
    assert!(sent < last, "{sent} of {last} messages went up");
    let session = gateway.session("over", Some("sk-background"));
    assert_eq!(session["stats"]["turns_waited"], 1, "{session}");
    assert_eq!(session["compressions"][0]["trigger"], "background");
}

#[test]
fn without_background_compressions_the_crossing_request_compresses_on_its_way() {
    let messages = long_session()[..140].to_vec();
    let summarizer = summarizer(Some(Duration::from_millis(10)));
    let model = recorded_upstream(&messages);
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "{}    background: false\n",
        crossing_config(&summarizer, 30.0)
    ));
    let gateway = sandbox.serve(&model.base_url(), &[]);
    let compressed_on = (0..messages.len())
        .filter(|i| messages[*i]["role"] == "assistant")
        .position(|index| {
            let response = send(&gateway.base_url(), "sync", &messages[..index]);
            response.headers().contains_key("x-ctxhost-compressed")
        })
        .expect("the session crosses its threshold");
    let session = gateway.session("sync", Some("sk-background"));
    assert!(session["pending"].is_null(), "{session}");
    let compressions = session["compressions"].as_array().unwrap();
    assert_eq!(compressions.len(), 1, "{session}");
    assert_ne!(compressions[0]["trigger"], "background");
    assert_eq!(compressions[0]["request"], compressed_on as u64 + 1);
    assert_eq!(session["stats"]["turns_waited"], 1, "{session}");
}
