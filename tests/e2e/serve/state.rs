//! Session state: it survives a restart, and sessions never cross, whoever asks.

use ctxhost_test_postgres::Postgres;
use ctxhost_tests::per_wire;
use ctxhost_tests::upstream::{recorded_upstream, reply, FakeUpstream};
use ctxhost_tests::wire::Wire;
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};
use sha2::Digest as _;

/// Compressions run on the request that needs them (none prepared in the background), so two
/// gateways fed the same turns compress at the same requests.
const CONFIG: &str =
    "model:\n  context_length: 16000\nserve:\n  compaction:\n    background: false\n";

fn send(client: &reqwest::blocking::Client, base: &str, messages: &[Value]) -> Value {
    let response = client
        .post(format!("{base}/chat/completions"))
        .bearer_auth("sk-restart")
        .header("x-ctxhost-session", "restarted")
        .json(&json!({"model": "gpt-4o", "messages": messages}))
        .send()
        .unwrap();
    let status = response.status();
    let body: Value = response.json().unwrap();
    assert_eq!(status, 200, "{body}");
    body
}

/// The indices of the assistant messages: each is one request.
fn calls(messages: &[Value]) -> Vec<usize> {
    (0..messages.len())
        .filter(|i| messages[*i]["role"] == "assistant")
        .collect()
}

#[test]
fn a_restarted_gateway_sends_the_same_view_byte_for_byte() {
    restart_keeps_the_view("", "", |_| {});
}

#[test]
fn a_restarted_gateway_on_postgresql_sends_the_same_view_byte_for_byte() {
    let url = Postgres::database("restart");
    let state = format!("  state: {url}\n");
    restart_keeps_the_view(&state, &state, |_| {});
}

