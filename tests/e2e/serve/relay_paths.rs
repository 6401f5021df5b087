//! Relayed routes stay under the upstream's base path: a path that would leave it (dot
//! segments, percent-encoded or not, backslashes) is refused with a 400 in the wire's error
//! shape, and nothing reaches the upstream, least of all with the key the gateway holds.
//!
//! The requests are written by hand on a TCP stream: an HTTP client library would resolve the
//! dot segments itself before sending, and the gateway would never see them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{Answer, FakeUpstream};
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

/// Bound on waiting for the gateway's answer, so a broken gateway fails the test instead of
/// hanging it.
const PATIENCE: Duration = Duration::from_secs(60);

/// `GET target` sent as written, with the gateway token; the status and the body.
fn get_raw(gateway: &GatewayProcess, target: &str) -> (u16, String) {
    let address = gateway.url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: {address}\r\nx-ctxhost-token: tok-client\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("{target}: no status line in {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A gateway that holds the upstream's key, in front of an upstream that answers anything.
fn keyed_gateway(upstream: &FakeUpstream) -> (Sandbox, GatewayProcess) {
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "serve:\n  upstream_key_env: UPSTREAM_KEY\n  auth:\n    tokens_env: GATEWAY_TOKENS\n",
    );
    let gateway = sandbox.serve_with_env(
        &upstream.base_url(),
        &[],
        &[
            ("GATEWAY_TOKENS", "tok-client"),
            ("UPSTREAM_KEY", "sk-held-by-the-gateway"),
        ],
    );
    (sandbox, gateway)
}

#[test]
fn a_relayed_path_that_leaves_the_base_path_is_refused_before_the_key_is_attached() {
    let upstream = FakeUpstream::start(|_| Answer::Json(200, json!({"ok": true})));
    let (_sandbox, gateway) = keyed_gateway(&upstream);
    for target in [
        "/v1/../admin",
        "/v1/./admin",
        "/v1/%2e%2e/admin",
        "/v1/%2E%2E/x",
        "/v1/.%2e/admin",
        "/v1/..%2fadmin",
        "/v1/..%2Fadmin",
        "/v1/files/%2e%2e/%2e%2e/admin",
        "/v1/%252e%252e/admin",
        "/v1/..%5cadmin",
        "/v1/%5C..%5Cadmin",
        "/v1/files/..",
        "/v1/models/../../admin",
    ] {
        let (status, body) = get_raw(&gateway, target);
        assert_eq!(status, 400, "{target}: {body}");
        let error: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{body}"));
        assert_eq!(
            error["error"]["code"], "invalid_request",
            "{target}: {body}"
        );
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("base path"), "{target}: {message}");
    }
    // Under a wire's route, in that wire's shape.
    let (status, body) = get_raw(&gateway, "/v1/messages/%2e%2e/%2e%2e/admin");
    assert_eq!(status, 400, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["type"], "error", "{body}");
    assert_eq!(error["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(upstream.received().len(), 0, "{:?}", upstream.received());

    // A raw backslash: refused, by the gateway or by its HTTP parser, never relayed.
    let (status, body) = get_raw(&gateway, "/v1/..\\admin");
    assert_eq!(status, 400, "{body}");
    assert_eq!(upstream.received().len(), 0, "{:?}", upstream.received());

    // A path that stays inside goes, with the gateway's key: the refusals above were not a
    // gateway that relays nothing.
    let (status, body) = get_raw(&gateway, "/v1/files/file-1..2/content");
    assert_eq!(status, 200, "{body}");
    let received = upstream.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/files/file-1..2/content");
    assert_eq!(
        received[0].header("authorization"),
        Some("Bearer sk-held-by-the-gateway")
    );
}
