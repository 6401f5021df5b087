//! `ctxhost sessions migrate`: the gateway's sessions copied from a SQLite store into a
//! PostgreSQL one, idempotently (run it again and nothing changes; a session that went on in
//! PostgreSQL since is kept), then read back and checked against the source.

use sha2::{Digest, Sha256};

use super::{Imported, PostgresStore, RawRecord, SqliteStore, StoreError};

/// Sessions copied per transaction.
const BATCH: usize = 200;

/// What a migration of the gateway's sessions did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct GatewayMigration {
    /// Sessions in the source.
    pub sessions: u64,
    pub added: u64,
    pub replaced: u64,
    pub unchanged: u64,
    /// Sessions the target holds at a newer revision (they went on there): not overwritten.
    pub kept_newer: Vec<String>,
    /// sha256 over the sha256 of every copied record's text, in key order (each checked equal
    /// on both sides).
    pub checksum: String,
}

/// A copied session that does not read back as it was written.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("session {name} reads back from PostgreSQL different from the source: run the migration again; if it persists, the target is being written by a running gateway")]
    Mismatch { name: String },
    #[error("session {name} is missing from PostgreSQL after it was copied")]
    Missing { name: String },
}

/// Copies every session of `source` into `target`; `progress(done, total)` after each batch.
pub async fn migrate_gateway(
    source: &SqliteStore,
    target: &PostgresStore,
    mut progress: impl FnMut(u64, u64),
) -> Result<GatewayMigration, MigrationError> {
    let rows = source.raw_records().await?;
    let total = rows.len() as u64;
    let mut report = GatewayMigration {
        sessions: total,
        ..GatewayMigration::default()
    };
    let mut copied: Vec<&RawRecord> = Vec::with_capacity(rows.len());
    let mut done = 0;
    progress(0, total);
    for batch in rows.chunks(BATCH) {
        for (row, outcome) in batch.iter().zip(target.import(batch).await?) {
            match outcome {
                Imported::Added => report.added += 1,
                Imported::Replaced => report.replaced += 1,
                Imported::Unchanged => report.unchanged += 1,
                Imported::KeptNewer => {
                    report.kept_newer.push(row.name.clone());
                    continue;
                }
            }
            copied.push(row);
        }
        done += batch.len() as u64;
        progress(done, total);
    }
    // Read back: every copied record's text, byte for byte.
    let mut checksum = Sha256::new();
    for batch in copied.chunks(BATCH) {
        let keys: Vec<(String, String)> = batch
            .iter()
            .map(|r| (r.credential.clone(), r.name.clone()))
            .collect();
        for (row, stored) in batch.iter().zip(target.raw_texts(&keys).await?) {
            let stored = stored.ok_or_else(|| MigrationError::Missing {
                name: row.name.clone(),
            })?;
            let expected = Sha256::digest(row.record.as_bytes());
            if Sha256::digest(stored.as_bytes()) != expected {
                return Err(MigrationError::Mismatch {
                    name: row.name.clone(),
                });
            }
            checksum.update(expected);
        }
    }
    report.checksum = hex(&checksum.finalize());
    Ok(report)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
