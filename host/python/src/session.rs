//! `ctxhost.Session`: one conversation's engine, with the whole session API. Every call
//! converts its Python arguments first, then runs the engine with the interpreter's lock
//! released (another Python thread runs meanwhile, on its own session or waiting for this
//! one), then converts the answer back.

use std::sync::{Arc, Mutex, MutexGuard};

use ctxhost::cli::App;
use ctxhost_core::session::SessionError;
use ctxhost_core::{Session as HostSession, SessionOptions};
use ctxhost_sdk::{CompressOptions, SelectRequest};
use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert::{messages_from, messages_to, usage_from, value_from, value_to};
use crate::errors::{resolve_error, session_error, EngineError};

/// A session: an id and the engine instance serving it.
#[pyclass(module = "ctxhost", frozen)]
pub struct Session {
    app: Arc<App>,
    /// How it was opened, with the engine it resolved to: what [`Session::clone`] opens again.
    options: SessionOptions,
    engine: String,
    host: Mutex<HostSession>,
    /// Whether the engine serving the session offers `select_context`, once asked: the
    /// engine's name with the answer (a fallback to the compressor asks again).
    selects: Mutex<Option<(String, bool)>>,
}

impl Session {
    fn new(app: Arc<App>, options: SessionOptions, host: HostSession) -> Self {
        Session {
            app,
            engine: host.engine().to_string(),
            options: options.strict(),
            host: Mutex::new(host),
            selects: Mutex::new(None),
        }
    }

    /// Opens session `options.id` on engine `name` and begins it, printing resolution warnings
    /// as the command does.
    pub fn open(
        py: Python<'_>,
        app: &Arc<App>,
        name: &str,
        options: SessionOptions,
    ) -> PyResult<Session> {
        py.detach(|| {
            let mut session = app
                .engines
                .open_session(name, options.clone())
                .map_err(resolve_error)?;
            for warning in session.warnings() {
                app.warn(warning);
            }
            app.runtime
                .block_on(session.begin())
                .map_err(|error| EngineError::new_err(error.to_string()))?;
            Ok(Session::new(app.clone(), options, session))
        })
    }

    fn lock(&self) -> MutexGuard<'_, HostSession> {
        // A panic while it was held was an engine's, which the session already handled.
        self.host
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `body` on the host session with the interpreter's lock released.
    fn run<T, F>(&self, py: Python<'_>, body: F) -> T
    where
        T: Send,
        F: FnOnce(&mut HostSession, &tokio::runtime::Runtime) -> T + Send,
    {
        py.detach(|| body(&mut self.lock(), &self.app.runtime))
    }
}

#[pymethods]
impl Session {
    /// The session's id.
    #[getter]
    fn session_id(&self) -> String {
        self.options.id.clone()
    }

    /// The engine serving the session now (the built-in compressor once the engine failed).
    #[getter]
    fn engine_name(&self, py: Python<'_>) -> String {
        self.run(py, |session, _| session.engine().to_string())
    }

    /// Whether the engine offers `select_context`: asked once per engine serving the session
    /// (with an empty request: an engine without it answers that it has none), then
    /// remembered.
    #[getter]
    fn has_select_context(&self, py: Python<'_>) -> bool {
        self.run(py, |session, runtime| {
            let mut selects = self
                .selects
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match &*selects {
                Some((engine, answer)) if engine == session.engine() => *answer,
                _ => {
                    let request = SelectRequest {
                        incoming: None,
                        budget_tokens: 0,
                    };
                    let answer =
                        runtime.block_on(session.select_context(Arc::new(Vec::new()), request));
                    let offered = !matches!(answer, Err(SessionError::Unsupported { .. }));
                    *selects = Some((session.engine().to_string(), offered));
                    offered
                }
            }
        })
    }

    /// Whether to compress, given the prompt tokens of the last model call.
    fn should_compress(&self, py: Python<'_>, prompt_tokens: u64) -> PyResult<bool> {
        self.run(py, |session, runtime| {
            runtime.block_on(session.should_compress(prompt_tokens))
        })
        .map_err(session_error)
    }

    /// The engine's cheap check before a call, from local counts of `messages`.
    fn should_compress_preflight(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let messages = Arc::new(messages_from(messages)?);
        self.run(py, |session, runtime| {
            runtime.block_on(session.should_compress_preflight(messages))
        })
        .map_err(session_error)
    }

