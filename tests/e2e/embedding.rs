//! Embedding the host as a program would: the crate docs' agent loop (count, check, compress,
//! record usage, call a tool) through the one session API, with the built-in compressor and
//! with a cdylib engine loaded from a plugin directory.

use std::sync::Arc;

use ctxhost_config::Config;
use ctxhost_core::engines::EngineSource;
use ctxhost_core::{Engines, SessionOptions};
use ctxhost_sdk::{CompressOptions, Message, Usage};
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

/// What the loop saw, for the assertions.
struct LoopOutcome {
    compressions: usize,
    final_tokens: u64,
    tool_answers: Vec<String>,
    engine: String,
}

/// The crate docs' agent loop, over `turns` turns whose text includes a marker to search for.
fn agent_loop(engines: &Engines, engine: &str, runtime: &tokio::runtime::Runtime) -> LoopOutcome {
    let mut session = engines
        .open_session(engine, SessionOptions::new("embedded").strict())
        .expect("the engine resolves");
    runtime.block_on(async {
        session.begin().await.unwrap();
        let mut context = vec![Message::system("You are a helpful assistant.")];
        let (mut prompt_tokens, mut compressions) = (0, 0);
        for turn in 0..60 {
            context.push(Message::user(format!(
                "Question {turn} about the zanzibar-{turn} module: {}",
                "tell me more ".repeat(40)
            )));
            if session.should_compress(prompt_tokens).await.unwrap() {
                let compression = session
                    .compress(Arc::new(context.clone()), CompressOptions::default())
                    .await;
                assert!(compression.error.is_none(), "{:?}", compression.error);
                context = compression.messages.to_vec();
                compressions += 1;
            }
            prompt_tokens = session.count(&context);
            let answer = Message::assistant(format!("Answer {turn}: {}", "details ".repeat(40)));
            let completion_tokens = session.count_message(&answer);
            context.push(answer);
            session
                .record_usage(Usage {
                    prompt_tokens,
                    completion_tokens,
                    total_tokens: prompt_tokens + completion_tokens,
                    ..Usage::default()
                })
                .await
                .unwrap();
        }
        let mut tool_answers = Vec::new();
        for schema in session.tool_schemas().await.unwrap() {
            let name = schema["function"]["name"].as_str().unwrap().to_string();
            if name == "lcm_grep" {
                let answer = session
                    .call_tool(name, json!({"pattern": "zanzibar-3"}))
                    .await
                    .unwrap();
                tool_answers.push(answer);
            }
        }
        let final_tokens = session.count(&context);
        session.end(Arc::new(context)).await.unwrap();
        assert!(session.fallback().is_none());
        LoopOutcome {
            compressions,
            final_tokens,
            tool_answers,
            engine: session.engine().to_string(),
        }
    })
}

fn engines(sandbox: &Sandbox, runtime: &tokio::runtime::Runtime) -> Engines {
    sandbox.write_config("model:\n  context_length: 8000\n");
    let config = Config::load(&sandbox.config_path()).unwrap();
    Engines::for_config(config, sandbox.home(), runtime.handle().clone(), false).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_docs_agent_loop_runs_on_the_built_in_compressor() {
    let sandbox = Sandbox::new();
    let runtime = runtime();
    let engines = engines(&sandbox, &runtime);
    let outcome = agent_loop(&engines, "compressor", &runtime);
    assert_eq!(outcome.engine, "compressor");
    assert!(outcome.compressions > 0);
    assert!(outcome.final_tokens < 8000, "{}", outcome.final_tokens);
    assert!(outcome.tool_answers.is_empty());
}

#[test]
fn the_docs_agent_loop_runs_on_a_cdylib_engine_and_its_tools_answer() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("lcm", "ctxhost_engine_lcm");
    let runtime = runtime();
    let engines = engines(&sandbox, &runtime);
    let session = engines
        .open_session("lcm", SessionOptions::new("probe").temporary().strict())
        .unwrap();
    assert!(matches!(session.source(), EngineSource::Plugin { .. }));
    drop(session);

    let outcome = agent_loop(&engines, "lcm", &runtime);
    assert_eq!(outcome.engine, "lcm");
    assert!(outcome.compressions > 0);
    assert!(outcome.final_tokens < 8000, "{}", outcome.final_tokens);
    // The lossless engine finds a turn long gone from the context.
    let [answer] = outcome.tool_answers.as_slice() else {
        panic!("lcm offers lcm_grep: {:?}", outcome.tool_answers)
    };
    let answer: Value = serde_json::from_str(answer).unwrap();
    assert!(
        answer.to_string().contains("zanzibar-3"),
        "lcm_grep found the old turn: {answer}"
    );
}
