//! Host side: loads a plugin library, checks its ABI, and turns its engine object back into a
//! [`ContextEngine`], so the host treats built-in engines and plugins through one trait.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi_stable::library::{lib_header_from_path, LibraryError};
use abi_stable::std_types::{RSlice, RStr};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::bridge::host_box;
use super::ops;
use super::{EngineBox, EngineModuleRef};
use crate::engine::{CompressOptions, ContextEngine, EngineStatus, SessionStart, Usage};
use crate::error::EngineError;
use crate::manifest::{Manifest, API_LEVEL};
use crate::message::Message;
use crate::services::{EngineSetup, HostBackend};
use crate::telemetry::{CompressionReport, SessionInfo};

/// Why a library could not be loaded as an engine plugin. [`summary`](Self::summary) is the one
/// line to show; [`detail`](Self::detail) the loader's full text (for `--verbose`).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{summary}")]
pub struct LoadError {
    kind: LoadErrorKind,
    summary: String,
    detail: String,
}

/// The families of load failure, for callers that react differently to each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadErrorKind {
    /// The file is missing or is not a loadable shared library.
    Open,
    /// A shared library without the engine entry point.
    NotAPlugin,
    /// Built against another version or layout of the interface.
    Incompatible,
    /// The plugin's manifest could not be read.
    BadManifest,
    /// The plugin's root module failed to initialize.
    InitFailed,
}

impl LoadError {
    pub fn kind(&self) -> LoadErrorKind {
        self.kind
    }

    pub fn summary(&self) -> &str {
        &self.summary
    }

    pub fn detail(&self) -> &str {
        &self.detail
    }

    fn new(kind: LoadErrorKind, summary: String, detail: String) -> Self {
        LoadError {
            kind,
            summary,
            detail,
        }
    }

    fn from_library_error(path: &Path, error: LibraryError) -> Self {
        let detail = error.to_string();
        let (kind, summary) = match &error {
            LibraryError::OpenError { err, .. } => (
                LoadErrorKind::Open,
                if path.exists() {
                    format!("not a loadable shared library ({})", first_line(&err.to_string()))
                } else {
                    "the library file does not exist".to_string()
                },
            ),
            LibraryError::GetSymbolError { .. } => (
                LoadErrorKind::NotAPlugin,
                "a shared library, but not a ctxhost engine (no abi_stable root module)".to_string(),
            ),
            LibraryError::IncompatibleVersionNumber {
                expected_version,
                actual_version,
                ..
            } => (
                LoadErrorKind::Incompatible,
                format!(
                    "built against interface {actual_version}, this host speaks {expected_version}: rebuild the plugin against ctxhost-sdk {expected_version}"
                ),
            ),
            LibraryError::AbiInstability(_)
            | LibraryError::InvalidAbiHeader(_)
            | LibraryError::InvalidCAbi { .. } => (
                LoadErrorKind::Incompatible,
                format!(
                    "incompatible ABI layout ({}): rebuild the plugin against this host's ctxhost-sdk",
                    layout_cause(&detail)
                ),
            ),
            LibraryError::RootModule { .. } => (
                LoadErrorKind::InitFailed,
                format!("the plugin failed to initialize: {}", first_line(&detail)),
            ),
            _ => (LoadErrorKind::Incompatible, first_line(&detail).to_string()),
        };
        LoadError::new(kind, summary, detail)
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(text)
        .trim()
}

/// abi_stable's layout errors run to thousands of lines; the cause is in the trailing `Error:`
/// lines, sometimes followed by `Expected:` / `Found:` values. Keep those, on one line.
fn layout_cause(detail: &str) -> String {
    let lines: Vec<&str> = detail.lines().map(str::trim).collect();
    let Some(last) = lines.iter().rposition(|line| line.starts_with("Error:")) else {
        return first_line(detail).to_string();
    };
    let mut cause = lines[last].trim_start_matches("Error:").trim().to_string();
    let mut rest = lines[last + 1..].iter().filter(|line| !line.is_empty());
    while let Some(label) = rest.next() {
        if let ("Expected:" | "Found:", Some(value)) = (*label, rest.clone().next()) {
            cause.push_str(&format!(
                "; {} {value}",
                label.trim_end_matches(':').to_lowercase()
            ));
            rest.next();
        }
    }
    const MAX: usize = 200;
    match cause.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &cause[..cut]),
        None => cause,
    }
}

