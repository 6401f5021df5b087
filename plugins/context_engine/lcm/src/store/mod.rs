//! The lossless store: one SQLite database (WAL mode) under the engine's data directory.
//!
//! Every message the host passes is kept verbatim; summaries form a DAG over them; the context
//! list says what the model currently sees; `sessions.rs` lists and deletes what each session
//! holds. This module opens the database and maps every failure to an [`EngineError`] that
//! names the file, so a corrupted or locked store is one clear line for the host, never a panic.

mod codec;
mod doctor;
mod ingest;
mod queries;
pub mod schema;
mod sessions;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ctxhost_sdk::{EngineError, Message};
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};
use serde_json::Value;

pub use doctor::{Problem, Repair};
pub use queries::Hit;

/// Why a store operation failed (before the file name is attached).
#[derive(Debug)]
pub enum StoreError {
    Sql(rusqlite::Error),
    /// A stored row that does not read back (a damaged or hand-edited database).
    Corrupt(String),
    Schema(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Sql(error) => write!(f, "{error}"),
            StoreError::Corrupt(what) => write!(f, "damaged data: {what}"),
            StoreError::Schema(what) => f.write_str(what),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError::Sql(error)
    }
}

/// A message as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// The database row id (links and context items use it).
    pub rowid: i64,
    /// The message's sequence number in its conversation (what tools and blocks show).
    pub seq: i64,
    pub role: String,
    /// A leading system message: stored, searchable, never summarized.
    pub head: bool,
    /// The message's JSON exactly as it was received.
    pub json: String,
    pub tokens: u64,
    pub created_at: i64,
}

impl StoredMessage {
    /// The id tools use: `msg_<seq>`.
    pub fn public_id(&self) -> String {
        message_id(self.seq)
    }

    pub fn message(&self) -> Result<Message, StoreError> {
        serde_json::from_str(&self.json)
            .map_err(|e| StoreError::Corrupt(format!("message {}: {e}", self.public_id())))
    }

    pub fn value(&self) -> Result<Value, StoreError> {
        serde_json::from_str(&self.json)
            .map_err(|e| StoreError::Corrupt(format!("message {}: {e}", self.public_id())))
    }
}

/// The id tools use for the message with sequence number `seq`.
pub fn message_id(seq: i64) -> String {
    format!("msg_{seq}")
}

/// `msg_<seq>` back to the sequence number.
pub fn parse_message_id(id: &str) -> Option<i64> {
    id.strip_prefix("msg_")?
        .parse()
        .ok()
        .filter(|seq| *seq >= 0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryKind {
    /// Summarizes raw messages.
    Leaf,
    /// Merges summaries of a lower depth.
    Condensed,
}

impl SummaryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryKind::Leaf => "leaf",
            SummaryKind::Condensed => "condensed",
        }
    }

    fn parse(text: &str) -> Result<Self, StoreError> {
        match text {
            "leaf" => Ok(SummaryKind::Leaf),
            "condensed" => Ok(SummaryKind::Condensed),
            other => Err(StoreError::Corrupt(format!(
                "unknown summary kind `{other}`"
            ))),
        }
    }
}

/// A summary as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// `sum_<16 hex>`.
    pub id: String,
    pub conversation_id: i64,
    pub kind: SummaryKind,
    /// 0 for leaves; one more than the deepest child for condensed summaries.
    pub depth: u32,
    /// The sequence range of the messages it covers, inclusive.
    pub seq_start: i64,
    pub seq_end: i64,
    /// When the covered messages were stored (unix milliseconds).
    pub time_start: i64,
    pub time_end: i64,
    pub message_count: u64,
    /// Tokens of the original messages it covers.
    pub source_tokens: u64,
    /// Tokens of the summary text.
    pub tokens: u64,
    /// Tokens of the rendered block in the model's context.
    pub block_tokens: u64,
    pub text: String,
    /// Which summarizer wrote it (`truncation` when the engine's own fallback did).
    pub summarizer: String,
    /// 0 normal, 1 aggressive, 2 deterministic truncation.
    pub escalation: u8,
    pub created_at: i64,
}

