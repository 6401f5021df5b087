//! Checking one plugin directory the way the host would use it: manifest, library file,
//! approval, ABI and name, in that order, stopping at the first problem. Nothing is loaded that
//! the user's approvals do not allow.

use std::path::PathBuf;

use ctxhost_plugin_host::{load_library, LoadErrorKind, PluginLibrary};
use serde::Serialize;

use super::trust::{self, Approval};
use super::{Candidate, LibraryLocation, RootKind};
use crate::config::TrustSection;

/// The families of plugin problem `ctxhost plugins doctor` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    BadManifest,
    MissingLibrary,
    Unreadable,
    Disabled,
    NotEnabled,
    ChecksumMismatch,
    AbiMismatch,
    NotAPlugin,
    LoadFailed,
    NameMismatch,
    DuplicateName,
    BadSettings,
}

impl ProblemKind {
    /// States a user chose (not enabled yet, disabled) rather than faults.
    pub fn is_choice(self) -> bool {
        matches!(self, ProblemKind::Disabled | ProblemKind::NotEnabled)
    }
}

/// Why a plugin cannot be used: one line, plus the loader's full text when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub kind: ProblemKind,
    pub summary: String,
    pub detail: Option<String>,
}

impl Problem {
    pub fn new(kind: ProblemKind, summary: String) -> Self {
        Problem {
            kind,
            summary,
            detail: None,
        }
    }
}

/// Everything learned about one plugin directory.
pub struct Inspection {
    pub candidate: Candidate,
    /// The library the descriptor resolves to (whether or not it exists).
    pub library: Option<PathBuf>,
    /// The library's sha256, when it was computed (approved or installed plugins, or on request).
    pub checksum: Option<String>,
    pub approval: Option<Approval>,
    pub loaded: Result<PluginLibrary, Problem>,
}

impl Inspection {
    pub fn version(&self) -> Option<String> {
        match &self.loaded {
            Ok(library) => Some(library.manifest().version.clone()),
            Err(_) => self
                .candidate
                .descriptor
                .as_ref()
                .ok()
                .and_then(|d| d.version.clone()),
        }
    }

    pub fn description(&self) -> String {
        let declared = self
            .candidate
            .descriptor
            .as_ref()
            .map(|d| d.description.clone())
            .unwrap_or_default();
        match &self.loaded {
            Ok(library) if declared.is_empty() => library.manifest().description.clone(),
            _ => declared,
        }
    }
}

/// Inspects `candidate` under the user's approvals. `always_hash` computes the checksum even
/// when approvals do not need it (for `plugins info` and `doctor`).
pub fn inspect(candidate: Candidate, trust: &TrustSection, always_hash: bool) -> Inspection {
    let mut inspection = Inspection {
        library: None,
        checksum: None,
        approval: None,
        loaded: Err(Problem::new(ProblemKind::LoadFailed, String::new())),
        candidate,
    };
    inspection.loaded = check(&mut inspection, trust, always_hash);
    inspection
}

fn check(
    inspection: &mut Inspection,
    trust: &TrustSection,
    always_hash: bool,
) -> Result<PluginLibrary, Problem> {
    let candidate = &inspection.candidate;
    let name = candidate.name.clone();
    let location = candidate.locate_library().map_err(|error| {
        Problem::new(
            ProblemKind::BadManifest,
            format!("bad plugin.yaml: {error}"),
        )
    })?;
    inspection.library = Some(location.path().to_path_buf());
    let library = match location {
        LibraryLocation::Found(library) => library,
        LibraryLocation::Missing(missing) => {
            return Err(Problem::new(
                ProblemKind::MissingLibrary,
                missing.to_string(),
            ))
        }
    };
    let unreadable = |error: std::io::Error| {
        Problem::new(
            ProblemKind::Unreadable,
            format!("cannot read {}: {error}", library.display()),
        )
    };
    // Hash when approvals need it (or when asked), keeping the file open so the library
    // loaded below is the file that was hashed.
    let needs_hash =
        always_hash || trust.enabled.contains_key(&name) || candidate.root == RootKind::UserHome;
    let mut opened = None;
    if needs_hash {
        let mut file = std::fs::File::open(&library).map_err(unreadable)?;
        inspection.checksum = Some(trust::sha256_of(&mut file).map_err(unreadable)?);
        opened = Some(file);
    }
    let checksum = inspection.checksum.clone();
    let approval = Approval::decide(&name, candidate.root, trust, || {
        checksum.ok_or_else(|| std::io::Error::other("the library was not hashed"))
    })
    .map_err(unreadable)?;
    inspection.approval = Some(approval.clone());
    match approval {
        Approval::Disabled => {
            return Err(Problem::new(
                ProblemKind::Disabled,
                format!("disabled (`ctxhost plugins enable {name}` enables it)"),
            ))
        }
        Approval::NotApproved => {
            return Err(Problem::new(
                ProblemKind::NotEnabled,
                format!(
                    "installed but not enabled: loading it runs its code; approve it with `ctxhost plugins enable {name}`"
                ),
            ))
        }
        Approval::Changed { approved, actual } => {
            return Err(Problem::new(
                ProblemKind::ChecksumMismatch,
                format!(
                    "library {} changed since it was enabled (sha256 {}…, approved {}…); if you trust this build, re-approve it with `ctxhost plugins enable {name}`",
                    library.display(),
                    trust::short(&actual),
                    trust::short(&approved)
                ),
            ))
        }
        Approval::Approved | Approval::Project => {}
    }
    let load_path = match opened {
        Some(file) => {
            let path = trust::load_path(&file, &library);
            // The handle stays open for the life of the process, like the library itself: the
            // dynamic loader knows libraries by name, and a closed descriptor's number (hence
            // its name) would be reused for the next library.
            std::mem::forget(file);
            path
        }
        None => library.clone(),
    };
    let loaded = load_library(&load_path)
        .map_err(|error| {
            let kind = match error.kind() {
                LoadErrorKind::Incompatible => ProblemKind::AbiMismatch,
                LoadErrorKind::NotAPlugin => ProblemKind::NotAPlugin,
                LoadErrorKind::BadManifest => ProblemKind::BadManifest,
                LoadErrorKind::Open | LoadErrorKind::InitFailed => ProblemKind::LoadFailed,
            };
            Problem {
                kind,
                summary: format!("{}: {}", library.display(), error.summary()),
                detail: Some(error.detail().to_string()),
            }
        })?
        .reported_as(library.clone());
    if loaded.manifest().name != name {
        return Err(Problem::new(
            ProblemKind::NameMismatch,
            format!(
                "plugin.yaml names '{name}' but the library is engine '{}'",
                loaded.manifest().name
            ),
        ));
    }
    Ok(loaded)
}
