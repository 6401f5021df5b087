//! Lock files: an exclusive OS lock on a private file that names its holder. An OS lock
//! because the system drops it when its holder dies (`kill -9` included), so a crashed holder
//! never leaves anything locked; the file holds the holder's process id for the message the
//! next one gets.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Opens (creating it, and its directory, owner-only) the lock file at `path`, unlocked.
pub fn open(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        crate::create_dir(dir)?;
    }
    crate::options(OpenOptions::new().read(true).write(true).create(true))
        .truncate(false)
        .open(path)
}

/// Takes the lock without waiting: `true` when taken (and the file then names this process),
/// `false` when another holds it (see [`holder`]).
pub fn try_take(file: &mut File) -> io::Result<bool> {
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(false),
        Err(TryLockError::Error(e)) => return Err(e),
    }
    // Best effort: the name is only for the next one's message.
    let _ = file
        .set_len(0)
        .and_then(|()| file.seek(SeekFrom::Start(0)))
        .and_then(|_| writeln!(file, "pid {}", std::process::id()));
    Ok(true)
}

/// Who holds the lock, as its file names them (`pid 1234`); `None` when it names no one.
pub fn holder(file: &mut File) -> Option<String> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut text))
        .ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_is_refused_and_told_the_holder_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locks/a.lock");
        let mut first = open(&path).unwrap();
        assert!(try_take(&mut first).unwrap());
        let mut second = open(&path).unwrap();
        assert!(!try_take(&mut second).unwrap());
        assert_eq!(
            holder(&mut second),
            Some(format!("pid {}", std::process::id()))
        );
        drop(first);
        assert!(try_take(&mut second).unwrap());
    }
}
