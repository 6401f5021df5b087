//! Real agents (Codex CLI, Claude Code, Hermes Agent: pinned releases the suite installs) in
//! long sessions through `ctxhost serve`, with the compressor and with lcm: the scripted model
//! has each run shell commands round after round while reporting a prompt usage that makes the
//! agent's own auto-compaction fire. Every run succeeds; the agent's compaction reaches the
//! gateway and is answered by the engine (the model never sees it); the session keeps one
//! lineage; with lcm, the model's `lcm_grep` still finds the first round's word afterwards.

use std::sync::Arc;

use ctxhost_tests::agents::claude_code::{self, ClaudeCode};
use ctxhost_tests::agents::codex::{self, Codex};
use ctxhost_tests::agents::hermes::{self, Hermes};
use ctxhost_tests::agents::script::{expected_answer, Script, FIRST_WORD};
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::FakeUpstream;
use ctxhost_tests::wire::Wire;
use ctxhost_tests::Sandbox;

/// Shell rounds per session: each agent compacts on its own within them.
const ROUNDS: usize = 10;

const PROMPT: &str = "Run the echo rounds you are given, then report.";

/// A sandbox running `engine`. Each agent's model gets a window whose threshold (90% of it,
/// less the output the agent reserves) lies well above the point the agent compacts at, and no
/// compression is prepared ahead, so the agent's own compaction comes first; a compression
/// keeps a short recent tail, so the engine's answer to the agent shrinks the view well under
/// the agent's compaction point (an answer that took nothing would leave the agent compacting
/// again on every turn: Claude Code gives up after three, "Autocompact is thrashing").
fn sandbox(engine: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(&format!(
        "context:\n  engine: {engine}\n\
         compression:\n  threshold: 0.9\n  target_ratio: 0.05\n  protect_last_n: 4\n\
         plugins:\n  lcm:\n    threshold: 0.9\n    target_ratio: 0.1\n    fresh_tail_count: 4\n    \
         fresh_tail_max_ratio: 0.1\n\
         serve:\n  compaction:\n    background: false\n  \
         models:\n    {}: 100000\n    {}: 200000\n    {}: 200000\n",
        codex::MODEL,
        claude_code::MODEL,
        hermes::MODEL,
    ));
    sandbox
}

/// What every agent's session must show once its run is over.
struct Expect<'a> {
    engine: &'a str,
    /// The `kind` the gateway logs for this agent's compaction.
    kind: &'a str,
    compaction_prompt: &'a str,
    /// The agent's wire and the key it sends.
    credential: (Wire, &'a str),
}

fn check_session(
    gateway: &GatewayProcess,
    upstream: &FakeUpstream,
    script: &Script,
    expect: &Expect,
) {
    assert_eq!(script.echoed(), ROUNDS);
    // The model never saw the agent's compaction...
    assert_eq!(
        script.compaction_prompts(),
        0,
        "the upstream model was asked for the agent's compaction summary; the gateway: {:#?}",
        gateway.log()
    );
    let leaked: Vec<_> = upstream
        .received()
        .into_iter()
        .filter(|r| r.body.contains(expect.compaction_prompt))
        .collect();
    assert!(
        leaked.is_empty(),
        "the upstream received the agent's compaction: {leaked:?}"
    );
    // ...which reached the gateway and the engine answered (the log is read as the gateway
    // writes it: waited for, bounded).
    let answered = gateway.wait_for_log("answered the agent's own compaction from the engine");
    assert!(
        answered.contains(&format!("kind=\"{}\"", expect.kind)),
        "{answered}"
    );
    // One session, one lineage.
    let (wire, key) = expect.credential;
    let listed = wire.sessions(gateway, Some(key));
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let id = listed[0]["id"].as_str().unwrap();
    let state = wire.session(gateway, id, Some(key));
    assert_eq!(state["engine"], expect.engine, "{state}");
    assert_eq!(state["stats"]["new_lineages"], 0, "{state}");
    assert!(
        !gateway
            .log()
            .iter()
            .any(|l| l.contains("starting a new lineage")),
        "{:#?}",
        gateway.log()
    );
    if expect.engine == "lcm" {
        let found = script
            .grep_result()
            .expect("the model searched with lcm_grep");
        assert!(
            found.contains(FIRST_WORD),
            "lcm_grep did not find {FIRST_WORD}: {found}"
        );
    }
}