    /// Compresses `messages`. When the engine fails, the input comes back unchanged with a
    /// `RuntimeWarning` carrying the host's message, and the session goes on with the built-in
    /// compressor (the host never loses the conversation).
    #[pyo3(signature = (messages, *, current_tokens=None, focus_topic=None, force=false, target_tokens=None))]
    fn compress<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        current_tokens: Option<u64>,
        focus_topic: Option<String>,
        force: bool,
        target_tokens: Option<u64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let messages = Arc::new(messages_from(messages)?);
        let options = CompressOptions {
            current_tokens,
            focus_topic,
            force,
            memory_context: None,
            target_tokens,
        };
        let compression = self.run(py, |session, runtime| {
            runtime.block_on(session.compress(messages, options))
        });
        if let Some(error) = &compression.error {
            warn(py, &error.to_string())?;
        }
        if let Some(error) = &compression.record_error {
            warn(
                py,
                &format!("{error}; a later process on this session reads the summary as a turn"),
            )?;
        }
        messages_to(py, &compression.messages)
    }

    /// Records what the provider reported for the last model call (an OpenAI-style usage
    /// dict; other keys are ignored).
    fn update_from_response(&self, py: Python<'_>, usage: &Bound<'_, PyAny>) -> PyResult<()> {
        let usage = usage_from(&value_from(usage)?)?;
        self.run(py, |session, runtime| {
            runtime.block_on(session.record_usage(usage))
        })
        .map_err(session_error)
    }

    /// The JSON schemas of the tools the engine gives the model.
    fn tool_schemas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let schemas = self
            .run(py, |session, runtime| {
                runtime.block_on(session.tool_schemas())
            })
            .map_err(session_error)?;
        let list = PyList::empty(py);
        for schema in &schemas {
            list.append(value_to(py, schema)?)?;
        }
        Ok(list)
    }

    /// Runs the engine's tool `name` with `args`; the answer is the text for the model.
    fn handle_tool_call(
        &self,
        py: Python<'_>,
        name: String,
        args: &Bound<'_, PyAny>,
    ) -> PyResult<String> {
        let args = value_from(args)?;
        self.run(py, |session, runtime| {
            runtime.block_on(session.call_tool(name, args))
        })
        .map_err(session_error)
    }

    /// The engine's status: `last_prompt_tokens`, `threshold_tokens`, `context_length`,
    /// `usage_percent`, `compression_count` and the engine's own `details`.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let status = self
            .run(py, |session, runtime| runtime.block_on(session.status()))
            .map_err(session_error)?;
        let value = serde_json::to_value(&status)
            .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))?;
        value_to(py, &value)
    }

    /// The context for one request, chosen by the engine within `budget_tokens`: raises
    /// `NotSupported` unless [`has_select_context`](Self::has_select_context).
    #[pyo3(signature = (messages, *, incoming_message=None, budget_tokens=0))]
    fn select_context<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        incoming_message: Option<&Bound<'py, PyDict>>,
        budget_tokens: u64,
    ) -> PyResult<Bound<'py, PyList>> {
        let messages = Arc::new(messages_from(messages)?);
        let incoming = match incoming_message {
            Some(message) => messages_from(PyList::new(py, [message])?.as_any())?.pop(),
            // The newest user message of the request, as the gateway asks.
            None => messages.iter().rev().find(|m| m.is_user()).cloned(),
        };
        let request = SelectRequest {
            incoming,
            budget_tokens,
        };
        let selection = self
            .run(py, |session, runtime| {
                runtime.block_on(session.select_context(messages, request))
            })
            .map_err(session_error)?;
        messages_to(py, &selection.messages)
    }

    /// Tells the engine the model, or its usable window, changed.
    fn update_model(&self, py: Python<'_>, model: String, context_length: u64) -> PyResult<()> {
        self.run(py, |session, runtime| {
            runtime.block_on(session.update_model(model, context_length))
        })
        .map_err(session_error)
    }

    /// Tells the engine the session ends, with the conversation as it stands.
    fn on_session_end(&self, py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<()> {
        let messages = Arc::new(messages_from(messages)?);
        self.run(py, |session, runtime| {
            runtime.block_on(session.end(messages))
        })
        .map_err(session_error)
    }

    /// Tells the engine the conversation starts over in this session (`/new`, `/reset`).
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |session, runtime| runtime.block_on(session.reset()))
            .map_err(session_error)
    }

    /// A new handle on the same engine and its store, with the same session id: a new engine
    /// instance, as a second agent on the same conversation would have.
    fn clone(&self, py: Python<'_>) -> PyResult<Session> {
        Session::open(py, &self.app, &self.engine, self.options.clone())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<ctxhost.Session {:?} on engine {:?}>",
            self.options.id,
            self.engine_name(py)
        )
    }
}

/// A `RuntimeWarning` saying `message` (what the command prints as a warning line).
fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let message = std::ffi::CString::new(message.replace('\0', " "))?;
    PyErr::warn(py, &py.get_type::<PyRuntimeWarning>(), &message, 1)
}
