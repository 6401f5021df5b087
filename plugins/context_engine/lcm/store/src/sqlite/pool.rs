//! The connections a process holds to one SQLite store, shared by every engine instance of the
//! process that opens it (see `registry.rs`): one writer, taken by each write transaction in
//! turn and by reads while it is free, and readers opened as reads meet it busy (WAL lets them
//! read beside the writer), a few of which stay open. Writers in other processes still meet this one in
//! SQLite's own lock (transactions begin `IMMEDIATE`, waiting up to the busy timeout), and the
//! session locks keep one writer per session across processes as before.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::{schema, StoreError};
use crate::registry::{Key, PoolStats, Registry, Shared, User, Users};

/// How much of the database file a connection maps into memory.
const MMAP_BYTES: i64 = 256 * 1024 * 1024;

/// The page cache of one connection, in KiB.
pub(super) const CACHE_KIB: i64 = 16 * 1024;

/// Prepared statements kept per connection: every statement of the store's, and some.
const STATEMENT_CACHE: usize = 128;

/// Idle readers kept open between reads; more are opened while reads overlap, and closed after.
const IDLE_READERS: usize = 4;

/// One store's connections.
pub(crate) struct SqlitePool {
    path: PathBuf,
    /// The file the connections have open, to tell it from a file put in its place since.
    identity: Option<FileIdentity>,
    busy_timeout: Duration,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    users: Users,
}

impl Shared for SqlitePool {
    fn connections(&self) -> usize {
        1 + lock(&self.readers).len()
    }

    fn users(&self) -> &Users {
        &self.users
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

static REGISTRY: OnceLock<Registry<SqlitePool>> = OnceLock::new();

/// The registry key of the file at `path` (its canonical path, once it exists).
fn key(path: &Path) -> Key {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    Key::new(path.to_string_lossy().into_owned())
}

/// The shared connections of the store at `path`, opened (and migrated) by the first store of
/// the process to ask. The file must exist.
pub(crate) fn shared(path: &Path, busy_timeout: Duration) -> Result<User<SqlitePool>, StoreError> {
    let identity = FileIdentity::of(path);
    crate::registry::registry(&REGISTRY).open(
        &key(path),
        |pool| pool.identity == identity && identity.is_some(),
        || SqlitePool::open(path, busy_timeout),
    )
}

pub(crate) fn pool_stats(path: &Path) -> Option<PoolStats> {
    crate::registry::registry(&REGISTRY).stats(&key(path))
}

impl SqlitePool {
    /// Opens the writer, switches the file to WAL and migrates it.
    pub(super) fn open(path: &Path, busy_timeout: Duration) -> Result<SqlitePool, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let mut conn = Connection::open_with_flags(path, flags)?;
        let setup = |conn: &mut Connection| -> Result<(), StoreError> {
            tune(conn, busy_timeout)?;
            // Reading the journal mode back is the first real read: a file that is not a
            // database fails here, with SQLite's own words for it.
            let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError::Schema(format!(
                    "could not switch to WAL mode (journal mode is {mode})"
                )));
            }
            // WAL with NORMAL sync is durable across process crashes (not power loss), and
            // much faster for the many small transactions of an agent loop.
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            // A big ingest grows the log; cap what it keeps on disk after each checkpoint.
            conn.pragma_update(None, "journal_size_limit", 16 * 1024 * 1024)?;
            // Checkpoint every 16 MiB of log instead of every 4 MiB: a checkpoint syncs the
            // database file, and a large ingest would otherwise pay that hundreds of times.
            conn.pragma_update(None, "wal_autocheckpoint", 4096)?;
            schema::migrate(conn)?;
            Ok(())
        };
        // Connections opening a new file at once meet in switching it to WAL, where SQLite
        // answers one of them "busy" at once instead of waiting (two readers each wanting the
        // exclusive lock): that one tries again, within the busy timeout. Each step of the setup
        // can run twice.
        let started = std::time::Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            match setup(&mut conn) {
                Err(StoreError::Sql(e))
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                        && started.elapsed() < busy_timeout =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                outcome => break outcome?,
            }
        }
        Ok(SqlitePool {
            path: path.to_path_buf(),
            identity: FileIdentity::of(path),
            busy_timeout,
            writer: Mutex::new(conn),
            readers: Mutex::new(Vec::new()),
            users: Users::default(),
        })
    }

    /// Runs `body` on the writer, alone.
    pub(super) fn write<T>(&self, body: impl FnOnce(&mut Connection) -> T) -> T {
        body(&mut lock(&self.writer))
    }

    /// Runs `body` on the writer when it is free (its page cache is the warm one), else on a
    /// reader: an idle one, or one opened for it.
    pub(super) fn read<T>(
        &self,
        body: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self.writer.try_lock() {
            Ok(writer) => return body(&writer),
            Err(TryLockError::Poisoned(poisoned)) => return body(&poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => {}
        }
        let idle = lock(&self.readers).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.open_reader()?,
        };
        let outcome = body(&conn);
        let mut readers = lock(&self.readers);
        if readers.len() < IDLE_READERS {
            readers.push(conn);
        }
        outcome
    }

    fn open_reader(&self) -> Result<Connection, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(&self.path, flags)?;
        tune(&conn, self.busy_timeout)?;
        Ok(conn)
    }
}

/// What every connection of the store sets for itself.
fn tune(conn: &Connection, busy_timeout: Duration) -> Result<(), StoreError> {
    conn.busy_timeout(busy_timeout)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // A page cache of up to 16 MB (negative: KiB) instead of 2 MB: a large ingest spills fewer
    // pages to the log mid-transaction only to read them back.
    conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
    // Reads through a memory map of up to 256 MiB instead of copying each page out of the OS
    // cache (address space only; pages are shared with every other reader).
    conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
    Ok(())
}

/// Which file a path names now: a store file deleted and made again, or replaced, is another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
}

impl FileIdentity {
    #[cfg(unix)]
    fn of(path: &Path) -> Option<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(FileIdentity {
            device: meta.dev(),
            inode: meta.ino(),
        })
    }

    // Elsewhere the path alone identifies the file: a live pool is always reused.
    #[cfg(not(unix))]
    fn of(path: &Path) -> Option<FileIdentity> {
        std::fs::metadata(path).ok().map(|_| FileIdentity {
            device: 0,
            inode: 0,
        })
    }
}
