//! The store in SQLite (the default): one database file (WAL mode) under the engine's data
//! directory.
//!
//! `schema.rs` holds the tables and migrations, `statements.rs` the SQL text of the store's
//! statements (whose algorithms live once in `store/`), `sql.rs` runs them, `search.rs` holds
//! full-text and regex search (FTS5), `doctor.rs` the integrity checks and repairs only SQLite
//! has, `files.rs` backups and sizes. This module opens the database and maps every failure to
//! an [`EngineError`] that names the file, so a corrupted or locked store is one clear line for
//! the host, never a panic.

mod codec;
mod doctor;
mod files;
pub mod schema;
mod search;
mod sql;
mod statements;

#[cfg(test)]
mod plans;
mod pool;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ctxhost_sdk::EngineError;
use rusqlite::{Connection, Transaction, TransactionBehavior};

pub(crate) use pool::pool_stats;
use pool::SqlitePool;

use crate::registry::User;

pub(crate) use super::{Hit, StoreError, SummaryRow, BACKUP_DIR};

/// The open database, or the reason it does not open.
pub struct SqliteStore {
    /// The process's connections to the file, shared with every other store of the process
    /// that opened it. `None` when the database does not open: every query then fails with
    /// `unusable`, and only `doctor` has something to say.
    pool: Option<User<SqlitePool>>,
    unusable: Option<String>,
    path: PathBuf,
    /// Files of the store that were readable by others when it opened, and were made
    /// owner-only: one line each for the engine to say.
    tightened: Vec<String>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, switches it to WAL and migrates it.
    pub fn open(path: &Path, busy_timeout: Duration) -> Result<SqliteStore, EngineError> {
        if let Some(dir) = path.parent() {
            ctxhost_private_files::create_dir(dir).map_err(|e| {
                EngineError::failed(format!(
                    "lcm store {}: cannot create the directory: {e}",
                    dir.display()
                ))
            })?;
        }
        // SQLite creates the log and shared-memory files with the database's mode: create the
        // database owner-only first, and tighten a store an earlier release left readable.
        let mut tightened = Vec::new();
        let mut private = || -> std::io::Result<()> {
            if !path.exists() {
                match ctxhost_private_files::create_new_empty(path) {
                    Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
                    _ => {}
                }
            }
            for suffix in ["", "-wal", "-shm"] {
                let mut file = path.as_os_str().to_owned();
                file.push(suffix);
                let file = std::path::PathBuf::from(file);
                if file.exists() {
                    if let Some(mode) = ctxhost_private_files::restrict(&file)? {
                        tightened.push(ctxhost_private_files::tightened_notice(&file, mode));
                    }
                }
            }
            Ok(())
        };
        private().map_err(|e| {
            EngineError::failed(format!(
                "lcm store {}: cannot make it private to its owner: {e}",
                path.display()
            ))
        })?;
        let pool = pool::shared(path, busy_timeout)
            .map_err(|e| EngineError::failed(format!("lcm store {}: {e}", path.display())))?;
        Ok(SqliteStore {
            pool: Some(pool),
            unusable: None,
            path: path.to_path_buf(),
            tightened,
        })
    }

    /// Like [`open`](Self::open), but a database that does not open gives a store that says why
    /// on every query (and to `doctor`) instead of an error: the engine stays up to diagnose it.
    pub fn open_or_unusable(path: &Path, busy_timeout: Duration) -> SqliteStore {
        SqliteStore::open(path, busy_timeout).unwrap_or_else(|error| SqliteStore {
            pool: None,
            unusable: Some(error.message().to_string()),
            path: path.to_path_buf(),
            tightened: Vec::new(),
        })
    }

    /// The store's files that were readable by others and were made owner-only as it opened.
    pub fn tightened(&self) -> &[String] {
        &self.tightened
    }

    /// Why the database does not open, when it does not.
    pub fn unusable(&self) -> Option<&str> {
        self.unusable.as_deref()
    }

