//! # ctxhost-lcm-store
//!
//! The lossless store of the lcm engine: every message the host passes kept verbatim, summaries
//! forming a DAG over them, and the context list the model currently sees.
//!
//! Two databases can keep it, one module each behind the closed enum [`Store`]: SQLite (a file
//! under the engine's data directory, the default) and PostgreSQL (a `postgres://` URL in
//! `plugins.lcm.store`, which several gateways on different machines can share), in the same
//! tables (`lcm_*`). The algorithms are written once, above the small SQL interface of
//! `sql.rs` (the statements are named in `statement.rs`, each database holds their SQL text):
//! `queries.rs` (the context list, summaries, lookups, coverage, telemetry), `chain.rs`
//! (ingest), `sessions.rs` (listing, deleting, reading out and writing in whole sessions),
//! `checks.rs` (the doctor's checks). Search stays in each database's module, where FTS5 and
//! `tsvector` differ (the words PostgreSQL indexes are `ctxhost-lcm-words`'). `rows.rs` holds the rows, `location.rs` says which database a setting
//! names, `dump.rs` is a session as it travels between stores, `migrate.rs` copies one session
//! from the one into the other.
//!
//! An engine instance's [`Store`] shares its connections with every other store of the process
//! on the same location (`registry.rs`; each database's `pool.rs`): a process hosting many
//! sessions connects and migrates once per store, and [`pool_stats`] says what it shares.
//!
//! Beside the store: `ids.rs` (content hashes and summary ids, which the store checks and the
//! engine writes), `session_lock.rs` (one writer per session, across processes and, on
//! PostgreSQL, machines) and `ctxhost-private-files` (owner-only files for everything it writes, and its lock files).
//!
//! The public surface is what the engine uses: [`Store`] and its [`Location`], the rows, the
//! doctor's report, [`SessionLock`], [`migrate_session`] and [`ids`].

// First: the column lists it defines are used by the SQL of both databases.
#[macro_use]
mod statement;

mod chain;
mod checks;
mod doctor;
mod dump;
pub mod ids;
mod location;
mod migrate;
mod postgres;
mod queries;
mod registry;
mod rows;
mod session_lock;
mod sessions;
mod sql;
mod sqlite;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ctxhost_sdk::{EngineError, SessionInfo};
use serde_json::Value;

pub use doctor::{Doctor, Problem, Repair};
pub use location::Location;
pub use migrate::migrate_session;
pub use registry::PoolStats;
pub use rows::*;
pub use session_lock::SessionLock;

/// The databases' stores, as [`Store`] holds them.
pub use postgres::{PostgresStore, ROWS_PER_STATEMENT, UPKEEP_EVERY};
pub use sqlite::SqliteStore;

/// What this process shares for the store at `location`: `None` when no store of this
/// process opened it yet.
pub fn pool_stats(location: &Location) -> Option<PoolStats> {
    match location {
        Location::Sqlite(path) => sqlite::pool_stats(path),
        Location::Postgres(url) => postgres::pool_stats(url),
    }
}

/// Where `backup` writes when no path is given, beside the database; `doctor` names the
/// newest file there when the store needs restoring.
pub const BACKUP_DIR: &str = "backups";

/// Why a store operation failed (before the store's location is attached).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Sql(#[from] rusqlite::Error),
    /// PostgreSQL's own words (the server's message when it sent one).
    #[error("{0}")]
    Postgres(String),
    /// A stored row that does not read back (a damaged or hand-edited database).
    #[error("damaged data: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Schema(String),
}

impl From<::postgres::Error> for StoreError {
    fn from(error: ::postgres::Error) -> Self {
        StoreError::Postgres(ctxhost_pg::describe(&error))
    }
}

/// A full-text search as the tool parsed it: terms, each a phrase of the words in it,
/// optionally a prefix; all required, or any one. Each database renders it in its own query
/// language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullTextQuery {
    pub terms: Vec<Term>,
    /// Any term may match (else every term must).
    pub any: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The term as written (no double quotes).
    pub text: String,
    /// `pref*`: any word starting with it.
    pub prefix: bool,
}

