//! The processes an isolated plugin runs in: `plugins.<name>.processes` of them (1 by
//! default), each serving many sessions. A session is given the process serving the fewest
//! sessions when it opens, and stays on it; a process that is lost is started again on the
//! next call of one of its sessions, which reopen on it from their stores. One [`Breaker`]
//! per plugin: a plugin that keeps crashing or hanging is not started again for a while,
//! whichever of its processes and sessions it happens in.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use ctxhost_protocol::Op;
use ctxhost_sdk::{EngineError, HostBackend};

use super::breaker::{self, Breaker};
use super::connection::{ChildSpec, Connection, InFlight, Lost, NoAnswer};
use super::protocol::{Ready, Reply};

/// One plugin's processes (see the [module docs](self)).
pub struct Pool {
    spec: ChildSpec,
    services: Arc<dyn HostBackend>,
    members: Vec<Member>,
    breaker: Arc<Mutex<Breaker>>,
    next_session: AtomicU64,
    /// What the last process started said of the plugin.
    ready: Mutex<Option<Ready>>,
}

/// One process of the pool: the connection to it while it runs, and how many sessions it
/// serves.
#[derive(Default)]
struct Member {
    current: Mutex<Option<Arc<Connection>>>,
    sessions: AtomicUsize,
}

/// A session's place in the pool: its number and its process. Leaving the pool when dropped.
pub struct Seat {
    pool: Arc<Pool>,
    member: usize,
    pub session: u64,
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.pool.members[self.member]
            .sessions
            .fetch_sub(1, Ordering::Relaxed);
    }
}

impl Seat {
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// The running process this session's calls go to, started when there is none (unless the
    /// breaker is open).
    pub fn connection(&self) -> Result<Arc<Connection>, EngineError> {
        self.pool.connection(self.member)
    }
}

impl Pool {
    /// A pool of `processes` (at least one) for the plugin `spec` starts.
    pub fn new(spec: ChildSpec, services: Arc<dyn HostBackend>, processes: usize) -> Arc<Pool> {
        Arc::new(Pool {
            spec,
            services,
            members: (0..processes.max(1)).map(|_| Member::default()).collect(),
            breaker: Arc::default(),
            next_session: AtomicU64::new(1),
            ready: Mutex::default(),
        })
    }

    /// How its processes are started.
    pub fn spec(&self) -> &ChildSpec {
        &self.spec
    }

    /// A seat for a new session, on the process serving the fewest.
    pub fn seat(self: &Arc<Self>) -> Seat {
        let member = (0..self.members.len())
            .min_by_key(|&at| self.members[at].sessions.load(Ordering::Relaxed))
            .unwrap_or(0);
        self.members[member]
            .sessions
            .fetch_add(1, Ordering::Relaxed);
        Seat {
            pool: self.clone(),
            member,
            session: self.next_session.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The ids of the processes running now.
    pub fn process_ids(&self) -> Vec<u32> {
        self.members
            .iter()
            .filter_map(|member| lock(&member.current).as_ref().and_then(|c| c.id()))
            .collect()
    }

    /// `op` was answered.
    pub fn answered(&self, op: Op) {
        lock(&self.breaker).answered(op);
    }

    /// What the plugin's process said of it when it last started.
    pub fn ready(&self) -> Option<Ready> {
        lock(&self.ready).clone()
    }

    fn connection(&self, member: usize) -> Result<Arc<Connection>, EngineError> {
        // Held while a process starts, so the sessions waiting for it share it.
        let mut current = lock(&self.members[member].current);
        if let Some(connection) = current.as_ref().filter(|c| c.alive()) {
            return Ok(connection.clone());
        }
        *current = None;
        if let Some(left) = lock(&self.breaker).open_for(Instant::now()) {
            return Err(EngineError::failed(format!(
                "plugin '{}' failed {} times in a row; not restarted for another {}s",
                self.spec.init.name,
                breaker::FAILURES,
                left.as_secs()
            )));
        }
        let breaker = self.breaker.clone();
        let on_lost = Box::new(move |lost: &Lost| {
            lock(&breaker).lost(lost.hung_check(), Instant::now());
        });
        let (connection, init) =
            match Connection::launch(&self.spec, self.services.clone(), on_lost) {
                Ok(launched) => launched,
                Err(error) => {
                    lock(&self.breaker).lost(None, Instant::now());
                    return Err(error);
                }
            };
        // A process that does not start is lost (and counted) through the connection.
        let ready = self.started(&connection, init)?;
        *lock(&self.ready) = Some(ready);
        *current = Some(connection.clone());
        Ok(connection)
    }

    /// The answer of a process just launched to its start line.
    fn started(&self, connection: &Connection, init: InFlight) -> Result<Ready, EngineError> {
        let name = &self.spec.init.name;
        let timeout = self.spec.timeout;
        let line = match connection.wait(init, timeout, std::time::Duration::ZERO) {
            Ok(line) => line,
            Err(NoAnswer::Lost(lost) | NoAnswer::Interrupted(lost)) => {
                return Err(lost.error(name, "start"))
            }
            Err(NoAnswer::TooLarge { limit }) => {
                let error = NoAnswer::too_large(name, "start", limit);
                connection.kill(Lost::Broken(
                    "its start answer is over the limit".to_string(),
                ));
                return Err(error);
            }
            Err(NoAnswer::TimedOut) => {
                let error = EngineError::new(
                    ctxhost_sdk::ErrorKind::TimedOut,
                    format!(
                        "plugin '{name}' did not answer within {}s (plugins.{name}.timeout); \
                         its process was killed during start",
                        timeout.as_secs_f64()
                    ),
                );
                connection.kill(Lost::Hung {
                    op: "start",
                    check: None,
                    deadline: format!("{}s", timeout.as_secs_f64()),
                });
                return Err(error);
            }
        };
        let reply = super::protocol::Framed::split(&line).map(|(_, reply)| reply);
        match reply.map(serde_json::from_str::<Reply<Ready>>) {
            Some(Ok(Reply::Ok(ready))) => Ok(ready),
            Some(Ok(Reply::Err(error))) => {
                // It exits after saying why; counted once, now.
                connection.kill(Lost::Closed);
                Err(error.into())
            }
            _ => {
                let error = EngineError::failed(format!(
                    "plugin '{name}' broke its process's protocol in start"
                ));
                connection.kill(Lost::Broken("its start answer is unreadable".to_string()));
                Err(error)
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
