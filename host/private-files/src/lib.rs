//! Files only their owner can read: a session store holds every message verbatim, so the
//! database, its write-ahead log, its backups and the lock files are created 0600 in
//! directories created 0700, whatever the umask. [`lock`]: the lock files.

pub mod lock;

use std::fs::OpenOptions;
use std::io;
use std::path::Path;

/// Creates `dir` and its missing parents, owner-only. Existing directories are left as they are
/// (they may be shared on purpose).
pub fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// `options`, creating the file owner-only.
pub fn options(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

/// Makes an existing file owner-only (a store created by an earlier release, or by someone
/// else, say); returns the mode it had when it was wider, for the engine to say so.
pub fn restrict(path: &Path) -> io::Result<Option<u32>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            return Ok(Some(mode));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(None)
}

/// What to say about a file [`restrict`] tightened.
pub fn tightened_notice(path: &Path, mode: u32) -> String {
    format!(
        "{}: was readable by others (mode {mode:04o}); made it owner-only (0600), as it holds every message",
        path.display()
    )
}

/// Creates `path` owner-only when it is missing (an existing file is left as it is: see
/// [`restrict`]).
pub fn create_file(path: &Path) -> io::Result<()> {
    options(OpenOptions::new().create(true).append(true))
        .open(path)
        .map(drop)
}

/// Creates `path` empty and owner-only, failing when it exists: SQLite then writes into it
/// (`VACUUM INTO` accepts an empty file) and the file keeps its mode.
pub fn create_new_empty(path: &Path) -> io::Result<()> {
    options(OpenOptions::new().write(true).create_new(true))
        .open(path)
        .map(drop)
}
