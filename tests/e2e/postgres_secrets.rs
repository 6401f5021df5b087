//! A PostgreSQL password, whether in the URL's userinfo or as `?password=`, never shows: not
//! in a failing `ctxhost serve`, `ctxhost sessions migrate` (succeeding or failing), the
//! gateway's `/healthz` or its log lines, nor lcm's store errors. Where the URL shows, it is
//! still recognisable, its password masked.
//!
//! The throwaway server trusts every local connection, so a URL with any password connects.

use ctxhost_test_postgres::Postgres;
use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::{Run, Sandbox};
use serde_json::json;

const SECRET: &str = "hunter2secret";

/// `url` (`postgres://postgres@host:port/db`) with the password in the userinfo, and with it as
/// `?password=`; each with how it shows masked (up to the database name).
fn with_passwords(url: &str) -> [(String, String); 2] {
    let in_userinfo = url.replacen(
        "postgres://postgres@",
        &format!("postgres://postgres:{SECRET}@"),
        1,
    );
    let masked_userinfo = url.replacen("postgres://postgres@", "postgres://postgres:***@", 1);
    [
        (in_userinfo, masked_userinfo),
        (
            format!("{url}?password={SECRET}"),
            format!("{url}?password=***"),
        ),
    ]
}

fn assert_no_secret(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} shows the password: {text}");
    assert!(
        !text.contains("hunter2"),
        "{what} shows part of the password: {text}"
    );
}

fn output(run: &Run) -> String {
    format!("{}\n{}", run.stdout, run.stderr)
}

fn model() -> FakeUpstream {
    FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "ok"}), None)
    })
}

#[test]
fn a_gateway_that_cannot_open_its_database_shows_no_password() {
    let absent = format!("{}_absent", Postgres::database("secrets_serve"));
    for (url, masked) in with_passwords(&absent) {
        let sandbox = Sandbox::new();
        sandbox.write_config(&format!("serve:\n  state: {url}\n"));
        let run = sandbox.ctxhost(&[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "http://127.0.0.1:9/v1",
        ]);
        assert_ne!(run.code, Some(0), "{}", output(&run));
        assert_no_secret("ctxhost serve", &output(&run));
        assert!(
            run.stderr.contains(&masked) && run.stderr.contains("does not exist"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn sessions_migrate_shows_no_password_whether_it_succeeds_or_fails() {
    let base = Postgres::database("secrets_migrate");
    let absent = with_passwords(&format!("{base}_absent"));
    for ((url, masked), (absent, absent_masked)) in with_passwords(&base).into_iter().zip(absent) {
        let sandbox = Sandbox::new();
        // A gateway run once on its default store leaves one to copy.
        let upstream = model();
        drop(sandbox.serve(&upstream.base_url(), &[]));
        let run = sandbox.ctxhost(&["sessions", "migrate", "--to", &url]);
        assert_eq!(run.code, Some(0), "{}", output(&run));
        assert_no_secret("sessions migrate", &output(&run));
        assert!(
            run.stdout.contains(&format!("into {masked}: 0 added")),
            "{}",
            run.stdout
        );
        let json = sandbox.ctxhost(&["sessions", "migrate", "--to", &url, "--json"]);
        assert_eq!(json.code, Some(0), "{}", output(&json));
        assert_no_secret("sessions migrate --json", &output(&json));

        let failed = sandbox.ctxhost(&["sessions", "migrate", "--to", &absent]);
        assert_ne!(failed.code, Some(0), "{}", output(&failed));
        assert_no_secret("a failing sessions migrate", &output(&failed));
        assert!(
            failed.stderr.contains(&absent_masked) && failed.stderr.contains("does not exist"),
            "{}",
            failed.stderr
        );
    }
    // Not a PostgreSQL URL at all: refused, the password still hidden.
    let sandbox = Sandbox::new();
    let run = sandbox.ctxhost(&[
        "sessions",
        "migrate",
        "--to",
        &format!("mysql://app:{SECRET}@db/ctx"),
    ]);
    assert_ne!(run.code, Some(0));
    assert_no_secret("sessions migrate --to mysql://", &output(&run));
    assert!(
        run.stderr.contains("mysql://app:***@db/ctx"),
        "{}",
        run.stderr
    );
}

#[test]
fn healthz_and_the_log_show_no_password_when_the_database_goes_away() {
    for index in 0..2 {
        let (mut server, url) = Postgres::dedicated(&format!("secrets_health_{index}"));
        let (url, masked) = with_passwords(&url)[index].clone();
        let sandbox = Sandbox::new();
        sandbox.write_config(&format!(
            "serve:\n  state: {url}\n  database:\n    connect_timeout_seconds: 2\n"
        ));
        let upstream = model();
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let (status, health) = gateway.get_json("/healthz", None);
        assert_eq!(status, 200, "{health}");
        assert_no_secret("/healthz", &health.to_string());

        server.stop();
        // The pool's connections die with the server; the store reports the new one it cannot
        // open, naming the database, once they are gone (each answer is checked on the way).
        let mut named = None;
        for _ in 0..20 {
            let (status, health) = gateway.get_json("/healthz", None);
            assert_eq!(status, 503, "{health}");
            let text = health.to_string();
            assert_no_secret("/healthz", &text);
            if text.contains("no connection to") {
                named = Some(text);
                break;
            }
        }
        let named = named.expect("/healthz says which database it cannot reach");
        assert!(named.contains(&masked), "{named}");

        let response = reqwest::blocking::Client::new()
            .post(format!("{}/chat/completions", gateway.base_url()))
            .bearer_auth("sk-secrets")
            .header("x-ctxhost-session", "s")
            .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .expect("the gateway answers");
        assert_no_secret("a failed request's answer", &response.text().unwrap());
        gateway.wait_for_log("/v1/chat/completions");
        assert_no_secret("the ready line", &gateway.ready_line);
        for line in gateway.log() {
            assert_no_secret("a log line", &line);
        }
    }
}

#[test]
fn lcm_store_errors_show_no_password() {
    let absent = format!("{}_absent", Postgres::database("secrets_lcm"));
    for (url, masked) in with_passwords(&absent) {
        let sandbox = Sandbox::new();
        sandbox.link_repo_plugins();
        sandbox.write_config(&format!(
            "context:\n  engine: lcm\nplugins:\n  lcm:\n    store: {url}\n"
        ));
        let doctor = sandbox.ctxhost(&["engine", "doctor"]);
        assert_ne!(doctor.code, Some(0), "{}", output(&doctor));
        assert_no_secret("lcm's doctor", &output(&doctor));
        assert!(
            doctor.stdout.contains(&masked) && doctor.stdout.contains("does not exist"),
            "{}",
            doctor.stdout
        );
    }
}