/// What a new summary stands for.
#[derive(Debug, Clone)]
pub enum Sources {
    /// A leaf: message row ids, in order.
    Messages(Vec<i64>),
    /// A condensed summary: child summary ids, in order.
    Children(Vec<String>),
}

/// A message to store.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub role: String,
    pub head: bool,
    pub json: String,
    pub text: String,
    pub tokens: u64,
    pub hash: String,
    /// The message it follows in the host's order: part of its identity.
    pub prev: Prev,
}

/// The message a new one follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prev {
    /// None: it is the first (head messages are outside the chain and use this too).
    First,
    /// A message already stored, by row id.
    Stored(i64),
    /// An earlier message of the same batch, by index.
    New(usize),
}

/// A stored non-head message as ingest sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRef {
    pub rowid: i64,
    pub seq: i64,
    /// Row id of the message it follows (0: the first).
    pub prev: i64,
    pub hash: String,
}

/// What one entry of the context list is, without loading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKey {
    /// A stored message, by row id.
    Message(i64),
    /// A summary, by id.
    Summary(String),
}

/// One entry of the context list.
#[derive(Debug, Clone, PartialEq)]
pub enum ContextItem {
    Message(StoredMessage),
    Summary(SummaryRow),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ItemRow {
    pub position: i64,
    pub item: ContextItem,
}

/// How much of the database file a connection maps into memory.
const MMAP_BYTES: i64 = 256 * 1024 * 1024;

/// The page cache of one connection, in KiB.
const CACHE_KIB: i64 = 16 * 1024;

/// Where `backup` writes when no path is given, beside the database; `doctor` names the
/// newest file there when the store needs restoring.
pub const BACKUP_DIR: &str = "backups";

/// The open database, or the reason it does not open.
pub struct Store {
    /// `None` when the database does not open: every query then fails with `unusable`, and
    /// only `doctor` has something to say.
    conn: Option<Connection>,
    unusable: Option<String>,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, switches it to WAL and migrates it.
    pub fn open(path: &Path, busy_timeout: Duration) -> Result<Store, EngineError> {
        if let Some(dir) = path.parent() {
            crate::private_files::create_dir(dir).map_err(|e| {
                EngineError::failed(format!(
                    "lcm store {}: cannot create the directory: {e}",
                    dir.display()
                ))
            })?;
        }
        // SQLite creates the log and shared-memory files with the database's mode: create the
        // database owner-only first, and tighten a store an earlier release left readable.
        let private = || -> std::io::Result<()> {
            if !path.exists() {
                match crate::private_files::create_new_empty(path) {
                    Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
                    _ => {}
                }
            }
            for suffix in ["", "-wal", "-shm"] {
                let mut file = path.as_os_str().to_owned();
                file.push(suffix);
                let file = std::path::PathBuf::from(file);
                if file.exists() {
                    crate::private_files::restrict(&file)?;
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
        let fail =
            |e: StoreError| EngineError::failed(format!("lcm store {}: {e}", path.display()));
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let mut conn =
            Connection::open_with_flags(path, flags).map_err(|e| fail(StoreError::Sql(e)))?;
        let setup = |conn: &mut Connection| -> Result<(), StoreError> {
            conn.busy_timeout(busy_timeout)?;
            // Reading the journal mode back is the first real read: a file that is not a
            // database fails here, with SQLite's own words for it.
            let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError::Schema(format!(
                    "could not switch to WAL mode (journal mode is {mode})"
                )));
            }
            // WAL with NORMAL sync is durable across process crashes (not power loss), and
            // much faster for the many small transactions of an agent loop.
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            // A big ingest grows the log; cap what it keeps on disk after each checkpoint.
            conn.pragma_update(None, "journal_size_limit", 16 * 1024 * 1024)?;
            // Checkpoint every 16 MiB of log instead of every 4 MiB: a checkpoint syncs the
            // database file, and a large ingest would otherwise pay that hundreds of times.
            conn.pragma_update(None, "wal_autocheckpoint", 4096)?;
            // A page cache of up to 16 MB (negative: KiB) instead of 2 MB: a large ingest
            // spills fewer pages to the log mid-transaction only to read them back.
            conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
            // Reads through a memory map of up to 256 MiB instead of copying each page out of
            // the OS cache (address space only; pages are shared with every other reader).
            conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
            schema::migrate(conn)?;
            Ok(())
        };
        setup(&mut conn).map_err(fail)?;
        Ok(Store {
            conn: Some(conn),
            unusable: None,
            path: path.to_path_buf(),
        })
    }

    /// Like [`open`](Self::open), but a database that does not open gives a store that says why
    /// on every query (and to `doctor`) instead of an error: the engine stays up to diagnose it.
    pub fn open_or_unusable(path: &Path, busy_timeout: Duration) -> Store {
        Store::open(path, busy_timeout).unwrap_or_else(|error| Store {
            conn: None,
            unusable: Some(error.message().to_string()),
            path: path.to_path_buf(),
        })
    }

    /// Why the database does not open, when it does not.
    pub fn unusable(&self) -> Option<&str> {
        self.unusable.as_deref()
    }

    fn connection(&self) -> Result<&Connection, EngineError> {
        self.conn.as_ref().ok_or_else(|| self.not_open())
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
        self.read(schema::version)
    }

    /// Attaches the file name to a failure.
    pub fn error(&self, error: StoreError) -> EngineError {
        EngineError::failed(format!("lcm store {}: {error}", self.path.display()))
    }

    /// Runs `body` on the connection, for reads.
    pub(crate) fn read<T>(
        &self,
        body: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        body(self.connection()?).map_err(|e| self.error(e))
    }

    /// Runs `body` in one write transaction, taken up front so a concurrent writer makes us
    /// wait (up to the busy timeout) instead of failing halfway.
    pub(crate) fn write<T>(
        &mut self,
        body: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(self.not_open());
        };
        let outcome = (|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = body(&tx)?;
            tx.commit()?;
            Ok(value)
        })();
        outcome.map_err(|e| self.error(e))
    }
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::OptionalExtension;

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
        let store = Store::open(&path, Duration::from_millis(100)).unwrap();
        assert_eq!(store.schema_version().unwrap(), schema::LATEST);
        let kept: i64 = store
            .read(|c| Ok(c.query_row("SELECT count(*) FROM conversations", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(kept, 1);
    }

    fn hashsize(store: &Store) -> Option<i64> {
        store
            .read(|c| {
                Ok(c.query_row(
                    "SELECT v FROM messages_fts_config WHERE k = 'hashsize'",
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
            Store::open(&dir.path().join("lcm.sqlite"), Duration::from_millis(100)).unwrap();
        assert_eq!(hashsize(&store), Some(32 * 1024 * 1024));
        let cache: i64 = store
            .read(|c| Ok(c.query_row("PRAGMA cache_size", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(cache, -CACHE_KIB);
    }

    #[test]
    fn a_store_of_version_2_gets_the_larger_index_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lcm.sqlite");
        {
            let mut conn = Connection::open(&path).unwrap();
            schema::migrate_to(&mut conn, 2).unwrap();
        }
        let store = Store::open(&path, Duration::from_millis(100)).unwrap();
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
        let error = Store::open(&path, Duration::from_millis(100))
            .err()
            .expect("refused");
        assert!(error.message().contains("lcm.sqlite"), "{error}");
        assert!(error.message().contains("newer"), "{error}");
    }

    #[test]
    fn message_ids_round_trip() {
        assert_eq!(parse_message_id(&message_id(42)), Some(42));
        assert_eq!(parse_message_id("msg_x"), None);
        assert_eq!(parse_message_id("sum_0"), None);
    }
}
