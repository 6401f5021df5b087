//! `plugin.yaml`: what a plugin directory declares about itself.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use crate::shipped;

pub const DESCRIPTOR_FILE: &str = "plugin.yaml";

/// The only plugin kind the host loads today.
pub const CONTEXT_ENGINE_KIND: &str = "context_engine";

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Descriptor {
    /// The engine name; defaults to the directory name.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "default_kind")]
    pub kind: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub description: String,
    /// The library: a base name (`ctxhost_engine_window` → `libctxhost_engine_window.so`) or a
    /// path relative to the plugin directory.
    pub library: String,
}

fn default_kind() -> String {
    CONTEXT_ENGINE_KIND.to_string()
}

impl Descriptor {
    /// Reads `<dir>/plugin.yaml`. Errors are one line naming the file and, when known, the line.
    pub fn read(dir: &Path) -> Result<Self, String> {
        Self::read_file(&dir.join(DESCRIPTOR_FILE))
    }

    /// Reads a descriptor file wherever it is (for `ctxhost plugins install --manifest`).
    pub fn read_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("{}: cannot read: {error}", path.display()))?;
        Self::parse(&text, path)
    }

    /// Parses descriptor `text`; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, String> {
        // Before the parser, whose cost grows with the square of the depth.
        ctxhost_config::nesting::check(text)
            .map_err(|error| format!("{}:{}: {error}", path.display(), error.line))?;
        let descriptor: Descriptor = serde_yaml::from_str(text).map_err(|error| {
            let message = error.to_string();
            let message = message
                .rfind(" at line ")
                .map_or(message.as_str(), |at| &message[..at])
                .to_string();
            match error.location() {
                Some(l) => format!("{}:{}: {message}", path.display(), l.line()),
                None => format!("{}: {message}", path.display()),
            }
        })?;
        if descriptor.kind != CONTEXT_ENGINE_KIND {
            return Err(format!(
                "{}: kind `{}` is not a context engine (expected `{CONTEXT_ENGINE_KIND}`)",
                path.display(),
                descriptor.kind
            ));
        }
        if descriptor.library.trim().is_empty() {
            return Err(format!("{}: `library` is empty", path.display()));
        }
        Ok(descriptor)
    }

    /// The platform file name for a base library name.
    pub fn library_file_name(base: &str) -> String {
        format!(
            "{}{base}{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        )
    }

    /// The library as `plugin.yaml` names it: a path as written (relative to the plugin
    /// directory), else the platform file name of the base name, in the plugin directory.
    pub fn library_beside(&self, dir: &Path) -> PathBuf {
        match self.base_name() {
            Some(base) => dir.join(Self::library_file_name(base)),
            None => dir.join(&self.library),
        }
    }

    /// Whether `library:` is a path that leads out of the plugin's directory (absolute, or
    /// climbing out with `..`). A project's trust covers the files of its plugin directories
    /// only, so a project plugin's library must lie inside its own.
    pub fn library_leaves_dir(&self) -> bool {
        if self.base_name().is_some() {
            return false;
        }
        let mut depth = 0usize;
        for component in Path::new(&self.library).components() {
            match component {
                Component::Normal(_) => depth += 1,
                Component::CurDir => {}
                Component::ParentDir => match depth.checked_sub(1) {
                    Some(up) => depth = up,
                    None => return true,
                },
                Component::RootDir | Component::Prefix(_) => return true,
            }
        }
        false
    }

    /// The library's base name, when `plugin.yaml` gives one rather than a path.
    fn base_name(&self) -> Option<&str> {
        let written = Path::new(&self.library);
        let is_path = written.components().count() > 1 || written.extension().is_some();
        (!is_path).then_some(self.library.as_str())
    }

    /// Finds the library of the plugin in `dir`. The rule, whole: the library beside
    /// `plugin.yaml` first; then, when `build_output` is given (a plugin in a source checkout,
    /// see [`executable_dir`]) and `plugin.yaml` names a base name rather than a path, that
    /// file in `build_output`. Nothing else: no environment variable, no newest-file race.
    pub fn locate_library(&self, dir: &Path, build_output: Option<&Path>) -> LibraryLocation {
        let beside = self.library_beside(dir);
        if beside.is_file() {
            return LibraryLocation::Found(beside);
        }
        let base = self.base_name();
        if let (Some(base), Some(output)) = (base, build_output) {
            let built = output.join(Self::library_file_name(base));
            if built.is_file() {
                return LibraryLocation::Found(built);
            }
        }
        LibraryLocation::Missing(MissingLibrary {
            remedy: remedy(dir, base, build_output),
            searched_build_output: base.and(build_output).map(Path::to_path_buf),
            beside,
        })
    }
}

