//! Where session records live between requests and across restarts: SQLite under
//! `$CTXHOST_HOME/data/gateway/` by default, or a PostgreSQL database named by `serve.state`.

pub mod migrate;
mod postgres;
mod sqlite;
mod state_lock;

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use ctxhost_pg::PostgresUrl;
use ctxhost_redacted_url::RedactedUrl;
use serde::Serialize;

use crate::record::{SessionKey, SessionRecord};
use ctxhost_config::serve::DatabaseSettings;
pub use postgres::{
    default_replica_name, random_u64, Claim, Coordination, Imported, Lease, LeaseKind,
    PostgresStore, PreparedState,
};
pub use sqlite::SqliteStore;
pub use state_lock::{StateLock, StateLockError};

/// A store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the gateway's session store {location}: {reason}")]
    Open {
        location: StateLocation,
        reason: String,
    },
    #[error("the gateway's session store failed: {0}")]
    Query(String),
    #[error("a stored session is unreadable ({name}): {reason}")]
    Corrupt { name: String, reason: String },
    /// Another replica saved the session since this one read it (it held the session's lease
    /// after this one's lapsed): the newer record stands.
    #[error("session {name} was saved by another gateway since this one read it: the newer record stands")]
    Conflict { name: String },
    /// A call run on the blocking pool did not come back (it panicked, or the runtime is
    /// shutting down).
    #[error("the gateway's session store did not finish a call: {0}")]
    Interrupted(String),
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
    /// A PostgreSQL URL (`postgres://` or `postgresql://`), shown without its password.
    Postgres(RedactedUrl),
}

impl fmt::Display for StateLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateLocation::Sqlite(path) => write!(f, "{}", path.display()),
            StateLocation::Postgres(url) => write!(f, "{url}"),
        }
    }
}

/// Where the gateway keeps its sessions when `serve.state` is not set.
pub fn default_sqlite_path() -> PathBuf {
    ctxhost_config::home::home_dir()
        .join("data")
        .join("gateway")
        .join("sessions.sqlite")
}

impl StateLocation {
    /// `serve.state` read: a PostgreSQL URL, else a file path; `default` when unset.
    pub fn parse(state: Option<&str>, default: PathBuf) -> Self {
        match state {
            Some(state) => {
                let url = RedactedUrl::new(state);
                if url.is_postgres() {
                    StateLocation::Postgres(url)
                } else {
                    StateLocation::Sqlite(PathBuf::from(state))
                }
            }
            None => StateLocation::Sqlite(default),
        }
    }

    /// Opens (creating what is missing, migrating what is old) the store; a shared one comes
    /// with what coordinates the gateways that share it.
    pub async fn open(
        &self,
        database: &DatabaseSettings,
        replica: &str,
    ) -> Result<OpenedStore, StoreError> {
        Ok(match self {
            StateLocation::Sqlite(path) => OpenedStore {
                store: Arc::new(SqliteStore::open(path).await?),
                coordination: None,
            },
            StateLocation::Postgres(url) => {
                let store = PostgresStore::connect(url, database, replica.to_string()).await?;
                let lease = std::time::Duration::from_secs_f64(database.lease_seconds);
                OpenedStore {
                    coordination: Some(Arc::new(store.coordination(lease))),
                    store: Arc::new(store),
                }
            }
        })
    }
}

/// An open store, and for a database several gateways share, their coordination.
pub struct OpenedStore {
    pub store: Arc<dyn SessionStore>,
    pub coordination: Option<Arc<Coordination>>,
}

impl StoreHealth {
    /// A store that could not even be opened.
    pub fn unreachable(backend: &'static str, problem: String) -> Self {
        StoreHealth {
            backend,
            ok: false,
            schema_version: None,
            problem: Some(problem),
        }
    }
}

impl StateLocation {
    /// The backend's name, as `/healthz` shows it.
    pub fn backend(&self) -> &'static str {
        match self {
            StateLocation::Sqlite(_) => "sqlite",
            StateLocation::Postgres(_) => "postgres",
        }
    }
}

/// How a store is doing, for `/healthz`.
#[derive(Debug, Clone, Serialize)]
pub struct StoreHealth {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    pub ok: bool,
    /// The version of the gateway's tables, when the store answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<i64>,
    /// What is wrong, when something is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// What a store's call gives, later. Boxed so that the gateway can hold either store as one
/// `dyn SessionStore`.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Session records, by key. Every call is async and never blocks the runtime it is awaited on:
/// SQLite runs on the blocking pool, PostgreSQL over its own async connections.
pub trait SessionStore: Send + Sync {
    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>>;
    /// Writes `record`; a shared store refuses it ([`StoreError::Conflict`]) when it holds a
    /// revision as new or newer.
    fn save<'a>(&'a self, record: &'a SessionRecord) -> StoreFuture<'a, Result<(), StoreError>>;
    /// Every session of one credential, most recently used first.
    fn list<'a>(
        &'a self,
        credential: &'a str,
    ) -> StoreFuture<'a, Result<Vec<SessionRecord>, StoreError>>;
    /// Every session of that name, of any credential, most recently used first (what
    /// `ctxhost sessions show` finds of a session the gateway served).
    fn named<'a>(
        &'a self,
        name: &'a str,
    ) -> StoreFuture<'a, Result<Vec<SessionRecord>, StoreError>>;
    /// Whether the store answers.
    fn health(&self) -> StoreFuture<'_, StoreHealth>;
    /// The state's signing secret (created on first use, then the same for every gateway on
    /// this state): the key of the references in the handoffs and compaction items the gateway
    /// gives agents.
    fn secret(&self) -> StoreFuture<'_, Result<[u8; 32], StoreError>>;
}

/// A new signing secret from the operating system's randomness.
fn new_secret() -> Result<[u8; 32], StoreError> {
    let mut secret = [0u8; 32];
    getrandom::getrandom(&mut secret)
        .map_err(|e| StoreError::Query(format!("no randomness for the signing secret: {e}")))?;
    Ok(secret)
}

/// A stored secret's bytes, which must be 32.
fn secret_of(bytes: &[u8]) -> Result<[u8; 32], StoreError> {
    bytes.try_into().map_err(|_| StoreError::Corrupt {
        name: "signing secret".into(),
        reason: format!("{} bytes, not 32", bytes.len()),
    })
}

/// A session row as stored, its record's JSON text untouched (what a migration copies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecord {
    pub credential: String,
    pub name: String,
    pub record: String,
    pub updated_at: i64,
}

impl RawRecord {
    /// The record's revision (0 for records written before revisions were kept).
    pub fn revision(&self) -> u64 {
        #[derive(serde::Deserialize)]
        struct Revision {
            #[serde(default)]
            revision: u64,
        }
        serde_json::from_str::<Revision>(&self.record)
            .map(|r| r.revision)
            .unwrap_or(0)
    }
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
