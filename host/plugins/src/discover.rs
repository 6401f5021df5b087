//! Finding plugin directories: `plugins/context_engine/<name>/` under each plugin root.

use std::path::{Path, PathBuf};

use crate::descriptor::{Descriptor, LibraryLocation, DESCRIPTOR_FILE};
use ctxhost_config::home::executable_dir;

/// Where a plugin root comes from; earlier kinds win when two plugins share a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RootKind {
    /// Beside the config file (a repository's own plugins).
    ConfigDir,
    /// Under the user's ctxhost home (installed plugins).
    UserHome,
}

impl RootKind {
    pub fn label(self) -> &'static str {
        match self {
            RootKind::ConfigDir => "repo plugin dir",
            RootKind::UserHome => "user plugin dir",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRoot {
    pub kind: RootKind,
    /// The `plugins/context_engine` directory itself.
    pub path: PathBuf,
}

impl PluginRoot {
    pub fn new(kind: RootKind, base: &Path) -> Self {
        PluginRoot {
            kind,
            path: base.join("plugins").join("context_engine"),
        }
    }
}

/// One plugin directory found on disk, before its library is loaded.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub name: String,
    pub dir: PathBuf,
    pub root: RootKind,
    /// The parsed `plugin.yaml`, or why it could not be read.
    pub descriptor: Result<Descriptor, String>,
}

impl Candidate {
    /// Where this plugin's library is (see [`Descriptor::locate_library`]), or why its
    /// descriptor could not be read.
    ///
    /// Only a project's plugins (beside the config file) may take their library from the
    /// directory of the running ctxhost: they are source checkouts, whose libraries cargo builds
    /// beside the binary. An installed plugin is whole by construction (`plugins install` copies
    /// its library beside its `plugin.yaml`, and its approval is that file's checksum); when its
    /// library is gone it is broken, and saying so beats loading some other build.
    pub fn locate_library(&self) -> Result<LibraryLocation, &String> {
        let build_output = match self.root {
            RootKind::ConfigDir => executable_dir(),
            RootKind::UserHome => None,
        };
        self.descriptor
            .as_ref()
            .map(|d| d.locate_library(&self.dir, build_output.as_deref()))
    }
}

/// Every plugin directory under `roots`, in root order then by name. Directories without a
/// `plugin.yaml` and hidden ones are skipped.
pub fn discover(roots: &[PluginRoot]) -> Vec<Candidate> {
    let mut found = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root.path) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir() && p.join(DESCRIPTOR_FILE).is_file())
            .filter(|p| {
                !p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.') || n.starts_with('_'))
            })
            .collect();
        dirs.sort();
        for dir in dirs {
            let dir_name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut descriptor = Descriptor::read(&dir);
            let declared = descriptor.as_ref().ok().and_then(|d| d.name.clone());
            // The name keys the engine's data directory: a name that is a path (`../x`) would
            // put it anywhere, so such a plugin is broken, under its directory's name.
            let name = match declared {
                Some(name) if crate::is_plain_name(&name) => name,
                Some(name) => {
                    descriptor = Err(format!(
                        "{}: name `{name}` is not a plain engine name (lowercase letters, digits, \
                         `-` and `_`)",
                        dir.join(DESCRIPTOR_FILE).display()
                    ));
                    dir_name
                }
                None if !crate::is_plain_name(&dir_name) => {
                    if descriptor.is_ok() {
                        descriptor = Err(format!(
                            "{}: the directory's name is not a plain engine name (lowercase \
                             letters, digits, `-` and `_`); rename it or set `name:`",
                            dir.display()
                        ));
                    }
                    dir_name
                }
                None => dir_name,
            };
            found.push(Candidate {
                name,
                dir,
                root: root.kind,
                descriptor,
            });
        }
    }
    found
}
