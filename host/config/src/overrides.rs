//! What the command line (or a program embedding the host) says instead of `config.yaml`. The
//! binary settles every override into the [`Config`] once, before anything reads it
//! ([`Config::settle`]); an isolated engine's process receives that settled value, so it runs
//! on the same one.

use serde::{Deserialize, Serialize};

use crate::summarizer::SummarizerSettings;
use crate::{Config, ConfigError};

/// One command-line flag (or an embedding program's argument) that stands for a config key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Override {
    /// `--context-length`: `model.context_length`.
    ContextLength(u64),
    /// `serve --listen`: `serve.listen`.
    Listen(String),
    /// `serve --upstream`: `serve.upstream`.
    Upstream(String),
    /// `serve --engine`: `context.engine`.
    Engine(String),
    /// The summarizer of a program embedding the host (the Python package's
    /// `Engines(summarizer=...)`, Hermes' auxiliary compression model): `auxiliary.compression`,
    /// unless the file names a provider there, whose summarizer then wins.
    Summarizer(SummarizerSettings),
}

impl Override {
    /// The flag the user wrote.
    pub fn flag(&self) -> &'static str {
        match self {
            Override::ContextLength(_) => "--context-length",
            Override::Listen(_) => "--listen",
            Override::Upstream(_) => "--upstream",
            Override::Engine(_) => "--engine",
            Override::Summarizer(_) => "summarizer",
        }
    }

    /// The config key it stands for.
    pub fn key(&self) -> &'static str {
        match self {
            Override::ContextLength(_) => "model.context_length",
            Override::Listen(_) => "serve.listen",
            Override::Upstream(_) => "serve.upstream",
            Override::Engine(_) => "context.engine",
            Override::Summarizer(_) => crate::summarizer::SECTION,
        }
    }

    fn apply(&self, config: &mut Config) {
        match self {
            Override::ContextLength(length) => config.model.context_length = *length,
            Override::Listen(listen) => config.serve.listen = listen.clone(),
            Override::Upstream(upstream) => config.serve.upstream = upstream.clone(),
            Override::Engine(engine) => config.context.engine = engine.clone(),
            Override::Summarizer(settings) => {
                if !config.summarizer_named {
                    config.summarizer = settings.clone();
                }
            }
        }
    }
}

impl Config {
    /// This config with `overrides` settled in, after the project's trust was settled (the
    /// command line is the user's own, so it wins over what an untrusted project may not set),
    /// and checked again by the same checks the file's keys get. An override the config
    /// refuses is an error naming the flag.
    pub fn settle(mut self, overrides: Vec<Override>) -> Result<Config, ConfigError> {
        for item in &overrides {
            let refused = |message: String| ConfigError::Flag {
                flag: item.flag(),
                message,
            };
            item.apply(&mut self);
            self.serve
                .validate()
                .map_err(|error| refused(format!("{}: {}", error.key, error.problem)))?;
            self.summarizer
                .validate()
                .map_err(|error| refused(format!("{}: {}", error.key(), error.problem())))?;
            self.validate().map_err(|error| match error {
                ConfigError::Invalid { message, .. } => refused(message),
                other => other,
            })?;
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_wins_and_the_settled_value_is_what_a_child_receives() {
        let config = Config::parse("model:\n  context_length: 8000\n", None).unwrap();
        let settled = config
            .settle(vec![Override::ContextLength(32_000)])
            .unwrap();
        assert_eq!(settled.model.context_length, 32_000);
        // What an isolated engine's process receives: the settled value, not the text.
        let sent = serde_json::to_string(&settled).unwrap();
        let received: Config = serde_json::from_str(&sent).unwrap();
        assert_eq!(received.model.context_length, 32_000);
        assert_eq!(received.text(), settled.text());
    }

    #[test]
    fn a_refused_override_names_the_flag() {
        let error = Config::defaults()
            .settle(vec![Override::ContextLength(10)])
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("--context-length: model.context_length: must be at least"),
            "{error}"
        );
        let error = Config::defaults()
            .settle(vec![Override::Upstream("ftp://x".into())])
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("--upstream: serve.upstream: must be an http"),
            "{error}"
        );
    }

    fn summarizer(model: &str) -> SummarizerSettings {
        SummarizerSettings {
            provider: crate::summarizer::Provider::Custom,
            model: Some(model.to_string()),
            base_url: Some("http://127.0.0.1:9/v1".to_string()),
            ..SummarizerSettings::default()
        }
    }

    #[test]
    fn an_embedders_summarizer_serves_unless_the_file_names_a_provider() {
        let given = summarizer("aux-model");
        // No section, or one without a provider: the given summarizer.
        for text in ["", "auxiliary:\n  compression:\n    cooldown_seconds: 5\n"] {
            let settled = Config::parse(text, None)
                .unwrap()
                .settle(vec![Override::Summarizer(given.clone())])
                .unwrap();
            assert_eq!(settled.summarizer, given, "{text:?}");
        }
        // A provider named in the file, even the offline one: the file's.
        let text = "auxiliary:\n  compression:\n    provider: offline\n";
        let settled = Config::parse(text, None)
            .unwrap()
            .settle(vec![Override::Summarizer(given.clone())])
            .unwrap();
        assert_eq!(settled.summarizer, SummarizerSettings::offline());
    }

    #[test]
    fn an_untrusted_projects_summarizer_gives_way_to_an_embedders() {
        let text = "auxiliary:\n  compression:\n    provider: custom\n    model: m\n    \
                    base_url: http://project.example/v1\n";
        let mut config = Config::parse(text, None).unwrap();
        config.distrust_project(crate::project::Untrusted::Never);
        let given = summarizer("aux-model");
        let settled = config
            .settle(vec![Override::Summarizer(given.clone())])
            .unwrap();
        assert_eq!(settled.summarizer, given);
    }

    #[test]
    fn a_summarizer_that_cannot_work_is_refused_naming_its_key() {
        let broken = SummarizerSettings {
            base_url: None,
            ..summarizer("aux-model")
        };
        let error = Config::defaults()
            .settle(vec![Override::Summarizer(broken)])
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("summarizer: auxiliary.compression.base_url: required"),
            "{error}"
        );
    }

    #[test]
    fn the_command_line_wins_over_an_untrusted_projects_screening() {
        let mut config =
            Config::parse("serve:\n  upstream: http://project.example/v1\n", None).unwrap();
        config.distrust_project(crate::project::Untrusted::Never);
        assert_ne!(config.serve.upstream, "http://project.example/v1");
        let settled = config
            .settle(vec![Override::Upstream("http://127.0.0.1:9/v1".into())])
            .unwrap();
        assert_eq!(settled.serve.upstream, "http://127.0.0.1:9/v1");
    }
}
