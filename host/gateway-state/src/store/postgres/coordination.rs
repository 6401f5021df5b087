//! What lets several gateways serve one session from one PostgreSQL database: leases with an
//! expiry (a replica that dies loses them when they lapse, and another takes over), compressions
//! prepared in the background kept where every replica sees them, and this replica's name.
//!
//! Expiries are the database's clock (`clock_timestamp()`), so replicas' clocks never have to
//! agree. Each grant carries a random token: releasing or renewing touches only the grant it
//! names, so a late release never frees a lease that was granted again since.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use deadpool_postgres::Pool;

use super::{query, StoreError};
use crate::record::SessionKey;

/// What a lease guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseKind {
    /// One request's exchange with its session (one replica at a time, as one gateway's
    /// in-memory lock does).
    Turn,
    /// A compression prepared in the background, which outlives the request that started it.
    Compaction,
}

impl LeaseKind {
    fn as_str(self) -> &'static str {
        match self {
            LeaseKind::Turn => "turn",
            LeaseKind::Compaction => "compaction",
        }
    }
}

/// A lease this replica holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub kind: LeaseKind,
    token: i64,
}

/// What asking for a lease gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Granted; with the revision of the session's stored record (none stored yet: `None`).
    Granted {
        lease: Lease,
        stored_revision: Option<u64>,
    },
    /// Another replica holds it, until it lets go or its lease lapses.
    Held { holder: String },
}

/// Where a compression prepared in the background stands, for a replica that did not start it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreparedState {
    /// Done: its result (the gateway's JSON of it).
    Ready(String),
    /// Still being prepared by a replica whose lease is alive.
    Running,
    /// Neither: the replica preparing it died (or it was taken in and discarded).
    Gone,
}

pub struct Coordination {
    pool: Pool,
    replica: String,
    lease: Duration,
    /// Tokens of the leases this replica holds, renewed together by the heartbeat.
    held: std::sync::Mutex<HashSet<i64>>,
}

impl Coordination {
    pub(super) fn new(pool: Pool, replica: String, lease: Duration) -> Self {
        Coordination {
            pool,
            replica,
            lease,
            held: Default::default(),
        }
    }

    /// This gateway's name among the replicas.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// How long a lease lasts without renewal (the heartbeat renews it three times as often).
    pub fn lease_duration(&self) -> Duration {
        self.lease
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashSet<i64>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(|e| {
            StoreError::Query(format!("no database connection: {}", super::pool_error(&e)))
        })
    }

