//! Codex CLI (`@openai/codex`), run with `codex exec --json` against a custom model provider
//! on the Responses wire, in a temporary `CODEX_HOME` and working directory, with approvals and
//! the sandbox off so it runs the model's shell commands unattended. Its auto-compaction fires
//! from the `usage` it receives: past `model_auto_compact_token_limit` it sends its local
//! handoff-summary request.

use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Value};

use super::script::{echo_command, prompt_tokens, Move, Script, Seen, GREP_CALL};
use super::{install, run_guarded, AgentDirs};
use crate::responses_upstream::{function_call, message_item, reply};
use crate::upstream::{Answer, Recorded};
use crate::Run;

/// How Codex 0.169's local compaction prompt begins.
pub const COMPACTION_PROMPT: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION.";

/// The model name Codex asks for.
pub const MODEL: &str = "gpt-fake";

/// The API key Codex sends (read from the environment variable its provider names).
pub const API_KEY: &str = "sk-codex-agent";

/// Codex compacts once the reported prompt passes this many tokens: its first request weighs
/// some 10K, each round 6K more.
pub const AUTO_COMPACT_LIMIT: u64 = 30_000;

/// A Codex home and working directory for one session.
#[derive(Default)]
pub struct Codex {
    dirs: AgentDirs,
}

impl Codex {
    /// `codex exec --json PROMPT` against the Responses API at `base_url` (`.../v1`).
    pub fn exec(&self, base_url: &str, prompt: &str) -> Run {
        self.run(base_url, prompt, false)
    }

    /// `codex exec resume --last PROMPT`: its last session in this home, resumed.
    pub fn exec_resumed(&self, base_url: &str, prompt: &str) -> Run {
        self.run(base_url, prompt, true)
    }

    fn run(&self, base_url: &str, prompt: &str, resumed: bool) -> Run {
        let provider = |key: &str, value: &str| format!("model_providers.ctxhost.{key}={value}");
        let mut command = Command::new(install::codex());
        command
            .current_dir(self.dirs.work.path())
            .env("CODEX_HOME", self.dirs.home.path())
            .env("CTXHOST_AGENT_KEY", API_KEY)
            .arg("exec")
            .args(
                resumed
                    .then_some(["resume", "--last"])
                    .into_iter()
                    .flatten(),
            )
            .args(["--json", "--skip-git-repo-check"])
            .args(["--dangerously-bypass-approvals-and-sandbox"])
            .args(["-c", "model_provider=ctxhost"])
            .args(["-c", &provider("name", "ctxhost")])
            .args(["-c", &provider("base_url", base_url)])
            .args(["-c", &provider("env_key", "CTXHOST_AGENT_KEY")])
            .args(["-c", &provider("wire_api", "responses")])
            .args([
                "-c",
                &format!("model_auto_compact_token_limit={AUTO_COMPACT_LIMIT}"),
            ])
            .args(["-c", "model_context_window=200000"])
            .args(["-m", MODEL, prompt]);
        run_guarded(
            command,
            if resumed {
                "codex exec resume"
            } else {
                "codex exec"
            },
        )
    }
}

/// The events `codex exec --json` printed.
pub fn events(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The thread id (Codex's session id, sent as its `session-id` header).
pub fn thread_id(events: &[Value]) -> String {
    events
        .iter()
        .find(|e| e["type"] == "thread.started")
        .and_then(|e| e["thread_id"].as_str())
        .expect("a thread.started event")
        .to_string()
}

/// The agent's final message: the last `agent_message` item.
pub fn final_message(events: &[Value]) -> Option<String> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
        .filter_map(|e| e["item"]["text"].as_str())
        .next_back()
        .map(str::to_string)
}

/// What the model saw in a Responses request.
pub fn seen(request: &Recorded) -> Seen {
    let body = request.json();
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let mut seen = Seen {
        tool_results: input
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .count(),
        tools: body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect(),
        ..Seen::default()
    };
    let Some(last) = input.last() else {
        return seen;
    };
    match last["type"].as_str() {
        Some("function_call_output") => {
            let output = match &last["output"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            seen.tool_result = Some((last["call_id"].as_str().unwrap_or("").to_string(), output));
        }
        _ if last["role"] == "user" => {
            seen.user_text = match &last["content"] {
                Value::String(text) => text.clone(),
                parts => parts
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
        }
        _ => {}
    }
    seen
}

/// The scripted model on the Responses wire.
pub fn model(script: Arc<Script>) -> impl Fn(&Recorded) -> Answer + Send + Sync + 'static {
    move |request| {
        if !request.path.starts_with("/v1/responses") {
            return Answer::Json(404, json!({"error": {"message": "no such route"}}));
        }
        let seen = seen(request);
        let tokens = prompt_tokens(request);
        let usage = json!({"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
                           "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                           "total_tokens": tokens + 10});
        let item = match script.next(&seen) {
            Move::Echo(n) => function_call(
                &format!("call_echo_{n}"),
                "exec_command",
                json!({"cmd": echo_command(n)}),
            ),
            Move::Grep => function_call(
                GREP_CALL,
                "lcm_grep",
                json!({"pattern": super::script::FIRST_WORD, "scope": "messages"}),
            ),
            Move::Say(text) => message_item("msg_scripted", &text),
        };
        reply(request, json!([item]), Some(usage))
    }
}
