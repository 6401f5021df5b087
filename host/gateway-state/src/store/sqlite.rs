//! The SQLite store (the default): one file under `$CTXHOST_HOME/data/gateway/`, one row per
//! session holding its record as JSON.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use super::{
    decode, encode, new_secret, secret_of, RawRecord, SessionStore, StateLocation, StoreError,
    StoreHealth,
};
use crate::record::{SessionKey, SessionRecord};

/// The SQLite store: one row per session, the record as JSON.
pub struct SqliteStore {
    connection: Mutex<Connection>,
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
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let fail = |reason: String| StoreError::Open {
            location: StateLocation::Sqlite(path.to_path_buf()),
            reason,
        };
        if let Some(dir) = path.parent() {
            ctxhost_private_files::create_dir(dir).map_err(|e| fail(e.to_string()))?;
        }
        ctxhost_private_files::create_file(path).map_err(|e| fail(e.to_string()))?;
        // SQLite gives its log and shared-memory files the database's mode.
        for suffix in ["", "-wal", "-shm"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            let file = std::path::PathBuf::from(file);
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
        Ok(SqliteStore {
            connection: Mutex::new(connection),
        })
    }

    /// Opens a store that must exist already (the source of a migration), read-only.
    pub fn open_existing(path: &Path) -> Result<Self, StoreError> {
        let fail = |reason: String| StoreError::Open {
            location: StateLocation::Sqlite(path.to_path_buf()),
            reason,
        };
        if !path.is_file() {
            return Err(fail("there is no such file".to_string()));
        }
        let connection =
            Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(|e| fail(e.to_string()))?;
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| fail(e.to_string()))?;
        Ok(SqliteStore {
            connection: Mutex::new(connection),
        })
    }

    /// Every session as stored (its record's JSON text as it is), by credential and name.
    pub fn raw_records(&self) -> Result<Vec<RawRecord>, StoreError> {
        let connection = self.connection();
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
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl SessionStore for SqliteStore {
    fn load(&self, key: &SessionKey) -> Result<Option<SessionRecord>, StoreError> {
        let json: Option<String> = self
            .connection()
            .query_row(
                "SELECT record FROM gateway_sessions WHERE credential = ?1 AND name = ?2",
                params![key.credential, key.name],
                |row| row.get(0),
            )
            .optional()?;
        json.map(|json| decode(&key.name, &json)).transpose()
    }

    fn save(&self, record: &SessionRecord) -> Result<(), StoreError> {
        let json = encode(record)?;
        self.connection().execute(
            "INSERT INTO gateway_sessions (credential, name, record, updated_at)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (credential, name) DO UPDATE
             SET record = excluded.record, updated_at = excluded.updated_at",
            params![
                record.key.credential,
                record.key.name,
                json,
                record.updated_at as i64
            ],
        )?;
        Ok(())
    }

    fn list(&self, credential: &str) -> Result<Vec<SessionRecord>, StoreError> {
        let connection = self.connection();
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
    }

    fn health(&self) -> StoreHealth {
        let connection = self.connection();
        let answered = connection
            .query_row("SELECT count(*) FROM gateway_sessions", [], |row| {
                row.get::<_, i64>(0)
            })
            .and_then(|_| connection.query_row("PRAGMA user_version", [], |row| row.get(0)));
        StoreHealth {
            backend: "sqlite",
            ok: answered.is_ok(),
            schema_version: answered.as_ref().ok().copied(),
            problem: answered.err().map(|e| e.to_string()),
        }
    }

    fn secret(&self) -> Result<[u8; 32], StoreError> {
        let connection = self.connection();
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_stay_with_their_credential() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway/sessions.sqlite");
        let store = SqliteStore::open(&path).unwrap();
        let key = SessionKey {
            credential: "a".repeat(32),
            name: "chat".into(),
        };
        let mut record = SessionRecord::new(key.clone(), "compressor".into(), "m".into(), 4096);
        record.stats.requests = 3;
        store.save(&record).unwrap();
        record.stats.requests = 4;
        store.save(&record).unwrap();
        drop(store);
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.load(&key).unwrap(), Some(record));
        assert_eq!(store.list(&"a".repeat(32)).unwrap().len(), 1);
        assert!(store.list(&"b".repeat(32)).unwrap().is_empty());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
