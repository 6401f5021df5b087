//! Embedding the host as a library: engines registered in code, and where they sit in the
//! resolution order.

use std::sync::Arc;

use ctxhost_config::Config;
use ctxhost_core::engines::{EngineSource, ResolveError};
use ctxhost_core::services::{HostServicesImpl, LogSink};
use ctxhost_core::{Engines, SessionOptions};
use ctxhost_plugins::RootKind;
use ctxhost_sdk::{
    CompressOptions, ContextEngine, EngineError, EngineStatus, Message, TokenTracker,
};
use ctxhost_tests::{library, Sandbox};
use ctxhost_tokens::TokenCounter;

/// An engine that keeps only the last message after the system prompt.
struct LastOnly(TokenTracker);

impl ContextEngine for LastOnly {
    fn name(&self) -> &str {
        "last-only"
    }

    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        Ok(self.0.over_threshold(prompt_tokens))
    }

    fn compress(
        &mut self,
        messages: &[Message],
        _options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        let mut kept: Vec<Message> = messages
            .iter()
            .take_while(|m| m.is_system())
            .cloned()
            .collect();
        kept.extend(messages.last().cloned());
        Ok(kept)
    }

    fn status(&mut self) -> Result<EngineStatus, EngineError> {
        Ok(self.0.status())
    }
}

fn engines(sandbox: &Sandbox, config: &str) -> Engines {
    sandbox.write_config(config);
    let config = Config::load(&sandbox.config_path()).unwrap();
    let services = Arc::new(HostServicesImpl::new(
        TokenCounter::new("o200k_base"),
        LogSink::stderr(false),
        None,
    ));
    let mut engines = Engines::new(config, sandbox.home(), services);
    engines.register(
        "last-only",
        "Keeps the system prompt and the last message.",
        Box::new(|services| {
            Ok(Box::new(LastOnly(TokenTracker::new(
                services.model().context_length,
                0.5,
            ))))
        }),
    );
    engines
}

#[test]
fn an_engine_registered_in_code_resolves_and_runs() {
    let sandbox = Sandbox::new();
    let engines = engines(&sandbox, "context:\n  engine: last-only\n");
    let mut session = engines
        .open_session("last-only", SessionOptions::new("s1").strict())
        .unwrap();
    assert_eq!(session.source(), &EngineSource::Registered);
    assert!(session.warnings().is_empty());
    let messages = vec![
        Message::system("s"),
        Message::user("a"),
        Message::assistant("b"),
        Message::user("c"),
    ];
    let out = runtime().block_on(async {
        session.begin().await.unwrap();
        session
            .compress(Arc::new(messages), CompressOptions::default())
            .await
    });
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        *out.messages,
        vec![Message::system("s"), Message::user("c")]
    );

    let listed = engines.list();
    let row = listed.iter().find(|r| r.name == "last-only").unwrap();
    assert_eq!(row.source, "registered in code");
    assert!(row.active);
}

#[test]
fn a_plugin_directory_comes_before_an_engine_registered_in_code() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("last-only", "ctxhost_fixture_echo");
    let engines = engines(&sandbox, "context:\n  engine: last-only\n");
    let session = engines
        .open_session("last-only", SessionOptions::new("s1"))
        .unwrap();
    // The plugin directory is found first; its library is the echo engine, so the names differ
    // and the host refuses it rather than running the wrong engine.
    assert_eq!(session.source(), &EngineSource::BuiltIn);
    assert!(session.warnings()[0]
        .summary
        .contains("plugin.yaml names 'last-only' but the library is engine 'echo'"));
    // Named on purpose, the same engine is an error instead of a fallback.
    let error = engines
        .open_session("last-only", SessionOptions::new("s1").strict())
        .err()
        .expect("a strict session on an unusable engine fails");
    assert!(matches!(error, ResolveError::Unusable(_)), "{error}");
}

#[test]
fn a_strict_session_on_an_unknown_engine_suggests_the_closest_name() {
    let sandbox = Sandbox::new();
    let engines = engines(&sandbox, "context:\n  engine: last-only\n");
    let error = engines
        .open_session("last-onyl", SessionOptions::new("s1").strict())
        .err()
        .expect("unknown engine");
    match &error {
        ResolveError::NotFound { suggestion, .. } => {
            assert_eq!(suggestion.as_deref(), Some("last-only"))
        }
        other => panic!("expected NotFound, got {other}"),
    }
    assert!(
        error.to_string().contains("did you mean 'last-only'?"),
        "{error}"
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_program_embedding_the_host_finds_checkout_plugins_in_its_own_build_output() {
    // This test runs in-process: the running executable is the suite's (in `deps/` under the
    // cargo output directory), and the window library cargo built for the suite is one level up.
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    let engines = engines(&sandbox, "context:\n  engine: window\n");
    let session = engines
        .open_session("window", SessionOptions::new("s1").temporary().strict())
        .unwrap();
    assert!(session.warnings().is_empty(), "{:?}", session.warnings());
    assert_eq!(
        session.source(),
        &EngineSource::Plugin {
            root: RootKind::ConfigDir,
            library: library("ctxhost_engine_window"),
        }
    );
}
