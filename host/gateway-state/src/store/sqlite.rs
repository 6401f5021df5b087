//! The SQLite store (the default): one file under `$CTXHOST_HOME/data/gateway/`, one row per
//! session holding its record as JSON.
//!
//! SQLite calls block, so every one runs on the runtime's blocking pool, the store's one
//! connection behind a mutex.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection, OptionalExtension};

use super::{
    decode, encode, new_secret, secret_of, RawRecord, SessionStore, StateLocation, StoreError,
    StoreFuture, StoreHealth,
};
use crate::record::{SessionKey, SessionRecord};

/// The SQLite store: one row per session, the record as JSON.
pub struct SqliteStore {
    connection: Arc<Mutex<Connection>>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS gateway_sessions (
    credential TEXT NOT NULL,
    name TEXT NOT NULL,
    record TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (credential, name)
);
CREATE TABLE IF NOT EXISTS gateway_secrets (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
PRAGMA user_version = 1;
";

impl SqliteStore {
    /// Opens (creating) the store at `path`. Conversations are private: the directory is
    /// created 0700 and the file 0600; a file that exists readable by others is made 0600, and
    /// that is logged.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let path = path.to_path_buf();
        let connection = off_runtime(move || Ok(create(&path))).await??;
        Ok(SqliteStore::over(connection))
    }

    /// Opens a store that must exist already (the source of a migration), read-only.
    pub async fn open_existing(path: &Path) -> Result<Self, StoreError> {
        let path = path.to_path_buf();
        let connection = off_runtime(move || Ok(open_read_only(&path))).await??;
        Ok(SqliteStore::over(connection))
    }

    fn over(connection: Connection) -> Self {
        SqliteStore {
            connection: Arc::new(Mutex::new(connection)),
        }
    }

    /// Every session as stored (its record's JSON text as it is), by credential and name.
    pub async fn raw_records(&self) -> Result<Vec<RawRecord>, StoreError> {
        self.run(|connection| {
            let mut statement = connection.prepare(
                "SELECT credential, name, record, updated_at FROM gateway_sessions
                 ORDER BY credential, name",
            )?;
            let rows = statement.query_map([], |row| {
                Ok(RawRecord {
                    credential: row.get(0)?,
                    name: row.get(1)?,
                    record: row.get(2)?,
                    updated_at: row.get(3)?,
                })
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
        .await
    }

    /// Runs `work` with the connection on the blocking pool.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let connection = self.connection.clone();
        off_runtime(move || {
            let connection = connection
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            work(&connection)
        })
        .await
    }
}

/// Runs `work` on the blocking pool of the runtime it is awaited on.
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::Interrupted(e.to_string()))?
}

/// The store's file at `path`, created private (with its directory) and brought to the
/// current schema.
fn create(path: &Path) -> Result<Connection, StoreError> {
    let fail = |reason: String| open_failed(path, reason);
    if let Some(dir) = path.parent() {
        ctxhost_private_files::create_dir(dir).map_err(|e| fail(e.to_string()))?;
    }
    ctxhost_private_files::create_file(path).map_err(|e| fail(e.to_string()))?;
    // SQLite gives its log and shared-memory files the database's mode.
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let file = PathBuf::from(file);
        match ctxhost_private_files::restrict(&file) {
            Ok(Some(mode)) => {
                tracing::warn!("{}", ctxhost_private_files::tightened_notice(&file, mode))
            }
            Ok(None) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(fail(format!(
                    "cannot make {} owner-only: {e}",
                    file.display()
                )))
            }
        }
    }
    let connection = Connection::open(path).map_err(|e| fail(e.to_string()))?;
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .and_then(|_| connection.pragma_update(None, "synchronous", "NORMAL"))
        .and_then(|_| connection.busy_timeout(std::time::Duration::from_secs(5)))
        .and_then(|_| connection.execute_batch(SCHEMA))
        .map_err(|e| fail(e.to_string()))?;
    Ok(connection)
}

/// The existing store at `path`, read-only.
fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    let fail = |reason: String| open_failed(path, reason);
    if !path.is_file() {
        return Err(fail("there is no such file".to_string()));
    }
    let connection = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| fail(e.to_string()))?;
    connection
        .busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| fail(e.to_string()))?;
    Ok(connection)
}

fn open_failed(path: &Path, reason: String) -> StoreError {
    StoreError::Open {
        location: StateLocation::Sqlite(path.to_path_buf()),
        reason,
    }
}

