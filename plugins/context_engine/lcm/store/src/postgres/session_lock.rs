//! One writer per session across machines: a PostgreSQL advisory lock on the session, held on
//! a connection of the store's pool, taken for as long as the engine writes the session (the
//! writes themselves run on others). Letting go unlocks it and gives the connection back; when
//! unlocking fails the connection is closed instead, which lets go too. The server lets go when
//! a connection ends, so a gateway that dies (`kill -9`, a lost machine) never leaves a session
//! locked.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_sdk::EngineError;
use postgres::Client;
use sha2::{Digest, Sha256};

use super::pool::{Conn, PgPool};
use super::{get, PostgresStore};

/// A session's advisory lock, released when dropped.
pub struct AdvisoryLock {
    pool: Arc<PgPool>,
    /// Holds the lock (none once let go).
    conn: Option<Conn>,
    key: i64,
}

impl Drop for AdvisoryLock {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let unlocked = conn
            .client
            .query_one("SELECT pg_advisory_unlock($1)", &[&self.key])
            .ok()
            .and_then(|row| row.try_get::<_, bool>(0).ok());
        // A connection that may still hold it is closed (dropped), never given back.
        if unlocked == Some(true) {
            self.pool.give_back(conn);
        } else {
            self.pool.forget(conn);
        }
    }
}

impl AdvisoryLock {
    /// Takes the lock of `session_id`, waiting up to `wait` for another holder to let go;
    /// then fails with one line naming the holder (its host, process and server pid).
    pub fn acquire(
        store: &PostgresStore,
        session_id: &str,
        wait: Duration,
    ) -> Result<AdvisoryLock, EngineError> {
        let fail = |what: &str, why: String| {
            EngineError::failed(format!(
                "lcm: cannot lock session `{session_id}` in {}: {what}: {why}",
                store.location()
            ))
        };
        let pool = store.shared_pool().ok_or_else(|| {
            fail(
                "no connection",
                store.unusable().unwrap_or("not open").to_string(),
            )
        })?;
        let mut conn = pool
            .take()
            .map_err(|e| fail("no connection", e.to_string()))?;
        let key = lock_key(session_id);
        let started = Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            let taken: Result<bool, EngineError> = conn
                .client
                .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                .map_err(|e| fail("the lock query failed", super::describe(&e)))
                .and_then(|row| get(&row, 0).map_err(|e| fail("bad answer", e.to_string())));
            match taken {
                Ok(true) => {
                    return Ok(AdvisoryLock {
                        pool,
                        conn: Some(conn),
                        key,
                    })
                }
                Ok(false) => {}
                Err(error) => {
                    pool.forget(conn);
                    return Err(error);
                }
            }
            if started.elapsed() >= wait {
                let error = EngineError::busy(format!(
                    "lcm: session `{session_id}` is being written by another process ({}), \
                     still after {} ms; lcm writes a session from one process at a time: wait \
                     for that one to finish, or use another session",
                    holder(&mut conn.client, key),
                    wait.as_millis()
                ));
                pool.give_back(conn);
                return Err(error);
            }
            // No lock wait with a timeout that leaves the connection usable: poll, backing off.
            std::thread::sleep(pause.min(wait.saturating_sub(started.elapsed())));
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }
}

/// The advisory lock key of a session: 8 bytes of a hash of it, under a prefix of the
/// engine's own so no other user of advisory locks meets them.
pub fn lock_key(session_id: &str) -> i64 {
    let digest = Sha256::new()
        .chain_update(b"ctxhost lcm session\0")
        .chain_update(session_id.as_bytes())
        .finalize();
    i64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// Who holds the lock, as `pg_stat_activity` names it; best effort.
fn holder(client: &mut Client, key: i64) -> String {
    let row = client.query_opt(
        "SELECT a.application_name, a.pid FROM pg_locks l \
         JOIN pg_stat_activity a ON a.pid = l.pid \
         WHERE l.locktype = 'advisory' AND l.granted \
           AND l.classid::bigint = (($1::bigint >> 32) & 4294967295) \
           AND l.objid::bigint = ($1::bigint & 4294967295) AND l.objsubid = 1 \
         LIMIT 1",
        &[&key],
    );
    match row {
        Ok(Some(row)) => {
            let name: Option<String> = row.try_get(0).ok().flatten();
            let pid: i32 = row.try_get(1).unwrap_or_default();
            format!(
                "{}, server pid {pid}",
                name.filter(|n| !n.is_empty())
                    .unwrap_or_else(|| "unnamed".into())
            )
        }
        _ => "holder unknown".to_string(),
    }
}