    fn pool(&self) -> Result<&SqlitePool, EngineError> {
        self.pool.as_deref().ok_or_else(|| self.not_open())
    }

    fn not_open(&self) -> EngineError {
        EngineError::failed(format!(
            "{}; run `ctxhost engine doctor` for how to restore it",
            self.unusable.as_deref().unwrap_or("lcm store: not open")
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn schema_version(&self) -> Result<u32, EngineError> {
        self.with_connection(schema::version)
    }

    /// Attaches the file name to a failure.
    pub fn error(&self, error: StoreError) -> EngineError {
        EngineError::failed(format!("lcm store {}: {error}", self.path.display()))
    }

    /// Runs `body` on a reader of the store, for reads of SQLite's own (search, checks,
    /// backups).
    pub(crate) fn with_connection<T>(
        &self,
        body: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        self.pool()?.read(body).map_err(|e| self.error(e))
    }

    /// Runs `body` on the store's writer, outside a transaction (the doctor's checks).
    pub(crate) fn with_writer<T>(
        &self,
        body: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        self.pool()?
            .write(|conn| body(conn))
            .map_err(|e| self.error(e))
    }

    /// Runs `body` in one write transaction, taken up front so a concurrent writer makes us
    /// wait (up to the busy timeout) instead of failing halfway (the store's one policy: see
    /// `store/sql.rs`).
    pub(crate) fn with_transaction<T>(
        &mut self,
        body: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        let outcome = self.pool()?.write(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = body(&tx)?;
            tx.commit()?;
            Ok(value)
        });
        outcome.map_err(|e| self.error(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::OptionalExtension;

    #[test]
    fn connections_opening_a_new_store_at_once_all_open_it_and_create_it_once() {
        // Each its own connection, as processes have (stores of one process share theirs).
        for trial in 0..30 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("lcm.sqlite");
            let start = std::sync::Arc::new(std::sync::Barrier::new(4));
            let openers: Vec<_> = (0..4)
                .map(|_| {
                    let (path, start) = (path.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        SqlitePool::open(&path, Duration::from_secs(10)).map(|_| ())
                    })
                })
                .collect();
            for opener in openers {
                if let Err(error) = opener.join().unwrap().map_err(|e| e.to_string()) {
                    panic!("trial {trial}: {error}");
                }
            }
            let store = SqliteStore::open(&path, Duration::from_secs(10)).unwrap();
            assert_eq!(store.schema_version().unwrap(), schema::LATEST);
        }
    }

    #[test]
    fn fts5_is_available_in_the_bundled_sqlite() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(text); INSERT INTO t VALUES ('hello world');",
        )
        .unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t WHERE t MATCH 'hello'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn an_old_store_is_migrated_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lcm.sqlite");
        {
            let mut conn = Connection::open(&path).unwrap();
            schema::migrate_to(&mut conn, 1).unwrap();
            assert_eq!(schema::version(&conn).unwrap(), 1);
            conn.execute(
                "INSERT INTO conversations(session_id, created_at) VALUES ('s', 0)",
                [],
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path, Duration::from_millis(100)).unwrap();
        assert_eq!(store.schema_version().unwrap(), schema::LATEST);
        let kept: i64 = store
            .with_connection(|c| {
                Ok(c.query_row("SELECT count(*) FROM lcm_conversations", [], |r| r.get(0))?)
            })
            .unwrap();
        assert_eq!(kept, 1);
    }

    #[test]
    fn a_store_with_the_old_table_names_opens_and_finds_its_messages() {
        use crate::{FullTextQuery, Store, Term};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lcm.sqlite");
        {
            // Version 6: the tables without the `lcm_` prefix, one message and one summary.
            let mut conn = Connection::open(&path).unwrap();
            schema::migrate_to(&mut conn, 6).unwrap();
            conn.execute_batch(
                r#"INSERT INTO conversations(id, session_id, created_at) VALUES (1, 's', 0);
                INSERT INTO messages(id, conversation_id, seq, role, head, json, tokens, hash,
                                     created_at)
                VALUES (7, 1, 0, 'user', 0, '{"role":"user","content":"walrus tusks"}', 3,
                        'h', 0);
                INSERT INTO messages_fts(rowid, text) VALUES (7, 'walrus tusks');
                INSERT INTO summaries(id, conversation_id, kind, depth, seq_start, seq_end,
                    time_start, time_end, message_count, source_tokens, tokens, block_tokens,
                    text, summarizer, escalation, created_at)
                VALUES ('sum_1', 1, 'leaf', 0, 0, 0, 0, 0, 1, 3, 2, 4, 'ivory notes', 't', 0, 0);
                INSERT INTO summaries_fts(rowid, text)
                    SELECT rowid, text FROM summaries WHERE id = 'sum_1';
                INSERT INTO summary_messages(summary_id, ord, message_id) VALUES ('sum_1', 0, 7);"#,
            )
            .unwrap();
        }
        let mut store =
            Store::Sqlite(SqliteStore::open(&path, Duration::from_millis(100)).unwrap());
        assert_eq!(store.schema_version().unwrap(), schema::LATEST);
        assert_eq!(store.current_conversation("s").unwrap(), 1);
        let message = store.message_by_seq(1, 0).unwrap().expect("kept");
        assert_eq!(message.rowid, 7);
        assert!(message.json.contains("walrus tusks"));
        let words = |text: &str| FullTextQuery {
            terms: vec![Term {
                text: text.to_string(),
                prefix: false,
            }],
            any: false,
        };
        let found = store
            .fts_messages(1, &words("walrus"), (0, i64::MAX), false, 10)
            .unwrap();
        assert_eq!(found.len(), 1);
        let found = store
            .fts_summaries(1, &words("ivory"), (0, i64::MAX), false, 10)
            .unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            store.covering(7).unwrap(),
            Some(("sum_1".to_string(), "sum_1".to_string()))
        );
        let doctor = store.doctor(&crate::Repair::default()).unwrap();
        let faults: Vec<&str> = doctor.problems.iter().map(|p| p.check).collect();
        assert_eq!(
            faults,
            ["checksum_mismatch"],
            "only the hand-made hash differs"
        );
    }

    fn hashsize(store: &SqliteStore) -> Option<i64> {
        store
            .with_connection(|c| {
                Ok(c.query_row(
                    "SELECT v FROM lcm_messages_fts_config WHERE k = 'hashsize'",
                    [],
                    |r| r.get(0),
                )
                .optional()?)
            })
            .unwrap()
    }

    #[test]
    fn the_store_is_tuned_for_large_ingests() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            SqliteStore::open(&dir.path().join("lcm.sqlite"), Duration::from_millis(100)).unwrap();
        assert_eq!(hashsize(&store), Some(32 * 1024 * 1024));
        let cache: i64 = store
            .with_connection(|c| Ok(c.query_row("PRAGMA cache_size", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(cache, -pool::CACHE_KIB);
    }

    #[test]
    fn a_store_of_version_2_gets_the_larger_index_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lcm.sqlite");
        {
            let mut conn = Connection::open(&path).unwrap();
            schema::migrate_to(&mut conn, 2).unwrap();
        }
        let store = SqliteStore::open(&path, Duration::from_millis(100)).unwrap();
        assert_eq!(hashsize(&store), Some(32 * 1024 * 1024));
    }

    #[test]
    fn a_newer_store_is_refused_with_its_file_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lcm.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("PRAGMA user_version = 99").unwrap();
        }
        let error = SqliteStore::open(&path, Duration::from_millis(100))
            .err()
            .expect("refused");
        assert!(error.message().contains("lcm.sqlite"), "{error}");
        assert!(error.message().contains("newer"), "{error}");
    }
}
