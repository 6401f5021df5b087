//! Plugin engines in a child process: whatever the plugin does, the host reports it in one
//! line, keeps the conversation and carries on with the built-in compressor.

use std::sync::Arc;

use ctxhost_config::Config;
use ctxhost_core::{Engines, SessionOptions};
use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::{binary, long_session, Run, Sandbox};
use serde_json::{json, Value};

fn config(mode: &str) -> String {
    config_in(mode, "process")
}

fn config_in(mode: &str, isolation: &str) -> String {
    // Only the hanging plugin is meant to meet its deadline, so only it gets a short one: the
    // others (200,000 messages through the pipe among them) must not meet theirs on a loaded
    // machine.
    let timeout = if mode.starts_with("hang") { 2 } else { 120 };
    hostile_config_in(mode, isolation, &format!("    timeout: {timeout}\n"))
}

/// The hostile engine in `mode`, isolated as `isolation`, with `extra` lines of its section.
fn hostile_config_in(mode: &str, isolation: &str, extra: &str) -> String {
    format!(
        "context:\n  engine: hostile\nmodel:\n  context_length: 16000\nplugins:\n  hostile:\n    \
         mode: {mode}\n    isolation: {isolation}\n    memory_limit_mb: 2048\n{extra}"
    )
}

/// A gateway in front of an upstream that answers "ok", with the hostile plugin installed
/// and `config` written.
fn hostile_gateway(
    config: &str,
) -> (
    FakeUpstream,
    Sandbox,
    ctxhost_tests::gateway::GatewayProcess,
) {
    let upstream = FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "ok"}), None)
    });
    let sandbox = Sandbox::new();
    sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
    sandbox.write_config(config);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    (upstream, sandbox, gateway)
}

/// A chat completion of `messages` in `session` through `gateway`.
fn send_chat(
    gateway: &ctxhost_tests::gateway::GatewayProcess,
    session: &str,
    messages: &Value,
) -> reqwest::blocking::Response {
    send_chat_to(&gateway.base_url(), session, messages)
}

/// [`send_chat`] to the gateway at `base_url`.
fn send_chat_to(base_url: &str, session: &str, messages: &Value) -> reqwest::blocking::Response {
    reqwest::blocking::Client::new()
        .post(format!("{base_url}/chat/completions"))
        .header("x-ctxhost-session", session)
        .json(&json!({"model": "gpt-4o", "messages": messages}))
        .send()
        .unwrap()
}

/// `ctxhost run` of `transcript` (written into the sandbox) with its report as JSON and the
/// final context written to the file returned.
fn run_with_out(sandbox: &Sandbox, transcript: &Value) -> (Run, std::path::PathBuf) {
    run_with_out_and(sandbox, transcript, &[])
}

fn run_with_out_and(
    sandbox: &Sandbox,
    transcript: &Value,
    extra: &[&str],
) -> (Run, std::path::PathBuf) {
    let path = sandbox.write_json("t.json", transcript);
    let out = sandbox.path().join("out.json");
    // These tests are about what an engine does when it compresses: every compression it asks
    // for runs (the token-only policy), whatever the cache would say.
    let mut args = vec![
        "run",
        path.to_str().unwrap(),
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--policy",
        "tokens",
    ];
    args.extend_from_slice(extra);
    let run = sandbox.ctxhost(&args);
    (run, out)
}

#[test]
fn every_kind_of_plugin_failure_is_reported_and_the_run_finishes_on_the_compressor() {
    let transcript: Vec<Value> = long_session()[..60].to_vec();
    for (mode, isolation, cause) in [
        ("abort", "process", "aborted"),
        ("segfault", "process", "crashed (SIGSEGV"),
        ("stack_overflow", "process", "aborted"),
        ("oom", "process", "aborted"),
        ("hang", "process", "did not answer within 2s"),
        ("exit", "process", "exited (status 0)"),
        ("stdout", "process", "the output is empty"),
        ("forge", "process", "a second `role`"),
        ("forge", "in_process", "a second `role`"),
        ("grow", "process", "larger than the input"),
        ("grow", "in_process", "larger than the input"),
        ("drop_user", "process", "newest user message"),
        ("drop_user", "in_process", "newest user message"),
        ("panic_payload", "process", "non-text payload"),
        ("panic_payload", "in_process", "non-text payload"),
        ("drop_system", "process", "system prompt is not kept"),
        ("drop_system", "in_process", "system prompt is not kept"),
        ("banana", "process", "unknown role `banana`"),
        ("banana", "in_process", "unknown role `banana`"),
        ("invalid_utf8", "process", "not valid UTF-8"),
        ("invalid_utf8", "in_process", "not valid UTF-8"),
        ("many", "process", "larger than the input"),
        ("many", "in_process", "larger than the input"),
    ] {
        let sandbox = Sandbox::new();
        sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
        sandbox.write_config(&config_in(mode, isolation));
        let (run, out) = run_with_out(&sandbox, &Value::Array(transcript.clone()));
        assert_eq!(run.code, Some(3), "{mode}: {}", run.stderr);
        let report = run.json();
        assert_eq!(
            report["runs"][0]["fell_back_to"], "compressor",
            "{mode}: {report}"
        );
        let lines: Vec<&str> = run
            .stderr_lines()
            .into_iter()
            .filter(|l| l.contains("hostile") && l.contains(cause))
            .collect();
        assert!(
            !lines.is_empty(),
            "{mode}: no line names the cause: {}",
            run.stderr
        );
        let context: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(
            context[0], transcript[0],
            "{mode}: the system prompt is kept"
        );
        assert_eq!(
            context.last(),
            transcript.last(),
            "{mode}: the last turn is kept"
        );
        assert!(!run.stdout.contains("hostile plugin writing"), "{mode}");

        // The doctor, which runs every plugin isolated, finds each of them.
        let doctor = sandbox.ctxhost(&["plugins", "doctor"]);
        assert_eq!(doctor.code, Some(1), "{mode}: {}", doctor.stdout);
        assert!(
            doctor
                .stdout
                .lines()
                .any(|l| l.starts_with("problem") && l.contains("hostile")),
            "{mode}: {}",
            doctor.stdout
        );
    }
}

