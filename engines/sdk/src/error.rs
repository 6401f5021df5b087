//! Typed errors shared by engines, the host and the plugin boundary.

use std::fmt;

/// What kind of failure an [`EngineError`] is. Crosses the plugin boundary as a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The operation ran and failed.
    Failed,
    /// The caller passed something the engine cannot use.
    InvalidInput,
    /// The engine (or host) does not implement this operation; the caller uses its default.
    Unsupported,
    /// The engine panicked; the SDK caught it at the boundary.
    Panicked,
    /// A host service (such as the summarizer) is not configured.
    NotConfigured,
    /// A host service is configured but could not answer (network, timeout, bad reply).
    Unavailable,
}

impl ErrorKind {
    pub(crate) fn code(self) -> u32 {
        match self {
            ErrorKind::Failed => 0,
            ErrorKind::InvalidInput => 1,
            ErrorKind::Unsupported => 2,
            ErrorKind::Panicked => 3,
            ErrorKind::NotConfigured => 4,
            ErrorKind::Unavailable => 5,
        }
    }

    /// Unknown codes (from a newer peer) read as `Failed`.
    pub(crate) fn from_code(code: u32) -> Self {
        match code {
            1 => ErrorKind::InvalidInput,
            2 => ErrorKind::Unsupported,
            3 => ErrorKind::Panicked,
            4 => ErrorKind::NotConfigured,
            5 => ErrorKind::Unavailable,
            _ => ErrorKind::Failed,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Failed => "failed",
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Panicked => "panicked",
            ErrorKind::NotConfigured => "not configured",
            ErrorKind::Unavailable => "unavailable",
        })
    }
}

/// An error from an engine operation or a host service.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EngineError {
    kind: ErrorKind,
    message: String,
}

impl EngineError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        EngineError {
            kind,
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, message)
    }

    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }

    pub fn unsupported(operation: &str) -> Self {
        Self::new(
            ErrorKind::Unsupported,
            format!("operation `{operation}` is not supported"),
        )
    }

    pub fn unknown_tool(name: &str) -> Self {
        Self::new(
            ErrorKind::InvalidInput,
            format!("unknown context engine tool: {name}"),
        )
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn is_unsupported(&self) -> bool {
        self.kind == ErrorKind::Unsupported
    }
}

impl From<serde_json::Error> for EngineError {
    fn from(error: serde_json::Error) -> Self {
        EngineError::invalid_input(error.to_string())
    }
}
