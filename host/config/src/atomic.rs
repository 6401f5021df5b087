//! Writing files so that a reader never sees half of one: write a temporary file beside the
//! target, then rename it into place. A symlinked target is written through (the link stays),
//! an existing file keeps its permissions, and a new one gets the user's umask (as if the
//! command had created it directly).
//!
//! Temporary files are named `.<file>.ctxhost-tmp-<random>`: a write killed before its rename
//! (SIGKILL, power loss) leaves one behind, which [`remove_stale`] clears the next time the same
//! file is written under its lock.

use std::io::Write;
use std::path::{Path, PathBuf};

const TEMP_MARK: &str = ".ctxhost-tmp-";

pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let path = resolve_symlinks(path);
    let dir = parent_dir(&path);
    let prefix = temp_prefix(&path);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // The mode a plain `open(O_CREAT, 0666)` would use: the umask still applies.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut file = builder.tempfile_in(dir)?;
    file.write_all(bytes)?;
    if let Ok(metadata) = std::fs::metadata(&path) {
        file.as_file().set_permissions(metadata.permissions())?;
    }
    file.as_file().sync_all()?;
    file.persist(&path).map_err(|error| error.error)?;
    Ok(())
}

/// Removes the temporary copies interrupted writes of `path` left behind. Call it only while
/// holding the lock that serializes writers of `path`, so no live write is removed.
pub fn remove_stale(path: &Path) {
    let path = resolve_symlinks(path);
    let prefix = temp_prefix(&path);
    let Ok(entries) = std::fs::read_dir(parent_dir(&path)) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}{TEMP_MARK}")
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

fn resolve_symlinks(path: &Path) -> PathBuf {
    let mut path = path.to_path_buf();
    // Bounded: a link cycle just stops being followed.
    for _ in 0..16 {
        match std::fs::read_link(&path) {
            Ok(target) => {
                path = match path.parent() {
                    Some(parent) if target.is_relative() => parent.join(target),
                    _ => target,
                }
            }
            Err(_) => break,
        }
    }
    path
}
