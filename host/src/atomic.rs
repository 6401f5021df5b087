//! Writing files so that a reader never sees half of one: write a temporary file beside the
//! target, then rename it into place. A symlinked target is written through (the link stays),
//! and an existing file keeps its permissions.

use std::io::Write;
use std::path::{Path, PathBuf};

pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let path = resolve_symlinks(path);
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(bytes)?;
    if let Ok(metadata) = std::fs::metadata(&path) {
        file.as_file().set_permissions(metadata.permissions())?;
    }
    file.as_file().sync_all()?;
    file.persist(&path).map_err(|error| error.error)?;
    Ok(())
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
