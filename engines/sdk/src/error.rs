//! Typed errors shared by engines, the host and the plugin boundary.

use std::fmt;

/// What kind of failure an [`EngineError`] is. Crosses the plugin boundary as a number, and a
/// process boundary by name (`failed`, `invalid_setting`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
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
    /// One of the engine's settings is wrong; [`EngineError::setting`] names it.
    InvalidSetting,
    /// The session is held by another writer (another process, say) and stayed held as long
    /// as the engine waited; trying again later may work, carrying on in parallel must not.
    Busy,
    /// The engine did not answer within the host's deadline (an isolated engine's process is
    /// then killed).
    TimedOut,
    /// The call was cut short through no fault of its own: an isolated engine's process,
    /// shared with other sessions, was lost to another call in flight with it. The session's
    /// state is in its store; its next call reopens it on a new process.
    Interrupted,
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
            ErrorKind::InvalidSetting => 6,
            ErrorKind::Busy => 7,
            ErrorKind::TimedOut => 8,
            ErrorKind::Interrupted => 9,
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
            6 => ErrorKind::InvalidSetting,
            7 => ErrorKind::Busy,
            8 => ErrorKind::TimedOut,
            9 => ErrorKind::Interrupted,
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
            ErrorKind::InvalidSetting => "invalid setting",
            ErrorKind::Busy => "busy",
            ErrorKind::TimedOut => "timed out",
            ErrorKind::Interrupted => "interrupted",
        })
    }
}

/// An error from an engine operation or a host service: a kind the caller can act on and a
/// message for people. It crosses the plugin boundary intact (a setting error keeps its key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EngineError {
    kind: ErrorKind,
    message: String,
    /// For [`ErrorKind::InvalidSetting`]: the key at fault and the problem, as data.
    setting: Option<Box<SettingFault>>,
}

/// The setting an [`ErrorKind::InvalidSetting`] error is about.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SettingFault {
    /// The key's path inside the engine's own config section, dotted (`threshold`,
    /// `summary.max_tokens`); empty when the section as a whole is at fault.
    pub key: String,
    /// What is wrong with it, e.g. `must be between 0 and 1, got 1.7`.
    pub problem: String,
}

impl EngineError {
    /// An error of `kind`; the message says what went wrong, for the user.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        EngineError {
            kind,
            message: message.into(),
            setting: None,
        }
    }

    /// A wrong setting: `key` is its dotted path inside the engine's config section (empty for
    /// the section itself), `problem` says what is wrong and, ideally, what is expected.
    pub fn invalid_setting(key: impl Into<String>, problem: impl Into<String>) -> Self {
        let fault = SettingFault {
            key: key.into(),
            problem: problem.into(),
        };
        let message = if fault.key.is_empty() {
            fault.problem.clone()
        } else {
            format!("{}: {}", fault.key, fault.problem)
        };
        EngineError {
            kind: ErrorKind::InvalidSetting,
            message,
            setting: Some(Box::new(fault)),
        }
    }

    /// The setting at fault, for [`ErrorKind::InvalidSetting`] errors.
    pub fn setting(&self) -> Option<&SettingFault> {
        self.setting.as_deref()
    }

    /// The operation ran and failed ([`ErrorKind::Failed`]).
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, message)
    }

    /// The caller passed something the engine cannot use ([`ErrorKind::InvalidInput`]).
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }

    /// The engine does not implement `operation` ([`ErrorKind::Unsupported`]): the host then
    /// uses its default behaviour, so answer this rather than failing for an optional operation.
    pub fn unsupported(operation: &str) -> Self {
        Self::new(
            ErrorKind::Unsupported,
            format!("operation `{operation}` is not supported"),
        )
    }

    /// A tool call named a tool this engine does not have ([`ErrorKind::InvalidInput`]).
    pub fn unknown_tool(name: &str) -> Self {
        Self::new(
            ErrorKind::InvalidInput,
            format!("unknown context engine tool: {name}"),
        )
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether this is [`ErrorKind::Unsupported`], i.e. the caller should use its default.
    pub fn is_unsupported(&self) -> bool {
        self.kind == ErrorKind::Unsupported
    }

    /// The session is held by another writer ([`ErrorKind::Busy`]).
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, message)
    }

    /// Whether another writer holds the session ([`ErrorKind::Busy`]).
    pub fn is_busy(&self) -> bool {
        self.kind == ErrorKind::Busy
    }
}

impl From<serde_json::Error> for EngineError {
    fn from(error: serde_json::Error) -> Self {
        EngineError::invalid_input(error.to_string())
    }
}
