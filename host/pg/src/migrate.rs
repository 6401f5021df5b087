//! Versioned schema migrations: an ordered list applied once each, in one transaction, under
//! an advisory lock, so that processes starting at once on several machines migrate one after
//! the other. Each component (the gateway, an engine) records the version its tables are at in
//! `ctxhost_migrations`.
//!
//! The algorithm is written once, over a small connection trait both drivers implement: the
//! async `tokio-postgres` client ([`migrate`]) and the synchronous `postgres` one
//! ([`migrate_blocking`]), whose calls complete before they return.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::describe;

/// The table every component's version is recorded in.
pub const VERSIONS_TABLE: &str = "ctxhost_migrations";

/// One step of a schema: it takes the tables from `version - 1` to `version`. Never edit one
/// that shipped: add the next.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// 1 for the first, each next one more.
    pub version: u32,
    /// What it does, for messages.
    pub description: &'static str,
    pub sql: &'static str,
}

/// Something a migration needs that the database may lack (an extension), created before any
/// pending migration runs.
#[derive(Debug, Clone, Copy)]
pub struct Prerequisite {
    pub sql: &'static str,
    /// What is needed ("the pg_trgm extension").
    pub needs: &'static str,
    /// What an operator does when it cannot be created.
    pub remedy: &'static str,
}

/// A component's tables: its migrations, in order.
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    /// The name its version is recorded under.
    pub component: &'static str,
    /// The advisory lock taken while migrating (any fixed key: processes only have to agree).
    pub lock_key: i64,
    pub prerequisites: &'static [Prerequisite],
    pub migrations: &'static [Migration],
    /// What to do when the database is newer than this build ("upgrade ctxhost").
    pub upgrade: &'static str,
}

impl Schema {
    /// The version this build writes.
    pub fn latest(&self) -> u32 {
        self.migrations.len() as u32
    }

    /// Versions run 1, 2, 3…: a list numbered otherwise is a bug, refused before anything
    /// is applied.
    fn check_numbering(&self) -> Result<(), MigrationError> {
        for (position, migration) in self.migrations.iter().enumerate() {
            if migration.version != position as u32 + 1 {
                return Err(MigrationError::Misnumbered {
                    component: self.component,
                    position: position + 1,
                    version: migration.version,
                });
            }
        }
        Ok(())
    }
}

/// What migrating did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// The version found (0: none of the component's tables yet).
    pub from: u32,
    /// The version now.
    pub to: u32,
}

/// Migrating failed; nothing of it was kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrationError {
    #[error(
        "the database holds {component} schema version {found}, newer than this build knows \
         ({known}): {upgrade}"
    )]
    Newer {
        component: &'static str,
        found: u32,
        known: u32,
        upgrade: &'static str,
    },
    #[error("{needs} is needed and could not be created ({reason}): {remedy}")]
    Prerequisite {
        needs: &'static str,
        remedy: &'static str,
        reason: String,
    },
    #[error("{component} schema migration {version} ({description}) failed: {reason}")]
    Apply {
        component: &'static str,
        version: u32,
        description: &'static str,
        reason: String,
    },
    #[error("{component}'s migration number {position} says it is version {version}")]
    Misnumbered {
        component: &'static str,
        position: usize,
        version: u32,
    },
    /// The database failed otherwise (in [`describe`]'s words).
    #[error("{0}")]
    Database(String),
}

impl From<tokio_postgres::Error> for MigrationError {
    fn from(error: tokio_postgres::Error) -> Self {
        MigrationError::Database(describe(&error))
    }
}

/// Brings `schema` up to its latest version over the async client.
pub async fn migrate(
    client: &mut tokio_postgres::Client,
    schema: &Schema,
) -> Result<Migrated, MigrationError> {
    let transaction = client.transaction().await?;
    let migrated = run(&mut Async(&transaction), schema).await?;
    transaction.commit().await?;
    Ok(migrated)
}

/// Brings `schema` up to its latest version over the synchronous client.
pub fn migrate_blocking(
    client: &mut postgres::Client,
    schema: &Schema,
) -> Result<Migrated, MigrationError> {
    let mut transaction = client.transaction()?;
    let migrated = completed(run(&mut Blocking(&mut transaction), schema))?;
    transaction.commit()?;
    Ok(migrated)
}

/// The version `component`'s tables are at (0: none yet), over the async client.
pub async fn applied_version(
    client: &(impl tokio_postgres::GenericClient + Sync),
    component: &str,
) -> Result<u32, MigrationError> {
    Ok(applied(&mut Async(client), component).await?)
}