/// The open store, in one of the databases it can live in.
pub enum Store {
    Sqlite(SqliteStore),
    /// Boxed, as callers build it (it held a whole connection before the process's pool did).
    Postgres(Box<PostgresStore>),
}

/// Runs the same call on whichever database holds the store.
macro_rules! on_backend {
    ($store:expr, $backend:ident => $call:expr) => {
        match $store {
            Store::Sqlite($backend) => $call,
            Store::Postgres($backend) => $call,
        }
    };
}

impl Store {
    /// Opens the store at `location`; a database that does not open (or cannot be reached)
    /// gives a store that says why on every query, and to `doctor`: the engine stays up to
    /// diagnose it.
    pub fn open_or_unusable(location: &Location, wait: Duration) -> Store {
        match location {
            Location::Sqlite(path) => Store::Sqlite(SqliteStore::open_or_unusable(path, wait)),
            Location::Postgres(url) => {
                Store::Postgres(Box::new(PostgresStore::open_or_unusable(url, wait)))
            }
        }
    }

    /// The store's files that were readable by others and were made owner-only as it opened
    /// (one line each to say); none for a database on a server.
    pub fn tightened(&self) -> &[String] {
        match self {
            Store::Sqlite(s) => s.tightened(),
            Store::Postgres(_) => &[],
        }
    }

    /// Why the database does not open, when it does not.
    pub fn unusable(&self) -> Option<&str> {
        on_backend!(self, s => s.unusable())
    }

    /// Where the store is, fit for messages (a PostgreSQL URL without its password).
    pub fn location(&self) -> String {
        match self {
            Store::Sqlite(s) => s.path().display().to_string(),
            Store::Postgres(s) => s.location().to_string(),
        }
    }

