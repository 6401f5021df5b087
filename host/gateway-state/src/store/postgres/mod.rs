//! The PostgreSQL store: session records in a database several gateways can reach. One row
//! per session holding its record as JSON text (not `jsonb`, which reorders keys: the view
//! must come back byte for byte so the provider's prompt cache keeps hitting).
//!
//! Every call is awaited where it is made, through a connection pool (deadpool) with a
//! statement timeout, over TLS as `sslmode` in the URL asks (read as libpq reads it:
//! `ctxhost-pg`).
//!
//! Several gateways may share the database (`coordination.rs`): a save never replaces a newer
//! record (each carries a revision), and every turn is entered once in a ledger.

mod coordination;

use std::time::Duration;

use ctxhost_pg::migrate::{Migration, Schema};
use ctxhost_pg::{describe, PostgresUrl};
use ctxhost_redacted_url::RedactedUrl;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};

pub use coordination::{
    default_replica_name, random_u64, Claim, Coordination, Lease, LeaseKind, PreparedState,
};

use super::{
    decode, encode, new_secret, secret_of, RawRecord, SessionStore, StateLocation, StoreError,
    StoreFuture, StoreHealth,
};
use crate::record::{SessionKey, SessionRecord};
use ctxhost_config::serve::DatabaseSettings;

/// Schema versions of the gateway's tables, applied in order, each once (recorded in
/// `ctxhost_migrations`). Never edit one that shipped: add the next.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "session records",
        sql: "
CREATE TABLE ctxhost_gateway_sessions (
    credential TEXT NOT NULL,
    name TEXT NOT NULL,
    record TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (credential, name)
);
CREATE INDEX ctxhost_gateway_sessions_recent
    ON ctxhost_gateway_sessions (credential, updated_at DESC, name);
",
    },
    Migration {
        version: 2,
        description: "revisions, leases, prepared compressions and the turn ledger",
        sql: "
ALTER TABLE ctxhost_gateway_sessions ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
CREATE TABLE ctxhost_gateway_leases (
    credential TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    owner TEXT NOT NULL,
    token BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (credential, name, kind)
);
CREATE INDEX ctxhost_gateway_leases_token ON ctxhost_gateway_leases (token);
CREATE TABLE ctxhost_gateway_prepared (
    credential TEXT NOT NULL,
    name TEXT NOT NULL,
    id BIGINT NOT NULL,
    replica TEXT NOT NULL,
    prepared TEXT NOT NULL,
    PRIMARY KEY (credential, name)
);
CREATE TABLE ctxhost_gateway_turns (
    credential TEXT NOT NULL,
    name TEXT NOT NULL,
    turn TEXT NOT NULL,
    messages INTEGER NOT NULL,
    revision BIGINT NOT NULL,
    replica TEXT NOT NULL,
    committed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (credential, name, turn)
);
",
    },
    Migration {
        version: 3,
        description: "the signing secret of the references given to agents",
        sql: "
CREATE TABLE ctxhost_gateway_secrets (
    name TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);
",
    },
];

/// The component name the gateway's migrations are recorded under.
const COMPONENT: &str = "gateway";

const SCHEMA: Schema = Schema {
    component: COMPONENT,
    // Serializes migrations of gateways starting at once (any fixed key: it only has to agree).
    lock_key: 0x6374_7868_6f73_7401,
    prerequisites: &[],
    migrations: MIGRATIONS,
    upgrade: "upgrade ctxhost",
};

/// What importing one session did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imported {
    Added,
    Replaced,
    Unchanged,
    /// The database holds it at the same or a newer revision, with other content: kept.
    KeptNewer,
}

pub struct PostgresStore {
    pool: Pool,
    /// Where it is, shown without the password.
    location: RedactedUrl,
    /// This gateway's name in the turn ledger.
    replica: String,
}

/// A session's row, written unless the one stored has the same or a newer revision
/// (parameters: credential, name, record, updated at, revision).
const SAVE_NEWER: &str = "INSERT INTO ctxhost_gateway_sessions
         (credential, name, record, updated_at, revision)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (credential, name) DO UPDATE
     SET record = excluded.record, updated_at = excluded.updated_at,
         revision = excluded.revision
     WHERE ctxhost_gateway_sessions.revision < excluded.revision";