#[test]
fn a_hung_plugin_is_killed_at_its_deadline_and_restarted_on_the_next_call() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
    sandbox.write_config(&config("hang_once"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = Config::load(&sandbox.config_path()).unwrap();
    let mut engines =
        Engines::for_config(config, sandbox.home(), runtime.handle().clone(), false).unwrap();
    engines.set_child_program(binary());
    let mut session = engines
        .open_session("hostile", SessionOptions::new("s").strict())
        .unwrap();
    runtime.block_on(async {
        let first = session.status().await.unwrap_err().to_string();
        assert!(first.contains("did not answer within 2s"), "{first}");
        let second = session.status().await;
        assert!(second.is_ok(), "restarted: {second:?}");
        assert_eq!(session.engine(), "hostile");
    });
}

#[test]
fn the_gateway_keeps_serving_other_sessions_while_one_plugin_process_crashes() {
    // The compression runs on the request that needs it, so that request hears of the crash
    // (prepared in the background, it would crash after the answer went out).
    let (upstream, _sandbox, gateway) = hostile_gateway(&format!(
        "{}serve:\n  compaction:\n    background: false\n",
        config("abort")
    ));
    let send = |session: &str, messages: &Value| send_chat(&gateway, session, messages);
    let first = json!([{"role": "user", "content": "one"}]);
    assert_eq!(send("a", &first).status(), 200);
    let second = json!([{"role": "user", "content": "one"}, {"role": "assistant", "content": "ok"},
                        {"role": "user", "content": "two"}]);
    // The engine asked to compress after the first call: its process aborts.
    let crashed = send("a", &second);
    assert_eq!(crashed.status(), 200);
    let error = crashed.headers()["x-ctxhost-engine-error"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        error.contains("hostile") && error.contains("aborted"),
        "{error}"
    );
    let other = send("b", &first);
    assert_eq!(other.status(), 200);
    assert_eq!(other.headers()["x-ctxhost-engine"], "hostile");
    let messages = Arc::new(upstream.chat_requests());
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1].messages(), second.as_array().unwrap().clone());
}

#[test]
fn plugins_doctor_exercises_each_plugin_in_a_child_and_survives_a_crash() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
    sandbox.add_plugin("window", "ctxhost_engine_window");
    // Not even selected, and configured to run in process: the doctor still isolates it.
    sandbox.write_config("plugins:\n  hostile:\n    mode: abort\n    isolation: in_process\n");
    let doctor = sandbox.ctxhost(&["plugins", "doctor"]);
    assert_eq!(doctor.code, Some(1), "{}{}", doctor.stdout, doctor.stderr);
    let line = doctor
        .stdout
        .lines()
        .find(|l| l.contains("hostile"))
        .unwrap();
    assert!(
        line.starts_with("problem") && line.contains("aborted") && line.contains("compress"),
        "{line}"
    );
    let window = doctor
        .stdout
        .lines()
        .find(|l| l.contains("window:"))
        .unwrap();
    assert!(
        window.starts_with("ok") && window.contains("status and compress work"),
        "{window}"
    );
}

#[test]
fn a_plugin_whose_name_is_a_path_is_broken_and_writes_nothing_outside_the_home() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("escape", "ctxhost_engine_window");
    sandbox.write_descriptor(
        "escape",
        "name: ../../outside\nlibrary: ctxhost_engine_window\n",
    );
    sandbox.write_config("context:\n  engine: escape\n");
    let list = sandbox.ctxhost(&["plugins", "list"]);
    assert!(
        list.stdout.contains("not a plain engine name"),
        "{}{}",
        list.stdout,
        list.stderr
    );
    let transcript = sandbox.write_json("t.json", &Value::Array(long_session()[..10].to_vec()));
    let run = sandbox.ctxhost(&["compress", transcript.to_str().unwrap()]);
    assert!(
        run.stderr.contains("not a plain engine name"),
        "{}",
        run.stderr
    );
    assert!(!sandbox.path().join("outside").exists());
    assert!(!sandbox.home().join("outside").exists());
}

#[test]
fn a_plugin_that_aborts_while_loading_is_one_line_in_list_info_doctor_and_run() {
    let transcript = Value::Array(long_session()[..20].to_vec());
    for (mode, isolation) in [
        ("manifest", "process"),
        ("constructor", "process"),
        ("manifest", "in_process"),
        ("constructor", "in_process"),
    ] {
        let sandbox = Sandbox::new();
        sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
        sandbox.add_plugin("window", "ctxhost_engine_window");
        sandbox.write_config(&config_in("echo", isolation));
        let path = sandbox.write_json("t.json", &transcript);
        let env = [("CTXHOST_HOSTILE_LOAD", mode)];
        let names_the_crash = |line: &&str| line.contains("hostile") && line.contains("aborted");

        let list = sandbox.ctxhost_with_env(&["plugins", "list"], &env);
        assert!(list.success(), "{mode}: {}{}", list.stdout, list.stderr);
        assert_eq!(
            list.stdout.lines().filter(names_the_crash).count(),
            1,
            "{mode}: {}",
            list.stdout
        );
        assert!(
            list.stdout.contains("window"),
            "{mode}: the listing goes on"
        );

        let info = sandbox.ctxhost_with_env(&["plugins", "info", "hostile"], &env);
        assert!(info.success(), "{mode}: {}", info.stderr);
        assert!(
            info.stdout
                .lines()
                .any(|l| l.starts_with("problem") && l.contains("aborted")),
            "{mode}: {}",
            info.stdout
        );

        let doctor = sandbox.ctxhost_with_env(&["plugins", "doctor"], &env);
        assert_eq!(doctor.code, Some(1), "{mode}: {}", doctor.stdout);
        assert!(
            doctor
                .stdout
                .lines()
                .any(|l| l.starts_with("problem  hostile:") && l.contains("aborted")),
            "{mode}: {}",
            doctor.stdout
        );
        assert!(
            doctor.stdout.contains("ok       window:"),
            "{mode}: {}",
            doctor.stdout
        );

        let run = sandbox.ctxhost_with_env(&["run", path.to_str().unwrap(), "--json"], &env);
        assert_eq!(run.code, Some(3), "{mode}: {}", run.stderr);
        assert_eq!(run.json()["runs"][0]["engine"], "compressor", "{mode}");
        assert_eq!(
            run.stderr_lines()
                .into_iter()
                .filter(names_the_crash)
                .count(),
            1,
            "{mode}: {}",
            run.stderr
        );
    }
}

