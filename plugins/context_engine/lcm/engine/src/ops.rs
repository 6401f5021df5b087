//! Operations reached through `ContextEngine::invoke`: `status`, `doctor`, `backup`,
//! `migrate_session`, `last_compaction` (the host's `ctxhost engine <op>`, `ctxhost sessions
//! migrate` and its run report use them).

use std::path::PathBuf;
use std::time::Duration;

use ctxhost_sdk::EngineError;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::context;
use ctxhost_lcm_store::{Repair, Store, BACKUP_DIR};

/// Sizes of the store and of the model's view.
pub fn status(
    store: &Store,
    conv: i64,
    session_id: &str,
    head_tokens: u64,
) -> Result<Value, EngineError> {
    let stats = store.stats(conv)?;
    let (database_bytes, wal_bytes) = store.disk_bytes();
    let entries = context::load(store, conv)?;
    let in_context = head_tokens + context::tokens(&entries);
    let mut by_depth = Map::new();
    let mut summaries = 0;
    let mut summary_tokens = 0;
    for (depth, count, tokens) in &stats.summaries_by_depth {
        by_depth.insert(depth.to_string(), json!({"count": count, "tokens": tokens}));
        summaries += count;
        summary_tokens += tokens;
    }
    Ok(json!({
        "session_id": session_id,
        "conversation_id": conv,
        "messages": stats.messages,
        "head_messages": stats.head_messages,
        "summaries": summaries,
        "summaries_by_depth": by_depth,
        "tokens_stored": stats.message_tokens,
        "summary_tokens": summary_tokens,
        "tokens_in_context": in_context,
        "context_items": {"messages": stats.context_messages, "summaries": stats.context_summaries},
        "compactions": stats.compactions,
        "database": store.location(),
        "backend": store.backend_name(),
        "database_bytes": database_bytes,
        "wal_bytes": wal_bytes,
        "schema_version": store.schema_version()?,
        "schema_latest": store.schema_latest(),
    }))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct DoctorArgs {
    /// Repair what can be repaired exactly (`fix` is the older name).
    #[serde(alias = "fix")]
    apply: bool,
    /// A backup to restore edited messages from.
    from_backup: Option<PathBuf>,
}

/// Consistency checks: broken links, summaries without sources, messages out of view, FTS out
/// of sync, SQLite's own quick check.
pub fn doctor(store: &mut Store, payload: &Value) -> Result<Value, EngineError> {
    let args: DoctorArgs = parse(payload, "doctor")?;
    let found = store.doctor(&Repair {
        apply: args.apply,
        from_backup: args.from_backup.as_deref(),
    })?;
    let list = |findings: &[ctxhost_lcm_store::Problem]| -> Vec<Value> {
        findings
            .iter()
            .map(|p| json!({"check": p.check, "count": p.count, "detail": p.detail}))
            .collect()
    };
    let schema_version = match store.unusable() {
        None => store.schema_version().ok(),
        Some(_) => None,
    };
    Ok(json!({
        "ok": found.problems.is_empty(),
        "database": store.location(),
        "backend": store.backend_name(),
        "schema_version": schema_version,
        "schema_latest": store.schema_latest(),
        "problems": list(&found.problems),
        "notes": list(&found.notes),
        "fixed": found.fixed,
    }))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct BackupArgs {
    /// Default: `backups/lcm-<unix ms>.sqlite` beside the database.
    path: Option<PathBuf>,
}

/// A consistent copy of the database (`VACUUM INTO`), safe while the engine keeps writing.
pub fn backup(store: &Store, payload: &Value) -> Result<Value, EngineError> {
    let args: BackupArgs = parse(payload, "backup")?;
    let path = args.path.unwrap_or_else(|| {
        let dir = store
            .sqlite_path()
            .and_then(|path| path.parent())
            .unwrap_or(std::path::Path::new("."));
        dir.join(BACKUP_DIR)
            .join(format!("lcm-{}.sqlite", ctxhost_lcm_store::now_ms()))
    });
    let bytes = store.backup(&path)?;
    Ok(json!({
        "path": path.display().to_string(),
        "bytes": bytes,
        "source": store.location(),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MigrateArgs {
    /// The PostgreSQL store to copy into.
    to: String,
    /// The session to copy.
    session: String,
}

/// One session of this (SQLite) store copied into the PostgreSQL store at `to`, read back and
/// checked: counts and a checksum.
pub fn migrate_session(
    store: &Store,
    payload: &Value,
    wait: Duration,
) -> Result<Value, EngineError> {
    let args: MigrateArgs = parse(payload, "migrate_session")?;
    ctxhost_lcm_store::migrate_session(store, &args.to, &args.session, wait)
}

fn parse<T: for<'de> Deserialize<'de> + OpPayload>(
    payload: &Value,
    op: &str,
) -> Result<T, EngineError> {
    let value = match payload {
        Value::Null => return T::when_absent(op),
        other => other.clone(),
    };
    serde_json::from_value(value)
        .map_err(|e| EngineError::invalid_input(format!("{op}: bad payload: {e}")))
}

/// What an op does with no payload at all.
trait OpPayload: Sized {
    fn when_absent(op: &str) -> Result<Self, EngineError>;
}

impl OpPayload for DoctorArgs {
    fn when_absent(_: &str) -> Result<Self, EngineError> {
        Ok(DoctorArgs::default())
    }
}

impl OpPayload for MigrateArgs {
    fn when_absent(op: &str) -> Result<Self, EngineError> {
        Err(EngineError::invalid_input(format!(
            "{op}: needs a payload {{\"to\": \"postgres://…\", \"session\": \"<id>\"}}"
        )))
    }
}

impl OpPayload for BackupArgs {
    fn when_absent(_: &str) -> Result<Self, EngineError> {
        Ok(BackupArgs::default())
    }
}
