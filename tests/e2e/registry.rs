//! Embedding the host as a library: engines registered in code, and where they sit in the
//! resolution order.

use std::sync::Arc;

use ctxhost::engines::EngineSource;
use ctxhost::plugins::RootKind;
use ctxhost::services::{HostServicesImpl, LogSink};
use ctxhost::tokens::TokenCounter;
use ctxhost::{Config, Engines};
use ctxhost_sdk::{
    CompressOptions, ContextEngine, EngineError, EngineStatus, Message, TokenTracker,
};
use ctxhost_tests::{library, Sandbox};

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
    let mut resolved = engines.resolve("last-only").unwrap();
    assert_eq!(resolved.source, EngineSource::Registered);
    assert!(resolved.warnings.is_empty());
    let messages = vec![
        Message::system("s"),
        Message::user("a"),
        Message::assistant("b"),
        Message::user("c"),
    ];
    let out = resolved
        .engine
        .compress(&messages, &CompressOptions::default())
        .unwrap();
    assert_eq!(out, vec![Message::system("s"), Message::user("c")]);

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
    let resolved = engines.resolve("last-only").unwrap();
    // The plugin directory is found first; its library is the echo engine, so the names differ
    // and the host refuses it rather than running the wrong engine.
    assert_eq!(resolved.source, EngineSource::BuiltIn);
    assert!(resolved.warnings[0]
        .summary
        .contains("plugin.yaml names 'last-only' but the library is engine 'echo'"));
}

#[test]
fn a_program_embedding_the_host_finds_checkout_plugins_in_its_own_build_output() {
    // This test runs in-process: the running executable is the suite's (in `deps/` under the
    // cargo output directory), and the window library cargo built for the suite is one level up.
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    let engines = engines(&sandbox, "context:\n  engine: window\n");
    let resolved = engines.resolve("window").unwrap();
    assert!(resolved.warnings.is_empty(), "{:?}", resolved.warnings);
    assert_eq!(
        resolved.source,
        EngineSource::Plugin {
            root: RootKind::ConfigDir,
            library: library("ctxhost_engine_window"),
        }
    );
}