#[test]
fn sessions_migrated_from_sqlite_to_postgresql_go_on_with_the_same_view() {
    let url = Postgres::database("migrate");
    restart_keeps_the_view("", &format!("  state: {url}\n"), |sandbox| {
        let source = sandbox.home().join("data/gateway/sessions.sqlite");
        let run = sandbox.ctxhost(&["sessions", "migrate", "--to", &url]);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert!(
            run.stdout.contains("gateway: 1 sessions from")
                && run
                    .stdout
                    .contains("1 added, 0 replaced, 0 unchanged; read back and verified"),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout
                .contains("engine 'compressor': keeps no sessions between runs"),
            "{}",
            run.stdout
        );
        // Checked apart from the command's own check: the same text on both sides.
        let sqlite = rusqlite::Connection::open(&source).unwrap();
        let (record, revision): (String, i64) = sqlite
            .query_row(
                "SELECT record, json_extract(record, '$.revision') FROM gateway_sessions",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        let expected: String = sha2::Sha256::digest(record.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let migrated = Postgres::psql(
            &url,
            "SELECT count(*), encode(sha256(convert_to(record, 'UTF8')), 'hex'), revision \
             FROM ctxhost_gateway_sessions GROUP BY record, revision",
        );
        assert_eq!(migrated.trim(), format!("1|{expected}|{revision}"));
        // Again: nothing changes.
        let again = sandbox.ctxhost(&["sessions", "migrate", "--to", &url]);
        assert_eq!(again.code, Some(0), "{}", again.stderr);
        assert!(
            again.stdout.contains("0 added, 0 replaced, 1 unchanged"),
            "{}",
            again.stdout
        );
    });
}

/// Drives a session up to just past its first compression through a gateway whose state is
/// configured by `before` (lines of `serve:`), stops it, runs `between`, starts it again with
/// `after`, and checks the next upstream request against one from a gateway that never stopped.
fn restart_keeps_the_view(before: &str, after: &str, between: impl FnOnce(&Sandbox)) {
    restart_with_engine_keeps_the_view("", before, after, between);
}

/// [`restart_keeps_the_view`] with `engine` (top-level config lines, the repository's plugins
/// beside the config) in every gateway's config; `before` and `after` may add top-level keys
/// after their `serve:` lines.
pub(super) fn restart_with_engine_keeps_the_view(
    engine: &str,
    before: &str,
    after: &str,
    between: impl FnOnce(&Sandbox),
) {
    let messages = long_session()[..140].to_vec();
    let client = reqwest::blocking::Client::new();
    let config = format!("{engine}{CONFIG}");
    let new_sandbox = || {
        let sandbox = Sandbox::new();
        if !engine.is_empty() {
            sandbox.link_repo_plugins();
        }
        sandbox
    };

    // Without a restart: where compressions happen, and every request the upstream gets.
    let control = new_sandbox();
    control.write_config(&config);
    let upstream = recorded_upstream(&messages);
    let gateway = control.serve(&upstream.base_url(), &[]);
    for index in calls(&messages) {
        send(&client, &gateway.base_url(), &messages[..index]);
    }
    let state: Value = gateway.session("restarted", Some("sk-restart"));
    let compressed: Vec<u64> = state["compressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["request"].as_u64().unwrap())
        .collect();
    assert!(!compressed.is_empty(), "{state}");
    // Restart just before a request that uses a compressed view without compressing again.
    let request = (compressed[0] + 1..)
        .find(|r| !compressed.contains(r))
        .unwrap() as usize;
    assert!(request <= calls(&messages).len());
    let expected = upstream.chat_requests()[request - 1].body.clone();
    drop(gateway);

    let sandbox = new_sandbox();
    sandbox.write_config(&format!("{config}{before}"));
    let upstream = recorded_upstream(&messages);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let backend = if before.is_empty() {
        "sqlite"
    } else {
        "postgres"
    };
    let (status, health) = gateway.get_json("/healthz", None);
    assert_eq!(
        (status, &health["store"]["backend"]),
        (200, &json!(backend))
    );
    let indices = calls(&messages);
    for index in &indices[..request - 1] {
        send(&client, &gateway.base_url(), &messages[..*index]);
    }
    let (status, _) = gateway.stop();
    assert!(status.success());
    between(&sandbox);
    sandbox.write_config(&format!("{config}{after}"));
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    send(
        &client,
        &gateway.base_url(),
        &messages[..indices[request - 1]],
    );
    let sent = upstream.chat_requests().last().unwrap().body.clone();
    // lcm's recall ranks its candidates itself (one BM25 over their text): what it recalls
    // does not change with a move of its store from SQLite to PostgreSQL.
    assert!(
        sent == expected,
        "after the restart the upstream got another request than without one"
    );
    let state: Value = gateway.session("restarted", Some("sk-restart"));
    assert_eq!(
        state["compressions"].as_array().unwrap().len(),
        compressed.iter().filter(|r| **r < request as u64).count(),
        "the restart did not compress again"
    );
}

per_wire! {
    fn a_lineage_continues_turn_by_turn_and_a_rewritten_history_starts_anew(wire: Wire) {
        let upstream = FakeUpstream::start(move |request| {
            wire.reply(request, &json!({"role": "assistant", "content": "noted"}), None)
        });
        let sandbox = Sandbox::new();
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let mut messages = vec![
            json!({"role": "system", "content": "Keep notes."}),
            json!({"role": "user", "content": "one"}),
        ];
        let send = |messages: &[Value]| {
            let body = wire.body(messages, &[], false);
            let response = wire.send(&gateway, Some("sk-lineage"), Some("lineage"), &body);
            assert_eq!(response.status(), 200);
            assert_eq!(response.headers()["x-ctxhost-session"], "lineage");
            let lineage = response.headers()["x-ctxhost-lineage"].to_str().unwrap().to_string();
            (lineage, wire.read(&response.text().unwrap(), false).message)
        };
        let (lineage, answer) = send(&messages);
        assert_eq!(lineage, "first");
        messages.push(answer);
        messages.push(json!({"role": "user", "content": "two"}));
        let (lineage, _) = send(&messages);
        assert_eq!(lineage, "continued");
        // The client rewrote the history: what the session held no longer leads to it.
        let rewritten = [messages[0].clone(), json!({"role": "user", "content": "another task"})];
        let (lineage, _) = send(&rewritten);
        assert_eq!(lineage, "new");
        let state = wire.session(&gateway, "lineage", Some("sk-lineage"));
        assert_eq!(state["requests"], 3, "{state}");
        assert_eq!(state["stats"]["new_lineages"], 1, "{state}");
        assert_eq!(state["messages_seen"], 2, "{state}");
    }
}

#[test]
fn thirty_two_sessions_over_eight_credentials_never_cross() {
    // The model echoes the newest user message, so every answer names its own session.
    let upstream = FakeUpstream::start(|request| {
        let messages = request.messages();
        let last_user =
            messages.iter().rev().find(|m| m["role"] == "user").unwrap()["content"].clone();
        reply(
            request,
            json!({"role": "assistant", "content": format!("echo {}", last_user.as_str().unwrap())}),
            None,
        )
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let base = gateway.base_url();
    std::thread::scope(|scope| {
        for worker in 0..32 {
            let base = base.clone();
            scope.spawn(move || {
                let client = reqwest::blocking::Client::new();
                let credential = format!("sk-cred-{}", worker % 8);
                // Names repeat across credentials on purpose: they must not meet.
                let name = format!("s{}", worker / 8);
                let mut messages = vec![json!({"role": "system", "content": "echo"})];
                for turn in 0..3 {
                    let said = format!("worker-{worker}-turn-{turn}");
                    messages.push(json!({"role": "user", "content": said}));
                    let response = client
                        .post(format!("{base}/chat/completions"))
                        .bearer_auth(&credential)
                        .header("x-ctxhost-session", &name)
                        .json(&json!({"model": "gpt-4o", "messages": messages,
                                      "stream": turn == 1}))
                        .send()
                        .unwrap();
                    assert_eq!(response.status(), 200);
                    assert_eq!(response.headers()["x-ctxhost-session"], name.as_str());
                    let lineage = response.headers()["x-ctxhost-lineage"].clone();
                    let text = response.text().unwrap();
                    let content = if turn == 1 {
                        text.lines()
                            .filter_map(|l| l.strip_prefix("data: "))
                            .filter(|d| *d != "[DONE]")
                            .map(|d| serde_json::from_str::<Value>(d).unwrap())
                            .filter_map(|c| {
                                c["choices"][0]["delta"]["content"]
                                    .as_str()
                                    .map(str::to_string)
                            })
                            .collect::<String>()
                    } else {
                        serde_json::from_str::<Value>(&text).unwrap()["choices"][0]["message"]
                            ["content"]
                            .as_str()
                            .unwrap()
                            .to_string()
                    };
                    assert_eq!(content, format!("echo {said}"));
                    assert_eq!(lineage, if turn == 0 { "first" } else { "continued" });
                    messages.push(json!({"role": "assistant", "content": format!("echo {said}")}));
                }
            });
        }
    });
    // Every upstream request carries one worker's messages only.
    for request in upstream.chat_requests() {
        let workers: std::collections::BTreeSet<String> = request
            .messages()
            .iter()
            .filter_map(|m| m["content"].as_str())
            .filter_map(|c| c.split("worker-").nth(1))
            .map(|rest| rest.split('-').next().unwrap().to_string())
            .collect();
        assert_eq!(workers.len(), 1, "{workers:?}");
    }
    for credential in 0..8 {
        let credential = format!("sk-cred-{credential}");
        let (_, sessions) = gateway.get_json("/ctxhost/sessions", Some(&credential));
        let sessions = sessions["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 4, "{sessions:?}");
        assert!(sessions.iter().all(|s| s["requests"] == 3));
    }
    // Another credential cannot read a session by naming it.
    let (status, _) = gateway.get_json("/ctxhost/sessions/s0", Some("sk-somebody-else"));
    assert_eq!(status, 404);
    let own: Value = gateway.session("s0", Some("sk-cred-0"));
    assert_eq!(own["messages_seen"], 6);
}

#[test]
fn sessions_beyond_the_memory_cap_reopen_from_the_store() {
    let upstream = FakeUpstream::start(|request| {
        reply(
            request,
            json!({"role": "assistant", "content": "noted"}),
            None,
        )
    });
    let sandbox = Sandbox::new();
    sandbox.write_config("serve:\n  limits:\n    max_live_sessions: 2\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::new();
    let mut histories: Vec<Vec<Value>> = (0..4)
        .map(|s| vec![json!({"role": "user", "content": format!("session {s}")})])
        .collect();
    for turn in 0..2 {
        for (s, history) in histories.iter_mut().enumerate() {
            let response = client
                .post(format!("{}/chat/completions", gateway.base_url()))
                .header("x-ctxhost-session", format!("capped-{s}"))
                .json(&json!({"model": "gpt-4o", "messages": history}))
                .send()
                .unwrap();
            assert_eq!(response.status(), 200);
            let lineage = response.headers()["x-ctxhost-lineage"].clone();
            assert_eq!(lineage, if turn == 0 { "first" } else { "continued" });
            history.push(json!({"role": "assistant", "content": "noted"}));
            history.push(json!({"role": "user", "content": format!("turn {turn}")}));
        }
        let health: Value = gateway.get_json("/healthz", None).1;
        assert!(health["sessions"].as_u64().unwrap() <= 2, "{health}");
    }
    let state: Value = gateway.session("capped-0", None);
    assert_eq!(state["requests"], 2);
    assert_eq!(state["messages_seen"], 3);
}

#[test]
fn the_doctor_reports_the_gateways_database() {
    let url = Postgres::database("doctor");
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!("serve:\n  state: {url}\n"));
    let run = sandbox.ctxhost(&["engine", "doctor"]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["gateway_store"]["backend"], "postgres", "{report}");
    assert_eq!(report["gateway_store"]["ok"], true, "{report}");
    assert!(report["gateway_store"]["schema_version"].as_i64().unwrap() >= 2);

    // A database that does not answer: the doctor says so, with the cause, and fails.
    let port = ctxhost_tests::upstream::closed_port();
    sandbox.write_config(&format!(
        "serve:\n  state: postgres://ctxhost:secret@127.0.0.1:{port}/gone\n  database:\n    \
         connect_timeout_seconds: 2\n"
    ));
    let run = sandbox.ctxhost(&["engine", "doctor"]);
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["ok"], false, "{report}");
    let problem = report["gateway_store"]["problem"].as_str().unwrap();
    assert!(problem.contains("Connection refused"), "{problem}");
    assert!(!run.stdout.contains("secret"), "the password never shows");
}

/// An agent's loop: one task, then only tool calls and their results (the corpus session's
/// turns as `bash` calls), so the newest user message stays the task while lcm's summaries,
/// user messages themselves, pile up after it.
fn agent_loop() -> Vec<Value> {
    let session = long_session();
    let mut messages = vec![session[0].clone(), session[1].clone()];
    let mut call = 0;
    for pair in session[2..].chunks_exact(2) {
        let (said, observed) = (&pair[0], &pair[1]);
        if said["role"] != "assistant" || observed["role"] != "user" {
            continue;
        }
        call += 1;
        let id = format!("call_{call}");
        messages.push(json!({
            "role": "assistant",
            "content": said["content"],
            "tool_calls": [ctxhost_tests::upstream::tool_call(&id, "bash", json!({"step": call}))],
        }));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": observed["content"]}));
    }
    messages
}

#[test]
fn summaries_lcm_wrote_before_a_restart_are_its_own_to_condense_after_it() {
    let messages = agent_loop();
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(
        "context:\n  engine: lcm\nmodel:\n  context_length: 16000\nserve:\n  compaction:\n    \
         background: false\nplugins:\n  lcm:\n    condensed_min_fanout: 2\n    \
         leaf_chunk_tokens: 3000\n    fresh_tail_count: 8\n",
    );
    let upstream = recorded_upstream(&messages);
    let client = reqwest::blocking::Client::new();
    let last_sent = || upstream.chat_requests().last().unwrap().body.clone();
    let mut gateway = sandbox.serve(&upstream.base_url(), &[]);
    let mut before_restart: Option<Vec<String>> = None;
    for index in calls(&messages) {
        send(&client, &gateway.base_url(), &messages[..index]);
        let state: Value = gateway.session("restarted", Some("sk-restart"));
        let compressions = state["compressions"].as_array().unwrap();
        for compression in compressions {
            assert!(
                compression.get("error").is_none(),
                "request {index}: {compression}"
            );
            assert_eq!(compression["engine"], "lcm", "{compression}");
        }
        match &before_restart {
            None if !compressions.is_empty() => {
                // Summaries in the view: the gateway stops and starts again on the same
                // SQLite state.
                assert!(last_sent().contains("lcm-summary"), "{}", last_sent());
                before_restart = Some(condensed_ids(&last_sent()));
                let (status, _) = gateway.stop();
                assert!(status.success());
                gateway = sandbox.serve(&upstream.base_url(), &[]);
            }
            Some(before)
                if condensed_ids(&last_sent())
                    .iter()
                    .any(|id| !before.contains(id)) =>
            {
                let log = gateway.log().join("\n");
                assert!(!log.contains("newest user message"), "{log}");
                return;
            }
            _ => {}
        }
    }
    panic!("lcm never condensed after the restart");
}

/// An agent's loop with the compressor: after a restart the summary the compressor wrote
/// before it is its own to fold (the gateway's record says the client never sent it), not
/// the newest user message of the conversation, which the tail would have to keep whole: that
/// left nothing to compress, and the turn that would not fit the window was refused.
#[test]
fn a_summary_the_compressor_wrote_before_a_restart_is_folded_into_its_next_one() {
    let messages = agent_loop();
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "model:\n  context_length: 16000\nserve:\n  compaction:\n    background: false\n",
    );
    let upstream = recorded_upstream(&messages);
    let client = reqwest::blocking::Client::new();
    let summary_sent = || -> String {
        let sent = upstream.chat_requests().last().unwrap().json();
        let summaries: Vec<String> = sent["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["content"].as_str())
            .filter(|text| text.starts_with("[CONTEXT SUMMARY"))
            .map(str::to_string)
            .collect();
        assert_eq!(summaries.len(), 1, "one summary: {sent}");
        summaries[0].clone()
    };
    let mut gateway = sandbox.serve(&upstream.base_url(), &[]);
    let mut before_restart: Option<(usize, String)> = None;
    for index in calls(&messages) {
        send(&client, &gateway.base_url(), &messages[..index]);
        let state: Value = gateway.session("restarted", Some("sk-restart"));
        let compressions = state["compressions"].as_array().unwrap().len();
        match &before_restart {
            None if compressions > 0 => {
                let summary = summary_sent();
                assert!(summary.contains("chall.py (read"), "{summary}");
                before_restart = Some((compressions, summary));
                let (status, _) = gateway.stop();
                assert!(status.success());
                gateway = sandbox.serve(&upstream.base_url(), &[]);
            }
            Some((before, earlier)) if compressions > *before => {
                // Folded: what the earlier summary held is carried in the new one's own
                // sections (the file read only in the turns it replaced).
                let summary = summary_sent();
                assert_ne!(&summary, earlier);
                assert!(summary.contains("chall.py (read"), "{summary}");
                assert_eq!(summary.matches("## Files").count(), 1, "{summary}");
                return;
            }
            _ => {}
        }
    }
    panic!("the compressor never compressed again after the restart");
}

/// The ids of the condensed lcm summaries (depth 1 and up) in a request body (JSON text, so the quotes inside a
/// message's content are escaped).
fn condensed_ids(body: &str) -> Vec<String> {
    body.split(r#"<lcm-summary id=\""#)
        .skip(1)
        .filter_map(|block| {
            let (id, rest) = block.split_once(r#"\""#)?;
            // Depth 0 is a leaf; any deeper block condenses others.
            (rest.starts_with(r#" depth=\""#) && !rest.starts_with(r#" depth=\"0\""#))
                .then(|| id.to_string())
        })
        .collect()
}