impl PostgresStore {
    /// Connects to `url`, creating or migrating the gateway's tables.
    pub async fn connect(
        url: &RedactedUrl,
        settings: &DatabaseSettings,
        replica: String,
    ) -> Result<Self, StoreError> {
        let fail = |reason: String| StoreError::Open {
            location: StateLocation::Postgres(url.clone()),
            reason,
        };
        let mut config = url.config().map_err(|e| fail(e.to_string()))?;
        let tls = url
            .ssl_mode()
            .map_err(|e| e.to_string())
            .and_then(|mode| ctxhost_pg::connector(mode).map_err(|e| e.to_string()))
            .map_err(fail)?;
        config.connect_timeout(Duration::from_secs_f64(settings.connect_timeout_seconds));
        config.application_name("ctxhost serve");
        let timeout_ms = (settings.statement_timeout_seconds * 1000.0).round() as u64;
        config.options(format!("-c statement_timeout={timeout_ms}"));
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(settings.pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs_f64(
                settings.connect_timeout_seconds,
            )))
            .create_timeout(Some(Duration::from_secs_f64(
                settings.connect_timeout_seconds,
            )))
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let store = PostgresStore {
            pool,
            location: url.clone(),
            replica,
        };
        store.migrate().await.map_err(|e| match e {
            StoreError::Query(reason) => fail(reason),
            other => fail(other.to_string()),
        })?;
        Ok(store)
    }

    /// Copies `rows` in (one transaction): a session absent is added, one whose stored text is
    /// the same is left alone, one stored at an older revision is replaced, and one stored at
    /// the same or a newer revision with other content is kept (it went on here).
    pub async fn import(&self, rows: &[RawRecord]) -> Result<Vec<Imported>, StoreError> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(query)?;
        let mut outcomes = Vec::with_capacity(rows.len());
        for row in rows {
            let revision = row.revision() as i64;
            let existing = transaction
                .query_opt(
                    "SELECT record, revision FROM ctxhost_gateway_sessions
                     WHERE credential = $1 AND name = $2 FOR UPDATE",
                    &[&row.credential, &row.name],
                )
                .await
                .map_err(query)?
                .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)));
            let outcome = match existing {
                Some((record, _)) if record == row.record => Imported::Unchanged,
                Some((_, stored)) if stored >= revision => Imported::KeptNewer,
                Some(_) => Imported::Replaced,
                None => Imported::Added,
            };
            if matches!(outcome, Imported::Added | Imported::Replaced) {
                transaction
                    .execute(
                        // Only over an older revision, as `outcome` found it.
                        SAVE_NEWER,
                        &[
                            &row.credential,
                            &row.name,
                            &row.record,
                            &row.updated_at,
                            &revision,
                        ],
                    )
                    .await
                    .map_err(query)?;
            }
            outcomes.push(outcome);
        }
        transaction.commit().await.map_err(query)?;
        Ok(outcomes)
    }

    /// The stored text of the record of each of `keys` (`None` where there is none).
    pub async fn raw_texts(
        &self,
        keys: &[(String, String)],
    ) -> Result<Vec<Option<String>>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare(
                "SELECT record FROM ctxhost_gateway_sessions
                 WHERE credential = $1 AND name = $2",
            )
            .await
            .map_err(query)?;
        let mut texts = Vec::with_capacity(keys.len());
        for (credential, name) in keys {
            let row = client
                .query_opt(&statement, &[credential, name])
                .await
                .map_err(query)?;
            texts.push(row.map(|r| r.get(0)));
        }
        Ok(texts)
    }

    /// Leases and prepared compressions over the same pool.
    pub fn coordination(&self, lease: Duration) -> Coordination {
        Coordination::new(self.pool.clone(), self.replica.clone(), lease)
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        ctxhost_pg::migrate::migrate(&mut client, &SCHEMA)
            .await
            .map_err(|e| StoreError::Query(e.to_string()))?;
        Ok(())
    }

    /// The version of the gateway's tables the database records.
    async fn schema_version(&self) -> Result<i64, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT version FROM ctxhost_migrations WHERE component = $1",
                &[&COMPONENT],
            )
            .await
            .map_err(query)?;
        Ok(row.get::<_, i32>(0) as i64)
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(|e| {
            StoreError::Query(format!(
                "no connection to {}: {}",
                self.location,
                pool_error(&e)
            ))
        })
    }
}

