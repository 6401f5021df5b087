//! `ctxhost plugins install`: puts a plugin into the user's plugin directory. The source is a
//! built library (with its `plugin.yaml` beside it or named), a plugin directory, or a plugin
//! crate (built with cargo in release mode). The plugin is assembled in a hidden staging
//! directory, checked to load (by the caller's [`ReadStagedManifest`]: the `ctxhost` binary loads it
//! in a child process, since loading runs the plugin's code), then renamed into place: a library already installed is never
//! overwritten in place, so a process that has it loaded keeps running the file it mapped.
//! `--shipped` installs the engines ctxhost ships the same way (see [`shipped`]).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod checkout_build;
pub mod shipped;

use super::descriptor::{Descriptor, LibraryLocation, MissingLibrary, DESCRIPTOR_FILE};
use super::PluginRoot;
use ctxhost_config::fingerprint::{sha256_file, tree_sha256};
use ctxhost_config::home::executable_dir;
use ctxhost_config::{edit, BUILT_IN_ENGINE};
use shipped::Origin;

/// What the library at the path (of the plugin named first) declares, or why it does not load,
/// in one line: loading runs the plugin's code, so the host does it in another process.
pub type ReadStagedManifest<'a> = &'a dyn Fn(&str, &Path) -> Result<ctxhost_sdk::Manifest, String>;

/// What to install.
#[derive(Debug, Clone)]
pub struct Request {
    /// A library file, a plugin directory or a plugin crate directory.
    pub source: PathBuf,
    /// The `plugin.yaml` to use when `source` is a library without one beside it.
    pub manifest: Option<PathBuf>,
    /// Replace a plugin of the same name that is already installed.
    pub force: bool,
}

/// What was installed.
#[derive(Debug, Clone)]
pub struct Installed {
    pub name: String,
    pub version: String,
    pub dir: PathBuf,
    pub library: PathBuf,
    /// The hash of the installed plugin's whole directory (what `trust.enabled` records).
    pub tree_sha256: String,
    /// The version it replaced, when it replaced one.
    pub replaced: Option<String>,
    /// Built from a crate by this install.
    pub built: bool,
    /// Already installed, the same build: nothing was written (`--shipped` only).
    pub unchanged: bool,
}