#[cfg(test)]
mod tests {
    use super::layout_cause;

    #[test]
    fn layout_cause_keeps_the_trailing_error_and_its_values() {
        let detail = "Compared <this>:\n    lots\nError:first\n  more\n\nError:mismatched package\nExpected:\n    ctxhost-sdk\nFound:\n    other\n";
        assert_eq!(
            layout_cause(detail),
            "mismatched package; expected ctxhost-sdk; found other"
        );
        assert_eq!(layout_cause("just one line"), "just one line");
    }
}

/// A loaded, ABI-checked plugin library. Libraries are never unloaded.
#[derive(Clone)]
pub struct PluginLibrary {
    path: PathBuf,
    module: EngineModuleRef,
    manifest: Manifest,
}

/// Loads the library at `path` and checks its interface version, layout and manifest.
///
/// Each library is loaded through its own header, so two plugins in one process never come back
/// as the same module.
pub fn load_library(path: &Path) -> Result<PluginLibrary, LoadError> {
    let header =
        lib_header_from_path(path).map_err(|error| LoadError::from_library_error(path, error))?;
    let module = header
        .init_root_module::<EngineModuleRef>()
        .map_err(|error| LoadError::from_library_error(path, error))?;
    let manifest_json = (module.manifest())();
    let manifest: Manifest = serde_json::from_str(manifest_json.as_str()).map_err(|error| {
        LoadError::new(
            LoadErrorKind::BadManifest,
            format!("the plugin's manifest is not valid: {error}"),
            manifest_json.to_string(),
        )
    })?;
    if manifest.api_level > API_LEVEL {
        return Err(LoadError::new(
            LoadErrorKind::Incompatible,
            format!(
                "needs interface level {}, this host supports up to {API_LEVEL}: upgrade ctxhost",
                manifest.api_level
            ),
            String::new(),
        ));
    }
    Ok(PluginLibrary {
        path: path.to_path_buf(),
        module,
        manifest,
    })
}

impl PluginLibrary {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path to report for a library loaded through another name for the same file (the
    /// host loads a checksummed library through its open file handle, so the file it checked
    /// is the file it runs).
    pub fn reported_as(mut self, path: PathBuf) -> Self {
        self.path = path;
        self
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Builds an engine from this library, handing it the host's services.
    pub fn instantiate(
        &self,
        backend: Arc<dyn HostBackend>,
        setup: EngineSetup,
    ) -> Result<PluginEngine, EngineError> {
        let setup_json = serde_json::to_string(&setup)?;
        let object = (self.module.new_engine())(RStr::from_str(&setup_json), host_box(backend))
            .into_result()
            .map_err(EngineError::from)?;
        Ok(PluginEngine {
            name: self.manifest.name.clone(),
            object,
        })
    }
}

/// An engine living in a plugin library, seen through the [`ContextEngine`] trait.
impl PluginLibrary {
    /// Checks `setup.config` with the plugin's
    /// [`validate_settings`](crate::EnginePlugin::validate_settings): no engine is built, so
    /// nothing is opened or created.
    pub fn validate_settings(
        &self,
        backend: Arc<dyn HostBackend>,
        setup: EngineSetup,
    ) -> Result<(), EngineError> {
        let request = ops::NewEngine {
            setup,
            purpose: ops::Purpose::ValidateSettings,
        };
        let setup_json = serde_json::to_string(&request)?;
        (self.module.new_engine())(RStr::from_str(&setup_json), host_box(backend))
            .into_result()
            .map(drop)
            .map_err(EngineError::from)
    }
}

pub struct PluginEngine {
    name: String,
    object: EngineBox,
}

impl PluginEngine {
    fn call<T: DeserializeOwned>(
        &mut self,
        op: &str,
        payload: &impl Serialize,
        messages: &[Message],
    ) -> Result<T, EngineError> {
        let payload = serde_json::to_string(payload)?;
        let answer = self
            .object
            .invoke(
                RStr::from_str(op),
                RStr::from_str(&payload),
                RSlice::from_slice(messages),
            )
            .into_result()
            .map_err(EngineError::from)?;
        serde_json::from_str(answer.as_str()).map_err(|error| {
            EngineError::failed(format!("engine answered `{op}` with invalid JSON: {error}"))
        })
    }

    /// Like `call`, but an operation the plugin does not know yields `default`.
    fn call_or<T: DeserializeOwned>(
        &mut self,
        op: &str,
        payload: &impl Serialize,
        messages: &[Message],
        default: T,
    ) -> Result<T, EngineError> {
        match self.call(op, payload, messages) {
            Err(error) if error.is_unsupported() => Ok(default),
            other => other,
        }
    }
}

impl ContextEngine for PluginEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn update_from_response(&mut self, usage: &Usage) -> Result<(), EngineError> {
        self.call_or(ops::UPDATE_FROM_RESPONSE, usage, &[], ())
    }

    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.object
            .should_compress(prompt_tokens)
            .into_result()
            .map_err(EngineError::from)
    }

    fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        self.call_or(ops::SHOULD_COMPRESS_PREFLIGHT, &(), messages, false)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        let options = serde_json::to_string(options)?;
        self.object
            .compress(RSlice::from_slice(messages), RStr::from_str(&options))
            .into_result()
            .map(|messages| messages.into_vec())
            .map_err(EngineError::from)
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        self.call_or(ops::HAS_CONTENT_TO_COMPRESS, &(), messages, true)
    }

    fn on_session_start(&mut self, session: &SessionStart) -> Result<(), EngineError> {
        self.call_or(ops::ON_SESSION_START, session, &[], ())
    }

    fn on_session_end(
        &mut self,
        session_id: &str,
        messages: &[Message],
    ) -> Result<(), EngineError> {
        let end = ops::SessionEnd {
            session_id: session_id.to_string(),
        };
        self.call_or(ops::ON_SESSION_END, &end, messages, ())
    }

    fn on_session_reset(&mut self) -> Result<(), EngineError> {
        self.call_or(ops::ON_SESSION_RESET, &(), &[], ())
    }

    fn tool_schemas(&mut self) -> Result<Vec<Value>, EngineError> {
        self.call_or(ops::TOOL_SCHEMAS, &(), &[], Vec::new())
    }

    fn handle_tool_call(&mut self, name: &str, args: &Value) -> Result<String, EngineError> {
        let request = ops::ToolCallRequest {
            name: name.to_string(),
            args: args.clone(),
        };
        self.call(ops::HANDLE_TOOL_CALL, &request, &[])
    }

    fn status(&mut self) -> Result<EngineStatus, EngineError> {
        self.call(ops::STATUS, &(), &[])
    }

    fn update_model(&mut self, model: &str, context_length: u64) -> Result<(), EngineError> {
        let update = ops::ModelUpdate {
            model: model.to_string(),
            context_length,
        };
        self.call_or(ops::UPDATE_MODEL, &update, &[], ())
    }

    fn last_compression(&mut self) -> Result<Option<CompressionReport>, EngineError> {
        self.call_or(ops::LAST_COMPRESSION, &(), &[], None)
    }

    fn sessions(&mut self) -> Result<Vec<SessionInfo>, EngineError> {
        self.call(ops::SESSIONS, &(), &[])
    }

    fn session(&mut self, session_id: &str) -> Result<Option<SessionInfo>, EngineError> {
        let id = ops::SessionId {
            session_id: session_id.to_string(),
        };
        self.call(ops::SESSION, &id, &[])
    }

    fn delete_session(&mut self, session_id: &str) -> Result<bool, EngineError> {
        let id = ops::SessionId {
            session_id: session_id.to_string(),
        };
        self.call(ops::DELETE_SESSION, &id, &[])
    }

    fn invoke(&mut self, op: &str, payload: &Value) -> Result<Value, EngineError> {
        self.call(&format!("{}{op}", ops::ENGINE_PREFIX), payload, &[])
    }
}
