//! Hermes Agent (PyPI `hermes-agent`), run one-shot (`hermes -z PROMPT --usage-file FILE`,
//! which approves its own tool calls) against a custom OpenAI-compatible provider, with a
//! `config.yaml` in a temporary `HERMES_HOME`. Its own compression is left on, so its summary
//! call (to its auxiliary model: the same base URL) fires once the `usage` it receives passes
//! its threshold.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Value};

use super::script::{echo_command, prompt_tokens, Move, Script, Seen, FIRST_WORD, GREP_CALL};
use super::{install, run_guarded, AgentDirs};
use crate::upstream::{reply, tool_call, Answer, Recorded};
use crate::Run;

/// How Hermes Agent 0.19.0's compression prompt begins.
pub const COMPACTION_PROMPT: &str = "You are a summarization agent creating a context checkpoint.";

/// The model Hermes asks for.
pub const MODEL: &str = "fake-model";

/// The API key Hermes sends (`Authorization: Bearer`).
pub const API_KEY: &str = "sk-hermes-agent";

/// The window Hermes is told the model has: the least it accepts. At that size its threshold
/// (0.75 of the window, floored at 64K) would be the whole window, so it compresses at 85% of
/// it: 54,400 tokens (its first request weighs some 12K, each round 6.5K more).
pub const CONTEXT_LENGTH: u64 = 64_000;

/// A Hermes home and working directory for one session.
#[derive(Default)]
pub struct Hermes {
    dirs: AgentDirs,
}

impl Hermes {
    /// Where its one-shot run writes its JSON report.
    pub fn usage_file(&self) -> PathBuf {
        self.dirs.home.path().join("usage.json")
    }

    /// `hermes -z PROMPT` against the OpenAI-compatible API at `base_url` (`.../v1`).
    pub fn oneshot(&self, base_url: &str, prompt: &str) -> Run {
        self.write_config(base_url);
        let mut command = Command::new(install::hermes());
        command
            .current_dir(self.dirs.work.path())
            .env("HOME", self.dirs.home.path())
            .env("HERMES_HOME", self.dirs.home.path())
            .args(["-z", prompt, "--usage-file"])
            .arg(self.usage_file());
        run_guarded(command, "hermes -z")
    }

    /// `hermes chat -q PROMPT` (quiet, approving its own commands), `--continue`d: its most
    /// recent session resumed.
    pub fn chat(&self, base_url: &str, prompt: &str, continued: bool) -> Run {
        self.write_config(base_url);
        let mut command = Command::new(install::hermes());
        command
            .current_dir(self.dirs.work.path())
            .env("HOME", self.dirs.home.path())
            .env("HERMES_HOME", self.dirs.home.path())
            .args(["chat", "-Q", "--yolo", "-q", prompt])
            .args(continued.then_some("--continue"));
        run_guarded(command, "hermes chat")
    }

    fn write_config(&self, base_url: &str) {
        let config = format!(
            "model:\n  provider: custom\n  base_url: {base_url}\n  default: {MODEL}\n  \
             api_key: {API_KEY}\n  context_length: {CONTEXT_LENGTH}\n\
             compression:\n  enabled: true\n  threshold: 0.75\n  protect_last_n: 4\n"
        );
        std::fs::write(self.dirs.home.path().join("config.yaml"), config)
            .expect("write config.yaml");
    }

    /// The JSON report of its last one-shot run.
    pub fn report(&self) -> Value {
        crate::read_json(&self.usage_file())
    }
}

/// What the model saw in a chat-completions request.
pub fn seen(request: &Recorded) -> Seen {
    let messages = request.messages();
    let body = request.json();
    let mut seen = Seen {
        tool_results: messages.iter().filter(|m| m["role"] == "tool").count(),
        tools: body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
            .collect(),
        ..Seen::default()
    };
    let text = |content: &Value| match content {
        Value::String(text) => text.clone(),
        parts => parts
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    };
    match messages.last() {
        Some(last) if last["role"] == "tool" => {
            seen.tool_result = Some((
                last["tool_call_id"].as_str().unwrap_or("").to_string(),
                text(&last["content"]),
            ));
        }
        Some(last) if last["role"] == "user" => seen.user_text = text(&last["content"]),
        _ => {}
    }
    seen
}

/// The scripted model on the chat-completions wire, and the model list Hermes reads.
pub fn model(script: Arc<Script>) -> impl Fn(&Recorded) -> Answer + Send + Sync + 'static {
    move |request| {
        if request.method == "GET" && request.path == "/v1/models" {
            return Answer::Json(
                200,
                json!({"object": "list", "data": [{"id": MODEL, "object": "model",
                                                   "context_length": CONTEXT_LENGTH}]}),
            );
        }
        if !request.path.starts_with("/v1/chat/completions") {
            return Answer::Json(404, json!({"error": {"message": "no such route"}}));
        }
        let seen = seen(request);
        let tokens = prompt_tokens(request);
        let usage = json!({"prompt_tokens": tokens, "completion_tokens": 10,
                           "total_tokens": tokens + 10});
        let message = match script.next(&seen) {
            Move::Echo(n) => json!({"role": "assistant", "content": null, "tool_calls": [
                tool_call(&format!("call_echo_{n}"), "terminal",
                          json!({"command": echo_command(n)}))]}),
            Move::Grep => json!({"role": "assistant", "content": null, "tool_calls": [
                tool_call(GREP_CALL, "lcm_grep", json!({"pattern": FIRST_WORD, "scope": "messages"}))]}),
            Move::Say(text) => json!({"role": "assistant", "content": text}),
        };
        reply(request, message, Some(usage))
    }
}
