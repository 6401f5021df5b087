//! `migrate_session`: one session of the SQLite store copied into a PostgreSQL store,
//! idempotently, and verified by reading it back. The session travels as a
//! [`SessionDump`](super::dump::SessionDump).

use std::time::Duration;

use ctxhost_sdk::EngineError;
use serde_json::{json, Value};

use super::dump::Copied;
use super::location::Location;
use super::postgres::PostgresStore;
use super::Store;

/// Copies `session` from `from` (a SQLite store) into the PostgreSQL store at `to`, reads it
/// back and compares; the answer carries the counts and the checksum.
pub fn migrate_session(
    from: &Store,
    to: &str,
    session: &str,
    wait: Duration,
) -> Result<Value, EngineError> {
    let Store::Sqlite(source) = from else {
        return Err(EngineError::invalid_input(format!(
            "migrate_session: the lcm store is already in PostgreSQL ({}); sessions are \
             copied from a SQLite store",
            from.location()
        )));
    };
    let Location::Postgres(url) = Location::postgres(to)
        .map_err(|e| EngineError::invalid_input(format!("migrate_session: {e}")))?
    else {
        unreachable!("Location::postgres names PostgreSQL");
    };
    let dump = super::sessions::export_session(source, session)?;
    if dump.is_empty() {
        return Err(EngineError::invalid_input(format!(
            "migrate_session: the lcm store holds no session `{session}`"
        )));
    }
    let mut target = PostgresStore::open(&url, wait)?;
    // The session's lock in PostgreSQL: no gateway writes it there while it is copied.
    let _lock = super::postgres::AdvisoryLock::acquire(&target, session, wait)?;
    let copied = super::sessions::import_session(&mut target, session, &dump)?;
    let back = super::sessions::export_session(&target, session)?;
    let checksum = dump.checksum();
    if copied != Copied::KeptNewer && back.checksum() != checksum {
        return Err(EngineError::failed(format!(
            "migrate_session: session `{session}` read back from {} differs from the SQLite \
             store ({} messages and {} summaries there, {} and {} here)",
            target.location(),
            back.messages(),
            back.summaries(),
            dump.messages(),
            dump.summaries()
        )));
    }
    Ok(json!({
        "messages": dump.messages(),
        "summaries": dump.summaries(),
        "conversations": dump.conversations.len(),
        "context_items": dump.context_items(),
        "checksum": checksum,
        "target_checksum": back.checksum(),
        "status": copied.as_str(),
        "to": target.location(),
    }))
}