    /// The SQLite file, when the store is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Store::Sqlite(s) => Some(s.path()),
            Store::Postgres(_) => None,
        }
    }

    pub fn backend_name(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }

    pub fn schema_version(&self) -> Result<u32, EngineError> {
        on_backend!(self, s => s.schema_version())
    }

    /// The schema version this build writes, in this store's database.
    pub fn schema_latest(&self) -> u32 {
        match self {
            Store::Sqlite(_) => sqlite::schema::LATEST,
            Store::Postgres(_) => postgres::schema::LATEST,
        }
    }

    /// Attaches the store's location to a failure.
    pub fn error(&self, error: StoreError) -> EngineError {
        on_backend!(self, s => s.error(error))
    }

    // --- conversations and the context list ------------------------------------------------

    pub fn current_conversation(&mut self, session_id: &str) -> Result<i64, EngineError> {
        on_backend!(self, s => queries::current_conversation(s, session_id))
    }

    pub fn new_conversation(&mut self, session_id: &str) -> Result<i64, EngineError> {
        on_backend!(self, s => queries::new_conversation(s, session_id))
    }

    pub fn context(&self, conv: i64) -> Result<Vec<ItemRow>, EngineError> {
        on_backend!(self, s => queries::context(s, conv))
    }

    pub fn insert_summary(
        &mut self,
        summary: &SummaryRow,
        sources: &Sources,
        replaced: &[i64],
    ) -> Result<(), EngineError> {
        on_backend!(self, s => queries::insert_summary(s, summary, sources, replaced))
    }

    pub fn put_in_context(
        &mut self,
        summary: &SummaryRow,
        replaced: &[i64],
    ) -> Result<(), EngineError> {
        on_backend!(self, s => queries::put_in_context(s, summary, replaced))
    }

    pub fn set_context(&mut self, conv: i64, items: &[ItemKey]) -> Result<(), EngineError> {
        on_backend!(self, s => chain::set_context(s, conv, items))
    }

    // --- lookups -----------------------------------------------------------------------------

    pub fn message_by_seq(
        &self,
        conv: i64,
        seq: i64,
    ) -> Result<Option<StoredMessage>, EngineError> {
        on_backend!(self, s => queries::message_by_seq(s, conv, seq))
    }

    pub fn messages_by_rowid(&self, rowids: &[i64]) -> Result<Vec<StoredMessage>, EngineError> {
        on_backend!(self, s => queries::messages_by_rowid(s, rowids))
    }

    pub fn summary(&self, conv: i64, id: &str) -> Result<Option<SummaryRow>, EngineError> {
        on_backend!(self, s => queries::summary(s, conv, id))
    }

    pub fn summaries(
        &self,
        conv: i64,
        ids: &[&str],
    ) -> Result<HashMap<String, SummaryRow>, EngineError> {
        on_backend!(self, s => queries::summaries(s, conv, ids))
    }

    pub fn summaries_over(
        &self,
        messages: &[i64],
        summaries: &[&str],
    ) -> Result<HashSet<String>, EngineError> {
        on_backend!(self, s => queries::summaries_over(s, messages, summaries))
    }

    pub fn summary_children(&self, id: &str) -> Result<Vec<String>, EngineError> {
        on_backend!(self, s => queries::summary_children(s, id))
    }

    pub fn summary_parents(&self, id: &str) -> Result<Vec<String>, EngineError> {
        on_backend!(self, s => queries::summary_parents(s, id))
    }

    pub fn summary_source_seqs(&self, id: &str) -> Result<Vec<i64>, EngineError> {
        on_backend!(self, s => queries::summary_source_seqs(s, id))
    }

    pub fn summary_in_context(&self, conv: i64, id: &str) -> Result<bool, EngineError> {
        on_backend!(self, s => queries::summary_in_context(s, conv, id))
    }

    pub fn messages_under(&self, id: &str) -> Result<Vec<(i64, i64, u64)>, EngineError> {
        on_backend!(self, s => queries::messages_under(s, id))
    }

    pub fn covering(&self, message_rowid: i64) -> Result<Option<(String, String)>, EngineError> {
        on_backend!(self, s => queries::covering(s, message_rowid))
    }

    // --- search ------------------------------------------------------------------------------

    pub fn fts_messages(
        &self,
        conv: i64,
        query: &FullTextQuery,
        range: (i64, i64),
        relevance: bool,
        limit: usize,
    ) -> Result<Vec<Hit>, EngineError> {
        on_backend!(self, s => s.fts_messages(conv, query, range, relevance, limit))
    }

    pub fn fts_summaries(
        &self,
        conv: i64,
        query: &FullTextQuery,
        range: (i64, i64),
        relevance: bool,
        limit: usize,
    ) -> Result<Vec<Hit>, EngineError> {
        on_backend!(self, s => s.fts_summaries(conv, query, range, relevance, limit))
    }

    /// Calls `visit(rowid, seq, role, text)` for each message in range, newest first, until it
    /// returns false. `prefilter`, when given, is a POSIX regular expression every message the
    /// caller wants matches: a database that can (PostgreSQL's `~`) skips the others.
    pub fn scan_messages(
        &self,
        conv: i64,
        range: (i64, i64),
        prefilter: Option<&str>,
        visit: impl FnMut(i64, i64, &str, &str) -> bool,
    ) -> Result<(), EngineError> {
        match self {
            Store::Sqlite(s) => s.scan_messages(conv, range, visit),
            Store::Postgres(s) => s.scan_messages(conv, range, prefilter, visit),
        }
    }

    /// Calls `visit` for each summary overlapping the range, newest first, until it returns
    /// false; `prefilter` as for [`scan_messages`](Self::scan_messages).
    pub fn scan_summaries(
        &self,
        conv: i64,
        range: (i64, i64),
        prefilter: Option<&str>,
        visit: impl FnMut(SummaryRow) -> bool,
    ) -> Result<(), EngineError> {
        match self {
            Store::Sqlite(s) => s.scan_summaries(conv, range, visit),
            Store::Postgres(s) => s.scan_summaries(conv, range, prefilter, visit),
        }
    }

    // --- ingest --------------------------------------------------------------------------------

    pub fn head_hashes(&self, conv: i64) -> Result<std::collections::HashSet<String>, EngineError> {
        on_backend!(self, s => chain::head_hashes(s, conv))
    }

    pub fn has_raw_messages(&self, conv: i64) -> Result<bool, EngineError> {
        on_backend!(self, s => chain::has_raw_messages(s, conv))
    }

    pub fn raw_after(&self, conv: i64, seq: i64, limit: usize) -> Result<Vec<RawRef>, EngineError> {
        on_backend!(self, s => chain::raw_after(s, conv, seq, limit))
    }

    pub fn raw_child(
        &self,
        conv: i64,
        prev: i64,
        hash: &str,
    ) -> Result<Option<RawRef>, EngineError> {
        on_backend!(self, s => chain::raw_child(s, conv, prev, hash))
    }

    pub fn raw_with_hash(&self, conv: i64, hash: &str) -> Result<Vec<RawRef>, EngineError> {
        on_backend!(self, s => chain::raw_with_hash(s, conv, hash))
    }

    /// Those of `hashes` that some non-head message of the conversation has.
    pub fn stored_hashes(
        &self,
        conv: i64,
        hashes: &[&str],
    ) -> Result<std::collections::HashSet<String>, EngineError> {
        on_backend!(self, s => chain::stored_hashes(s, conv, hashes))
    }

    pub fn summaries_last_messages(
        &self,
        ids: &[&str],
    ) -> Result<HashMap<String, RawRef>, EngineError> {
        on_backend!(self, s => chain::summaries_last_messages(s, ids))
    }

    pub fn covered_by_any(&self, rowid: i64, summaries: &[String]) -> Result<bool, EngineError> {
        on_backend!(self, s => chain::covered_by_any(s, rowid, summaries))
    }

    pub fn append_messages(
        &mut self,
        conv: i64,
        messages: &[NewMessage],
    ) -> Result<Vec<i64>, EngineError> {
        on_backend!(self, s => chain::append_messages(s, conv, messages))
    }

    // --- telemetry, sessions, operations -------------------------------------------------------

    pub fn record_compaction(&mut self, conv: i64, report: &Value) -> Result<(), EngineError> {
        on_backend!(self, s => queries::record_compaction(s, conv, report))
    }

    pub fn last_compaction(&self, conv: i64) -> Result<Option<Value>, EngineError> {
        on_backend!(self, s => queries::last_compaction(s, conv))
    }

    pub fn stats(&self, conv: i64) -> Result<Stats, EngineError> {
        on_backend!(self, s => queries::stats(s, conv))
    }

    pub fn sessions(&self) -> Result<Vec<SessionInfo>, EngineError> {
        on_backend!(self, s => sessions::sessions(s))
    }

    pub fn session(&self, session_id: &str) -> Result<Option<SessionInfo>, EngineError> {
        on_backend!(self, s => sessions::session(s, session_id))
    }

    pub fn delete_session(&mut self, session_id: &str) -> Result<bool, EngineError> {
        on_backend!(self, s => sessions::delete_session(s, session_id))
    }

    pub fn doctor(&mut self, repair: &Repair<'_>) -> Result<Doctor, EngineError> {
        on_backend!(self, s => s.doctor(repair))
    }

    /// Bytes the store takes: for SQLite the database file and its write-ahead log, for
    /// PostgreSQL the engine's tables with their indexes (and no log of their own).
    pub fn disk_bytes(&self) -> (u64, u64) {
        match self {
            Store::Sqlite(s) => s.disk_bytes(),
            Store::Postgres(s) => (s.disk_bytes(), 0),
        }
    }

    /// A consistent copy of the whole store at `to` (SQLite only: PostgreSQL has `pg_dump`).
    pub fn backup(&self, to: &Path) -> Result<u64, EngineError> {
        match self {
            Store::Sqlite(s) => s.backup(to),
            Store::Postgres(s) => Err(EngineError::invalid_input(format!(
                "backup: the lcm store is in PostgreSQL ({}); back it up with pg_dump \
                 (its tables are named lcm_*)",
                s.location()
            ))),
        }
    }
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
