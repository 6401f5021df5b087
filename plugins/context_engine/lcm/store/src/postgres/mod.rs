//! The store in PostgreSQL (`plugins.lcm.store: postgres://…`): the same rows as in SQLite,
//! in tables named `lcm_*`, which several gateways on different machines can share.
//!
//! The engine's connections (the synchronous `postgres` client) are its process's, shared with
//! every other engine instance of the process on the same URL (`pool.rs`), over TLS as `sslmode`
//! in the URL asks (read as libpq reads it: `ctxhost-pg`). A connection that drops is opened
//! again at the next call. `schema.rs` holds the tables and migrations,
//! `statements.rs` the SQL text of the store's statements (whose algorithms live once in
//! `store/`), `sql.rs` runs them, `search.rs` holds full-text, substring and regex search,
//! `doctor.rs` the checks only PostgreSQL has, `session_lock.rs` the advisory lock that keeps
//! one writer per session across machines, `upkeep.rs` what a large import leaves for after it.

mod doctor;
pub mod schema;
mod search;
mod session_lock;
mod sql;
mod statements;
mod upkeep;

#[cfg(test)]
mod plans;
mod pool;

use std::time::Duration;

use ctxhost_sdk::EngineError;
use postgres::{Client, Transaction};

pub(crate) use pool::pool_stats;
use pool::{PgPool, Statements};

use ctxhost_pg::describe;
use ctxhost_pg::PostgresUrl as _;
pub use session_lock::AdvisoryLock;
pub use sql::ROWS_PER_STATEMENT;
pub use upkeep::UPKEEP_EVERY;

use super::location::PostgresUrl;
use super::StoreError;
use crate::registry::User;

/// The name the engine's connections carry in `pg_stat_activity`.
const APPLICATION: &str = "ctxhost lcm";

/// The store's connections, or the reason there are none.
pub struct PostgresStore {
    url: PostgresUrl,
    /// The process's connections to the URL, shared with every other store of the process
    /// that opened it; `None` when the database cannot be reached or migrated.
    pool: Option<User<PgPool>>,
    unusable: Option<String>,
}

impl PostgresStore {
    /// The store at `url`: the process's connections to it, connecting and creating or
    /// migrating the engine's tables when no store of the process has yet.
    pub fn open(
        url: &PostgresUrl,
        connect_timeout: Duration,
    ) -> Result<PostgresStore, EngineError> {
        let pool = pool::shared(url, connect_timeout)
            .map_err(|e| EngineError::failed(format!("lcm store {}: {e}", url.masked())))?;
        Ok(PostgresStore {
            url: url.clone(),
            pool: Some(pool),
            unusable: None,
        })
    }

    /// Like [`open`](Self::open), but a database that cannot be reached or migrated gives a
    /// store that says why on every query (and to `doctor`).
    pub fn open_or_unusable(url: &PostgresUrl, connect_timeout: Duration) -> PostgresStore {
        PostgresStore::open(url, connect_timeout).unwrap_or_else(|error| PostgresStore {
            url: url.clone(),
            pool: None,
            unusable: Some(error.message().to_string()),
        })
    }

    pub fn unusable(&self) -> Option<&str> {
        self.unusable.as_deref()
    }

    /// The pool, for what holds a connection beyond one call (a session's lock).
    fn shared_pool(&self) -> Option<std::sync::Arc<PgPool>> {
        self.pool.as_ref().map(User::arc)
    }

    /// The URL without its password.
    pub fn location(&self) -> String {
        self.url.masked()
    }

    pub fn url(&self) -> &PostgresUrl {
        &self.url
    }

    pub fn error(&self, error: StoreError) -> EngineError {
        EngineError::failed(format!("lcm store {}: {error}", self.url.masked()))
    }

    /// Waits for the upkeep a large import left (`upkeep.rs`) to finish.
    pub fn settle(&self) {
        if let Some(pool) = &self.pool {
            pool.upkeep().settle();
        }
    }

    /// Why the upkeep after the last large import failed, if it did.
    pub(crate) fn upkeep_failed(&self) -> Option<String> {
        self.pool.as_ref().and_then(|pool| pool.upkeep().failed())
    }

    pub fn schema_version(&self) -> Result<u32, EngineError> {
        self.with_client(schema::version)
    }

    /// Runs `body` on a connection of the pool (opened again when the last one dropped).
    fn with_conn<T>(
        &self,
        body: impl FnOnce(&mut pool::Conn) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        let Some(pool) = &self.pool else {
            let why = self.unusable.as_deref().unwrap_or("lcm store: not open");
            return Err(EngineError::failed(format!(
                "{why}; run `ctxhost engine doctor` for details"
            )));
        };
        pool.with(body).map_err(|e| self.error(e))
    }

    /// Runs `body` on a connection, for reads of PostgreSQL's own (search, sizes, checks).
    pub(crate) fn with_client<T>(
        &self,
        body: impl FnOnce(&mut Client) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        self.with_conn(|conn| body(&mut conn.client))
    }

    /// Runs `body` on a connection with the statements prepared on it, for the store's reads.
    pub(crate) fn with_statements<T>(
        &self,
        body: impl FnOnce(&mut Client, &mut Statements) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        self.with_conn(|conn| body(&mut conn.client, &mut conn.statements))
    }

    /// Runs `body` in one transaction (the store's one policy: see `store/sql.rs`), with the
    /// statements prepared on its connection.
    pub(crate) fn with_transaction<T>(
        &self,
        body: impl FnOnce(&mut Transaction<'_>, &mut Statements) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        self.with_conn(|conn| {
            let mut tx = conn.client.transaction()?;
            let value = body(&mut tx, &mut conn.statements)?;
            tx.commit()?;
            Ok(value)
        })
    }

    /// Bytes the engine's tables take, indexes and TOAST included.
    pub fn disk_bytes(&self) -> u64 {
        self.with_client(|c| {
            let bytes: i64 = c
                .query_one(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint \
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE c.relkind = 'r' AND c.relname LIKE 'lcm\\_%' \
                       AND n.nspname = current_schema()",
                    &[],
                )?
                .try_get(0)?;
            Ok(bytes.max(0) as u64)
        })
        .unwrap_or(0)
    }
}

/// A new connection to `url`, named for `pg_stat_activity` so a waiting writer can say who
/// holds a session.
pub fn connect(url: &PostgresUrl, timeout: Duration) -> Result<Client, StoreError> {
    let url = url.redacted();
    let mut config = postgres::Config::from(
        url.config()
            .map_err(|e| StoreError::Postgres(e.to_string()))?,
    );
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(timeout.max(Duration::from_millis(100)));
    }
    config.application_name(&format!(
        "{APPLICATION} pid {} on {}",
        std::process::id(),
        host_name()
    ));
    let tls = url
        .ssl_mode()
        .map_err(|e| e.to_string())
        .and_then(|mode| ctxhost_pg::connector(mode).map_err(|e| e.to_string()))
        .map_err(StoreError::Postgres)?;
    config
        .connect(tls)
        .map_err(|e| StoreError::Postgres(format!("cannot connect: {}", describe(&e))))
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "an unknown host".to_string())
}

/// Column `at` of `row` as `T`, a type mismatch an error (never the driver's panic).
pub(crate) fn get<'a, T: postgres::types::FromSql<'a>>(
    row: &'a postgres::Row,
    at: usize,
) -> Result<T, StoreError> {
    Ok(row.try_get(at)?)
}