/// The version `component`'s tables are at (0: none yet), over the synchronous client.
pub fn applied_version_blocking(
    client: &mut impl postgres::GenericClient,
    component: &str,
) -> Result<u32, MigrationError> {
    Ok(completed(applied(&mut Blocking(client), component))?)
}

/// The algorithm, for either driver.
async fn run(
    connection: &mut impl Connection,
    schema: &Schema,
) -> Result<Migrated, MigrationError> {
    schema.check_numbering()?;
    connection
        .execute("SELECT pg_advisory_xact_lock($1)", &[&schema.lock_key])
        .await?;
    let from = applied(connection, schema.component).await?;
    let latest = schema.latest();
    if from > latest {
        return Err(MigrationError::Newer {
            component: schema.component,
            found: from,
            known: latest,
            upgrade: schema.upgrade,
        });
    }
    if from == latest {
        // Nothing written: a database already up to date needs no rights to create anything.
        return Ok(Migrated { from, to: latest });
    }
    for prerequisite in schema.prerequisites {
        connection
            .batch(prerequisite.sql)
            .await
            .map_err(|e| MigrationError::Prerequisite {
                needs: prerequisite.needs,
                remedy: prerequisite.remedy,
                reason: describe(&e),
            })?;
    }
    connection
        .batch(&format!(
            "CREATE TABLE IF NOT EXISTS {VERSIONS_TABLE} (
                component TEXT PRIMARY KEY,
                version INTEGER NOT NULL
            )"
        ))
        .await?;
    for migration in &schema.migrations[from as usize..] {
        connection
            .batch(migration.sql)
            .await
            .map_err(|e| MigrationError::Apply {
                component: schema.component,
                version: migration.version,
                description: migration.description,
                reason: describe(&e),
            })?;
    }
    connection
        .execute(
            &format!(
                "INSERT INTO {VERSIONS_TABLE} (component, version) VALUES ($1, $2)
                 ON CONFLICT (component) DO UPDATE SET version = excluded.version"
            ),
            &[&schema.component, &(latest as i32)],
        )
        .await?;
    Ok(Migrated { from, to: latest })
}

async fn applied(
    connection: &mut impl Connection,
    component: &str,
) -> Result<u32, tokio_postgres::Error> {
    let exists = connection
        .query_opt(
            &format!("SELECT to_regclass('{VERSIONS_TABLE}') IS NOT NULL"),
            &[],
        )
        .await?;
    if !exists
        .map(|row| row.try_get::<_, bool>(0))
        .transpose()?
        .unwrap_or(false)
    {
        return Ok(0);
    }
    let row = connection
        .query_opt(
            &format!("SELECT version FROM {VERSIONS_TABLE} WHERE component = $1"),
            &[&component],
        )
        .await?;
    Ok(match row {
        Some(row) => row.try_get::<_, i32>(0)?.max(0) as u32,
        None => 0,
    })
}

/// What the algorithm asks of a connection.
trait Connection {
    async fn batch(&mut self, sql: &str) -> Result<(), tokio_postgres::Error>;
    async fn execute(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, tokio_postgres::Error>;
    async fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, tokio_postgres::Error>;
}

struct Async<'a, C>(&'a C);

impl<C: tokio_postgres::GenericClient + Sync> Connection for Async<'_, C> {
    async fn batch(&mut self, sql: &str) -> Result<(), tokio_postgres::Error> {
        self.0.batch_execute(sql).await
    }

    async fn execute(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, tokio_postgres::Error> {
        self.0.execute(sql, params).await
    }

    async fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        self.0.query_opt(sql, params).await
    }
}

struct Blocking<'a, C>(&'a mut C);

impl<C: postgres::GenericClient> Connection for Blocking<'_, C> {
    async fn batch(&mut self, sql: &str) -> Result<(), tokio_postgres::Error> {
        self.0.batch_execute(sql)
    }

    async fn execute(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, tokio_postgres::Error> {
        self.0.execute(sql, params)
    }

    async fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        self.0.query_opt(sql, params)
    }
}

/// The value of a future over [`Blocking`]: every call in it completes before it returns, so
/// the first poll finishes it (no executor needed, none entered).
fn completed<T>(future: impl Future<Output = T>) -> T {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(value) => value,
        Poll::Pending => unreachable!("the synchronous client's calls never wait on a waker"),
    }
}
