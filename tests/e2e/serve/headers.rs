//! The client's headers upstream: hop-by-hop ones (RFC 9110 §7.6.1: those the request's
//! `Connection` names, and the fixed set) are the client's connection's, never forwarded; a
//! `Cookie` is the client's session with something else, forwarded only when
//! `serve.forward_cookies` says so. The other headers go on as they came.
//!
//! The requests are written by hand on a TCP stream: an HTTP client library manages
//! `Connection` and its kin itself.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{reply, FakeUpstream, Recorded};
use ctxhost_tests::Sandbox;
use serde_json::json;

/// Bound on waiting for the gateway's answer, so a broken gateway fails the test instead of
/// hanging it.
const PATIENCE: Duration = Duration::from_secs(60);

/// The headers a client sends that are its connection's, or its cookies.
const HOP_BY_HOP: &[(&str, &str)] = &[
    ("Connection", "keep-alive, X-Hop-Named, x-other-named"),
    ("X-Hop-Named", "only for the next hop"),
    ("X-Other-Named", "this one too"),
    ("Keep-Alive", "timeout=5, max=100"),
    ("Proxy-Connection", "keep-alive"),
    ("TE", "trailers"),
    ("Proxy-Authorization", "Basic cHJveHk6c2VjcmV0"),
    ("Cookie", "session=abc123; theme=dark"),
];

/// `POST path` with `body` and `headers` sent as written (plus the client's key); the status.
fn post_raw(gateway: &GatewayProcess, path: &str, body: &str, headers: &[(&str, &str)]) -> u16 {
    let address = gateway.url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer sk-client\r\n\
         x-api-key: sk-client\r\nanthropic-version: 2023-06-01\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nX-Kept: kept\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    // The status line is enough; the gateway keeps the connection (the client asked for it).
    let mut answer = Vec::new();
    let mut buffer = [0u8; 1024];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        let read = stream.read(&mut buffer).unwrap();
        assert!(read > 0, "{path}: the gateway closed without answering");
        answer.extend_from_slice(&buffer[..read]);
    }
    let answer = String::from_utf8_lossy(&answer).into_owned();
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("{path}: no status line in {answer:?}"))
}

fn upstream() -> FakeUpstream {
    FakeUpstream::start(|request| match request.path.as_str() {
        "/v1/embeddings" => ctxhost_tests::upstream::Answer::Json(
            200,
            json!({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5]}]}),
        ),
        _ => reply(
            request,
            json!({"role": "assistant", "content": "fine"}),
            None,
        ),
    })
}

/// What reached the upstream on the model route and on a relayed one (in that order).
fn sent_through(sandbox: &Sandbox, upstream: &FakeUpstream) -> Vec<Recorded> {
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let chat = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]});
    let status = post_raw(
        &gateway,
        "/v1/chat/completions",
        &chat.to_string(),
        HOP_BY_HOP,
    );
    assert_eq!(status, 200);
    let embeddings = json!({"model": "text-embedding-3-small", "input": "hi"});
    let status = post_raw(
        &gateway,
        "/v1/embeddings",
        &embeddings.to_string(),
        HOP_BY_HOP,
    );
    assert_eq!(status, 200);
    let received = upstream.received();
    assert_eq!(received.len(), 2, "{received:?}");
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(received[1].path, "/v1/embeddings");
    received
}

#[test]
fn hop_by_hop_headers_and_cookies_are_not_forwarded_upstream() {
    let upstream = upstream();
    let sandbox = Sandbox::new();
    for sent in sent_through(&sandbox, &upstream) {
        for name in [
            "x-hop-named",
            "x-other-named",
            "keep-alive",
            "proxy-connection",
            "te",
            "proxy-authorization",
            "cookie",
        ] {
            assert_eq!(sent.header(name), None, "{} {name}", sent.path);
        }
        // Not the client's: none the upstream's client library added may hold its names.
        assert!(
            sent.header("connection")
                .is_none_or(|value| !value.to_ascii_lowercase().contains("named")),
            "{} {:?}",
            sent.path,
            sent.header("connection")
        );
        assert_eq!(sent.header("x-kept"), Some("kept"), "{}", sent.path);
        assert_eq!(
            sent.header("authorization"),
            Some("Bearer sk-client"),
            "{}",
            sent.path
        );
    }
}

#[test]
fn cookies_are_forwarded_when_the_setting_allows_them() {
    let upstream = upstream();
    let sandbox = Sandbox::new();
    sandbox.write_config("serve:\n  forward_cookies: true\n");
    for sent in sent_through(&sandbox, &upstream) {
        assert_eq!(
            sent.header("cookie"),
            Some("session=abc123; theme=dark"),
            "{}",
            sent.path
        );
        // Hop-by-hop headers stay behind all the same.
        assert_eq!(sent.header("x-hop-named"), None, "{}", sent.path);
        assert_eq!(sent.header("proxy-authorization"), None, "{}", sent.path);
    }
}