#[test]
fn plugins_install_loads_the_library_in_a_child_and_refuses_one_that_aborts_while_loading() {
    let hostile = ctxhost_tests::library("ctxhost_fixture_hostile");
    let lib_name = hostile.file_name().unwrap().to_str().unwrap().to_string();
    for mode in ["manifest", "constructor"] {
        let sandbox = Sandbox::new();
        sandbox.write_config("context:\n  engine: compressor\n");
        let manifest = sandbox.write(
            "hostile.yaml",
            "name: hostile\nversion: 0.1.0\nlibrary: ctxhost_fixture_hostile\n",
        );
        let args = [
            "plugins",
            "install",
            hostile.to_str().unwrap(),
            "--manifest",
            manifest.to_str().unwrap(),
            "--enable",
        ];
        let env = [("CTXHOST_HOSTILE_LOAD", mode)];
        let refused = sandbox.ctxhost_with_env(&args, &env);
        assert_eq!(refused.code, Some(1), "{mode}: {}", refused.stderr);
        let lines = refused.stderr_lines();
        assert_eq!(lines.len(), 1, "{mode}: one line: {}", refused.stderr);
        assert!(
            lines[0].contains("does not load")
                && lines[0].contains("hostile")
                && lines[0].contains("aborted"),
            "{mode}: {}",
            lines[0]
        );
        // Nothing installed, no staging directory left, nothing approved.
        assert!(!sandbox.installed_dir("hostile").exists(), "{mode}");
        let root = sandbox.home().join("plugins/context_engine");
        let left: Vec<_> = std::fs::read_dir(&root)
            .map(|dir| dir.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{mode}: left behind: {left:?}");
        assert!(!sandbox.config_text().contains("hostile"), "{mode}");

        // The same library, loading normally, installs.
        let installed = sandbox.ctxhost(&args);
        assert!(installed.success(), "{mode}: {}", installed.stderr);
        assert!(
            installed.stdout.starts_with("installed hostile "),
            "{mode}: {}",
            installed.stdout
        );
        assert!(sandbox.installed_dir("hostile").join(&lib_name).is_file());
    }
}

#[test]
fn an_isolated_engine_makes_the_same_contexts_as_in_process() {
    // The window engine keeps runs of its input, clears old tool output and adds a marker:
    // what crosses back from its process is runs of the input plus those new messages. The
    // third run's window comes from the command line, which its process must see too.
    let transcript = Value::Array(long_session());
    let mut outcomes = Vec::new();
    for (isolation, configured, extra) in [
        ("in_process", 16_000, &[][..]),
        ("process", 16_000, &[][..]),
        ("process", 1_000_000, &["--context-length", "16000"][..]),
    ] {
        let sandbox = Sandbox::new();
        sandbox.add_plugin("window", "ctxhost_engine_window");
        sandbox.write_config(&format!(
            "context:\n  engine: window\nmodel:\n  context_length: {configured}\nplugins:\n  \
             window:\n    isolation: {isolation}\n"
        ));
        let (run, out) = run_with_out_and(&sandbox, &transcript, extra);
        assert!(run.success(), "{isolation}: {}", run.stderr);
        let report = &run.json()["runs"][0];
        assert_eq!(report["engine"], "window", "{isolation}");
        assert!(report["errors"].as_array().unwrap().is_empty(), "{report}");
        let shape: Vec<Value> = report["compressions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                json!([
                    c["call"],
                    c["tokens_before"],
                    c["tokens_after"],
                    c["messages_before"],
                    c["messages_after"],
                    c["error"]
                ])
            })
            .collect();
        assert!(shape.len() >= 2, "{isolation}: {report}");
        outcomes.push((shape, std::fs::read_to_string(&out).unwrap()));
    }
    for other in &outcomes[1..] {
        assert_eq!(outcomes[0].0, other.0, "the same compressions");
        assert!(
            outcomes[0].1 == other.1,
            "the same final context, byte for byte"
        );
    }
}