fn codex_session(engine: &str) {
    let script = Arc::new(Script::new(ROUNDS, codex::COMPACTION_PROMPT));
    let upstream = FakeUpstream::start(codex::model(script.clone()));
    let sandbox = sandbox(engine);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let run = Codex::default().exec(&gateway.base_url(), PROMPT);
    if !run.success() {
        let (_, log) = gateway.stop();
        panic!("codex failed: {run:?}\ngateway: {log:#?}");
    }
    let events = codex::events(&run);
    assert_eq!(
        codex::final_message(&events),
        Some(expected_answer(engine, ROUNDS)),
        "{}",
        run.stdout
    );
    check_session(
        &gateway,
        &upstream,
        &script,
        &Expect {
            engine,
            kind: "codex_handoff",
            compaction_prompt: codex::COMPACTION_PROMPT,
            credential: (Wire::Responses, codex::API_KEY),
        },
    );
    assert_eq!(
        Wire::Responses.sessions(&gateway, Some(codex::API_KEY))[0]["id"],
        codex::thread_id(&events)
    );
}

fn claude_code_session(engine: &str) {
    let script = Arc::new(Script::new(ROUNDS, claude_code::COMPACTION_PROMPT));
    let upstream = FakeUpstream::start(claude_code::model(script.clone()));
    let sandbox = sandbox(engine);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let run = ClaudeCode::default().print(&gateway.url, PROMPT);
    if !run.success() {
        let (_, log) = gateway.stop();
        panic!("claude failed: {run:?}\ngateway: {log:#?}");
    }
    let result = run.json();
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(
        result["result"],
        expected_answer(engine, ROUNDS),
        "{result}"
    );
    check_session(
        &gateway,
        &upstream,
        &script,
        &Expect {
            engine,
            kind: "claude_summary",
            compaction_prompt: claude_code::COMPACTION_PROMPT,
            credential: (Wire::Messages, claude_code::API_KEY),
        },
    );
    assert_eq!(
        Wire::Messages.sessions(&gateway, Some(claude_code::API_KEY))[0]["id"],
        result["session_id"]
    );
}

fn hermes_session(engine: &str) {
    let script = Arc::new(Script::new(ROUNDS, hermes::COMPACTION_PROMPT));
    let upstream = FakeUpstream::start(hermes::model(script.clone()));
    let sandbox = sandbox(engine);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let agent = Hermes::default();
    let run = agent.oneshot(&gateway.base_url(), PROMPT);
    if !run.success() {
        let (_, log) = gateway.stop();
        panic!("hermes failed: {run:?}\ngateway: {log:#?}");
    }
    assert_eq!(
        run.stdout.trim(),
        expected_answer(engine, ROUNDS),
        "{run:?}"
    );
    let report = agent.report();
    assert_eq!(report["completed"], true, "{report}");
    assert_eq!(report["failed"], false, "{report}");
    check_session(
        &gateway,
        &upstream,
        &script,
        &Expect {
            engine,
            kind: "hermes_compression",
            compaction_prompt: hermes::COMPACTION_PROMPT,
            credential: (Wire::Chat, hermes::API_KEY),
        },
    );
}

#[test]
fn codex_compacts_through_the_gateway_with_the_compressor() {
    codex_session("compressor");
}

#[test]
fn codex_compacts_through_the_gateway_with_lcm() {
    codex_session("lcm");
}

#[test]
fn claude_code_compacts_through_the_gateway_with_the_compressor() {
    claude_code_session("compressor");
}

#[test]
fn claude_code_compacts_through_the_gateway_with_lcm() {
    claude_code_session("lcm");
}

#[test]
fn hermes_compresses_through_the_gateway_with_the_compressor() {
    hermes_session("compressor");
}

#[test]
fn hermes_compresses_through_the_gateway_with_lcm() {
    hermes_session("lcm");
}

/// Prompts of a resumed session: the first starts it, each later one resumes it (a new run of
/// the agent's CLI: `claude -p --continue`, `codex exec resume --last`, `hermes chat
/// --continue`).
const PROMPTS: usize = 5;
/// Echo rounds per prompt: enough, over the session, for the agent to compact at least twice.
const ROUNDS_PER_PROMPT: usize = 4;

