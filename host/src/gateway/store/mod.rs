//! Where session records live between requests and across restarts: SQLite under
//! `$CTXHOST_HOME/data/gateway/` by default, or a PostgreSQL database named by `serve.state`.

mod postgres;
mod sqlite;

use std::path::PathBuf;

use serde::Serialize;

use super::record::{SessionKey, SessionRecord};
use super::settings::DatabaseSettings;
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// A store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the gateway's session store {location}: {reason}")]
    Open { location: String, reason: String },
    #[error("the gateway's session store failed: {0}")]
    Query(String),
    #[error("a stored session is unreadable ({name}): {reason}")]
    Corrupt { name: String, reason: String },
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError::Query(error.to_string())
    }
}

/// Which database holds the sessions, as `serve.state` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateLocation {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL (`postgres://` or `postgresql://`).
    Postgres(String),
}

impl StateLocation {
    /// `serve.state` read: a PostgreSQL URL, else a file path; `default` when unset.
    pub fn parse(state: Option<&str>, default: PathBuf) -> Self {
        match state {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                StateLocation::Postgres(url.to_string())
            }
            Some(path) => StateLocation::Sqlite(PathBuf::from(path)),
            None => StateLocation::Sqlite(default),
        }
    }

    /// Opens (creating what is missing, migrating what is old) the store.
    pub async fn open(
        &self,
        database: &DatabaseSettings,
    ) -> Result<std::sync::Arc<dyn SessionStore>, StoreError> {
        Ok(match self {
            StateLocation::Sqlite(path) => std::sync::Arc::new(SqliteStore::open(path)?),
            StateLocation::Postgres(url) => {
                std::sync::Arc::new(PostgresStore::connect(url, database).await?)
            }
        })
    }
}

/// How a store is doing, for `/healthz`.
#[derive(Debug, Clone, Serialize)]
pub struct StoreHealth {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    pub ok: bool,
    /// What is wrong, when something is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Session records, by key. Calls block: the gateway makes them on the blocking pool.
pub trait SessionStore: Send + Sync {
    fn load(&self, key: &SessionKey) -> Result<Option<SessionRecord>, StoreError>;
    fn save(&self, record: &SessionRecord) -> Result<(), StoreError>;
    /// Every session of one credential, most recently used first.
    fn list(&self, credential: &str) -> Result<Vec<SessionRecord>, StoreError>;
    /// Whether the store answers.
    fn health(&self) -> StoreHealth;
}

/// A stored record back from its JSON.
fn decode(name: &str, json: &str) -> Result<SessionRecord, StoreError> {
    serde_json::from_str(json).map_err(|error| StoreError::Corrupt {
        name: name.to_string(),
        reason: error.to_string(),
    })
}

/// A record as the JSON the stores keep.
fn encode(record: &SessionRecord) -> Result<String, StoreError> {
    serde_json::to_string(record).map_err(|e| StoreError::Query(e.to_string()))
}
