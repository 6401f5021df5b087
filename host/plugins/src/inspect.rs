//! Checking one plugin directory the way the host would use it: manifest, library file,
//! approval, ABI and name, in that order, stopping at the first problem. Nothing is loaded that
//! the user's approvals do not allow, and listings load libraries in another process only.

use std::path::{Path, PathBuf};

use ctxhost_plugin_host::{load_library, LoadErrorKind, PluginLibrary};
use ctxhost_sdk::Manifest;
use serde::Serialize;

use crate::libraries::{foreign_libraries, Foreign};
use crate::trust::{self, Approval};
use crate::{Candidate, LibraryLocation, RootKind};
use ctxhost_config::project::Untrusted;
use ctxhost_config::TrustSection;

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
    /// A plugin of a project the user has not trusted.
    UntrustedProject,
    /// Approved by an older ctxhost (its library only): approve it again.
    StaleApproval,
    /// The library's shared libraries resolve from outside its directory and the system's.
    ForeignLibraries,
    /// A project plugin's `library:` is a path outside its plugin directory.
    LibraryOutside,
    /// Allowed, but not loaded (the inspection did not ask for it).
    NotLoaded,
}

impl ProblemKind {
    /// States a user chose (not enabled yet, disabled) rather than faults.
    pub fn is_choice(self) -> bool {
        matches!(
            self,
            ProblemKind::Disabled | ProblemKind::NotEnabled | ProblemKind::UntrustedProject
        )
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

/// Reads the manifest of `candidate`'s library (the path) in another process.
pub type ReadManifest<'a> = &'a dyn Fn(&Candidate, &Path) -> Result<Manifest, Problem>;

/// How an inspection reads the library's manifest, once the user's approvals allow loading it.
pub enum Loader<'a> {
    /// Not at all: approvals and files only.
    Skip,
    /// In this process (the engine's own process, or a plugin trusted to run in the host's),
    /// after `probe` (when given) loaded it once in another process.
    InProcess { probe: Option<ReadManifest<'a>> },
    /// By another process: loading runs the plugin's code, and a library that aborts while it
    /// loads must not take the asking command down.
    Isolated(ReadManifest<'a>),
}

/// Everything learned about one plugin directory.
pub struct Inspection {
    pub candidate: Candidate,
    /// The library the descriptor resolves to (whether or not it exists).
    pub library: Option<PathBuf>,
    /// The hash of the plugin's directory, when it was computed (approved or installed
    /// plugins, or on request).
    pub checksum: Option<String>,
    pub approval: Option<Approval>,
    /// What the library declares, once it loaded (or why it did not, or may not).
    pub loaded: Result<Manifest, Problem>,
    /// The library itself, when it was loaded in this process.
    pub in_process: Option<PluginLibrary>,
    /// Places outside its directory an installed plugin's library loads shared libraries from
    /// (a project plugin with any is refused instead): said by every command that lists,
    /// installs, enables or selects it.
    pub foreign: Vec<Foreign>,
}

impl Inspection {
    pub fn version(&self) -> Option<String> {
        match &self.loaded {
            Ok(manifest) => Some(manifest.version.clone()),
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
            Ok(manifest) if declared.is_empty() => manifest.description.clone(),
            _ => declared,
        }
    }
}

/// Inspects `candidate` under the user's approvals (`untrusted`: why the config's project is
/// not trusted, when it is not), reading its manifest as `loader` says. `always_hash` computes the
/// directory's hash even when approvals do not need it (for `plugins info` and `doctor`).
pub fn inspect(
    candidate: Candidate,
    trust: &TrustSection,
    untrusted: Option<Untrusted>,
    always_hash: bool,
    loader: Loader<'_>,
) -> Inspection {
    let mut inspection = Inspection {
        library: None,
        checksum: None,
        approval: None,
        loaded: Err(Problem::new(ProblemKind::LoadFailed, String::new())),
        in_process: None,
        foreign: Vec::new(),
        candidate,
    };
    inspection.loaded = check(&mut inspection, trust, untrusted, always_hash, loader);
    inspection
}

fn check(
    inspection: &mut Inspection,
    trust: &TrustSection,
    untrusted: Option<Untrusted>,
    always_hash: bool,
    loader: Loader<'_>,
) -> Result<Manifest, Problem> {
    let project_trusted = untrusted.is_none();
    let candidate = &inspection.candidate;
    let name = candidate.name.clone();
    let location = candidate.locate_library().map_err(|error| {
        Problem::new(
            ProblemKind::BadManifest,
            format!("bad plugin.yaml: {error}"),
        )
    })?;
    inspection.library = Some(location.path().to_path_buf());
    let project_plugin = candidate.root == RootKind::ConfigDir;
    if let (true, Ok(descriptor)) = (project_plugin, &candidate.descriptor) {
        if descriptor.library_leaves_dir() {
            return Err(Problem::new(
                ProblemKind::LibraryOutside,
                format!(
                    "plugin.yaml's `library: {}` is outside the plugin's directory, where the project's trust does not reach; put the library in {} and name it there",
                    descriptor.library,
                    candidate.dir.display()
                ),
            ));
        }
    }
    let library = match location {
        LibraryLocation::Found(library) => library,
        LibraryLocation::Missing(missing) => {
            return Err(Problem::new(
                ProblemKind::MissingLibrary,
                missing.to_string(),
            ))
        }
    };
    // What the library would load from elsewhere is not covered by any approval. (A library
    // that cannot be read is reported as such below, or fails to load.)
    inspection.foreign = foreign_libraries(&library, &candidate.dir).unwrap_or_default();
    let unreadable = |error: std::io::Error| {
        Problem::new(
            ProblemKind::Unreadable,
            format!("cannot read {}: {error}", library.display()),
        )
    };
    // Hash when approvals need it (or when asked), keeping the library open so the library
    // loaded below is the file that was hashed.
    let needs_hash = always_hash
        || (project_trusted && trust.enabled.contains_key(&name))
        || candidate.root == RootKind::UserHome;
    let mut opened = None;
    if needs_hash {
        let mut file = std::fs::File::open(&library).map_err(unreadable)?;
        let hash =
            ctxhost_config::fingerprint::tree_sha256(&candidate.dir, Some((&library, &mut file)))
                .map_err(|error| {
                Problem::new(
                    ProblemKind::Unreadable,
                    format!("cannot read {}: {error}", candidate.dir.display()),
                )
            })?;
        inspection.checksum = Some(hash);
        opened = Some(file);
    }
    let checksum = inspection.checksum.clone();
    let approval = Approval::decide(&name, candidate.root, trust, project_trusted, || {
        checksum.ok_or_else(|| std::io::Error::other("the plugin was not hashed"))
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
        Approval::UntrustedProject => {
            let why = match untrusted {
                Some(Untrusted::Changed) => "changed since you trusted it",
                _ => "is not trusted",
            };
            return Err(Problem::new(
                ProblemKind::UntrustedProject,
                format!(
                    "the project in {} {why}: its plugins do not load until you trust it with `ctxhost trust` (or name its config with --config)",
                    project_dir(&candidate.dir).display()
                ),
            ));
        }
        Approval::NotApproved => {
            return Err(Problem::new(
                ProblemKind::NotEnabled,
                format!(
                    "installed but not enabled: loading it runs its code; approve it with `ctxhost plugins enable {name}`"
                ),
            ))
        }
        Approval::Stale => {
            return Err(Problem::new(
                ProblemKind::StaleApproval,
                format!(
                    "approved by an older ctxhost, whose approval covered only its library; re-approve the whole plugin with `ctxhost plugins enable {name}`"
                ),
            ))
        }
        Approval::Changed { approved, actual } => {
            return Err(Problem::new(
                ProblemKind::ChecksumMismatch,
                format!(
                    "plugin directory {} changed since it was enabled (sha256 {}…, approved {}…); if you trust this build, re-approve it with `ctxhost plugins enable {name}`",
                    candidate.dir.display(),
                    trust::short(&actual),
                    trust::short(&approved)
                ),
            ))
        }
        Approval::Approved | Approval::Project => {}
    }
    if let (true, Some(first)) = (project_plugin, inspection.foreign.first()) {
        return Err(Problem::new(
            ProblemKind::ForeignLibraries,
            format!("{first}; a project's plugin may load no code from outside its directory: link its library without that path"),
        ));
    }
    let manifest = match loader {
        Loader::Skip => return Err(Problem::new(ProblemKind::NotLoaded, String::new())),
        Loader::Isolated(read) => read(candidate, &library)?,
        Loader::InProcess { probe } => {
            if let Some(probe) = probe {
                probe(candidate, &library)?;
            }
            let load_path = match opened {
                Some(file) => {
                    let path = trust::load_path(&file, &library);
                    // The handle stays open for the life of the process, like the library
                    // itself: the dynamic loader knows libraries by name, and a closed
                    // descriptor's number (hence its name) would be reused for the next one.
                    std::mem::forget(file);
                    path
                }
                None => library.clone(),
            };
            let loaded = load_library(&load_path)
                .map_err(|error| refused(&library, error.kind(), error.summary(), error.detail()))?
                .reported_as(library.clone());
            let manifest = loaded.manifest().clone();
            inspection.in_process = Some(loaded);
            manifest
        }
    };
    if manifest.name != name {
        inspection.in_process = None;
        return Err(Problem::new(
            ProblemKind::NameMismatch,
            format!(
                "plugin.yaml names '{name}' but the library is engine '{}'",
                manifest.name
            ),
        ));
    }
    Ok(manifest)
}

/// The problem for a library the loader refused.
pub fn refused(library: &Path, kind: LoadErrorKind, summary: &str, detail: &str) -> Problem {
    let kind = match kind {
        LoadErrorKind::Incompatible => ProblemKind::AbiMismatch,
        LoadErrorKind::NotAPlugin => ProblemKind::NotAPlugin,
        LoadErrorKind::BadManifest => ProblemKind::BadManifest,
        LoadErrorKind::Open | LoadErrorKind::InitFailed => ProblemKind::LoadFailed,
    };
    Problem {
        kind,
        summary: format!("{}: {summary}", library.display()),
        detail: Some(detail.to_string()),
    }
}

/// The project a plugin directory belongs to: `<project>/plugins/context_engine/<name>`.
fn project_dir(plugin_dir: &Path) -> &Path {
    plugin_dir.ancestors().nth(3).unwrap_or(plugin_dir)
}