/// The `n`th prompt (from 0) of a resumed session.
fn resumed_prompt(n: usize) -> String {
    format!(
        "Prompt {}: run the echo rounds you are given, then report.",
        n + 1
    )
}

/// What a resumed session's prompt `n` (from 0) is answered.
fn resumed_answer(engine: &str, n: usize) -> String {
    let rounds = (n + 1) * ROUNDS_PER_PROMPT;
    if n + 1 == PROMPTS {
        expected_answer(engine, rounds)
    } else {
        format!("done after {rounds} rounds")
    }
}

/// A sandbox for a resumed session: as [`sandbox`], with compressions prepared in the
/// background once the session comes within 80% of the window of the engine's threshold, so
/// the engine prepares one before the agent first compacts.
fn resumed_sandbox(engine: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(&format!(
        "context:\n  engine: {engine}\n\
         compression:\n  threshold: 0.9\n  target_ratio: 0.05\n  protect_last_n: 4\n\
         plugins:\n  lcm:\n    threshold: 0.9\n    target_ratio: 0.1\n    fresh_tail_count: 4\n    \
         fresh_tail_max_ratio: 0.1\n\
         serve:\n  compression:\n    background: true\n    margin: 0.8\n  \
         models:\n    {}: 100000\n    {}: 200000\n    {}: 200000\n",
        codex::MODEL,
        claude_code::MODEL,
        hermes::MODEL,
    ));
    sandbox
}