/// Every operation a session makes, on the lossless engine (tools, sessions, its own
/// operations), answered as JSON with what varies between two runs taken out: the sandbox's
/// path, times, and the store's file sizes.
fn every_operation(isolated: bool) -> Vec<(&'static str, Value)> {
    use ctxhost_core::session::SessionError;
    use ctxhost_sdk::{CompressOptions, Message, Usage};

    let sandbox = Sandbox::new();
    sandbox.add_plugin("lcm", "ctxhost_engine_lcm");
    sandbox.write_config("model:\n  context_length: 16000\n");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let config = Config::load(&sandbox.config_path()).unwrap();
    let mut engines =
        Engines::for_config(config, sandbox.home(), runtime.handle().clone(), false).unwrap();
    let options = || {
        let options = SessionOptions::new("probe").strict();
        if isolated {
            options.isolated()
        } else {
            options
        }
    };
    if isolated {
        // Not vacuous: the isolated engine is started by the program set here.
        engines.set_child_program(sandbox.path().join("no-such-ctxhost"));
        assert!(engines.open_session("lcm", options()).is_err());
    }
    engines.set_child_program(binary());
    let mut session = engines.open_session("lcm", options()).unwrap();
    let messages: Vec<Message> = long_session()[..60]
        .iter()
        .map(|m| serde_json::from_value(m.clone()).unwrap())
        .collect();
    let messages = Arc::new(messages);
    let sandbox_path = sandbox.path().display().to_string();
    let answer = |result: Result<Value, SessionError>| match result {
        Ok(value) => json!({"ok": value}),
        Err(error) => json!({"err": error.to_string()}),
    };
    let mut steps: Vec<(&'static str, Value)> = Vec::new();
    runtime.block_on(async {
        steps.push(("begin", answer(session.begin().await.map(|()| Value::Null))));
        steps.push((
            "update_model",
            answer(session.update_model("gpt-4o".into(), 16_000).await.map(|()| Value::Null)),
        ));
        let usage = Usage {
            prompt_tokens: 15_000,
            completion_tokens: 20,
            total_tokens: 15_020,
            ..Usage::default()
        };
        steps.push(("record_usage", answer(session.record_usage(usage).await.map(|()| Value::Null))));
        steps.push((
            "should_compress",
            answer(session.should_compress(15_000).await.map(Value::Bool)),
        ));
        steps.push((
            "should_compress_preflight",
            answer(session.should_compress_preflight(messages.clone()).await.map(Value::Bool)),
        ));
        let force = CompressOptions {
            force: true,
            ..CompressOptions::default()
        };
        let compression = session.compress(messages.clone(), force).await;
        assert!(compression.error.is_none(), "{:?}", compression.error);
        steps.push((
            "compress",
            json!({"messages": serde_json::to_value(&*compression.messages).unwrap(), "report": serde_json::to_value(&compression.report).unwrap()}),
        ));
        steps.push(("status", answer(session.status().await.map(|s| serde_json::to_value(&s).unwrap()))));
        let tools = session.tool_schemas().await;
        steps.push(("tool_schemas", answer(tools.map(|t| serde_json::to_value(&t).unwrap()))));
        let grep = json!({"pattern": "def "});
        steps.push(("call_tool", answer(session.call_tool("lcm_grep".into(), grep).await.map(Value::String))));
        steps.push((
            "call_tool unknown",
            answer(session.call_tool("nope".into(), json!({})).await.map(Value::String)),
        ));
        steps.push(("list_sessions", answer(session.list_sessions().await.map(|s| serde_json::to_value(&s).unwrap()))));
        steps.push(("session_info", answer(session.session_info("probe".into()).await.map(|s| serde_json::to_value(&s).unwrap()))));
        steps.push((
            "session_info unknown",
            answer(session.session_info("nope".into()).await.map(|s| serde_json::to_value(&s).unwrap())),
        ));
        steps.push(("invoke", answer(session.invoke("status".into(), Value::Null).await)));
        steps.push(("invoke unknown", answer(session.invoke("nope".into(), Value::Null).await)));
        steps.push((
            "delete_session unknown",
            answer(session.delete_session("nope".into()).await.map(Value::Bool)),
        ));
        steps.push(("end", answer(session.end(messages.clone()).await.map(|()| Value::Null))));
    });
    assert!(session.fallback().is_none(), "{:?}", session.fallback());
    for (_, value) in &mut steps {
        normalize(value, &sandbox_path);
    }
    steps
}

fn normalize(value: &mut Value, sandbox_path: &str) {
    match value {
        Value::String(text) => *text = text.replace(sandbox_path, "SANDBOX"),
        Value::Array(items) => items.iter_mut().for_each(|v| normalize(v, sandbox_path)),
        Value::Object(map) => {
            for key in ["updated", "elapsed_ms", "database_bytes", "wal_bytes"] {
                if let Some(varying) = map.get_mut(key) {
                    *varying = Value::Bool(!varying.is_null());
                }
            }
            map.values_mut().for_each(|v| normalize(v, sandbox_path));
        }
        _ => {}
    }
}

#[test]
fn every_operation_answers_the_same_in_process_and_isolated() {
    let in_process = every_operation(false);
    let isolated = every_operation(true);
    assert_eq!(in_process.len(), isolated.len());
    for ((step, here), (_, there)) in in_process.iter().zip(&isolated) {
        assert_eq!(
            here, there,
            "{step}: the same answer in process and isolated"
        );
    }
    // The answers say something: the engine compressed, has tools and found what was asked.
    let find = |name: &str| &in_process.iter().find(|(step, _)| *step == name).unwrap().1;
    assert!(find("tool_schemas")["ok"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    assert!(find("call_tool")["ok"].is_string(), "{}", find("call_tool"));
    assert!(
        find("compress")["report"].is_object(),
        "{}",
        find("compress")
    );
    assert!(find("invoke unknown")["err"].is_string());
    assert!(find("list_sessions")["ok"]
        .as_array()
        .is_some_and(|s| !s.is_empty()));
}

/// A user's request answered by `rounds` tool calls, each with its result: a turn in progress.
fn turn_in_progress(rounds: usize) -> Vec<Value> {
    let mut turn = vec![
        json!({"role": "user", "content": "Now run the whole test suite and fix what fails."}),
    ];
    for round in 0..rounds {
        let id = format!("call_active_{round}");
        turn.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "bash", "arguments": format!("{{\"cmd\": \"pytest -k part{round}\"}}")}}
        ]}));
        turn.push(json!({"role": "tool", "tool_call_id": id, "content": format!("part {round}: 14 passed, 0 failed")}));
    }
    turn
}

#[test]
fn an_engine_that_drops_the_turn_in_progress_is_refused_and_run_keeps_every_result_of_it() {
    let turn = turn_in_progress(12);
    let mut transcript: Vec<Value> = long_session()[..40].to_vec();
    transcript.extend(turn.iter().cloned());
    for isolation in ["process", "in_process"] {
        let sandbox = Sandbox::new();
        sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
        sandbox.write_config(&config_in("drop_active_turn", isolation));
        let (run, out) = run_with_out(&sandbox, &Value::Array(transcript.clone()));
        assert_eq!(run.code, Some(3), "{isolation}: {}", run.stderr);
        assert_eq!(run.json()["runs"][0]["fell_back_to"], "compressor");
        assert!(
            run.stderr_lines()
                .iter()
                .any(|l| l.contains("hostile") && l.contains("turn in progress")),
            "{isolation}: {}",
            run.stderr
        );
        let context: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let results: Vec<&Value> = turn.iter().filter(|m| m["role"] == "tool").collect();
        assert_eq!(results.len(), 12);
        for result in results {
            assert!(
                context.contains(result),
                "{isolation}: {} is lost",
                result["tool_call_id"]
            );
        }
    }
}

#[test]
fn the_gateway_sends_a_request_ending_in_a_tool_result_with_it_when_the_engine_drops_it() {
    // Each compression runs on the request that needs it: on this one's turn in progress.
    let (upstream, _sandbox, gateway) = hostile_gateway(&format!(
        "{}serve:\n  compaction:\n    background: false\n",
        config("drop_active_turn")
    ));
    let send = |messages: &Value| send_chat(&gateway, "a", messages);
    let first = json!([{"role": "user", "content": "one"}]);
    assert_eq!(send(&first).status(), 200);
    // The engine asked to compress after the first call; this request ends in the results of
    // the turn in progress, which the engine drops.
    let mut second = vec![
        json!({"role": "user", "content": "one"}),
        json!({"role": "assistant", "content": "ok"}),
    ];
    second.extend(turn_in_progress(3));
    let second = Value::Array(second);
    let answered = send(&second);
    assert_eq!(answered.status(), 200);
    let error = answered.headers()["x-ctxhost-engine-error"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        error.contains("hostile") && error.contains("turn in progress"),
        "{error}"
    );
    let requests = upstream.chat_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages(), second.as_array().unwrap().clone());
}

/// The hostile plugin in `mode`, isolated, with `extra` lines in its section.
fn hostile_config(mode: &str, extra: &str) -> String {
    hostile_config_in(mode, "process", extra)
}