impl SessionStore for SqliteStore {
    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        let key = key.clone();
        Box::pin(self.run(move |connection| {
            let json: Option<String> = connection
                .query_row(
                    "SELECT record FROM gateway_sessions WHERE credential = ?1 AND name = ?2",
                    params![key.credential, key.name],
                    |row| row.get(0),
                )
                .optional()?;
            json.map(|json| decode(&key.name, &json)).transpose()
        }))
    }

    fn save<'a>(&'a self, record: &'a SessionRecord) -> StoreFuture<'a, Result<(), StoreError>> {
        let written = encode(record).map(|json| {
            let key = record.key.clone();
            let updated_at = record.updated_at as i64;
            self.run(move |connection| {
                connection.execute(
                    "INSERT INTO gateway_sessions (credential, name, record, updated_at)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (credential, name) DO UPDATE
                     SET record = excluded.record, updated_at = excluded.updated_at",
                    params![key.credential, key.name, json, updated_at],
                )?;
                Ok(())
            })
        });
        Box::pin(async move { written?.await })
    }

    fn list<'a>(
        &'a self,
        credential: &'a str,
    ) -> StoreFuture<'a, Result<Vec<SessionRecord>, StoreError>> {
        let credential = credential.to_string();
        Box::pin(self.run(move |connection| {
            let mut statement = connection.prepare(
                "SELECT name, record FROM gateway_sessions WHERE credential = ?1
                 ORDER BY updated_at DESC, name",
            )?;
            let rows = statement.query_map(params![credential], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })?;
            let mut records = Vec::new();
            for row in rows {
                let (name, json) = row?;
                records.push(decode(&name, &json)?);
            }
            Ok(records)
        }))
    }

    fn named<'a>(
        &'a self,
        name: &'a str,
    ) -> StoreFuture<'a, Result<Vec<SessionRecord>, StoreError>> {
        let name = name.to_string();
        Box::pin(self.run(move |connection| {
            let mut statement = connection.prepare(
                "SELECT record FROM gateway_sessions WHERE name = ?1 ORDER BY updated_at DESC",
            )?;
            let rows = statement.query_map(params![name], |row| row.get::<_, String>(0))?;
            let mut records = Vec::new();
            for json in rows {
                records.push(decode(&name, &json?)?);
            }
            Ok(records)
        }))
    }

    fn health(&self) -> StoreFuture<'_, StoreHealth> {
        Box::pin(async move {
            let answered = self
                .run(|connection| {
                    Ok(connection
                        .query_row("SELECT count(*) FROM gateway_sessions", [], |row| {
                            row.get::<_, i64>(0)
                        })
                        .and_then(|_| {
                            connection.query_row("PRAGMA user_version", [], |row| row.get(0))
                        }))
                })
                .await;
            // SQLite's own words when it answered wrong; the store's when the call was lost.
            let answered = match answered {
                Ok(answered) => answered.map_err(|e| e.to_string()),
                Err(lost) => Err(lost.to_string()),
            };
            StoreHealth {
                backend: "sqlite",
                ok: answered.is_ok(),
                schema_version: answered.as_ref().ok().copied(),
                problem: answered.err(),
            }
        })
    }

    fn secret(&self) -> StoreFuture<'_, Result<[u8; 32], StoreError>> {
        Box::pin(self.run(|connection| {
            connection.execute(
                "INSERT OR IGNORE INTO gateway_secrets (name, value) VALUES ('signing', ?1)",
                params![new_secret()?.to_vec()],
            )?;
            let stored: Vec<u8> = connection.query_row(
                "SELECT value FROM gateway_secrets WHERE name = 'signing'",
                [],
                |row| row.get(0),
            )?;
            secret_of(&stored)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn records_round_trip_and_stay_with_their_credential() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway/sessions.sqlite");
        let store = SqliteStore::open(&path).await.unwrap();
        let key = SessionKey {
            credential: "a".repeat(32),
            name: "chat".into(),
        };
        let mut record = SessionRecord::new(key.clone(), "compressor".into(), "m".into(), 4096);
        record.stats.requests = 3;
        store.save(&record).await.unwrap();
        record.stats.requests = 4;
        store.save(&record).await.unwrap();
        drop(store);
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(store.load(&key).await.unwrap(), Some(record));
        assert_eq!(store.list(&"a".repeat(32)).await.unwrap().len(), 1);
        assert!(store.list(&"b".repeat(32)).await.unwrap().is_empty());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[tokio::test]
    async fn the_signing_secret_is_made_once_and_the_health_names_the_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.sqlite");
        let first = SqliteStore::open(&path)
            .await
            .unwrap()
            .secret()
            .await
            .unwrap();
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(store.secret().await.unwrap(), first);
        let health = store.health().await;
        assert!(health.ok, "{health:?}");
        assert_eq!(health.schema_version, Some(1));
    }

    /// A save that waits for SQLite's lock waits on the blocking pool: on a runtime with one
    /// thread, the task that holds the lock still runs, lets go, and the save goes through
    /// (a save that blocked the runtime would wait out the busy timeout and fail).
    #[tokio::test(flavor = "current_thread")]
    async fn a_save_waiting_for_the_database_leaves_the_runtime_free() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.sqlite");
        let store = Arc::new(SqliteStore::open(&path).await.unwrap());
        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let key = SessionKey {
            credential: "a".repeat(32),
            name: "chat".into(),
        };
        let record = SessionRecord::new(key.clone(), "compressor".into(), "m".into(), 4096);
        let saving = tokio::spawn({
            let (store, record) = (store.clone(), record.clone());
            async move { store.save(&record).await }
        });
        // The save starts first, and finds the database locked.
        tokio::task::yield_now().await;
        holder.execute_batch("COMMIT").unwrap();
        saving.await.unwrap().unwrap();
        assert_eq!(store.load(&key).await.unwrap(), Some(record));
    }
}
