//! `plugin.yaml`: what a plugin directory declares about itself.

use std::path::{Path, PathBuf};

use serde::Deserialize;

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
        let descriptor: Descriptor = serde_yaml::from_str(&text).map_err(|error| {
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

    /// Where to look for the library, best first: a path as written, else the platform file name
    /// in the plugin directory, then in the cargo build output of a workspace the plugin
    /// directory belongs to (so in-repo plugins work right after `cargo build`).
    pub fn library_candidates(&self, dir: &Path) -> Vec<PathBuf> {
        let written = Path::new(&self.library);
        if written.components().count() > 1 || written.extension().is_some() {
            return vec![dir.join(written)];
        }
        let file = Self::library_file_name(&self.library);
        let mut candidates = vec![dir.join(&file)];
        if let Some(root) = workspace_root(dir) {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .map(|t| if t.is_absolute() { t } else { root.join(t) })
                .unwrap_or_else(|| root.join("target"));
            let mut built: Vec<PathBuf> = ["release", "debug"]
                .iter()
                .map(|profile| target.join(profile).join(&file))
                .filter(|p| p.is_file())
                .collect();
            // The freshest build wins, whichever profile made it.
            built.sort_by_key(|p| std::cmp::Reverse(p.metadata().and_then(|m| m.modified()).ok()));
            candidates.extend(built);
        }
        candidates
    }

    /// The first candidate that exists, or the first candidate (to report as missing).
    pub fn resolve_library(&self, dir: &Path) -> (PathBuf, bool) {
        let candidates = self.library_candidates(dir);
        match candidates.iter().find(|p| p.is_file()) {
            Some(found) => (found.clone(), true),
            None => (candidates[0].clone(), false),
        }
    }
}

/// The nearest ancestor holding a `Cargo.toml` with a `[workspace]` table.
fn workspace_root(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    dir.ancestors()
        .find(|a| {
            std::fs::read_to_string(a.join("Cargo.toml"))
                .map(|t| t.lines().any(|l| l.trim() == "[workspace]"))
                .unwrap_or(false)
        })
        .map(Path::to_path_buf)
}