#[test]
fn a_hanging_should_compress_meets_the_check_deadline_and_run_falls_back() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
    // A long deadline for everything else: only the checks' own one can end the wait.
    sandbox.write_config(&hostile_config(
        "hang_should_compress",
        "    timeout: 600\n    check_timeout: 0.5\n",
    ));
    let (run, _) = run_with_out(&sandbox, &Value::Array(long_session()[..30].to_vec()));
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    let report = run.json();
    assert_eq!(report["runs"][0]["fell_back_to"], "compressor", "{report}");
    assert!(
        run.stderr_lines().iter().any(|l| l.contains("hostile")
            && l.contains("did not answer within 0.5s (plugins.hostile.check_timeout)")),
        "{}",
        run.stderr
    );

    let doctor = sandbox.ctxhost(&["plugins", "doctor"]);
    assert_eq!(doctor.code, Some(1), "{}", doctor.stdout);
    let line = doctor
        .stdout
        .lines()
        .find(|l| l.contains("hostile:"))
        .unwrap();
    assert!(
        line.starts_with("problem")
            && line.contains("check_timeout")
            && line.contains("should_compress"),
        "{line}"
    );
}

#[test]
fn the_gateway_says_the_engine_failed_when_its_check_hangs_and_goes_on_with_the_compressor() {
    let (upstream, _sandbox, gateway) = hostile_gateway(&hostile_config(
        "hang_should_compress",
        "    timeout: 600\n    check_timeout: 0.5\n",
    ));
    let send = |messages: &Value| send_chat(&gateway, "a", messages);
    let first = send(&json!([{"role": "user", "content": "one"}]));
    assert_eq!(first.status(), 200);
    let error = first.headers()["x-ctxhost-engine-error"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        error.contains("hostile") && error.contains("check_timeout"),
        "{error}"
    );
    assert_eq!(first.headers()["x-ctxhost-engine"], "compressor");
    let second = send(
        &json!([{"role": "user", "content": "one"}, {"role": "assistant", "content": "ok"},
                              {"role": "user", "content": "two"}]),
    );
    assert_eq!(second.status(), 200);
    assert_eq!(second.headers()["x-ctxhost-engine"], "compressor");
    assert_eq!(upstream.chat_requests().len(), 2);
}

/// The engine error a response carries, or a panic naming what it carried instead.
fn engine_error(response: &reqwest::blocking::Response) -> String {
    match response.headers().get("x-ctxhost-engine-error") {
        Some(error) => error.to_str().unwrap().to_string(),
        None => panic!(
            "no x-ctxhost-engine-error; the headers: {:?}",
            response.headers()
        ),
    }
}

#[test]
fn the_turn_whose_should_compress_timed_out_says_so() {
    for (background, when) in [
        (
            "true",
            "asked before the request, for a compression to prepare",
        ),
        ("false", "asked after the answer, for the next request"),
    ] {
        let (upstream, _sandbox, gateway) = hostile_gateway(&format!(
            "{}serve:\n  compression:\n    background: {background}\n",
            hostile_config(
                "hang_should_compress_only",
                "    timeout: 600\n    check_timeout: 0.5\n",
            )
        ));
        let first = send_chat(&gateway, "a", &json!([{"role": "user", "content": "one"}]));
        assert_eq!(first.status(), 200, "{when}");
        let error = engine_error(&first);
        assert!(
            error.contains("hostile")
                && error.contains("should_compress")
                && error.contains("check_timeout"),
            "{when}: {error}"
        );
        assert_eq!(upstream.chat_requests().len(), 1, "{when}");
    }
}

#[test]
fn a_smaller_timeout_caps_the_checks_deadline() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
    // `check_timeout` is left at its default (10 s): the smaller `timeout` is the checks' too.
    sandbox.write_config(&hostile_config("hang_should_compress", "    timeout: 2\n"));
    let (run, _) = run_with_out(&sandbox, &Value::Array(long_session()[..30].to_vec()));
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stderr_lines().iter().any(|l| l.contains("hostile")
            && l.contains("did not answer within 2s (plugins.hostile.timeout")),
        "{}",
        run.stderr
    );
}

/// Whether process `pid` has ended: it no longer exists, or only its exit status is left for
/// its parent to collect (a zombie).
#[cfg(target_os = "linux")]
fn ended(pid: i32) -> bool {
    // SAFETY: signal 0 sends nothing; it asks whether the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    })
}