    /// Asks for `kind` of `key`'s lease: granted when nobody holds it, its holder's lapsed, or
    /// this replica holds it already.
    pub async fn claim(&self, key: &SessionKey, kind: LeaseKind) -> Result<Claim, StoreError> {
        let token = random_token();
        let client = self.client().await?;
        // The outer SELECT sees the rows as they were before the upsert: the holder refused.
        let row = client
            .query_one(
                "WITH claimed AS (
                    INSERT INTO ctxhost_gateway_leases AS l
                        (credential, name, kind, owner, token, expires_at)
                    VALUES ($1, $2, $3, $4, $5, clock_timestamp() + make_interval(secs => $6))
                    ON CONFLICT (credential, name, kind) DO UPDATE
                    SET owner = excluded.owner, token = excluded.token,
                        expires_at = excluded.expires_at
                    WHERE l.expires_at < clock_timestamp() OR l.owner = excluded.owner
                    RETURNING token
                 )
                 SELECT (SELECT token FROM claimed),
                        (SELECT owner FROM ctxhost_gateway_leases
                         WHERE credential = $1 AND name = $2 AND kind = $3)",
                &[
                    &key.credential,
                    &key.name,
                    &kind.as_str(),
                    &self.replica,
                    &token,
                    &self.lease.as_secs_f64(),
                ],
            )
            .await
            .map_err(query)?;
        let granted: Option<i64> = row.get(0);
        if granted.is_none() {
            let holder: Option<String> = row.get(1);
            return Ok(Claim::Held {
                holder: holder.unwrap_or_else(|| "another replica".to_string()),
            });
        }
        // Read by a statement of its own, begun once the lease is granted: the claim's own
        // snapshot may predate the save its previous holder made before letting go (the claim
        // waited on that release), and a stale revision would pass for current.
        let revision: Option<i64> = client
            .query_opt(
                "SELECT revision FROM ctxhost_gateway_sessions
                 WHERE credential = $1 AND name = $2",
                &[&key.credential, &key.name],
            )
            .await
            .map_err(query)?
            .map(|row| row.get(0));
        // Renewed from now on (a failure above leaves it to lapse on its own).
        self.held().insert(token);
        Ok(Claim::Granted {
            lease: Lease { kind, token },
            stored_revision: revision.map(|r| r as u64),
        })
    }

    /// Lets go of a lease (a no-op if it lapsed and was granted again since).
    pub async fn release(&self, key: &SessionKey, lease: &Lease) -> Result<(), StoreError> {
        self.held().remove(&lease.token);
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM ctxhost_gateway_leases
                 WHERE credential = $1 AND name = $2 AND kind = $3 AND token = $4",
                &[
                    &key.credential,
                    &key.name,
                    &lease.kind.as_str(),
                    &lease.token,
                ],
            )
            .await
            .map_err(query)?;
        Ok(())
    }

    /// Stops renewing a lease that cannot be released now (it lapses on its own).
    pub fn forget(&self, lease: Lease) {
        self.held().remove(&lease.token);
    }

    /// Extends every lease this replica holds by a full term.
    pub async fn renew_held(&self) -> Result<(), StoreError> {
        let tokens: Vec<i64> = self.held().iter().copied().collect();
        if tokens.is_empty() {
            return Ok(());
        }
        let client = self.client().await?;
        client
            .execute(
                "UPDATE ctxhost_gateway_leases
                 SET expires_at = clock_timestamp() + make_interval(secs => $2)
                 WHERE token = ANY($1)",
                &[&tokens, &self.lease.as_secs_f64()],
            )
            .await
            .map_err(query)?;
        Ok(())
    }

    /// Keeps the result of compression `id` for every replica and lets go of its lease, at once.
    pub async fn put_prepared(
        &self,
        key: &SessionKey,
        id: u64,
        prepared: &str,
        lease: &Lease,
    ) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(query)?;
        transaction
            .execute(
                "INSERT INTO ctxhost_gateway_prepared (credential, name, id, replica, prepared)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (credential, name) DO UPDATE
                 SET id = excluded.id, replica = excluded.replica, prepared = excluded.prepared",
                &[
                    &key.credential,
                    &key.name,
                    &(id as i64),
                    &self.replica,
                    &prepared,
                ],
            )
            .await
            .map_err(query)?;
        transaction
            .execute(
                "DELETE FROM ctxhost_gateway_leases
                 WHERE credential = $1 AND name = $2 AND kind = 'compaction' AND token = $3",
                &[&key.credential, &key.name, &lease.token],
            )
            .await
            .map_err(query)?;
        transaction.commit().await.map_err(query)?;
        self.held().remove(&lease.token);
        Ok(())
    }

    /// Where compression `id` of `key` stands.
    pub async fn prepared(&self, key: &SessionKey, id: u64) -> Result<PreparedState, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT (SELECT prepared FROM ctxhost_gateway_prepared
                         WHERE credential = $1 AND name = $2 AND id = $3),
                        EXISTS (SELECT 1 FROM ctxhost_gateway_leases
                                WHERE credential = $1 AND name = $2 AND kind = 'compaction'
                                  AND expires_at > clock_timestamp())",
                &[&key.credential, &key.name, &(id as i64)],
            )
            .await
            .map_err(query)?;
        let prepared: Option<String> = row.get(0);
        let running: bool = row.get(1);
        Ok(match prepared {
            Some(prepared) => PreparedState::Ready(prepared),
            None if running => PreparedState::Running,
            None => PreparedState::Gone,
        })
    }

    /// Forgets compression `id` of `key` once taken in.
    pub async fn discard_prepared(&self, key: &SessionKey, id: u64) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM ctxhost_gateway_prepared
                 WHERE credential = $1 AND name = $2 AND id = $3",
                &[&key.credential, &key.name, &(id as i64)],
            )
            .await
            .map_err(query)?;
        Ok(())
    }
}

/// A random 64-bit value (the standard library's per-process random hash keys).
pub fn random_u64() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.finish()
}

fn random_token() -> i64 {
    random_u64() as i64
}

/// This process's default replica name: the host and the process id.
pub fn default_replica_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "ctxhost".to_string());
    format!("{host}:{}", std::process::id())
}
