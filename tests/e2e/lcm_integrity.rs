//! The lossless engine keeps its promise from the command line: replaying a transcript again,
//! or resuming it after `kill -9` at any point, stores each message exactly once and every one
//! comes back byte for byte; two processes on one session never interleave, and each says how
//! it ended.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use ctxhost_sdk::Message;
use ctxhost_tests::{read_json, read_messages, workspace_root, Sandbox};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const CONFIG: &str = "context:\n  engine: lcm\nmodel:\n  context_length: 16000\n";

/// A line `ctxhost run -v` prints once per compression lcm runs.
const COMPRESSED: &str = "tokens in";

fn transcript() -> PathBuf {
    workspace_root().join("examples/session.json")
}

fn sandbox(extra: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(&format!("{CONFIG}{extra}"));
    sandbox
}

fn run_args<'a>(transcript: &'a str, session: &'a str) -> Vec<&'a str> {
    vec!["run", "-v", transcript, "--session", session]
}

fn stored_messages(sandbox: &Sandbox, session: &str) -> u64 {
    let status = sandbox.ctxhost(&["engine", "status", "--session", session]);
    assert!(status.success(), "{}", status.stderr);
    status.json()["messages"].as_u64().unwrap()
}

fn assert_doctor_ok(sandbox: &Sandbox) {
    let doctor = sandbox.ctxhost(&["engine", "doctor"]);
    assert!(doctor.success(), "{}", doctor.stderr);
    assert_eq!(doctor.json()["ok"], json!(true), "{}", doctor.stdout);
}

/// Runs `ctxhost run -v` and kills it (SIGKILL) once it has printed `after` compression lines;
/// whether it got that far.
fn run_and_kill(sandbox: &Sandbox, transcript: &str, session: &str, after: usize) -> bool {
    let mut child = sandbox
        .command(&run_args(transcript, session))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ctxhost runs");
    let stderr = child.stderr.take().expect("piped");
    let mut seen = 0;
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        if line.contains(COMPRESSED) {
            seen += 1;
            if seen == after {
                let _ = child.kill();
                break;
            }
        }
    }
    let _ = child.wait();
    seen == after
}

/// Deterministic "random" kill points (a seeded LCG: the same points on every run of the
/// suite, spread over the whole session).
fn kill_points(count: usize, max: usize) -> Vec<usize> {
    let mut state: u64 = 0x5eed_1cc0_ffee;
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            1 + (state >> 33) as usize % max
        })
        .collect()
}

/// The conversation as the final context holds it: summary blocks expanded through
/// `lcm_expand` from the shell, everything else as it is.
fn recover(sandbox: &Sandbox, session: &str, context: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for message in context {
        let id = message
            .text()
            .and_then(|text| text.strip_prefix("<lcm-summary id=\""))
            .and_then(|rest| rest.get(..20));
        let Some(id) = id else {
            out.push(message.to_value());
            continue;
        };
        let args = json!({"id": id, "max_tokens": 100_000_000}).to_string();
        let page = sandbox.ctxhost(&[
            "tools",
            "call",
            "lcm_expand",
            "--session",
            session,
            "--args",
            &args,
        ]);
        assert!(page.success(), "{}", page.stderr);
        let page = page.json();
        assert!(page["next_offset"].is_null(), "one page: {page}");
        for item in page["messages"].as_array().unwrap() {
            out.push(item["message"].clone());
        }
    }
    out
}