impl SessionStore for PostgresStore {
    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT record FROM ctxhost_gateway_sessions
                     WHERE credential = $1 AND name = $2",
                    &[&key.credential, &key.name],
                )
                .await
                .map_err(query)?;
            let json: Option<String> = row.map(|row| row.get(0));
            json.map(|json| decode(&key.name, &json)).transpose()
        })
    }

    fn save<'a>(&'a self, record: &'a SessionRecord) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let json = encode(record)?;
            let updated_at = record.updated_at as i64;
            let revision = record.revision as i64;
            let turn = record.conversation.turn_id();
            let messages = record.conversation.lineage_len() as i32;
            let mut client = self.client().await?;
            let transaction = client.transaction().await.map_err(query)?;
            // Written only over an older revision: a replica that lost the session's lease
            // never puts its view over the one saved since.
            let written = transaction
                .execute(
                    SAVE_NEWER,
                    &[
                        &record.key.credential,
                        &record.key.name,
                        &json,
                        &updated_at,
                        &revision,
                    ],
                )
                .await
                .map_err(query)?;
            if written == 0 {
                return Err(StoreError::Conflict {
                    name: record.key.name.clone(),
                });
            }
            if messages > 0 {
                // Each turn once, whichever replica served it and however often it was saved
                // or retried.
                transaction
                    .execute(
                        "INSERT INTO ctxhost_gateway_turns
                             (credential, name, turn, messages, revision, replica)
                         VALUES ($1, $2, $3, $4, $5, $6)
                         ON CONFLICT (credential, name, turn) DO NOTHING",
                        &[
                            &record.key.credential,
                            &record.key.name,
                            &turn,
                            &messages,
                            &revision,
                            &self.replica,
                        ],
                    )
                    .await
                    .map_err(query)?;
            }
            transaction.commit().await.map_err(query)
        })
    }

    fn list<'a>(
        &'a self,
        credential: &'a str,
    ) -> StoreFuture<'a, Result<Vec<SessionRecord>, StoreError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT name, record FROM ctxhost_gateway_sessions WHERE credential = $1
                     ORDER BY updated_at DESC, name",
                    &[&credential],
                )
                .await
                .map_err(query)?;
            rows.iter()
                .map(|row| decode(row.get(0), row.get(1)))
                .collect()
        })
    }

    fn named<'a>(
        &'a self,
        name: &'a str,
    ) -> StoreFuture<'a, Result<Vec<SessionRecord>, StoreError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT record FROM ctxhost_gateway_sessions WHERE name = $1
                     ORDER BY updated_at DESC",
                    &[&name],
                )
                .await
                .map_err(query)?;
            rows.iter().map(|row| decode(name, row.get(0))).collect()
        })
    }

    fn health(&self) -> StoreFuture<'_, StoreHealth> {
        Box::pin(async move {
            let answered = self.schema_version().await;
            StoreHealth {
                backend: "postgres",
                ok: answered.is_ok(),
                schema_version: answered.as_ref().ok().copied(),
                problem: answered.err().map(|e| e.to_string()),
            }
        })
    }

    fn secret(&self) -> StoreFuture<'_, Result<[u8; 32], StoreError>> {
        Box::pin(async move {
            let candidate = new_secret()?.to_vec();
            let client = self.client().await?;
            // The first gateway's secret stands; every other one reads it.
            client
                .execute(
                    "INSERT INTO ctxhost_gateway_secrets (name, value) VALUES ('signing', $1)
                     ON CONFLICT (name) DO NOTHING",
                    &[&candidate],
                )
                .await
                .map_err(query)?;
            let row = client
                .query_one(
                    "SELECT value FROM ctxhost_gateway_secrets WHERE name = 'signing'",
                    &[],
                )
                .await
                .map_err(query)?;
            let stored: Vec<u8> = row.get(0);
            secret_of(&stored)
        })
    }
}

pub(super) fn query(error: tokio_postgres::Error) -> StoreError {
    StoreError::Query(describe(&error))
}

/// Why the pool gave no connection, down to its cause ("connection refused", a password
/// refused, a timeout), never only "error connecting to server".
pub(super) fn pool_error(error: &deadpool_postgres::PoolError) -> String {
    match error {
        deadpool_postgres::PoolError::Backend(error) => describe(error),
        deadpool_postgres::PoolError::Timeout(_) => {
            "timed out (serve.database.connect_timeout_seconds)".to_string()
        }
        other => other.to_string(),
    }
}
