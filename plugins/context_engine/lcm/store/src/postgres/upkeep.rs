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
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use postgres::Client;

use super::pool::PgPool;
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

/// The upkeep itself: every GIN index of the messages and summaries merged, then the messages'
/// statistics. The columns analyzed are those the plans depend on (without the words'
/// statistics a search read every match of a common word, not the newest few: 26 ms, not 10,
/// at 20,000 messages); the texts and originals, whose statistics cost most of the time, are
/// left to the server's own upkeep.
const UPKEEP: &str = "SELECT gin_clean_pending_list(i.indexrelid) FROM pg_index i \
                        JOIN pg_class c ON c.oid = i.indexrelid \
                        JOIN pg_am a ON a.oid = c.relam \
                      WHERE a.amname = 'gin' \
                        AND i.indrelid IN ('lcm_messages'::regclass, 'lcm_summaries'::regclass); \
                      ANALYZE lcm_messages (id, conversation_id, seq, head, hash, prev_id, tsv)";

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

/// Counts `count` messages written through `pool`, running the upkeep when enough were.
pub(crate) fn wrote_messages(pool: &Arc<PgPool>, count: usize) {
    let upkeep = pool.upkeep();
    if !upkeep.enabled || count == 0 {
        return;
    }
    let written = upkeep.written.fetch_add(count, Ordering::Relaxed) + count;
    if written >= UPKEEP_EVERY {
        upkeep.written.store(0, Ordering::Relaxed);
        request(pool);
    }
}

/// Runs the upkeep of `pool`: on a thread of its own, or once more after the one under way.
fn request(pool: &Arc<PgPool>) {
    let upkeep = pool.upkeep();
    {
        let mut state = upkeep.lock();
        if state.running {
            state.again = true;
            return;
        }
        state.running = true;
    }
    let worker = Arc::clone(pool);
    let spawned = std::thread::Builder::new()
        .name("lcm upkeep".into())
        .spawn(move || run(&worker));
    if spawned.is_err() {
        // No thread to be had: the writer waits for it instead.
        run(pool);
    }
}

/// Runs the upkeep until no more was asked for while it ran.
fn run(pool: &PgPool) {
    let upkeep = pool.upkeep();
    loop {
        let outcome = pool.with(|conn| Ok(conn.client.batch_execute(UPKEEP)?));
        let mut state = upkeep.lock();
        state.failed = outcome.err().map(|error: StoreError| error.to_string());
        if std::mem::take(&mut state.again) {
            continue;
        }
        state.running = false;
        upkeep.done.notify_all();
        return;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::UPKEEP_EVERY;
    use crate::postgres::PostgresStore;
    use crate::{FullTextQuery, Location, NewMessage, Prev, Repair, Store, Term};

    fn open(url: &str) -> Store {
        let Location::Postgres(url) = Location::postgres(url).unwrap() else {
            unreachable!()
        };
        Store::Postgres(Box::new(
            PostgresStore::open(&url, Duration::from_secs(30)).unwrap(),
        ))
    }

    /// `count` messages from number `from` on, each of 300 words of its own.
    fn messages(from: usize, count: usize) -> Vec<NewMessage> {
        (from..from + count)
            .map(|i| {
                let text: Vec<String> = (0..300).map(|w| format!("w{i}x{w}")).collect();
                let text = text.join(" ");
                NewMessage {
                    role: "user".into(),
                    head: false,
                    json: serde_json::json!({"role": "user", "content": text}).to_string(),
                    tokens: 1_000,
                    hash: format!("h{i}"),
                    text,
                    prev: Prev::First,
                }
            })
            .collect()
    }

    fn one<T: for<'a> postgres::types::FromSql<'a>>(store: &Store, sql: &str) -> T {
        let Store::Postgres(store) = store else {
            unreachable!()
        };
        store
            .with_client(|c| Ok(c.query_one(sql, &[])?.get(0)))
            .unwrap()
    }

    fn pending_pages(store: &Store) -> i64 {
        one(
            store,
            "SELECT n_pending_pages::bigint FROM \
             gin_metapage_info(get_raw_page('lcm_messages_tsv', 0))",
        )
    }

    fn found(store: &Store, conv: i64, word: &str) -> usize {
        let query = FullTextQuery {
            terms: vec![Term {
                text: word.into(),
                prefix: false,
            }],
            any: false,
        };
        store
            .fts_messages(conv, &query, (0, i64::MAX), false, 10)
            .unwrap()
            .len()
    }

    /// Writes leave their words pending past the server's 4 MB (no insert pays for merging
    /// them), still found by a search; after `UPKEEP_EVERY` messages the pool merges them and
    /// refreshes the statistics by itself, off the writer's call.
    #[test]
    fn words_wait_in_the_pending_list_until_the_pool_merges_them() {
        let url = ctxhost_test_postgres::Postgres::database("lcm_upkeep");
        let mut store = open(&url);
        let Store::Postgres(postgres) = &store else {
            unreachable!()
        };
        postgres
            .with_client(|c| Ok(c.batch_execute("CREATE EXTENSION IF NOT EXISTS pageinspect")?))
            .unwrap();
        let conv = store.current_conversation("s").unwrap();
        let first = UPKEEP_EVERY - 500;
        store.append_messages(conv, &messages(0, first)).unwrap();
        // 4 MB is 512 pages.
        let pending = pending_pages(&store);
        assert!(pending > 512, "{pending} pending pages");
        assert_eq!(found(&store, conv, "w17x250"), 1);
        let analyzed = "SELECT count(*) FROM pg_stats WHERE tablename = 'lcm_messages' \
                        AND attname = 'tsv'";
        assert_eq!(one::<i64>(&store, analyzed), 0);

        store.append_messages(conv, &messages(first, 500)).unwrap();
        let Store::Postgres(postgres) = &store else {
            unreachable!()
        };
        postgres.settle();
        assert_eq!(pending_pages(&store), 0);
        assert_eq!(one::<i64>(&store, analyzed), 1);
        assert_eq!(found(&store, conv, "w4900x3"), 1);
        let doctor = store.doctor(&Repair::default()).unwrap();
        assert!(
            doctor.notes.iter().all(|note| note.check != "index_upkeep"),
            "{doctor:?}"
        );
    }

    /// A role that does not own the tables may not merge them: its connections keep the
    /// server's limit, and the server's autovacuum does the upkeep.
    #[test]
    fn a_role_that_does_not_own_the_tables_keeps_the_servers_limit() {
        let url = ctxhost_test_postgres::Postgres::database("lcm_upkeep_role");
        let owner = open(&url);
        let limit = "SELECT current_setting('gin_pending_list_limit')";
        assert_eq!(one::<String>(&owner, limit), "64MB");
        ctxhost_test_postgres::Postgres::psql(
            &url,
            "CREATE ROLE lcm_writer LOGIN; \
             GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO lcm_writer; \
             GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO lcm_writer;",
        );
        let writer_url = url.replacen("postgres://postgres@", "postgres://lcm_writer@", 1);
        assert_ne!(writer_url, url);
        let mut writer = open(&writer_url);
        assert_eq!(one::<String>(&writer, limit), "4MB");
        let conv = writer.current_conversation("s").unwrap();
        writer
            .append_messages(conv, &messages(0, UPKEEP_EVERY))
            .unwrap();
        let doctor = writer.doctor(&Repair::default()).unwrap();
        assert!(
            doctor.notes.iter().all(|note| note.check != "index_upkeep"),
            "{doctor:?}"
        );
        drop(owner);
    }
}
