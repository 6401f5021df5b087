//! Slow and piled-up connections: a client that never finishes its headers is disconnected
//! after `serve.limits.header_timeout_seconds`, and connections from one address beyond
//! `serve.limits.max_connections_per_ip` are closed as soon as they are accepted.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::Sandbox;
use serde_json::json;

/// Bound on waiting for the gateway to close a connection, so a broken gateway fails the test
/// instead of hanging it (far above the timeouts configured here).
const PATIENCE: Duration = Duration::from_secs(60);

/// How many refused connections a test waits through for a closed connection's place to free:
/// the gateway frees it within a few turns of its accept loop.
const MAX_REFUSALS: usize = 1_000;

fn upstream() -> FakeUpstream {
    FakeUpstream::start(|request| {
        reply(
            request,
            json!({"role": "assistant", "content": "fine"}),
            None,
        )
    })
}

fn connect(gateway: &GatewayProcess) -> TcpStream {
    let address = gateway.url.trim_start_matches("http://");
    let stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
}

/// Reads until the gateway closes the connection; panics if it stays open past [`PATIENCE`].
/// Returns what it sent before closing.
fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(error) if error.kind() == ErrorKind::ConnectionReset => break,
            Err(error) => panic!("the gateway kept the connection open: {error}"),
        }
    }
    String::from_utf8_lossy(&received).into_owned()
}

fn chat(gateway: &GatewayProcess) -> reqwest::Result<reqwest::blocking::Response> {
    reqwest::blocking::Client::new()
        .post(format!("{}/chat/completions", gateway.base_url()))
        .bearer_auth("sk-limits")
        .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
}

#[test]
fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let upstream = upstream();
    let sandbox = Sandbox::new();
    sandbox.write_config("serve:\n  limits:\n    header_timeout_seconds: 0.5\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let mut slow = connect(&gateway);
    slow.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    let answer = read_until_closed(&mut slow);
    assert!(!answer.contains("200 OK"), "{answer}");
    // The gateway itself is fine.
    assert_eq!(chat(&gateway).unwrap().status(), 200);
    assert!(upstream.chat_requests().len() == 1);
}

#[test]
fn connections_over_the_per_address_cap_are_closed_and_a_place_frees_when_one_leaves() {
    let upstream = upstream();
    let sandbox = Sandbox::new();
    // Idle connections stay open for as long as the test runs: only the cap closes any.
    sandbox.write_config(
        "serve:\n  limits:\n    header_timeout_seconds: 600\n    max_connections_per_ip: 3\n",
    );
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let idle: Vec<TcpStream> = (0..3).map(|_| connect(&gateway)).collect();
    // Accepted after the three idle ones (the kernel queues them in order): closed at once,
    // unanswered.
    let mut over = connect(&gateway);
    let _ = over.write_all(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    assert_eq!(read_until_closed(&mut over), "");
    assert!(upstream.received().is_empty());
    drop(idle);
    // The gateway sees the idle connections close on its own time: ask until a place is free.
    // Each refusal is a turn of the gateway's accept loop, which runs beside the tasks that
    // see the idle connections close: a count of refusals, not a clock, bounds the wait.
    let mut refusals = 0;
    let response = loop {
        match chat(&gateway) {
            Ok(response) => break response,
            Err(error) if refusals < MAX_REFUSALS => {
                refusals += 1;
                eprintln!("not yet: {error}");
            }
            Err(error) => panic!("no place freed after {refusals} refusals: {error}"),
        }
    };
    assert_eq!(response.status(), 200);
    assert!(upstream.chat_requests().len() == 1);
}

#[cfg(unix)]
#[test]
fn the_connection_cap_stays_under_the_process_file_limit() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let upstream = upstream();
    let sandbox = Sandbox::new();
    // `ulimit -n` sets the hard limit too: serve cannot raise it, and lowers its cap instead.
    let mut child = Command::new("sh")
        .args(["-c", "ulimit -n 200 && exec \"$0\" \"$@\""])
        .arg(ctxhost_tests::binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(upstream.base_url())
        .current_dir(sandbox.path())
        .env("CTXHOST_HOME", sandbox.home())
        .env_remove("CTXHOST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The ready lines (the address, the engine, a line per wire), then the notice; read up to
    // it, never past it (the gateway prints nothing more while idle).
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut lines = Vec::new();
    while lines.len() < 10 {
        let Some(line) = stderr.next() else { break };
        let line = line.unwrap();
        let notice = line.contains("serve.limits.max_connections lowered");
        lines.push(line);
        if notice {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        lines[0].starts_with("ctxhost serve: listening on "),
        "{lines:?}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .contains("serve.limits.max_connections lowered from 4096 to 150"),
        "{lines:?}"
    );
}
