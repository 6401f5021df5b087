//! The connections a process holds to one PostgreSQL store, shared by every engine instance of
//! the process that opens it (see `registry.rs`): a small pool, connected and migrated once.
//! A call takes an idle connection (one the server closed is dropped and another opened) or
//! opens one when all are busy; after the call at most [`IDLE`] stay open. Each connection
//! keeps the store's statements it ran prepared, so a statement costs one round trip, not two.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use ctxhost_pg::PostgresUrl as _;
use postgres::{Client, GenericClient, Statement};

use super::upkeep::{Upkeep, UPKEEP};
use super::{connect, schema, StoreError};
use crate::location::PostgresUrl;
use crate::registry::{Key, PoolStats, Registry, Shared, User, Users};

/// Idle connections kept open between calls.
const IDLE: usize = 4;

/// A connection and the statements prepared on it, by their SQL text.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) statements: Statements,
}

/// Statements prepared on one connection, by their (static) SQL text.
#[derive(Default)]
pub(crate) struct Statements(HashMap<&'static str, Statement>);

impl Statements {
    /// `text` prepared on `client` (the connection these were prepared on, or a transaction
    /// of it), once.
    pub(crate) fn get(
        &mut self,
        client: &mut impl GenericClient,
        text: &'static str,
    ) -> Result<Statement, StoreError> {
        if let Some(statement) = self.0.get(text) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(text)?;
        self.0.insert(text, statement.clone());
        Ok(statement)
    }
}

/// One store's connections.
pub(crate) struct PgPool {
    url: PostgresUrl,
    connect_timeout: Duration,
    idle: Mutex<Vec<Conn>>,
    busy: AtomicUsize,
    users: Users,
    upkeep: Upkeep,
}

impl Shared for PgPool {
    fn connections(&self) -> usize {
        lock(&self.idle).len() + self.busy.load(Ordering::Relaxed)
    }

    fn users(&self) -> &Users {
        &self.users
    }

    /// A command that imported and exits leaves the index merged.
    fn last_user_left(&self) {
        self.upkeep.settle();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

static REGISTRY: OnceLock<Registry<PgPool>> = OnceLock::new();

/// The registry key of `url`: what the driver reads in it (so spelling differences in the
/// URL do not matter), the password and the TLS mode included.
fn key(url: &PostgresUrl) -> Key {
    let url = url.redacted();
    match url.config() {
        Ok(config) => Key::new(format!(
            "{config:?}|{:?}|{:?}",
            config.get_password(),
            url.ssl_mode().ok()
        )),
        Err(_) => Key::new(url.expose().to_string()),
    }
}

/// The shared connections of the store at `url`, connected (and migrated) by the first store
/// of the process to ask.
pub(crate) fn shared(
    url: &PostgresUrl,
    connect_timeout: Duration,
) -> Result<User<PgPool>, StoreError> {
    crate::registry::registry(&REGISTRY).open(
        &key(url),
        |_| true,
        || PgPool::open(url, connect_timeout),
    )
}

pub(crate) fn pool_stats(url: &PostgresUrl) -> Option<PoolStats> {
    crate::registry::registry(&REGISTRY).stats(&key(url))
}

impl PgPool {
    /// Connects and creates or migrates the engine's tables; the connection stays, idle.
    fn open(url: &PostgresUrl, connect_timeout: Duration) -> Result<PgPool, StoreError> {
        let mut client = connect(url, connect_timeout)?;
        schema::migrate(&mut client)?;
        let upkeep = Upkeep::new(&mut client)?;
        upkeep.prepare(&mut client)?;
        Ok(PgPool {
            url: url.clone(),
            connect_timeout,
            idle: Mutex::new(vec![Conn {
                client,
                statements: Statements::default(),
            }]),
            busy: AtomicUsize::new(0),
            users: Users::default(),
            upkeep,
        })
    }

    /// The indexes' and statistics' upkeep (`upkeep.rs`).
    pub(crate) fn upkeep(&self) -> &Upkeep {
        &self.upkeep
    }

    /// Counts `count` messages written through the pool, running the upkeep when enough were:
    /// on a thread of its own, or once more after the one under way.
    pub(crate) fn wrote_messages(self: &Arc<Self>, count: usize) {
        if !self.upkeep.due(count) || !self.upkeep.begin() {
            return;
        }
        let pool = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("lcm upkeep".into())
            .spawn(move || pool.run_upkeep());
        if spawned.is_err() {
            // No thread to be had: the writer waits for it instead.
            self.run_upkeep();
        }
    }

    /// Runs the upkeep until no more was asked for while it ran.
    fn run_upkeep(&self) {
        loop {
            let outcome = self.with(|conn| Ok(conn.client.batch_execute(UPKEEP)?));
            if !self.upkeep.end(outcome) {
                return;
            }
        }
    }

    /// Runs `body` on a connection of the pool.
    pub(crate) fn with<T>(
        &self,
        body: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.take()?;
        let outcome = body(&mut conn);
        self.give_back(conn);
        outcome
    }

    /// An idle connection still open, or a new one; the caller gives it back (or forgets it).
    pub(crate) fn take(&self) -> Result<Conn, StoreError> {
        loop {
            let Some(conn) = lock(&self.idle).pop() else {
                break;
            };
            if !conn.client.is_closed() {
                self.busy.fetch_add(1, Ordering::Relaxed);
                return Ok(conn);
            }
        }
        let mut client = connect(&self.url, self.connect_timeout)?;
        self.upkeep.prepare(&mut client)?;
        let conn = Conn {
            client,
            statements: Statements::default(),
        };
        self.busy.fetch_add(1, Ordering::Relaxed);
        Ok(conn)
    }

    /// A connection [`take`](Self::take) gave: kept idle (unless closed, or enough are).
    pub(crate) fn give_back(&self, conn: Conn) {
        self.busy.fetch_sub(1, Ordering::Relaxed);
        let mut idle = lock(&self.idle);
        if !conn.client.is_closed() && idle.len() < IDLE {
            idle.push(conn);
        }
    }

    /// A connection [`take`](Self::take) gave, closed instead of kept.
    pub(crate) fn forget(&self, conn: Conn) {
        self.busy.fetch_sub(1, Ordering::Relaxed);
        drop(conn);
    }
}