/// What a resumed session must show: every compaction the agent made (at least two) answered
/// by the engine, none reaching the model, one lineage, a compression prepared in the
/// background taken in, and with lcm the first prompt's word found after the last compaction.
fn check_resumed_session(
    gateway: &GatewayProcess,
    upstream: &FakeUpstream,
    script: &Script,
    expect: &Expect,
) {
    let log = gateway.log();
    let count = |text: &str| log.iter().filter(|l| l.contains(text)).count();
    eprintln!(
        "{} with {}: {} compactions answered by the engine, {} new lineages, {} compaction \
         prompts reached the model",
        expect.kind,
        expect.engine,
        count("answered the agent's own compaction from the engine"),
        count("starting a new lineage"),
        script.compaction_prompts()
    );
    assert_eq!(script.echoed(), PROMPTS * ROUNDS_PER_PROMPT);
    assert_eq!(
        script.compaction_prompts(),
        0,
        "the upstream model was asked for the agent's compaction summary; the gateway: {log:#?}"
    );
    let leaked = upstream
        .received()
        .into_iter()
        .filter(|r| r.body.contains(expect.compaction_prompt))
        .count();
    assert_eq!(leaked, 0, "the upstream received the agent's compaction");
    let answered: Vec<_> = log
        .iter()
        .filter(|l| l.contains("answered the agent's own compaction from the engine"))
        .collect();
    assert!(
        answered.len() >= 2,
        "the agent compacted fewer than twice (answered: {}): {log:#?}",
        answered.len()
    );
    assert!(
        answered
            .iter()
            .all(|l| l.contains(&format!("kind=\"{}\"", expect.kind))),
        "{answered:#?}"
    );
    let lineages = log
        .iter()
        .filter(|l| l.contains("starting a new lineage"))
        .count();
    assert_eq!(lineages, 0, "{log:#?}");
    let (wire, key) = expect.credential;
    let listed = wire.sessions(gateway, Some(key));
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let id = listed[0]["id"].as_str().unwrap();
    let state = wire.session(gateway, id, Some(key));
    assert_eq!(state["engine"], expect.engine, "{state}");
    assert_eq!(state["stats"]["new_lineages"], 0, "{state}");
    let compressions = state["compressions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let taken_in = compressions
        .iter()
        .any(|c| c["trigger"] == "background" && c["error"].is_null());
    assert!(
        taken_in,
        "a compression prepared in the background taken in: {compressions:#?}"
    );
    if expect.engine == "lcm" {
        let found = script
            .grep_result()
            .expect("the model searched with lcm_grep");
        assert!(
            found.contains(FIRST_WORD),
            "lcm_grep did not find {FIRST_WORD}: {found}"
        );
    }
}

fn resumed_script(compaction_prompt: &'static str) -> Arc<Script> {
    Arc::new(Script::per_prompt(
        PROMPTS * ROUNDS_PER_PROMPT,
        ROUNDS_PER_PROMPT,
        compaction_prompt,
    ))
}

fn codex_resumed_session(engine: &str) {
    let script = resumed_script(codex::COMPACTION_PROMPT);
    let upstream = FakeUpstream::start(codex::model(script.clone()));
    let sandbox = resumed_sandbox(engine);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let agent = Codex::default();
    for n in 0..PROMPTS {
        let prompt = resumed_prompt(n);
        let run = match n {
            0 => agent.exec(&gateway.base_url(), &prompt),
            _ => agent.exec_resumed(&gateway.base_url(), &prompt),
        };
        if !run.success() {
            let (_, log) = gateway.stop();
            panic!("codex failed on prompt {n}: {run:?}\ngateway: {log:#?}");
        }
        let events = codex::events(&run);
        assert_eq!(
            codex::final_message(&events),
            Some(resumed_answer(engine, n)),
            "{}",
            run.stdout
        );
    }
    check_resumed_session(
        &gateway,
        &upstream,
        &script,
        &Expect {
            engine,
            kind: "codex_handoff",
            compaction_prompt: codex::COMPACTION_PROMPT,
            credential: (Wire::Responses, codex::API_KEY),
        },
    );
}

fn claude_code_resumed_session(engine: &str) {
    let script = resumed_script(claude_code::COMPACTION_PROMPT);
    let upstream = FakeUpstream::start(claude_code::model(script.clone()));
    let sandbox = resumed_sandbox(engine);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let agent = ClaudeCode::default();
    for n in 0..PROMPTS {
        let prompt = resumed_prompt(n);
        let run = match n {
            0 => agent.print(&gateway.url, &prompt),
            _ => agent.print_continued(&gateway.url, &prompt),
        };
        if !run.success() {
            let (_, log) = gateway.stop();
            panic!("claude failed on prompt {n}: {run:?}\ngateway: {log:#?}");
        }
        let result = run.json();
        assert_eq!(result["is_error"], false, "{result}");
        assert_eq!(result["result"], resumed_answer(engine, n), "{result}");
    }
    check_resumed_session(
        &gateway,
        &upstream,
        &script,
        &Expect {
            engine,
            kind: "claude_summary",
            compaction_prompt: claude_code::COMPACTION_PROMPT,
            credential: (Wire::Messages, claude_code::API_KEY),
        },
    );
}

fn hermes_resumed_session(engine: &str) {
    let script = resumed_script(hermes::COMPACTION_PROMPT);
    let upstream = FakeUpstream::start(hermes::model(script.clone()));
    let sandbox = resumed_sandbox(engine);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let agent = Hermes::default();
    for n in 0..PROMPTS {
        let run = agent.chat(&gateway.base_url(), &resumed_prompt(n), n > 0);
        if !run.success() {
            let (_, log) = gateway.stop();
            panic!("hermes failed on prompt {n}: {run:?}\ngateway: {log:#?}");
        }
        let answer = resumed_answer(engine, n);
        assert!(
            run.stdout.lines().any(|l| l.trim() == answer),
            "{answer}: {run:?}"
        );
    }
    check_resumed_session(
        &gateway,
        &upstream,
        &script,
        &Expect {
            engine,
            kind: "hermes_compression",
            compaction_prompt: hermes::COMPACTION_PROMPT,
            credential: (Wire::Chat, hermes::API_KEY),
        },
    );
}

#[test]
fn codex_resumed_compacts_through_the_gateway_with_the_compressor() {
    codex_resumed_session("compressor");
}

#[test]
fn codex_resumed_compacts_through_the_gateway_with_lcm() {
    codex_resumed_session("lcm");
}

#[test]
fn claude_code_resumed_compacts_through_the_gateway_with_the_compressor() {
    claude_code_resumed_session("compressor");
}

#[test]
fn claude_code_resumed_compacts_through_the_gateway_with_lcm() {
    claude_code_resumed_session("lcm");
}

#[test]
fn hermes_resumed_compresses_through_the_gateway_with_the_compressor() {
    hermes_resumed_session("compressor");
}

#[test]
fn hermes_resumed_compresses_through_the_gateway_with_lcm() {
    hermes_resumed_session("lcm");
}
