//! The full-text indexes' merging and the planner's statistics, kept up off the engine's calls.
//!
//! PostgreSQL's GIN indexes (the words of messages and summaries, the trigrams) take new rows'
//! entries into a pending list, merged into the index proper once the list outgrows
//! `gin_pending_list_limit`: by the insert that overflows it, which then costs as much as the
//! rest of an import together (4 MB, the server's default, is about 2,000 messages' words).
//! The pool's connections raise the limit ([`PENDING_LIMIT`]) and the pool merges the lists
//! itself, with `gin_clean_pending_list`, and refreshes the messages' statistics, every
//! [`UPKEEP_EVERY`] messages it writes: on a thread of its own and a connection of its own,
//! while the engine goes on answering. Until then a search reads the pending entries too
//! (slower, never wrong); a list that reaches the raised limit is merged by the insert, as
//! before.
//!
//! Only a role that owns the tables may merge or analyze them: another one keeps the server's
//! defaults, and its autovacuum does both. An upkeep that fails is left to autovacuum as well,
//! and `doctor` says so. When the process's last store on the pool closes, it waits for the
//! upkeep under way, so a command that imports and exits leaves the indexes merged.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use postgres::Client;

use super::{get, StoreError};

/// Messages written between two upkeeps (by this process): about 9 MB of corpus messages'
/// pending words, so a search never reads many more.
pub const UPKEEP_EVERY: usize = 5_000;

/// The pending list a connection lets grow before its insert merges it (about 35,000 corpus
/// messages' words: a large import's, whole).
const PENDING_LIMIT: &str = "SET gin_pending_list_limit = '64MB'";

/// Whether this role owns the engine's tables (or is a superuser): who may merge and analyze.
const OWNS_TABLES: &str = "SELECT coalesce((SELECT pg_has_role(relowner, 'USAGE') FROM pg_class \
                           WHERE oid = to_regclass('lcm_messages')), false)";

/// The upkeep itself: every GIN index of the messages, their spans and the summaries merged,
/// then the statistics of the messages and spans. The messages' columns analyzed are those the
/// plans depend on (without the words' statistics a search read every match of a common word,
/// not the newest few: 26 ms, not 10, at 20,000 messages); the texts and originals, whose
/// statistics cost most of the time, are left to the server's own upkeep.
pub(crate) const UPKEEP: &str = "SELECT gin_clean_pending_list(i.indexrelid) FROM pg_index i \
                        JOIN pg_class c ON c.oid = i.indexrelid \
                        JOIN pg_am a ON a.oid = c.relam \
                      WHERE a.amname = 'gin' \
                        AND i.indrelid IN ('lcm_messages'::regclass, 'lcm_summaries'::regclass, \
                                           'lcm_message_spans'::regclass); \
                      ANALYZE lcm_messages (id, conversation_id, seq, head, hash, prev_id, tsv); \
                      ANALYZE lcm_message_spans";

#[derive(Default)]
struct State {
    /// A thread is doing the upkeep.
    running: bool,
    /// More messages were written while it ran: run once more.
    again: bool,
    /// Why the last upkeep failed, if it did.
    failed: Option<String>,
}

/// One pool's upkeep: at most one thread at a time.
pub(crate) struct Upkeep {
    /// Whether this pool keeps the indexes up itself (its role owns the tables).
    enabled: bool,
    /// Messages written since the last upkeep was asked for.
    written: AtomicUsize,
    state: Mutex<State>,
    done: Condvar,
}

impl Upkeep {
    /// The upkeep of the pool whose first connection is `client` (just migrated).
    pub(crate) fn new(client: &mut Client) -> Result<Upkeep, StoreError> {
        let enabled: bool = get(&client.query_one(OWNS_TABLES, &[])?, 0)?;
        Ok(Upkeep {
            enabled,
            written: AtomicUsize::new(0),
            state: Mutex::default(),
            done: Condvar::new(),
        })
    }

    /// Readies a new connection of the pool: the raised pending limit, where the pool merges.
    pub(crate) fn prepare(&self, client: &mut Client) -> Result<(), StoreError> {
        if self.enabled {
            client.batch_execute(PENDING_LIMIT)?;
        }
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why the last upkeep failed, if it did.
    pub(crate) fn failed(&self) -> Option<String> {
        self.lock().failed.clone()
    }

    /// Waits until no upkeep is under way.
    pub(crate) fn settle(&self) {
        let mut state = self.lock();
        while state.running {
            state = self.done.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Upkeep {
    /// Counts `count` messages written: whether an upkeep is due.
    pub(crate) fn due(&self, count: usize) -> bool {
        if !self.enabled || count == 0 {
            return false;
        }
        let written = self.written.fetch_add(count, Ordering::Relaxed) + count;
        if written < UPKEEP_EVERY {
            return false;
        }
        self.written.store(0, Ordering::Relaxed);
        true
    }

    /// Claims the upkeep for the caller, who runs [`UPKEEP`] then calls [`end`](Self::end);
    /// `false` when one is under way (it then runs once more).
    pub(crate) fn begin(&self) -> bool {
        let mut state = self.lock();
        if state.running {
            state.again = true;
            return false;
        }
        state.running = true;
        true
    }

    /// Records how the upkeep went: whether to run it once more (more was asked for meanwhile).
    pub(crate) fn end(&self, outcome: Result<(), StoreError>) -> bool {
        let mut state = self.lock();
        state.failed = outcome.err().map(|error| error.to_string());
        if std::mem::take(&mut state.again) {
            return true;
        }
        state.running = false;
        self.done.notify_all();
        false
    }
}