#[test]
fn replays_and_resumes_after_kill_9_store_every_message_exactly_once() {
    let sandbox = sandbox("");
    let path = transcript();
    let path = path.to_str().unwrap();
    let messages = read_messages(Path::new(path));
    let expected: Vec<Value> = messages.iter().map(Message::to_value).collect();

    // How many compressions a whole replay makes, on a scratch session.
    let whole = sandbox.ctxhost(&run_args(path, "scratch"));
    assert!(whole.success(), "{}", whole.stderr);
    let compressions = whole.stderr.matches(COMPRESSED).count();
    assert!(compressions >= 10, "{}", whole.stderr);

    // Ten replays of the same session, each killed with SIGKILL at a random compression (each
    // starts over from the first message, as a restarted agent resends its history).
    let mut reached = 0;
    for point in kill_points(10, compressions) {
        reached += usize::from(run_and_kill(&sandbox, path, "resumed", point));
    }
    assert!(reached >= 8, "most runs got to their kill point");
    let stored = stored_messages(&sandbox, "resumed");
    assert!(
        stored <= messages.len() as u64,
        "{stored} stored after the kills"
    );

    // Then a whole run, and the same transcript replayed once more.
    let out = sandbox.path().join("final.json");
    let last = sandbox.ctxhost(&[
        "run",
        path,
        "--session",
        "resumed",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(last.success(), "{}", last.stderr);
    assert_eq!(stored_messages(&sandbox, "resumed"), messages.len() as u64);
    let again = sandbox.ctxhost(&run_args(path, "resumed"));
    assert!(again.success(), "{}", again.stderr);
    assert!(!again.stderr.contains("lcm: stored"), "{}", again.stderr);
    assert_eq!(stored_messages(&sandbox, "resumed"), messages.len() as u64);

    let context: Vec<Message> = serde_json::from_value(read_json(&out)).unwrap();
    assert!(
        recover(&sandbox, "resumed", &context) == expected,
        "every message comes back as it was sent"
    );
    assert_doctor_ok(&sandbox);
}

/// The lock file of an lcm session (the engine's README documents it).
fn lock_file(sandbox: &Sandbox, session: &str) -> PathBuf {
    let digest = Sha256::digest(session.as_bytes());
    let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    sandbox
        .home()
        .join("data/lcm/locks")
        .join(format!("{name}.lock"))
}

#[test]
fn a_session_another_process_holds_gets_one_clear_error_and_nothing_is_written() {
    let sandbox = sandbox("plugins:\n  lcm:\n    session_lock_wait_ms: 50\n");
    let path = transcript();
    let path = path.to_str().unwrap();
    let lock = lock_file(&sandbox, "held");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let holder = std::fs::File::create(&lock).unwrap();
    holder.lock().unwrap();

    let blocked = sandbox.ctxhost(&["run", path, "--session", "held"]);
    assert_eq!(blocked.code, Some(3), "{}", blocked.stderr);
    let lines: Vec<&str> = blocked
        .stderr_lines()
        .into_iter()
        .filter(|line| line.contains("is being written by another process"))
        .collect();
    assert_eq!(lines.len(), 1, "one clear line: {}", blocked.stderr);
    assert!(lines[0].contains("session `held`"), "{}", lines[0]);
    assert_eq!(stored_messages(&sandbox, "held"), 0);

    drop(holder);
    let free = sandbox.ctxhost(&["run", path, "--session", "held"]);
    assert!(free.success(), "{}", free.stderr);
    assert_eq!(
        stored_messages(&sandbox, "held"),
        read_messages(Path::new(path)).len() as u64
    );
}

#[test]
fn two_processes_on_one_session_never_interleave_and_both_say_how_they_ended() {
    let sandbox = sandbox("");
    let path = transcript();
    let path = path.to_str().unwrap();
    let mut first = sandbox
        .command(&run_args(path, "shared"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ctxhost runs");
    // Once the first has compressed, it writes the session (and holds it until it exits).
    let mut first_err = BufReader::new(first.stderr.take().expect("piped"));
    let mut seen = String::new();
    while !seen.contains(COMPRESSED) {
        let mut line = String::new();
        if first_err.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
    }
    let second = sandbox.ctxhost(&run_args(path, "shared"));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut first_err, &mut rest).unwrap();
    let first_status = first.wait().unwrap();
    assert!(first_status.success(), "{seen}{rest}");
    // The second waited for the first and replayed the same transcript (storing nothing), or
    // gave up waiting with one clear line and a failing exit code.
    if !second.success() {
        assert_eq!(second.code, Some(3), "{}", second.stderr);
        assert!(
            second
                .stderr
                .contains("is being written by another process"),
            "{}",
            second.stderr
        );
    }
    let messages = read_messages(Path::new(path)).len() as u64;
    assert_eq!(stored_messages(&sandbox, "shared"), messages);
    assert_doctor_ok(&sandbox);
}

#[test]
fn two_processes_starting_one_session_of_a_fresh_store_at_once_make_one_conversation() {
    let path = transcript();
    let path = path.to_str().unwrap();
    let messages = read_messages(Path::new(path)).len() as u64;
    for trial in 0..4 {
        let sandbox = sandbox("");
        let runs: Vec<_> = (0..2)
            .map(|_| {
                sandbox
                    .command(&["run", path, "--session", "shared"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("ctxhost runs")
            })
            .collect();
        for run in runs {
            let out = run.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            // Each replayed the transcript (the second storing nothing), or gave up waiting
            // for the other with one clear line.
            if !out.status.success() {
                assert_eq!(out.status.code(), Some(3), "trial {trial}: {stderr}");
                assert!(
                    stderr.contains("is being written by another process"),
                    "trial {trial}: {stderr}"
                );
            }
        }
        let store = rusqlite::Connection::open(sandbox.home().join("data/lcm/lcm.sqlite")).unwrap();
        let conversations: i64 = store
            .query_row(
                "SELECT count(*) FROM lcm_conversations WHERE session_id = 'shared'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(conversations, 1, "trial {trial}");
        assert_eq!(
            stored_messages(&sandbox, "shared"),
            messages,
            "trial {trial}"
        );
        assert_doctor_ok(&sandbox);
    }
}

#[test]
fn offline_leaf_summaries_say_what_the_turns_did_with_nothing_empty_or_repeated() {
    let sandbox = sandbox("");
    let path = transcript();
    // Every compression lcm asks for runs, so that its summaries condense.
    let run = sandbox.ctxhost(&[
        "run",
        path.to_str().unwrap(),
        "--session",
        "readable",
        "--policy",
        "tokens",
    ]);
    assert!(run.success(), "{}", run.stderr);
    let store = rusqlite::Connection::open(sandbox.home().join("data/lcm/lcm.sqlite")).unwrap();
    let mut stmt = store
        .prepare("SELECT id, kind, text FROM lcm_summaries WHERE summarizer = 'offline'")
        .unwrap();
    let summaries: Vec<(String, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(summaries.iter().any(|(_, kind, _)| kind == "leaf"));
    assert!(summaries.iter().any(|(_, kind, _)| kind == "condensed"));
    const TITLES: [&str; 8] = [
        "Asked",
        "Constraints",
        "Did",
        "Open",
        "Decided",
        "Files",
        "Errors",
        "Next",
    ];
    for (id, kind, text) in &summaries {
        for placeholder in ["None recorded", "Nothing recorded", "(inferred)", "- - "] {
            assert!(!text.contains(placeholder), "{id}: {placeholder}\n{text}");
        }
        let lines: Vec<&str> = text.lines().collect();
        let mut seen = std::collections::HashSet::new();
        for (index, line) in lines.iter().enumerate() {
            assert!(seen.insert(*line), "{id}: repeated line {line:?}\n{text}");
            // A section title is followed by its items.
            if let Some(title) = line.strip_suffix(':') {
                if TITLES.contains(&title) {
                    let next = lines.get(index + 1).copied().unwrap_or_default();
                    assert!(next.starts_with("- "), "{id}: empty {title}\n{text}");
                }
            }
        }
        if kind == "leaf" {
            // What the turns did, or what was asked of them (after the standing facts, when
            // the turns stated any).
            assert!(
                text.contains("Did:\n- ") || text.starts_with("Asked") || text.contains("\nAsked"),
                "{id}\n{text}"
            );
        }
    }
    let did = summaries
        .iter()
        .filter(|(_, kind, text)| kind == "leaf" && text.contains("Did:\n- "))
        .count();
    assert!(did * 2 >= summaries.iter().filter(|(_, k, _)| k == "leaf").count());
}
