//! Shared test fixtures: the engine on ctxhost-sdk-test's fake host with a summarizer script,
//! an agent loop, and recovery of a whole conversation through the engine's tools.

#![allow(dead_code)] // Each test file uses a different part of this module.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use ctxhost_engine_lcm::LcmEngine;
use ctxhost_sdk::{
    sequence, CompressOptions, ContextEngine, EngineError, EnginePlugin, ErrorKind, Message,
    Summary,
};
use ctxhost_sdk_test::{corpus, digest, Answer, FakeHost};
use serde_json::{json, Value};

/// What the fake summarizer does, on every call.
#[derive(Debug, Clone)]
pub enum Script {
    /// A short extract of the content, well within `max_tokens` (the fake host's digest).
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

impl Script {
    /// The fake host's answer for this script.
    pub fn answer(self) -> Answer {
        match self {
            Script::Good => Answer::Digest,
            Script::Fail => Answer::error(ErrorKind::Unavailable, "HTTP 500 from the summarizer"),
            Script::Empty => Answer::text("   "),
            Script::Oversized => Answer::with(|request| {
                Ok(Summary {
                    text: "word ".repeat(request.max_tokens as usize * 10),
                    summarizer: "fake".into(),
                    ..Summary::default()
                })
            }),
            Script::Slow(delay) => Answer::with(move |request| {
                std::thread::sleep(delay);
                Ok(digest(request))
            }),
            Script::FailThenGood => {
                let calls = AtomicUsize::new(0);
                Answer::with(move |request| {
                    if calls.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
                        Err(EngineError::new(ErrorKind::Unavailable, "timeout"))
                    } else {
                        Ok(digest(request))
                    }
                })
            }
            Script::Offline => Answer::with(|request| {
                Ok(Summary {
                    summarizer: "offline".into(),
                    ..digest(request)
                })
            }),
        }
    }
}

/// Whether the suite runs with its stores in PostgreSQL. The `on_postgres` test binary
/// includes the same test files as modules of its own, so this module's path says so.
pub fn on_postgres() -> bool {
    module_path!().starts_with("on_postgres::")
}

/// The PostgreSQL database of each data directory, so an engine created again on the same
/// directory (a restart) finds its store, as it finds the SQLite file there.
static DATABASES: Mutex<Option<HashMap<PathBuf, String>>> = Mutex::new(None);

/// `config` with the store the suite runs on: as it is for SQLite (the default file in the
/// data directory); on PostgreSQL `store` set to a database of its own, one per `data_dir`
/// (a fresh one when `None`). A config that names a store already keeps it.
pub fn with_store(config: Value, data_dir: Option<&Path>) -> Value {
    if !on_postgres() || config.get("store").is_some() {
        return config;
    }
    let url = match data_dir {
        None => ctxhost_test_postgres::Postgres::database("lcm"),
        Some(dir) => {
            let mut databases = DATABASES.lock().unwrap();
            databases
                .get_or_insert_with(HashMap::new)
                .entry(dir.to_path_buf())
                .or_insert_with(|| ctxhost_test_postgres::Postgres::database("lcm"))
                .clone()
        }
    };
    let mut config = match config {
        Value::Object(map) => Value::Object(map),
        _ => json!({}),
    };
    config["store"] = json!(url);
    config
}

/// A fake host for lcm (data directory in a fresh temporary directory, one token per 4
/// characters) whose summarizer follows `script`; its store where the suite runs.
pub fn host(script: Script, config: Value, context_length: u64) -> FakeHost {
    FakeHost::builder("lcm")
        .config(with_store(config, None))
        .context_length(context_length)
        .default_answer(script.answer())
        .build()
}

pub fn try_engine(host: &FakeHost) -> Result<LcmEngine, EngineError> {
    LcmEngine::create(host.services())
}

pub fn engine(host: &FakeHost) -> LcmEngine {
    try_engine(host).expect("engine starts")
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

/// A host with a working summarizer, the small settings and the small window.
pub fn small_host() -> FakeHost {
    host(Script::Good, small_config(), SMALL_WINDOW)
}

/// An engine on [`small_host`] (which lives as long as the engine).
pub fn small_engine() -> LcmEngine {
    engine(&small_host())
}

/// Every corpus transcript, by file name. A missing corpus fails the test, saying where it
/// looked and how to point at it.
pub fn transcripts() -> Vec<(String, Vec<Message>)> {
    corpus::transcripts()
        .into_iter()
        .map(|t| (t.name, t.messages))
        .collect()
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

/// Tokens of messages as the engine counts them on the fake host.
pub fn tokens(messages: &[Message]) -> u64 {
    ctxhost_sdk_test::tokens::count_messages(messages)
}

/// The engine's `status` operation.
pub fn status(engine: &mut LcmEngine) -> Value {
    engine.invoke("status", &Value::Null).unwrap()
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

/// Every non-head message stored in the conversation, in stored order, each recovered through
/// `lcm_expand` of its `msg_<seq>` id.
pub fn stored_messages(engine: &mut LcmEngine) -> Vec<Value> {
    let mut out = Vec::new();
    let mut missing_in_a_row = 0;
    for seq in 0.. {
        let page = tool(engine, "lcm_expand", json!({"id": format!("msg_{seq}")}));
        let Some(messages) = page["messages"].as_array() else {
            // Sequence numbers are dense: a few misses in a row is the end.
            missing_in_a_row += 1;
            if missing_in_a_row > 8 {
                break;
            }
            continue;
        };
        missing_in_a_row = 0;
        for item in messages {
            if item["message"]["role"] != "system" {
                out.push(item["message"].clone());
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

/// lcm with `config` (given a store) on the host's offline summary, in a window of
/// `context_length` tokens.
pub fn offline_host(config: Value, context_length: u64) -> FakeHost {
    FakeHost::builder("lcm")
        .config(with_store(config, None))
        .context_length(context_length)
        .default_answer(Answer::with(|request| {
            Ok(ctxhost_offline_summary::OfflineSummarizer.summary(request))
        }))
        .build()
}

/// A sized compression of `messages` (forced, as the quality harness asks it), its view a
/// valid message sequence.
pub fn sized(engine: &mut LcmEngine, messages: &[Message], target: u64) -> Vec<Message> {
    let options = CompressOptions {
        force: true,
        current_tokens: Some(tokens(messages)),
        target_tokens: Some(target),
        ..CompressOptions::default()
    };
    let view = engine.compress(messages, &options).unwrap();
    sequence::validate(&view).unwrap();
    view
}

/// Pushes a long build log as the newest turn, and the assistant's reply: the block before it
/// gets little room. Returns what the head (the first two messages) and that turn take, in
/// tokens, which stay verbatim.
pub fn push_long_log(messages: &mut Vec<Message>) -> u64 {
    let log = Message::user(format!(
        "Here is the build log:\n{}",
        "step compiled without warnings\n".repeat(200)
    ));
    let read = Message::assistant("Read it; the build is clean.");
    let verbatim = tokens(&messages[..2]) + tokens(&[log.clone(), read.clone()]);
    messages.push(log);
    messages.push(read);
    verbatim
}

/// A short newest turn after `view`, compressed to at most `target` tokens: a round with room
/// after one that had little.
pub fn short_turn_within(engine: &mut LcmEngine, view: Vec<Message>, target: u64) -> Vec<Message> {
    let mut messages = view;
    messages.push(Message::user("Carry on."));
    messages.push(Message::assistant("Done."));
    let view = sized(engine, &messages, target);
    assert!(tokens(&view) <= target, "{} tokens", tokens(&view));
    view
}
