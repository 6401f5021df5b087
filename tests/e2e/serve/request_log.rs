//! One log line per request, when it ends, with how it ended.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ctxhost_tests::upstream::{chunks, reply, Answer, FakeUpstream};
use ctxhost_tests::Sandbox;
use serde_json::json;

#[test]
fn every_request_is_logged_once_with_how_it_ended() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let answer = json!({"role": "assistant", "content": "the beginning of a long answer"});
    let upstream = FakeUpstream::start(move |request| {
        match seen.fetch_add(1, Ordering::SeqCst) {
            // The first and the one after the client that left.
            0 | 2 => reply(request, answer.clone(), None),
            // Cut by the client after the first bytes. The stream goes on, so the gateway's
            // next write finds the client gone (a silent upstream would leave that to when
            // the server notices the closed socket, if it does).
            1 => Answer::StreamEndless(chunks(&answer, None)[1].clone()),
            // The upstream's stream ends before `[DONE]`.
            3 => Answer::Events(
                chunks(&answer, None)
                    .into_iter()
                    .take(2)
                    .map(|chunk| ("message".to_string(), chunk))
                    .collect(),
            ),
            _ => Answer::Hang,
        }
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::new();
    let url = format!("{}/chat/completions", gateway.base_url());
    let body = |stream: bool| {
        json!({"model": "gpt-4o", "stream": stream,
               "messages": [{"role": "user", "content": "tell me a long story"}]})
    };
    let send = |stream: bool, session: &str| {
        client
            .post(&url)
            .header("x-ctxhost-session", session)
            .json(&body(stream))
            .send()
            .unwrap()
    };

    let whole = send(false, "whole");
    assert_eq!(whole.status(), 200);
    whole.text().unwrap();
    let line = gateway.wait_for_log("session=whole ");
    assert!(line.contains("status=200 outcome=completed"), "{line}");

    let mut cut = send(true, "left");
    let mut buffer = [0u8; 64];
    assert!(cut.read(&mut buffer).unwrap() > 0);
    drop(cut);
    let line = gateway.wait_for_log("session=left ");
    assert!(line.contains("status=200 outcome=cut_by_client"), "{line}");
    // And the gateway lives on: its write to the client that left raised SIGPIPE, which
    // ended it while `ctxhost` restored the signal's default disposition for every command.
    assert_eq!(send(false, "after").status(), 200);
    gateway.wait_for_log("session=after ");

    let broken = send(true, "broken");
    assert_eq!(broken.status(), 200);
    broken.text().unwrap();
    let line = gateway.wait_for_log("session=broken ");
    assert!(
        line.contains("status=200 outcome=cut_by_upstream"),
        "{line}"
    );

    // A client that leaves while the upstream has not answered yet.
    let address = gateway.url.trim_start_matches("http://").to_string();
    let mut socket = std::net::TcpStream::connect(&address).unwrap();
    let text = body(false).to_string();
    write!(
        socket,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         x-ctxhost-session: gone\r\nContent-Length: {}\r\n\r\n{text}",
        text.len()
    )
    .unwrap();
    // It leaves once the request has reached the upstream.
    assert!(upstream.wait_received(5), "never reached the upstream");
    drop(socket);
    assert!(upstream.wait_abandoned());
    let line = gateway.wait_for_log("outcome=cancelled_before_headers");
    assert!(line.contains("path=/v1/chat/completions"), "{line}");
    assert!(!line.contains("status="), "{line}");
    let (_, log) = gateway.stop();
    let lines = log.iter().filter(|l| l.contains(" request ")).count();
    assert_eq!(lines, 5, "{log:?}");
}
