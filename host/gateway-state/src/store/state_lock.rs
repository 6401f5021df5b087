//! One gateway per SQLite `serve.state`: an exclusive OS lock on a file beside the database, held for
//! as long as the gateway serves. Two gateways writing one SQLite file would each keep their
//! own copy of a session in memory and the last save would win; PostgreSQL (`serve.state` a
//! `postgres://` URL) is how several gateways share sessions.
//!
//! A lock file ([`ctxhost_private_files::lock`]): a crashed gateway never leaves the state
//! locked, and the next one is told the holder's pid.

use std::fs::File;
use std::path::{Path, PathBuf};

use ctxhost_private_files::lock;

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
        let path = lock_path(state);
        let io = |e: std::io::Error| StateLockError::Io {
            lock: path.clone(),
            reason: e.to_string(),
        };
        let mut file = lock::open(&path).map_err(io)?;
        if !lock::try_take(&mut file).map_err(io)? {
            return Err(StateLockError::Held {
                state: state.to_path_buf(),
                holder: lock::holder(&mut file).unwrap_or_else(|| "pid unknown".to_string()),
            });
        }
        Ok(StateLock { _file: file })
    }
}

/// `<state>.lock`, beside the database.
pub fn lock_path(state: &Path) -> PathBuf {
    let mut name = state.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
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
