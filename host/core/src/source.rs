//! Where a resolved engine came from, and what resolution has to tell the user about it.

use std::path::PathBuf;

use ctxhost_plugins::RootKind;

/// Where an engine came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineSource {
    BuiltIn,
    Plugin { root: RootKind, library: PathBuf },
    Registered,
}

impl EngineSource {
    pub fn label(&self) -> &'static str {
        match self {
            EngineSource::BuiltIn => "built-in",
            EngineSource::Plugin { root, .. } => root.label(),
            EngineSource::Registered => "registered in code",
        }
    }
}

/// Something the user should know about resolution: one line, plus the full text for
/// `--verbose`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub summary: String,
    pub detail: Option<String>,
}
