//! The sessions held in memory: a slot per session, locked by the request it serves, so one
//! session's turns never interleave while different sessions run in parallel; the least
//! recently used leave memory over `serve.limits.max_live_sessions` (their state is in the
//! store).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, OwnedMappedMutexGuard, OwnedMutexGuard};

use super::lease::TurnLease;
use super::live::Live;
use crate::record::{SessionKey, SessionRecord};
use crate::Gateway;
use ctxhost_gateway_wire::error::GatewayError;

/// The slot of one session: empty until its first request opens it.
pub type Slot = Arc<Mutex<Option<Live>>>;

/// A session held for one request: in this gateway by its slot's lock, and among gateways on
/// one database by its turn lease, let go (after the slot) when this is dropped.
pub struct SessionGuard {
    guard: OwnedMappedMutexGuard<Option<Live>, Live>,
    // Dropped after the slot's lock: its release is spawned.
    _lease: Option<TurnLease>,
}

impl std::ops::Deref for SessionGuard {
    type Target = Live;
    fn deref(&self) -> &Live {
        &self.guard
    }
}

impl std::ops::DerefMut for SessionGuard {
    fn deref_mut(&mut self) -> &mut Live {
        &mut self.guard
    }
}

/// One session held in memory.
struct Entry {
    slot: Slot,
    /// When it was last asked for (the eviction clock).
    used: u64,
    /// Its record as of its last finished exchange: what the sessions endpoints show while the
    /// save of that exchange may still be under way.
    published: Option<Arc<SessionRecord>>,
}

/// Sessions by key, with when each was last asked for.
#[derive(Default)]
pub struct LiveSessions {
    entries: std::sync::Mutex<HashMap<SessionKey, Entry>>,
    clock: std::sync::atomic::AtomicU64,
}

impl LiveSessions {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The slot of `key` (created empty when new). Over `cap` sessions, the least recently used
    /// ones that no request holds leave memory (their state is in the store; they reopen on
    /// their next request); they are returned to be dropped off the async runtime.
    fn slot(&self, key: &SessionKey, cap: usize) -> (Slot, Vec<Slot>) {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.entries();
        if let Some(entry) = entries.get_mut(key) {
            entry.used = now;
            return (entry.slot.clone(), Vec::new());
        }
        let slot: Slot = Arc::default();
        entries.insert(
            key.clone(),
            Entry {
                slot: slot.clone(),
                used: now,
                published: None,
            },
        );
        let mut evicted = Vec::new();
        if entries.len() > cap {
            // A slot nobody else holds has no request in flight and no save pending.
            let mut idle: Vec<(u64, SessionKey)> = entries
                .iter()
                .filter(|(_, entry)| Arc::strong_count(&entry.slot) == 1)
                .map(|(key, entry)| (entry.used, key.clone()))
                .collect();
            idle.sort();
            let excess = entries.len() - cap;
            for (_, key) in idle.into_iter().take(excess) {
                if let Some(entry) = entries.remove(&key) {
                    evicted.push(entry.slot);
                }
            }
        }
        (slot, evicted)
    }

    /// Records `record` as its session's latest state.
    pub(super) fn publish(&self, record: Arc<SessionRecord>) {
        if let Some(entry) = self.entries().get_mut(&record.key) {
            entry.published = Some(record);
        }
    }

    /// The latest state of `key` if it is in memory.
    pub fn published(&self, key: &SessionKey) -> Option<Arc<SessionRecord>> {
        self.entries().get(key).and_then(|e| e.published.clone())
    }

    /// The latest states of the sessions of `credential` in memory.
    pub fn published_of(&self, credential: &str) -> Vec<Arc<SessionRecord>> {
        self.entries()
            .iter()
            .filter(|(key, _)| key.credential == credential)
            .filter_map(|(_, e)| e.published.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Gateway {
    /// The session `key`, locked for this request (and, with a shared database, leased from
    /// the other gateways); opened (from the store, or new) on first use, and read again when
    /// another gateway saved it since.
    pub async fn session(
        self: &Arc<Self>,
        key: &SessionKey,
        model: &str,
        window: u64,
    ) -> Result<SessionGuard, GatewayError> {
        let cap = self.settings.limits.max_live_sessions.max(1);
        let (slot, evicted) = self.live.slot(key, cap);
        if !evicted.is_empty() {
            // Engines may take a while to close (a plugin flushing its store).
            tokio::task::spawn_blocking(move || drop(evicted));
        }
        self.metrics
            .live_sessions
            .store(self.live.len() as u64, Ordering::Relaxed);
        let mut slot = slot.lock_owned().await;
        let (mut lease, stored_revision) = match &self.coordination {
            Some(coordination) => {
                let wait = Duration::from_secs_f64(self.settings.database.lease_wait_seconds);
                let (lease, revision) = TurnLease::claim(coordination, key, wait).await?;
                (Some(lease), revision)
            }
            None => (None, None),
        };
        let (live, was_open) = match slot.take() {
            Some(live) => (live, true),
            // A failure leaves the slot empty, and the lease is only forgotten.
            None => (self.open(key, model, window).await?, false),
        };
        if let Some(lease) = &mut lease {
            lease.opened();
        }
        let mut guard = SessionGuard {
            guard: OwnedMutexGuard::map(slot, |slot| slot.insert(live)),
            _lease: lease,
        };
        // Saved by another gateway since this one last read or wrote it.
        if was_open && stored_revision.is_some_and(|stored| stored != guard.record.revision) {
            self.reload(&mut guard).await?;
        }
        Ok(guard)
    }
}