/// What to do when a plugin of the same name is already installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Existing {
    /// Refuse (`install` without `--force`).
    Refuse,
    /// Replace it (`--force`).
    Replace,
    /// Keep it when it is the same build, else replace it (`--shipped`: running it again after
    /// an upgrade updates the engines; running it twice changes nothing).
    KeepSameBuild,
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{0}: no such file or directory")]
    NotFound(PathBuf),
    #[error("{path}: no plugin.yaml found; put one beside the library or pass --manifest FILE")]
    NoManifest { path: PathBuf },
    #[error("{0}")]
    BadManifest(String),
    #[error("{0}: neither a plugin library, a plugin directory (with plugin.yaml) nor a plugin crate (with Cargo.toml and plugin.yaml)")]
    NotAPlugin(PathBuf),
    #[error("cannot run cargo to build {crate_dir}: {error}")]
    CargoMissing {
        crate_dir: PathBuf,
        error: std::io::Error,
    },
    #[error("building {crate_dir} failed (cargo's errors are above); fix them and run the install again")]
    BuildFailed { crate_dir: PathBuf },
    #[error("building {crate_dir} produced no cdylib; its Cargo.toml needs `crate-type = [\"cdylib\", \"rlib\"]` under [lib]")]
    NoCdylib { crate_dir: PathBuf },
    #[error(transparent)]
    MissingLibrary(#[from] MissingLibrary),
    #[error("the shipped engines are neither beside this ctxhost ({}) nor buildable from the source tree it was built from ({}, gone); in a ctxhost checkout run `cargo build --release`, then `target/release/ctxhost plugins install --shipped`", binary_dir.display(), source_tree.display())]
    NoShippedSource {
        binary_dir: PathBuf,
        source_tree: PathBuf,
    },
    #[error("`{0}` is the built-in engine's name; rename the plugin in its plugin.yaml")]
    Reserved(String),
    #[error("`{0}` is not a valid engine name (use lowercase letters, digits, `-` and `_`)")]
    BadName(String),
    #[error("plugin '{name}' is already installed (version {version}) in {dir}; pass --force to replace it")]
    Exists {
        name: String,
        version: String,
        dir: PathBuf,
    },
    #[error("{library}: does not load: {reason}")]
    DoesNotLoad { library: PathBuf, reason: String },
    #[error("plugin.yaml names '{declared}' but the library is engine '{actual}'")]
    NameMismatch { declared: String, actual: String },
    #[error("cannot {action} {path}: {error}")]
    Io {
        action: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> InstallError {
    let path = path.to_path_buf();
    move |error| InstallError::Io {
        action,
        path,
        error,
    }
}

/// Installs per `request` into `root` (the user plugin root), the library checked by `read`.
pub fn install(
    request: &Request,
    root: &PluginRoot,
    read: ReadStagedManifest,
) -> Result<Installed, InstallError> {
    let source = &request.source;
    if !source.exists() {
        return Err(InstallError::NotFound(source.clone()));
    }
    let (manifest_path, library, built) = locate(request)?;
    let text = std::fs::read_to_string(&manifest_path).map_err(io("read", &manifest_path))?;
    let manifest = Manifest::parse(text, manifest_path)?;
    let existing = if request.force {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let mut installed = place(&manifest, &library, existing, root, read)?;
    installed.built = built;
    Ok(installed)
}

/// Installs every shipped engine into `root`: from beside the running ctxhost, or built from
/// its source tree. An engine already installed from the same build is left as it is, unless
/// `force`. Each library is checked by `read`.
pub fn install_shipped(
    root: &PluginRoot,
    force: bool,
    read: ReadStagedManifest,
) -> Result<(Vec<Installed>, Origin), InstallError> {
    let shipped::Libraries { libraries, origin } = shipped::libraries()?;
    let existing = if force {
        Existing::Replace
    } else {
        Existing::KeepSameBuild
    };
    let mut installed = Vec::new();
    for (engine, library) in libraries {
        let manifest = Manifest::parse(engine.descriptor.to_string(), engine.descriptor_path())?;
        let mut one = place(&manifest, &library, existing, root, read)?;
        one.built = matches!(origin, Origin::Built(_));
        installed.push(one);
    }
    Ok((installed, origin))
}

/// A `plugin.yaml` to install: its text, what it says, and where it came from (for messages
/// and, when it names none, the engine's name).
struct Manifest {
    path: PathBuf,
    text: String,
    descriptor: Descriptor,
}

impl Manifest {
    fn parse(text: String, path: PathBuf) -> Result<Self, InstallError> {
        let descriptor = Descriptor::parse(&text, &path).map_err(InstallError::BadManifest)?;
        Ok(Manifest {
            path,
            text,
            descriptor,
        })
    }

    fn name(&self) -> String {
        match &self.descriptor.name {
            Some(name) => name.clone(),
            None => self
                .path
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }

    /// The text to install beside a library copied in as `file_name`.
    fn installed_text(&self, staging: &Path, file_name: &str) -> Result<String, InstallError> {
        let bad = |error| InstallError::BadManifest(format!("{}: {error}", self.path.display()));
        let mut text = self.text.clone();
        if self.descriptor.library_beside(staging) != staging.join(file_name) {
            // The descriptor pointed elsewhere (a build directory): point it at the copy.
            let value = serde_yaml::Value::String(file_name.to_string());
            text = edit::set(&text, "library", &value).map_err(bad)?;
        }
        if self.descriptor.name.is_none() {
            text =
                edit::set(&text, "name", &serde_yaml::Value::String(self.name())).map_err(bad)?;
        }
        Ok(text)
    }
}

/// Puts `library` with `manifest` into `root`: staged, checked to load, renamed into place.
fn place(
    manifest: &Manifest,
    library: &Path,
    existing: Existing,
    root: &PluginRoot,
    read: ReadStagedManifest,
) -> Result<Installed, InstallError> {
    let name = manifest.name();
    check_name(&name)?;
    let dest = root.path.join(&name);
    let file_name = library
        .file_name()
        .expect("a library path names a file")
        .to_string_lossy()
        .into_owned();
    let previous = existing_version(&dest);
    if let Some(version) = &previous {
        match existing {
            Existing::Refuse => {
                return Err(InstallError::Exists {
                    name,
                    version: version.clone(),
                    dir: dest,
                })
            }
            Existing::KeepSameBuild => {
                if same_build(manifest, library, &dest, &file_name)?.is_some() {
                    return Ok(Installed {
                        library: dest.join(&file_name),
                        name,
                        version: version.clone(),
                        tree_sha256: tree_sha256(&dest, None).map_err(io("read", &dest))?,
                        dir: dest,
                        replaced: None,
                        built: false,
                        unchanged: true,
                    });
                }
            }
            Existing::Replace => {}
        }
    }

    std::fs::create_dir_all(&root.path).map_err(io("create", &root.path))?;
    let staging = tempfile::Builder::new()
        .prefix(&format!(".installing-{name}-"))
        .tempdir_in(&root.path)
        .map_err(io("create a staging directory in", &root.path))?;
    let staged_library = staging.path().join(&file_name);
    std::fs::copy(library, &staged_library).map_err(io("copy", library))?;
    let text = manifest.installed_text(staging.path(), &file_name)?;
    std::fs::write(staging.path().join(DESCRIPTOR_FILE), text)
        .map_err(io("write", &staging.path().join(DESCRIPTOR_FILE)))?;

    let declared = read(&name, &staged_library).map_err(|reason| InstallError::DoesNotLoad {
        library: library.to_path_buf(),
        reason,
    })?;
    if declared.name != name {
        return Err(InstallError::NameMismatch {
            declared: name,
            actual: declared.name,
        });
    }
    let version = declared.version;

    let staged = staging.keep();
    swap_into_place(&staged, &dest, &root.path, &name).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&staged);
    })?;
    let tree_sha256 = tree_sha256(&dest, None).map_err(io("read", &dest))?;
    Ok(Installed {
        library: dest.join(&file_name),
        name,
        version,
        dir: dest,
        tree_sha256,
        replaced: previous,
        built: false,
        unchanged: false,
    })
}

/// The installed library's sha256 when `dest` holds exactly what installing `library` with
/// `manifest` would put there.
fn same_build(
    manifest: &Manifest,
    library: &Path,
    dest: &Path,
    file_name: &str,
) -> Result<Option<String>, InstallError> {
    let installed_library = dest.join(file_name);
    let installed_text = std::fs::read_to_string(dest.join(DESCRIPTOR_FILE)).ok();
    if installed_text.as_deref() != Some(manifest.installed_text(dest, file_name)?.as_str())
        || !installed_library.is_file()
    {
        return Ok(None);
    }
    let new = sha256_file(library).map_err(io("read", library))?;
    let old = sha256_file(&installed_library).map_err(io("read", &installed_library))?;
    Ok((new == old).then_some(old))
}

/// Renames `staged` to `dest`; an existing `dest` is first moved aside (and removed after), so
/// at every moment `dest` is either the old plugin or the new one.
fn swap_into_place(
    staged: &Path,
    dest: &Path,
    root: &Path,
    name: &str,
) -> Result<(), InstallError> {
    if !dest.exists() {
        return std::fs::rename(staged, dest).map_err(io("move the plugin into", dest));
    }
    let aside = tempfile::Builder::new()
        .prefix(&format!(".replaced-{name}-"))
        .tempdir_in(root)
        .map_err(io("create a directory in", root))?
        .keep();
    std::fs::remove_dir(&aside).map_err(io("prepare", &aside))?;
    std::fs::rename(dest, &aside).map_err(io("move aside", dest))?;
    if let Err(error) = std::fs::rename(staged, dest) {
        let _ = std::fs::rename(&aside, dest);
        return Err(io("move the plugin into", dest)(error));
    }
    // The old library may still be mapped by a running host; removing its directory entry is
    // safe on Unix, and a leftover hidden directory is ignored by discovery.
    let _ = std::fs::remove_dir_all(&aside);
    Ok(())
}

/// The manifest to read, the library to copy, and whether it was built here.
fn locate(request: &Request) -> Result<(PathBuf, PathBuf, bool), InstallError> {
    let source = &request.source;
    if source.is_file() {
        let manifest = match &request.manifest {
            Some(manifest) => manifest.clone(),
            None => source
                .parent()
                .map(|dir| dir.join(DESCRIPTOR_FILE))
                .filter(|m| m.is_file())
                .ok_or_else(|| InstallError::NoManifest {
                    path: source.clone(),
                })?,
        };
        return Ok((manifest, source.clone(), false));
    }
    let manifest = request
        .manifest
        .clone()
        .unwrap_or_else(|| source.join(DESCRIPTOR_FILE));
    if !manifest.is_file() {
        return Err(if source.join("Cargo.toml").is_file() {
            InstallError::NoManifest {
                path: source.clone(),
            }
        } else {
            InstallError::NotAPlugin(source.clone())
        });
    }
    if source.join("Cargo.toml").is_file() {
        let library = build_crate(source)?;
        return Ok((manifest, library, true));
    }
    let descriptor = Descriptor::read_file(&manifest).map_err(InstallError::BadManifest)?;
    // A plugin directory named on the command line is a checkout's, like a project's plugins:
    // its library may be the one built beside this ctxhost.
    match descriptor.locate_library(source, executable_dir().as_deref()) {
        LibraryLocation::Found(library) => Ok((manifest, library, false)),
        LibraryLocation::Missing(missing) => Err(missing.into()),
    }
}

/// `cargo build --release` in a plugin crate; returns the cdylib it produced.
fn build_crate(crate_dir: &Path) -> Result<PathBuf, InstallError> {
    let manifest = crate_dir.join("Cargo.toml");
    let manifest = manifest.canonicalize().unwrap_or(manifest);
    build_cdylibs(&manifest, &[])?
        .into_iter()
        .rfind(|artifact| artifact.manifest_path == manifest)
        .map(|artifact| artifact.file)
        .ok_or_else(|| InstallError::NoCdylib {
            crate_dir: crate_dir.to_path_buf(),
        })
}

/// A cdylib cargo built.
#[derive(Debug, Clone)]
pub(super) struct Cdylib {
    /// The `Cargo.toml` of its package.
    pub manifest_path: PathBuf,
    /// The library target's name (`ctxhost_engine_lcm`).
    pub target: String,
    pub file: PathBuf,
}

/// `cargo build --release --lib` of `packages` (none: the package of `manifest`) in the
/// workspace of `manifest`; returns the cdylibs it produced. Cargo's progress and errors go to
/// the user's terminal.
pub(super) fn build_cdylibs(
    manifest: &Path,
    packages: &[&str],
) -> Result<Vec<Cdylib>, InstallError> {
    let crate_dir = manifest.parent().unwrap_or(manifest).to_path_buf();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args([
            "build",
            "--release",
            "--lib",
            "--message-format=json-render-diagnostics",
        ])
        .arg("--manifest-path")
        .arg(manifest);
    for package in packages {
        command.args(["-p", package]);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| InstallError::CargoMissing {
            crate_dir: crate_dir.clone(),
            error,
        })?;
    let mut cdylibs = Vec::new();
    let stdout = child.stdout.take().expect("stdout is piped");
    for line in std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
    {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let is_cdylib = message["target"]["crate_types"]
            .as_array()
            .is_some_and(|types| types.iter().any(|t| t == "cdylib"));
        if message["reason"] != "compiler-artifact" || !is_cdylib {
            continue;
        }
        let file = message["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str())
            .find(|f| f.ends_with(std::env::consts::DLL_SUFFIX));
        if let (Some(file), Some(manifest_path), Some(target)) = (
            file,
            message["manifest_path"].as_str(),
            message["target"]["name"].as_str(),
        ) {
            cdylibs.push(Cdylib {
                manifest_path: PathBuf::from(manifest_path),
                target: target.to_string(),
                file: PathBuf::from(file),
            });
        }
    }
    let status = child.wait().map_err(|error| InstallError::CargoMissing {
        crate_dir: crate_dir.clone(),
        error,
    })?;
    if !status.success() {
        return Err(InstallError::BuildFailed { crate_dir });
    }
    Ok(cdylibs)
}

/// Engine names are directory names and config keys: keep them plain.
pub fn check_name(name: &str) -> Result<(), InstallError> {
    if name == BUILT_IN_ENGINE {
        return Err(InstallError::Reserved(name.to_string()));
    }
    if super::is_plain_name(name) {
        Ok(())
    } else {
        Err(InstallError::BadName(name.to_string()))
    }
}

fn existing_version(dest: &Path) -> Option<String> {
    if !dest.exists() {
        return None;
    }
    Some(
        Descriptor::read(dest)
            .ok()
            .and_then(|d| d.version)
            .unwrap_or_else(|| "unknown".to_string()),
    )
}

/// Removes an installed plugin directory: renamed to a hidden name first (so discovery stops
/// seeing it at once), then deleted.
pub fn remove(dir: &Path) -> Result<(), InstallError> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let aside = parent.join(format!(".removing-{name}-{}", std::process::id()));
    std::fs::rename(dir, &aside).map_err(io("remove", dir))?;
    std::fs::remove_dir_all(&aside).map_err(io("remove", &aside))
}
