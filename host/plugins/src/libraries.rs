//! Where a plugin library's own shared libraries come from, read from its ELF dynamic section
//! (DT_NEEDED, DT_RPATH, DT_RUNPATH) without loading it: an approval covers the plugin's
//! directory, so a library that the dynamic loader would look for anywhere else (besides the
//! system's library directories) could be swapped behind the approval's back.

use std::path::{Path, PathBuf};

/// The system's library directories: owned by the system, not by whoever wrote the plugin.
const SYSTEM_DIRS: &[&str] = &[
    "/lib",
    "/lib32",
    "/lib64",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/local/lib",
];

/// A place outside the plugin's directory and the system's that the library would load shared
/// libraries from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Foreign {
    /// A DT_RPATH or DT_RUNPATH entry (`$ORIGIN` resolved).
    SearchPath { entry: String, kind: &'static str },
    /// A DT_NEEDED entry that is a path.
    NeededPath(String),
}

impl std::fmt::Display for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Foreign::SearchPath { entry, kind } => write!(
                f,
                "its library searches {entry} ({kind}) for shared libraries, outside its plugin directory and the system's library directories; files there are not covered by its approval"
            ),
            Foreign::NeededPath(path) => write!(
                f,
                "its library needs {path}, outside its plugin directory and the system's library directories; that file is not covered by its approval"
            ),
        }
    }
}

/// Every foreign place `library` (of the plugin in `plugin_dir`) loads shared libraries from;
/// empty for a library that is not ELF (other platforms check nothing here).
pub fn foreign_libraries(library: &Path, plugin_dir: &Path) -> std::io::Result<Vec<Foreign>> {
    let bytes = std::fs::read(library)?;
    let Ok(elf) = goblin::elf::Elf::parse(&bytes) else {
        return Ok(Vec::new());
    };
    let origin = library.parent().map(Path::to_path_buf).unwrap_or_default();
    let own = [resolved(plugin_dir), resolved(&origin)];
    let system = system_dirs();
    let allowed = |path: &Path| {
        let path = resolved(path);
        own.iter().chain(&system).any(|dir| path.starts_with(dir))
    };
    let mut found = Vec::new();
    for (kind, entries) in [("RPATH", &elf.rpaths), ("RUNPATH", &elf.runpaths)] {
        for entry in entries.iter().flat_map(|e| e.split(':')) {
            let expanded = entry
                .replace("${ORIGIN}", &origin.to_string_lossy())
                .replace("$ORIGIN", &origin.to_string_lossy());
            // An empty entry is the working directory: as foreign as it gets.
            if expanded.is_empty()
                || !Path::new(&expanded).is_absolute()
                || !allowed(Path::new(&expanded))
            {
                found.push(Foreign::SearchPath {
                    entry: if entry.is_empty() {
                        "the working directory".into()
                    } else {
                        entry.to_string()
                    },
                    kind,
                });
            }
        }
    }
    for needed in &elf.libraries {
        if needed.contains('/') && !allowed(Path::new(needed)) {
            found.push(Foreign::NeededPath(needed.to_string()));
        }
    }
    Ok(found)
}

fn resolved(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// The fixed system directories and those `/etc/ld.so.conf.d/*.conf` adds.
fn system_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = SYSTEM_DIRS.iter().map(|d| resolved(Path::new(d))).collect();
    let Ok(entries) = std::fs::read_dir("/etc/ld.so.conf.d") else {
        return dirs;
    };
    for entry in entries.filter_map(Result::ok) {
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        dirs.extend(
            text.lines()
                .map(str::trim)
                .filter(|line| line.starts_with('/'))
                .map(|line| resolved(Path::new(line))),
        );
    }
    dirs
}