/// Polls until `pid` has ended, for at most a minute; kills it if it has not (so a failing
/// test leaves nothing running) and says whether it ended on its own.
#[cfg(target_os = "linux")]
fn ends(pid: i32) -> bool {
    for _ in 0..1200 {
        if ended(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: a plain signal to a process this test made.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    false
}

/// The process id a plugin wrote to `path`, waiting (at most two minutes) for it to appear.
#[cfg(target_os = "linux")]
fn written_pid(path: &std::path::Path) -> i32 {
    for _ in 0..2400 {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no process id in {}", path.display());
}

#[cfg(target_os = "linux")]
#[test]
fn a_timeout_kills_what_the_plugin_started_too() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
    let pid_file = sandbox.path().join("grandchild.pid");
    sandbox.write_config(&hostile_config(
        "spawn_grandchild",
        &format!(
            "    timeout: 2\n    grandchild_pid_file: {}\n",
            pid_file.display()
        ),
    ));
    let (run, _) = run_with_out(&sandbox, &Value::Array(long_session()[..30].to_vec()));
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stderr.contains("did not answer within 2s"),
        "{}",
        run.stderr
    );
    let grandchild = written_pid(&pid_file);
    assert!(
        ends(grandchild),
        "the plugin's own process {grandchild} outlived the timeout"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn an_isolated_engine_dies_with_its_host() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
    let pid_file = sandbox.path().join("engine.pid");
    // `compress` loops, keeping a core busy, with all the time in the world.
    sandbox.write_config(&hostile_config(
        "hang",
        &format!("    timeout: 600\n    pid_file: {}\n", pid_file.display()),
    ));
    let transcript = sandbox.write_json("t.json", &Value::Array(long_session()[..30].to_vec()));
    let mut host = sandbox
        .command(&["run", transcript.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let engine = written_pid(&pid_file);
    assert_ne!(
        engine,
        host.id() as i32,
        "the engine runs in a process of its own"
    );
    host.kill().unwrap();
    host.wait().unwrap();
    assert!(
        ends(engine),
        "the engine's process {engine} outlived its host"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn an_answer_over_the_reply_limit_fails_its_call_unread_in_bounded_host_memory() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
    // 200 MiB of one piece, past the default limit of 64 MiB: read whole, parsed and counted,
    // it took the host to gigabytes.
    sandbox.write_config(&hostile_config(
        "huge",
        "    timeout: 600\n    huge_mb: 200\n",
    ));
    let transcript = sandbox.write_json("t.json", &Value::Array(long_session()[..30].to_vec()));
    let stderr_path = sandbox.path().join("err");
    let mut command = sandbox.command(&["run", transcript.to_str().unwrap()]);
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    let (success, peak) = ctxhost_tests::memory::wait_measured(command.spawn().unwrap());
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    let peak = peak.expect("the host's peak memory (Linux reports it)");
    assert!(
        peak < 128 << 20,
        "the host peaked at {} MiB reading a 200 MiB answer",
        peak >> 20
    );
    // The run finishes on the compressor, and says why.
    assert!(!success, "{stderr}");
    assert!(
        stderr.contains("hostile")
            && stderr.contains("over its limit of 64 MiB")
            && stderr.contains("plugins.hostile.max_reply_mb"),
        "{stderr}"
    );
}

/// The hostile plugin starting a process of its own in `compress` (its id written to
/// `pid_file`), then hanging with all the time in the world.
#[cfg(target_os = "linux")]
fn grandchild_config(pid_file: &std::path::Path) -> String {
    hostile_config(
        "spawn_grandchild",
        &format!(
            "    timeout: 600\n    grandchild_pid_file: {}\n",
            pid_file.display()
        ),
    )
}

#[cfg(target_os = "linux")]
#[test]
fn what_the_plugin_started_dies_when_run_is_killed() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("hostile", "ctxhost_fixture_hostile");
    let pid_file = sandbox.path().join("grandchild.pid");
    sandbox.write_config(&grandchild_config(&pid_file));
    let transcript = sandbox.write_json("t.json", &Value::Array(long_session()[..30].to_vec()));
    let mut host = sandbox
        .command(&["run", transcript.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let grandchild = written_pid(&pid_file);
    // SIGKILL: nothing of the host runs after it.
    host.kill().unwrap();
    host.wait().unwrap();
    assert!(
        ends(grandchild),
        "the plugin's own process {grandchild} outlived its SIGKILLed host"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn what_the_plugin_started_dies_when_serve_is_killed() {
    let pid_file = tempfile::tempdir().unwrap();
    let pid_file = pid_file.path().join("grandchild.pid");
    let config = format!(
        "{}serve:\n  compaction:\n    background: false\n",
        grandchild_config(&pid_file)
    );
    let (_upstream, _sandbox, mut gateway) = hostile_gateway(&config);
    assert!(answered_by_the_engine(&send_chat(
        &gateway,
        "s",
        &history(0, "m1")
    )));
    let base_url = gateway.base_url();
    // The turn whose compression starts the process never gets its answer: the host dies.
    let turn = std::thread::spawn(move || {
        let _ = reqwest::blocking::Client::new()
            .post(format!("{base_url}/chat/completions"))
            .header("x-ctxhost-session", "s")
            .json(&json!({"model": "gpt-4o", "messages": history(1, "m2")}))
            .send();
    });
    let grandchild = written_pid(&pid_file);
    // SIGKILL: nothing of the host runs after it.
    gateway.kill();
    turn.join().unwrap();
    assert!(
        ends(grandchild),
        "the plugin's own process {grandchild} outlived its SIGKILLed host"
    );
}

/// The engine processes `ctxhost serve` (process `pid`) runs now: its children started as
/// `ctxhost __engine-child`.
#[cfg(target_os = "linux")]
fn engine_children(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let listed = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        children.extend(
            listed
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
    }
    children.retain(|child| {
        std::fs::read(format!("/proc/{child}/cmdline"))
            .is_ok_and(|line| line.split(|b| *b == 0).any(|arg| arg == b"__engine-child"))
    });
    children
}

/// The hostile plugin recording each session's compressions under `dir`, in `processes`
/// processes, each compression on the request that needs it.
fn recording_config(dir: &std::path::Path, processes: usize) -> String {
    recording_config_with(dir, processes, "")
}

/// [`recording_config`] with more of the plugin's keys (`    key: value\n` lines).
fn recording_config_with(dir: &std::path::Path, processes: usize, keys: &str) -> String {
    format!(
        "{}serve:\n  compaction:\n    background: false\n",
        hostile_config(
            "record",
            &format!(
                "    timeout: 120\n    processes: {processes}\n    record_dir: {}\n{keys}",
                dir.display()
            )
        )
    )
}

/// Two turns of each of `sessions` (the second compressed: recorded as `1 m2`), all answered
/// by the engine in its one process; that process.
fn two_turns_each(gateway: &ctxhost_tests::gateway::GatewayProcess, sessions: &[&str]) -> Vec<u32> {
    for turns in 0..2 {
        for session in sessions {
            let messages = history(turns, &format!("m{}", turns + 1));
            let response = send_chat(gateway, session, &messages);
            assert!(
                answered_by_the_engine(&response),
                "{session}: {:?}",
                response.headers()
            );
        }
    }
    let children = engine_children(gateway.pid());
    assert_eq!(children.len(), 1, "{children:?}");
    children
}

/// Waits until `session`'s record holds `line`: the call that writes it is then in flight.
fn await_record(dir: &std::path::Path, session: &str, line: &str) {
    let mut waited = 0;
    loop {
        let found = std::fs::read_dir(dir).unwrap().flatten().any(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.starts_with(&format!("{session}_"))
                && !name.ends_with(".closed")
                && std::fs::read_to_string(entry.path())
                    .is_ok_and(|text| text.lines().any(|l| l == line))
        });
        if found {
            return;
        }
        assert!(waited < 2400, "{session} never recorded {line:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
}

/// A session's history after `turns` user messages `m1`, `m2`, ... each answered "ok", then
/// `last` from the user.
fn history(turns: usize, last: &str) -> Value {
    let mut messages = Vec::new();
    for turn in 1..=turns {
        messages.push(json!({"role": "user", "content": format!("m{turn}")}));
        messages.push(json!({"role": "assistant", "content": "ok"}));
    }
    messages.push(json!({"role": "user", "content": last}));
    Value::Array(messages)
}

/// What the hostile plugin recorded for `session`: one line per compression.
fn recorded(dir: &std::path::Path, session: &str) -> Vec<String> {
    let file = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .find(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            // The gateway's engine session is the client's, then its credential's digest.
            name.starts_with(&format!("{session}_")) && !name.ends_with(".closed")
        })
        .unwrap_or_else(|| panic!("no record of session {session}"));
    std::fs::read_to_string(file.path())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Whether the engine instance of `session` was dropped (in `record` mode).
fn closed(dir: &std::path::Path, session: &str) -> bool {
    std::fs::read_dir(dir).unwrap().flatten().any(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        name.starts_with(&format!("{session}_")) && name.ends_with(".closed")
    })
}

/// A turn answered by the isolated engine itself, with no engine error.
fn answered_by_the_engine(response: &reqwest::blocking::Response) -> bool {
    response.status() == 200
        && response.headers()["x-ctxhost-engine"] == "hostile"
        && !response.headers().contains_key("x-ctxhost-engine-error")
}

#[cfg(target_os = "linux")]
#[test]
fn three_hundred_sessions_run_in_the_plugins_few_processes() {
    let (_upstream, sandbox, gateway) = hostile_gateway(&hostile_config(
        "echo",
        "    timeout: 120\n    processes: 2\n",
    ));
    for session in 0..300 {
        let first = send_chat(&gateway, &format!("s{session}"), &history(0, "hello"));
        assert!(
            answered_by_the_engine(&first),
            "{session}: {:?}",
            first.headers()
        );
    }
    let children = engine_children(gateway.pid());
    assert_eq!(
        children.len(),
        2,
        "300 sessions share the plugin's 2 processes, least loaded first: {children:?}"
    );
    // Every session is still served there, in its own engine instance.
    for session in [0, 149, 299] {
        let second = send_chat(&gateway, &format!("s{session}"), &history(1, "again"));
        assert!(
            answered_by_the_engine(&second),
            "{session}: {:?}",
            second.headers()
        );
    }
    assert_eq!(engine_children(gateway.pid()), children);
    drop(sandbox);
}

#[cfg(target_os = "linux")]
#[test]
fn a_crash_in_one_sessions_call_fails_that_call_only_and_the_others_reopen_with_their_state() {
    let records = tempfile::tempdir().unwrap();
    let (_upstream, _sandbox, gateway) = hostile_gateway(&recording_config(records.path(), 1));
    let others = ["a", "b", "c"];
    let before = two_turns_each(&gateway, &others);
    // The same process serves the session whose compression aborts it.
    assert!(answered_by_the_engine(&send_chat(
        &gateway,
        "x",
        &history(0, "m1")
    )));
    let crashed = send_chat(&gateway, "x", &history(1, "crash"));
    assert_eq!(crashed.status(), 200);
    let error = crashed.headers()["x-ctxhost-engine-error"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        error.contains("hostile") && error.contains("aborted"),
        "{error}"
    );

    for session in others {
        let response = send_chat(&gateway, session, &history(2, "m3"));
        assert!(
            answered_by_the_engine(&response),
            "{session}: {:?}",
            response.headers()
        );
        // Numbered on from the state its store held: the instance reopened with it.
        assert_eq!(
            recorded(records.path(), session),
            ["1 m2", "2 m3"],
            "{session}"
        );
    }
    let after = engine_children(gateway.pid());
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(
        after, before,
        "a new process took the crashed one's sessions"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_call_that_hangs_fails_the_calls_in_flight_with_it_and_the_others_reopen_with_their_state() {
    let records = tempfile::tempdir().unwrap();
    // The hanging call is a per-turn check: its 2 s deadline passes long before the 120 s of
    // the compression in flight beside it, whatever the machine's load.
    let config = recording_config_with(records.path(), 1, "    check_timeout: 2\n");
    let (_upstream, _sandbox, gateway) = hostile_gateway(&config);
    let before = two_turns_each(&gateway, &["stalled", "idle"]);
    let base_url = gateway.base_url();
    let (stalled, hung) = std::thread::scope(|scope| {
        // A compression that does not answer (within its 120 s)...
        let stalled = scope.spawn(|| send_chat_to(&base_url, "stalled", &history(2, "stall")));
        await_record(records.path(), "stalled", "2 stall");
        // ...in flight when another session's check hangs in the same process.
        let hung = scope.spawn(|| send_chat_to(&base_url, "hung", &history(0, "hang")));
        await_record(records.path(), "hung", "1 hang");
        (stalled.join().unwrap(), hung.join().unwrap())
    });
    let error = |response: &reqwest::blocking::Response| {
        assert_eq!(
            response.status(),
            200,
            "the turn goes on with the compressor"
        );
        response.headers()["x-ctxhost-engine-error"]
            .to_str()
            .unwrap()
            .to_string()
    };
    let hung_error = error(&hung);
    assert!(
        hung_error.contains("hostile") && hung_error.contains("did not answer within 2s"),
        "{hung_error}"
    );
    let stalled_error = error(&stalled);
    assert!(
        stalled_error.contains("was killed during compress")
            && stalled_error.contains("another call")
            && stalled_error.contains("did not answer within 2s"),
        "{stalled_error}"
    );
    // A session with nothing in flight reopens with its state on a new process.
    let idle = send_chat(&gateway, "idle", &history(2, "m3"));
    assert!(answered_by_the_engine(&idle), "{:?}", idle.headers());
    assert_eq!(recorded(records.path(), "idle"), ["1 m2", "2 m3"]);
    // The session whose call was only in flight beside the hung one failed that call once; it
    // reopens with its state at its next call, like the idle one.
    let stalled = send_chat(&gateway, "stalled", &after("stall"));
    assert!(answered_by_the_engine(&stalled), "{:?}", stalled.headers());
    assert_eq!(
        recorded(records.path(), "stalled"),
        ["1 m2", "2 stall", "3 m4"]
    );
    let after = engine_children(gateway.pid());
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(
        after, before,
        "a new process took the killed one's sessions"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_session_whose_call_was_in_flight_when_another_crashed_the_process_keeps_its_engine() {
    let records = tempfile::tempdir().unwrap();
    let (_upstream, _sandbox, gateway) = hostile_gateway(&recording_config(records.path(), 1));
    let before = two_turns_each(&gateway, &["stalled", "x"]);
    let base_url = gateway.base_url();
    let (stalled, crashed) = std::thread::scope(|scope| {
        // A compression that does not answer (within its 120 s)...
        let stalled = scope.spawn(|| send_chat_to(&base_url, "stalled", &history(2, "stall")));
        await_record(records.path(), "stalled", "2 stall");
        // ...in flight when another session's compression aborts the process they share.
        let crashed = send_chat_to(&base_url, "x", &history(2, "crash"));
        (stalled.join().unwrap(), crashed)
    });
    for response in [&stalled, &crashed] {
        assert_eq!(response.status(), 200, "the turn goes on unchanged");
        let error = response.headers()["x-ctxhost-engine-error"]
            .to_str()
            .unwrap();
        assert!(
            error.contains("hostile") && error.contains("aborted"),
            "{error}"
        );
    }
    // The next turn of the session that was only in flight is the plugin's again, on a new
    // process, with its state.
    let stalled = send_chat(&gateway, "stalled", &after("stall"));
    assert!(answered_by_the_engine(&stalled), "{:?}", stalled.headers());
    assert_eq!(
        recorded(records.path(), "stalled"),
        ["1 m2", "2 stall", "3 m4"]
    );
    let after = engine_children(gateway.pid());
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(
        after, before,
        "a new process took the crashed one's sessions"
    );
}

/// The history after the turn `last` (answered "ok"), then `m4`.
fn after(last: &str) -> Value {
    let mut messages = history(2, last);
    let list = messages.as_array_mut().unwrap();
    list.push(json!({"role": "assistant", "content": "ok"}));
    list.push(json!({"role": "user", "content": "m4"}));
    messages
}

/// The gateway's `/metrics` text.
fn metrics(gateway: &ctxhost_tests::gateway::GatewayProcess) -> String {
    reqwest::blocking::get(format!(
        "{}/metrics",
        gateway.base_url().trim_end_matches("/v1")
    ))
    .unwrap()
    .text()
    .unwrap()
}

/// How many engine operations of the hostile plugin failed, as `/metrics` counts them.
fn engine_failures(gateway: &ctxhost_tests::gateway::GatewayProcess) -> u64 {
    let prefix = "ctxhost_engine_failures_total{engine=\"hostile\"} ";
    metrics(gateway)
        .lines()
        .find_map(|line| line.strip_prefix(prefix))
        .map_or(0, |count| count.parse().unwrap())
}

#[cfg(target_os = "linux")]
#[test]
fn reply_lines_an_engine_writes_for_calls_it_was_not_asked_answer_nothing_and_break_its_process() {
    // What the hostile plugin's forged reply lines say.
    const FORGED: &str = "answered by another session's engine";
    let records = tempfile::tempdir().unwrap();
    let (_upstream, _sandbox, gateway) = hostile_gateway(&recording_config(records.path(), 1));
    let before = two_turns_each(&gateway, &["stalled", "x"]);
    let failures = engine_failures(&gateway);
    let base_url = gateway.base_url();
    let (stalled, forger) = std::thread::scope(|scope| {
        // A compression that does not answer (within its 120 s)...
        let stalled = scope.spawn(|| send_chat_to(&base_url, "stalled", &history(2, "stall")));
        await_record(records.path(), "stalled", "2 stall");
        // ...in flight when another session's engine, asked to compress, writes reply lines
        // onto the shared process's pipe for every call number it can guess, the stalled
        // call's among them.
        let forger = send_chat_to(&base_url, "x", &history(2, "forge_frames"));
        (stalled.join().unwrap(), forger)
    });
    for response in [&stalled, &forger] {
        assert_eq!(response.status(), 200, "the turn goes on unchanged");
        let error = engine_error(response);
        assert!(
            !error.contains(FORGED),
            "answered by a forged line: {error}"
        );
        assert!(
            error.contains("hostile")
                && error.contains("broke its process's protocol")
                && error.contains("no call in flight"),
            "{error}"
        );
    }
    // Logged and counted, once per call it failed.
    gateway.wait_for_logs("broke its process's protocol", 2);
    assert_eq!(engine_failures(&gateway), failures + 2);
    // Both sessions are the plugin's again at their next call, on a new process, with their
    // state.
    for (session, last) in [("stalled", "stall"), ("x", "forge_frames")] {
        let next = send_chat(&gateway, session, &after(last));
        assert!(
            answered_by_the_engine(&next),
            "{session}: {:?}",
            next.headers()
        );
        assert_eq!(
            recorded(records.path(), session),
            ["1 m2", &format!("2 {last}"), "3 m4"],
            "{session}"
        );
    }
    let after = engine_children(gateway.pid());
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(
        after, before,
        "a new process took the broken one's sessions"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn calls_of_one_session_stay_in_order_under_64_concurrent_sessions() {
    let records = tempfile::tempdir().unwrap();
    let (_upstream, _sandbox, gateway) = hostile_gateway(&recording_config(records.path(), 1));
    let turns = 6;
    let base_url = gateway.base_url();
    std::thread::scope(|scope| {
        for session in 0..64 {
            let base_url = &base_url;
            scope.spawn(move || {
                let name = format!("c{session}");
                for turn in 0..turns {
                    let messages = history(turn, &format!("m{}", turn + 1));
                    let response = send_chat_to(base_url, &name, &messages);
                    assert!(
                        answered_by_the_engine(&response),
                        "{name}: {:?}",
                        response.headers()
                    );
                }
            });
        }
    });
    for session in 0..64 {
        let expected: Vec<String> = (1..turns).map(|n| format!("{n} m{}", n + 1)).collect();
        assert_eq!(
            recorded(records.path(), &format!("c{session}")),
            expected,
            "c{session}"
        );
    }
    assert_eq!(engine_children(gateway.pid()).len(), 1);
}

#[cfg(target_os = "linux")]
#[test]
fn a_session_evicted_from_the_gateway_frees_its_engine_instance_in_the_shared_process() {
    let records = tempfile::tempdir().unwrap();
    let config = format!(
        "{}  limits:\n    max_live_sessions: 2\n",
        recording_config(records.path(), 1)
    );
    let (_upstream, _sandbox, gateway) = hostile_gateway(&config);
    for session in ["e1", "e2"] {
        for turns in 0..2 {
            let messages = history(turns, &format!("m{}", turns + 1));
            assert!(answered_by_the_engine(&send_chat(
                &gateway, session, &messages
            )));
        }
    }
    assert!(!closed(records.path(), "e1"));
    let process = engine_children(gateway.pid());
    // A third live session: the least recently used one leaves memory, and its instance the
    // engine's process, which goes on serving the others.
    assert!(answered_by_the_engine(&send_chat(
        &gateway,
        "e3",
        &history(0, "m1")
    )));
    let mut waited = 0;
    while !closed(records.path(), "e1") {
        assert!(waited < 1200, "e1's engine instance is still open");
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
    assert!(!closed(records.path(), "e2"));
    assert_eq!(engine_children(gateway.pid()), process);
    // Back, it reopens from its store.
    assert!(answered_by_the_engine(&send_chat(
        &gateway,
        "e1",
        &history(2, "m3")
    )));
    assert_eq!(recorded(records.path(), "e1"), ["1 m2", "2 m3"]);
}
