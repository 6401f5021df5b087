//! Claude Code (`@anthropic-ai/claude-code`), run with `claude -p PROMPT --output-format json`
//! against `ANTHROPIC_BASE_URL`, in a temporary home and working directory, allowed to run
//! `Bash` unattended. Behind a custom base URL its proactive auto-compaction is off unless an
//! auto-compact window is set: `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (100K at the least) makes it
//! compact once the `usage` it receives passes that window less 33K (its output reserve and
//! its buffer).

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::script::{echo_command, prompt_tokens, Move, Script, Seen, FIRST_WORD, GREP_CALL};
use super::{install, run_guarded, AgentDirs};
use crate::anthropic_upstream::reply;
use crate::upstream::{Answer, Recorded};
use crate::Run;

/// How Claude Code 2.1.197's compaction request asks for its summary.
pub const COMPACTION_PROMPT: &str =
    "Your task is to create a detailed summary of the conversation so far";

/// The model Claude Code asks for.
pub const MODEL: &str = "claude-sonnet-4-5";

/// The API key Claude Code sends (`x-api-key`).
pub const API_KEY: &str = "sk-ant-claude-agent";

/// The smallest auto-compact window Claude Code takes: it compacts at 67K tokens (its first
/// request weighs some 29K, each round 6K more).
pub const AUTO_COMPACT_WINDOW: u64 = 100_000;

/// A home and working directory for one Claude Code session.
#[derive(Default)]
pub struct ClaudeCode {
    dirs: AgentDirs,
}

impl ClaudeCode {
    /// `claude -p PROMPT --output-format json` against the Messages API at `base_url` (no
    /// `/v1`: Claude Code adds it).
    pub fn print(&self, base_url: &str, prompt: &str) -> Run {
        self.run(base_url, prompt, false)
    }

    /// `claude -p --continue PROMPT`: the last session in this working directory, resumed.
    pub fn print_continued(&self, base_url: &str, prompt: &str) -> Run {
        self.run(base_url, prompt, true)
    }

    fn run(&self, base_url: &str, prompt: &str, resumed: bool) -> Run {
        let mut command = Command::new(install::claude());
        command
            .current_dir(self.dirs.work.path())
            .env("HOME", self.dirs.home.path())
            .env_remove("ANTHROPIC_AUTH_TOKEN")
            .env("ANTHROPIC_BASE_URL", base_url)
            .env("ANTHROPIC_API_KEY", API_KEY)
            .env(
                "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
                AUTO_COMPACT_WINDOW.to_string(),
            )
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .args(["-p", prompt, "--output-format", "json"])
            .args(resumed.then_some("--continue"))
            .args(["--allowedTools", "Bash", "--model", MODEL]);
        run_guarded(command, "claude -p")
    }
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        blocks => blocks
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// What the model saw in a Messages request.
pub fn seen(request: &Recorded) -> Seen {
    let body = request.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let results = |m: &Value| -> Vec<Value> {
        m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .cloned()
            .collect()
    };
    let mut seen = Seen {
        tool_results: messages.iter().map(|m| results(m).len()).sum(),
        tools: body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect(),
        ..Seen::default()
    };
    if let Some(last) = messages.last().filter(|m| m["role"] == "user") {
        seen.user_text = match &last["content"] {
            Value::String(text) => text.clone(),
            blocks => text_of(&Value::Array(
                blocks
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "text")
                    .cloned()
                    .collect(),
            )),
        };
        seen.tool_result = results(last).last().map(|r| {
            (
                r["tool_use_id"].as_str().unwrap_or("").to_string(),
                text_of(&r["content"]),
            )
        });
    }
    seen
}

/// The scripted model on the Messages wire (and `count_tokens`, answered with the same
/// inflated count).
pub fn model(script: Arc<Script>) -> impl Fn(&Recorded) -> Answer + Send + Sync + 'static {
    let replies = AtomicUsize::new(0);
    move |request| {
        if !request.path.starts_with("/v1/messages") {
            return Answer::Json(
                404,
                json!({"type": "error", "error": {"type": "not_found_error", "message": "no such route"}}),
            );
        }
        let seen = seen(request);
        let tokens = prompt_tokens(request);
        if request.path.contains("count_tokens") {
            return Answer::Json(200, json!({"input_tokens": tokens}));
        }
        let usage = json!({"input_tokens": tokens, "output_tokens": 10,
                           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
        let block = match script.next(&seen) {
            Move::Echo(n) => {
                json!({"type": "tool_use", "id": format!("toolu_echo_{n}"), "name": "Bash",
                                    "input": {"command": echo_command(n), "description": "Echo a word"}})
            }
            Move::Grep => json!({"type": "tool_use", "id": GREP_CALL, "name": "lcm_grep",
                                 "input": {"pattern": FIRST_WORD, "scope": "messages"}}),
            Move::Say(text) => json!({"type": "text", "text": text}),
        };
        with_id(
            reply(request, json!([block]), Some(usage)),
            &format!("msg_scripted_{}", replies.fetch_add(1, Ordering::Relaxed)),
        )
    }
}

/// `answer` with its message id set to `id`. Claude Code takes assistant messages that share
/// an id for pieces of one message and merges them, so each reply needs its own.
fn with_id(answer: Answer, id: &str) -> Answer {
    match answer {
        Answer::Events(mut events) => {
            for (name, data) in &mut events {
                if name == "message_start" {
                    data["message"]["id"] = json!(id);
                }
            }
            Answer::Events(events)
        }
        Answer::Json(status, mut body) => {
            body["id"] = json!(id);
            Answer::Json(status, body)
        }
        other => other,
    }
}
