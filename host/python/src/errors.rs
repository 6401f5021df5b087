//! The host's errors as Python exceptions: `ctxhost.Error` and its kinds, each carrying the
//! host's own one-line message.

use ctxhost_core::engines::ResolveError;
use ctxhost_core::session::SessionError;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

pyo3::create_exception!(
    ctxhost,
    Error,
    PyException,
    "Every error of ctxhost; its message is the host's one line."
);
pyo3::create_exception!(
    ctxhost,
    ConfigError,
    Error,
    "The configuration could not be read or is wrong, or an engine refused its settings."
);
pyo3::create_exception!(
    ctxhost,
    EngineError,
    Error,
    "An engine could not be opened, failed, panicked or broke its output contract."
);
pyo3::create_exception!(
    ctxhost,
    NotSupported,
    Error,
    "The session's engine does not offer this operation."
);

pub fn add_to(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("Error", py.get_type::<Error>())?;
    module.add("ConfigError", py.get_type::<ConfigError>())?;
    module.add("EngineError", py.get_type::<EngineError>())?;
    module.add("NotSupported", py.get_type::<NotSupported>())?;
    Ok(())
}

/// An engine operation's error: `NotSupported` when the engine lacks the operation.
pub fn session_error(error: SessionError) -> PyErr {
    match error {
        SessionError::Unsupported { .. } => NotSupported::new_err(error.to_string()),
        _ => EngineError::new_err(error.to_string()),
    }
}

/// Why no session opened: the configuration's fault, or the engine's.
pub fn resolve_error(error: ResolveError) -> PyErr {
    match error {
        ResolveError::Config(_) => ConfigError::new_err(error.to_string()),
        _ => EngineError::new_err(error.to_string()),
    }
}
