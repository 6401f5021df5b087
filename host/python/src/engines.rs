//! `ctxhost.Engines`: the configured engines, opened as the `ctxhost` command opens them (its
//! config lookup, its home, its plugins and their approvals, isolated engines in child
//! processes), and sessions on them.

use std::path::PathBuf;
use std::sync::Arc;

use ctxhost::cli::{App, GlobalArgs};
use ctxhost_config::summarizer::SummarizerSettings;
use ctxhost_config::Override;
use ctxhost_core::SessionOptions;
use pyo3::prelude::*;

use crate::convert::value_from;
use crate::errors::ConfigError;
use crate::session::Session;

/// The engines of one configuration, and the runtime their sessions run on.
#[pyclass(module = "ctxhost", frozen)]
pub struct Engines {
    app: Arc<App>,
}

#[pymethods]
impl Engines {
    /// Opens the engines of `config` (a `config.yaml`); `None`: the command's own lookup
    /// (`./config.yaml`, else `$CTXHOST_HOME/config.yaml`, else the built-in defaults).
    /// `summarizer`, a mapping of `auxiliary.compression`'s keys, is the summarizer the engines
    /// get unless the config names a provider there (the config's then wins).
    #[new]
    #[pyo3(signature = (config=None, summarizer=None))]
    fn new(
        py: Python<'_>,
        config: Option<PathBuf>,
        summarizer: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut overrides = Vec::new();
        if let Some(summarizer) = summarizer {
            let settings = SummarizerSettings::from_value(&value_from(summarizer)?)
                .map_err(|error| ConfigError::new_err(format!("summarizer: {error}")))?;
            overrides.push(Override::Summarizer(settings));
        }
        let global = GlobalArgs {
            config,
            verbose: false,
            program: crate::command::script(),
        };
        let app = py
            .detach(|| App::with_overrides(&global, overrides))
            .map_err(|error| ConfigError::new_err(format!("{error:#}")))?;
        Ok(Engines { app: Arc::new(app) })
    }

    /// The summarizer engines get (`offline`, or the provider and model, e.g.
    /// `custom:gpt-4o-mini`).
    #[getter]
    fn summarizer(&self) -> String {
        self.app.engines.services().summarizer()
    }

    /// The engine `context.engine` names.
    #[getter]
    fn default_engine(&self) -> String {
        self.app.config().context.engine.clone()
    }

    /// The config file in use (it may not exist: built-in defaults).
    #[getter]
    fn config_path(&self) -> PathBuf {
        self.app.config_path.clone()
    }

    /// Opens session `session_id` on `engine` (strict: that engine or an error), or on
    /// `context.engine` (an engine that is missing or cannot start falls back to the built-in
    /// compressor, with a warning on stderr). `model` and `context_length` default to the
    /// config's `model` section.
    #[pyo3(signature = (session_id, engine=None, model=None, context_length=None))]
    fn session(
        &self,
        py: Python<'_>,
        session_id: String,
        engine: Option<String>,
        model: Option<String>,
        context_length: Option<u64>,
    ) -> PyResult<Session> {
        // A resumed agent is a new process on the same session: what the engines wrote in the
        // earlier one stays theirs.
        let mut options = SessionOptions::new(session_id).recording_written();
        if model.is_some() || context_length.is_some() {
            let configured = &self.app.config().model;
            options = options.model(
                model.unwrap_or_else(|| configured.name.clone()),
                context_length.unwrap_or(configured.context_length),
            );
        }
        let (name, options) = match engine {
            Some(name) => (name, options.strict()),
            None => (self.default_engine(), options),
        };
        Session::open(py, &self.app, &name, options)
    }
}
