//! Files a command writes for the user (`run --out`, `run --plot`): `-` is standard output; a
//! FIFO, a character device or a socket is written into (never replaced by a regular file); a
//! regular file is replaced atomically, a new one with the user's umask.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` by the rules above.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if path.as_os_str() == "-" {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(bytes)?;
        return stdout.flush();
    }
    if is_special(path) {
        let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
        return file.write_all(bytes);
    }
    ctxhost_config::atomic::write(path, bytes)
}

/// A path (followed through symlinks) that exists and is not a regular file or a directory.
fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Says on stderr where `what` was written (the full path: a relative one depends on where the
/// command ran), unless it went to standard output.
pub fn say_written(what: &str, path: &Path) {
    if path.as_os_str() == "-" {
        return;
    }
    let shown = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    eprintln!("wrote {what} to {}", shown.display());
}
