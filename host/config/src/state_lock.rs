//! One gateway per SQLite `serve.state`: an exclusive OS lock on a file beside the database, held for
//! as long as the gateway serves. Two gateways writing one SQLite file would each keep their
//! own copy of a session in memory and the last save would win; PostgreSQL (`serve.state` a
//! `postgres://` URL) is how several gateways share sessions.
//!
//! An OS file lock because the system drops it when its holder dies (`kill -9` included), so a
//! crashed gateway never leaves the state locked. The file holds the holder's process id for
//! the next one's message.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum StateLockError {
    #[error(
        "another ctxhost serve ({holder}) is using the session store {}: one SQLite state \
         serves one gateway. Stop that one, give this one its own serve.state, or run several \
         gateways on one PostgreSQL database (serve.state: postgres://..., tuned under \
         serve.database)",
        state.display()
    )]
    Held { state: PathBuf, holder: String },
    #[error("cannot lock the session store {}: {reason}", lock.display())]
    Io { lock: PathBuf, reason: String },
}

/// The held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

impl StateLock {
    /// Takes the lock of the SQLite state at `state` (`<state>.lock`), without waiting.
    pub fn take(state: &Path) -> Result<StateLock, StateLockError> {
        let lock = lock_path(state);
        let io = |e: std::io::Error| StateLockError::Io {
            lock: lock.clone(),
            reason: e.to_string(),
        };
        if let Some(dir) = lock.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&lock).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(StateLockError::Held {
                    state: state.to_path_buf(),
                    holder: holder(&mut file),
                })
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        // Who holds it, for the message the next gateway gets; best effort.
        let _ = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(file, "pid {}", std::process::id()));
        Ok(StateLock { _file: file })
    }
}

/// `<state>.lock`, beside the database.
pub fn lock_path(state: &Path) -> PathBuf {
    let mut name = state.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn holder(file: &mut File) -> String {
    let mut text = String::new();
    let read = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut text));
    match read {
        Ok(_) if !text.trim().is_empty() => text.trim().to_string(),
        _ => "pid unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("sessions.sqlite");
        let first = StateLock::take(&state).unwrap();
        let refused = StateLock::take(&state).unwrap_err().to_string();
        assert!(
            refused.contains(&format!("(pid {})", std::process::id())),
            "{refused}"
        );
        assert!(refused.contains("serve.database"), "{refused}");
        drop(first);
        StateLock::take(&state).unwrap();
    }
}