/// Where a plugin's library is, or where the host looked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibraryLocation {
    Found(PathBuf),
    Missing(MissingLibrary),
}

impl LibraryLocation {
    /// The library found, or the one the plugin should have beside its `plugin.yaml`.
    pub fn path(&self) -> &Path {
        match self {
            LibraryLocation::Found(path) => path,
            LibraryLocation::Missing(missing) => &missing.beside,
        }
    }
}

/// A library found nowhere: where the host looked, and what would put it there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct MissingLibrary {
    /// Beside `plugin.yaml`, where it belongs.
    pub beside: PathBuf,
    /// The directory of the running executable, when it was searched too.
    pub searched_build_output: Option<PathBuf>,
    /// What to run, or do, to produce it.
    pub remedy: String,
}

impl std::fmt::Display for MissingLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "library {} not found", self.beside.display())?;
        if let Some(dir) = &self.searched_build_output {
            write!(f, " (nor beside ctxhost in {})", dir.display())?;
        }
        write!(f, "; {}", self.remedy)
    }
}

/// What to tell the user who lacks the library of the plugin in `dir`.
fn remedy(dir: &Path, base: Option<&str>, build_output: Option<&Path>) -> String {
    let Some(output) = build_output else {
        // An installed plugin: `plugins install` puts the library beside plugin.yaml.
        return match base.and_then(shipped::by_library) {
            Some(engine) => format!(
                "reinstall it with `ctxhost plugins install --shipped` (`{}` ships with ctxhost)",
                engine.name
            ),
            None => "reinstall it with `ctxhost plugins install PATH --force`".to_string(),
        };
    };
    let package = match base.and_then(shipped::by_library) {
        Some(engine) => format!("-p {}", engine.package),
        None if base.is_some() && dir.join("Cargo.toml").is_file() => {
            format!("--manifest-path {}", dir.join("Cargo.toml").display())
        }
        None => return "put it beside plugin.yaml".to_string(),
    };
    match cargo_profile(output) {
        Some(profile) => format!(
            "build it beside ctxhost with `cargo build{} {package}`",
            match profile.as_str() {
                "debug" => String::new(),
                "release" => " --release".to_string(),
                other => format!(" --profile {other}"),
            }
        ),
        None => format!(
            "this ctxhost was not built by cargo here: run `cargo build --release -p ctxhost {package}` and use the ctxhost it builds, or copy the library into {}",
            dir.display()
        ),
    }
}

/// The cargo profile (`debug`, `release`, ...) whose output directory `dir` is, if it is one.
fn cargo_profile(dir: &Path) -> Option<String> {
    // Cargo keeps its fingerprints in every profile output directory, and nowhere else.
    dir.join(".fingerprint")
        .is_dir()
        .then(|| dir.file_name())
        .flatten()
        .map(|name| name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shipped::{by_library, SHIPPED};

    #[test]
    fn a_library_path_leaving_the_plugin_directory_is_told_apart() {
        let leaves = |library: &str| {
            Descriptor::parse(&format!("library: {library}\n"), Path::new("plugin.yaml"))
                .unwrap()
                .library_leaves_dir()
        };
        for outside in ["../../../build/x.so", "/opt/x.so", "lib/../../x.so"] {
            assert!(leaves(outside), "{outside}");
        }
        for inside in [
            "ctxhost_engine_window",
            "libx.so",
            "lib/./x.so",
            "lib/../x.so",
        ] {
            assert!(!leaves(inside), "{inside}");
        }
    }

    #[test]
    fn the_embedded_descriptors_name_their_engines_and_libraries() {
        for engine in SHIPPED {
            let descriptor =
                Descriptor::parse(engine.descriptor, &engine.descriptor_path()).unwrap();
            assert_eq!(descriptor.name.as_deref(), Some(engine.name));
            assert_eq!(descriptor.library, engine.library);
            assert_eq!(
                by_library(engine.library).map(|e| e.name),
                Some(engine.name)
            );
        }
    }
}
