//! Shared test fixtures: a fake host with a scriptable summarizer, corpus loading, an agent
//! loop, and recovery of a whole conversation through the engine's tools.

#![allow(dead_code)] // Each test file uses a different part of this module.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctxhost_engine_lcm::LcmEngine;
use ctxhost_sdk::{
    sequence, CompressOptions, ContextEngine, EngineError, EnginePlugin, EngineSetup, ErrorKind,
    HostBackend, HostServices, LogLevel, Message, ModelInfo, SummarizeRequest, Summary,
};
use serde_json::{json, Value};

/// What the fake summarizer does.
#[derive(Debug, Clone)]
pub enum Script {
    /// A short extract of the content, well within `max_tokens`.
    Good,
    /// Fails like an HTTP 500 would reach the engine.
    Fail,
    Empty,
    /// Far more than `max_tokens`.
    Oversized,
    /// Answers well, after this long.
    Slow(Duration),
    /// Fails the first call of each pair (the normal level), answers the second.
    FailThenGood,
    /// Answers well but names itself `offline`.
    Offline,
}

/// A host with a predictable tokenizer (one token per 4 characters, rounded up) and a
/// scripted summarizer.
pub struct FakeBackend {
    pub script: Mutex<Script>,
    pub calls: AtomicUsize,
    /// Every summarize request received, in order.
    pub requests: Mutex<Vec<SummarizeRequest>>,
}

impl FakeBackend {
    pub fn new(script: Script) -> Arc<Self> {
        Arc::new(FakeBackend {
            script: Mutex::new(script),
            calls: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn set(&self, script: Script) {
        *self.script.lock().unwrap() = script;
    }

    fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, EngineError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        self.requests.lock().unwrap().push(request.clone());
        let script = self.script.lock().unwrap().clone();
        let good = |name: &str| {
            // Half the allowance, in characters of the content's first line(s).
            let chars = (request.max_tokens as usize * 2).max(8);
            let flat: String = request
                .content
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let text: String = format!("summary: {}", flat.chars().take(chars).collect::<String>());
            let text: String = text.chars().take(chars).collect();
            Ok(Summary {
                text,
                summarizer: name.to_string(),
            })
        };
        match script {
            Script::Good => good("fake"),
            Script::Offline => good("offline"),
            Script::Fail => Err(EngineError::new(
                ErrorKind::Unavailable,
                "HTTP 500 from the summarizer",
            )),
            Script::Empty => Ok(Summary {
                text: "   ".into(),
                summarizer: "fake".into(),
            }),
            Script::Oversized => Ok(Summary {
                text: "word ".repeat(request.max_tokens as usize * 10),
                summarizer: "fake".into(),
            }),
            Script::Slow(delay) => {
                std::thread::sleep(delay);
                good("fake")
            }
            Script::FailThenGood => {
                if call % 2 == 0 {
                    Err(EngineError::new(ErrorKind::Unavailable, "timeout"))
                } else {
                    good("fake")
                }
            }
        }
    }
}

impl HostBackend for FakeBackend {
    fn count_tokens(&self, text: &str) -> u64 {
        (text.chars().count() as u64).div_ceil(4)
    }

    fn log(&self, _engine: &str, _level: LogLevel, _message: &str) {}

    fn call(&self, service: &str, payload: &str) -> Result<String, EngineError> {
        match service {
            "summarize" => {
                let request: SummarizeRequest = serde_json::from_str(payload)?;
                let summary = self.summarize(&request)?;
                Ok(serde_json::to_string(&summary)?)
            }
            other => Err(EngineError::new(
                ErrorKind::NotConfigured,
                format!("{other} is not available in tests"),
            )),
        }
    }
}

pub fn setup(dir: &Path, config: Value, context_length: u64) -> EngineSetup {
    EngineSetup {
        engine: "lcm".to_string(),
        data_dir: dir.to_path_buf(),
        config,
        model: ModelInfo {
            name: "test-model".to_string(),
            context_length,
        },
    }
}

pub fn try_engine(
    dir: &Path,
    backend: Arc<FakeBackend>,
    config: Value,
    context_length: u64,
) -> Result<LcmEngine, EngineError> {
    LcmEngine::create(HostServices::new(
        backend,
        setup(dir, config, context_length),
    ))
}

pub fn engine(
    dir: &Path,
    backend: Arc<FakeBackend>,
    config: Value,
    context_length: u64,
) -> LcmEngine {
    try_engine(dir, backend, config, context_length).expect("engine starts")
}

/// Settings for a small window, so compaction runs often.
pub fn small_config() -> Value {
    json!({
        "fresh_tail_count": 4,
        "leaf_chunk_tokens": 1500,
        "leaf_summary_tokens": 120,
        "condensed_summary_tokens": 160,
        "condensed_min_fanout": 3,
    })
}

pub const SMALL_WINDOW: u64 = 4000;

/// An engine in `dir` with a working summarizer, the small settings and the small window.
pub fn small_engine(dir: &Path) -> LcmEngine {
    engine(
        dir,
        FakeBackend::new(Script::Good),
        small_config(),
        SMALL_WINDOW,
    )
}

pub fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../shared/corpus/swe-agent")
}

/// Every corpus transcript, by file name (always `Some`: a missing corpus fails the test).
pub fn transcripts() -> Option<Vec<(String, Vec<Message>)>> {
    let dir = corpus_dir();
    // A missing corpus fails the test rather than passing it unexercised.
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|error| {
        panic!(
            "the shared corpus is missing ({}: {error}); it belongs beside the repository",
            dir.display()
        )
    });
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no transcripts in {}", dir.display());
    Some(
        paths
            .into_iter()
            .map(|path| {
                let text = std::fs::read_to_string(&path).expect("readable transcript");
                let messages: Vec<Message> = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                (
                    path.file_name().unwrap().to_string_lossy().into_owned(),
                    messages,
                )
            })
            .collect(),
    )
}

