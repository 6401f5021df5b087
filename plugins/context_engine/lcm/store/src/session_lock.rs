//! One writer per session: an exclusive lock on a file per session, held by the engine instance
//! that writes the session for as long as it does. A store in PostgreSQL, which gateways on
//! several machines share, takes a PostgreSQL advisory lock instead (`store/postgres`), with
//! the same wait and the same one-line error.
//!
//! An OS file lock (not a row in the database) because the operating system drops it when its
//! holder dies, `kill -9` included, so a crashed writer never leaves a session locked until
//! some lease expires; and because a lock per file blocks only that session, never the others
//! in the same store. The file is `<data dir>/locks/<hash of the session id>.lock`
//! ([`ctxhost_private_files::lock`]: it names its holder for the next writer's message).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ctxhost_sdk::EngineError;
use sha2::{Digest, Sha256};

use crate::postgres::AdvisoryLock;
use crate::Store;
use ctxhost_private_files::lock;

/// The lock on one session, released when dropped.
pub struct SessionLock {
    session_id: String,
    _held: Held,
}

impl std::fmt::Debug for SessionLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLock")
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

/// What holds the lock: closing it releases it.
enum Held {
    File {
        _file: File,
    },
    /// Boxed: it holds a whole connection.
    Advisory {
        _lock: Box<AdvisoryLock>,
    },
}

impl SessionLock {
    /// Takes the lock of `session_id` where the store's writers meet: in the database for a
    /// store in PostgreSQL, else under `data_dir`.
    pub fn acquire_for(
        store: &Store,
        data_dir: &Path,
        session_id: &str,
        wait: Duration,
    ) -> Result<SessionLock, EngineError> {
        match store {
            Store::Postgres(postgres) => Ok(SessionLock {
                session_id: session_id.to_string(),
                _held: Held::Advisory {
                    _lock: Box::new(AdvisoryLock::acquire(postgres, session_id, wait)?),
                },
            }),
            Store::Sqlite(_) => SessionLock::acquire(data_dir, session_id, wait),
        }
    }

    /// Takes the lock of `session_id` under `data_dir`, waiting up to `wait` for another
    /// holder to let go.
    pub fn acquire(
        data_dir: &Path,
        session_id: &str,
        wait: Duration,
    ) -> Result<SessionLock, EngineError> {
        let path = lock_path(data_dir, session_id);
        let fail = |what: &str, e: std::io::Error| {
            EngineError::failed(format!("lcm session lock {}: {what}: {e}", path.display()))
        };
        let mut file = lock::open(&path).map_err(|e| fail("cannot open", e))?;
        let started = Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            match lock::try_take(&mut file) {
                Ok(true) => break,
                Ok(false) if started.elapsed() < wait => {
                    // No OS primitive waits on a file lock with a timeout: poll, backing off.
                    std::thread::sleep(pause.min(wait.saturating_sub(started.elapsed())));
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Ok(false) => {
                    return Err(EngineError::busy(format!(
                        "lcm: session `{session_id}` is being written by another process \
                         ({}), still after {} ms; lcm writes a session from one process at a \
                         time: wait for that one to finish, or use another session",
                        lock::holder(&mut file).unwrap_or_else(|| "holder unknown".to_string()),
                        wait.as_millis()
                    )));
                }
                Err(e) => return Err(fail("cannot lock", e)),
            }
        }
        Ok(SessionLock {
            session_id: session_id.to_string(),
            _held: Held::File { _file: file },
        })
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }
}

/// The lock file of a session: hashed, so any session id makes a plain file name.
pub fn lock_path(data_dir: &Path, session_id: &str) -> PathBuf {
    let digest = Sha256::digest(session_id.as_bytes());
    let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    data_dir.join("locks").join(format!("{name}.lock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_waits_then_gets_a_clear_busy_error_and_others_are_free() {
        let dir = tempfile::tempdir().unwrap();
        let held = SessionLock::acquire(dir.path(), "s1", Duration::ZERO).unwrap();
        let error = SessionLock::acquire(dir.path(), "s1", Duration::from_millis(20))
            .expect_err("the session is held");
        assert!(error.is_busy(), "{error}");
        assert!(error.message().contains("session `s1`"), "{error}");
        assert!(
            error
                .message()
                .contains(&format!("pid {}", std::process::id())),
            "{error}"
        );
        // Another session is not blocked.
        SessionLock::acquire(dir.path(), "s2", Duration::ZERO).unwrap();
        drop(held);
        SessionLock::acquire(dir.path(), "s1", Duration::ZERO).unwrap();
    }
}
