//! The process-wide registry of open stores: every engine instance of a process that opens the
//! same store (the same SQLite file, the same PostgreSQL URL) shares one set of connections to
//! it, opened and migrated once. A process hosting many sessions' engines (an isolated plugin's
//! child serves many at once) then holds one writer and a few readers per SQLite file, a small
//! pool per PostgreSQL URL, instead of a connection and a migration check per session.
//!
//! An entry lives as long as some store uses it: when the last one closes, its connections
//! close too, and the next open connects and checks the schema again (so a file replaced or
//! damaged between two uses is opened afresh, as it would be by a new process). The registry
//! counts how many times each key was opened, for `pool_stats`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// What the registry says about one store location in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Open stores (engine instances) sharing the connections now.
    pub users: usize,
    /// Connections open now (SQLite: the writer and the idle readers; PostgreSQL: the idle
    /// ones, plus those in use).
    pub connections: usize,
    /// How many times this process opened the location and checked (or ran) its migrations:
    /// once for all the stores sharing it.
    pub opened: u32,
}

/// What a shared set of connections tells the registry.
pub(crate) trait Shared: Send + Sync {
    /// Connections open now.
    fn connections(&self) -> usize;
    /// Stores using it now.
    fn users(&self) -> &Users;
    /// The last store using it closes: what it must finish first.
    fn last_user_left(&self) {}
}

/// How many stores use a shared set of connections; each store holds one [`User`].
#[derive(Debug, Default)]
pub(crate) struct Users(AtomicUsize);

impl Users {
    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One store's use of a shared set of connections: counted while it lives.
pub(crate) struct User<T: Shared> {
    shared: Arc<T>,
}

impl<T: Shared> User<T> {
    fn new(shared: Arc<T>) -> Self {
        shared.users().0.fetch_add(1, Ordering::Relaxed);
        User { shared }
    }

    /// The shared connections themselves, not counted as a user.
    pub(crate) fn arc(&self) -> Arc<T> {
        Arc::clone(&self.shared)
    }
}

impl<T: Shared> std::ops::Deref for User<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.shared
    }
}

impl<T: Shared> Drop for User<T> {
    fn drop(&mut self) {
        if self.shared.users().0.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.shared.last_user_left();
        }
    }
}

struct Entry<T> {
    shared: Weak<T>,
    opened: u32,
}

/// The open locations of one kind of store, by key.
pub(crate) struct Registry<T> {
    entries: Mutex<HashMap<Key, Entry<T>>>,
}

/// A normalized location: a SQLite file's canonical path, or a PostgreSQL URL as the driver
/// reads it (password included, so two users never share a connection). Never shown.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key(String);

impl Key {
    pub(crate) fn new(text: String) -> Self {
        Key(text)
    }
}

impl<T: Shared> Registry<T> {
    pub(crate) fn new() -> Self {
        Registry {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry<T>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The live connections of `key` when `usable` accepts them, else what `open` makes
    /// (registered only when it opens). Held while opening, so stores opening one location at
    /// once connect and migrate once, the others waiting for it.
    pub(crate) fn open<E>(
        &self,
        key: &Key,
        usable: impl FnOnce(&T) -> bool,
        open: impl FnOnce() -> Result<T, E>,
    ) -> Result<User<T>, E> {
        let mut entries = self.lock();
        let live = entries
            .get(key)
            .and_then(|entry| entry.shared.upgrade())
            .filter(|shared| usable(shared));
        if let Some(shared) = live {
            return Ok(User::new(shared));
        }
        let shared = Arc::new(open()?);
        let entry = entries.entry(key.clone()).or_insert(Entry {
            shared: Weak::new(),
            opened: 0,
        });
        entry.shared = Arc::downgrade(&shared);
        entry.opened += 1;
        Ok(User::new(shared))
    }

    pub(crate) fn stats(&self, key: &Key) -> Option<PoolStats> {
        let entries = self.lock();
        let entry = entries.get(key)?;
        let shared = entry.shared.upgrade();
        Some(PoolStats {
            users: shared.as_ref().map_or(0, |s| s.users().count()),
            connections: shared.as_ref().map_or(0, |s| s.connections()),
            opened: entry.opened,
        })
    }
}

/// The registry of `T`, one per process.
pub(crate) fn registry<T: Shared + 'static>(
    cell: &'static OnceLock<Registry<T>>,
) -> &'static Registry<T> {
    cell.get_or_init(Registry::new)
}