/// Appends ` <marker>` to every `every`-th message with plain-text content; returns the
/// markers with the index of the message that carries each.
pub fn plant_markers(messages: &mut [Message], tag: &str, every: usize) -> Vec<(String, usize)> {
    let mut planted = Vec::new();
    for (index, message) in messages.iter_mut().enumerate() {
        if index % every != every - 1 {
            continue;
        }
        if let Some(text) = message.text().map(str::to_string) {
            let marker = format!("zqmark{tag}x{index}");
            message.set_text(format!("{text}\n{marker}"));
            planted.push((marker, index));
        }
    }
    planted
}

/// An agent loop: each message is appended to the context; before each model call (an
/// assistant message) the context is compressed when the engine asks for it. Returns the final
/// context.
pub fn replay(engine: &mut LcmEngine, start: Vec<Message>, transcript: &[Message]) -> Vec<Message> {
    let mut context = start;
    let threshold = engine.status().unwrap().threshold_tokens;
    for message in transcript {
        if message.is_assistant() {
            let tokens = tokens(&context);
            if engine.should_compress_preflight(&context).unwrap() || tokens >= threshold {
                let options = CompressOptions {
                    current_tokens: Some(tokens),
                    ..CompressOptions::default()
                };
                context = engine.compress(&context, &options).unwrap();
                sequence::validate(&context).expect("a valid chat sequence after compress");
            }
        }
        context.push(message.clone());
    }
    context
}

pub fn tokens(messages: &[Message]) -> u64 {
    HostServices::new(FakeBackend::new(Script::Good), EngineSetup::default())
        .count_messages_tokens(messages)
}

pub fn tool(engine: &mut LcmEngine, name: &str, args: Value) -> Value {
    let answer = engine
        .handle_tool_call(name, &args)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&answer).expect("tools answer JSON")
}

/// The summary id of a block in the context, recognised by the documented rendering.
pub fn block_id(message: &Message) -> Option<String> {
    let text = message.text()?;
    let rest = text.strip_prefix("<lcm-summary id=\"")?;
    Some(rest.get(..20)?.to_string()).filter(|id| id.starts_with("sum_"))
}

/// Every message of the conversation, recovered from a context: summary blocks expanded page
/// by page through `lcm_expand`, everything else as it is.
pub fn recover(engine: &mut LcmEngine, context: &[Message], page_tokens: u64) -> Vec<Value> {
    let mut out = Vec::new();
    for message in context {
        let Some(id) = block_id(message) else {
            out.push(message.to_value());
            continue;
        };
        let mut offset = 0u64;
        loop {
            let page = tool(
                engine,
                "lcm_expand",
                json!({"id": id, "offset": offset, "max_tokens": page_tokens}),
            );
            assert!(page.get("error").is_none(), "{page}");
            for item in page["messages"].as_array().unwrap() {
                out.push(item["message"].clone());
            }
            match page["next_offset"].as_u64() {
                Some(next) => {
                    assert!(next > offset, "pagination moves forward");
                    offset = next;
                }
                None => break,
            }
        }
    }
    out
}

pub fn values(messages: &[Message]) -> Vec<Value> {
    messages.iter().map(Message::to_value).collect()
}

/// A chat of `turns` tool turns of about `chars` characters each, after a system prompt and
/// a first ask.
pub fn tool_chat(turns: usize, chars: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a careful agent."),
        Message::user("fix the bug"),
    ];
    for i in 0..turns {
        let id = format!("call_{i}");
        messages.push(Message::assistant_tool_calls(vec![
            ctxhost_sdk::ToolCall::new(id.clone(), "run", format!("{{\"cmd\":\"step {i}\"}}")),
        ]));
        messages.push(Message::tool_result(
            id,
            format!("output {i} {}", "x".repeat(chars)),
        ));
    }
    messages.push(Message::assistant("done"));
    messages
}
