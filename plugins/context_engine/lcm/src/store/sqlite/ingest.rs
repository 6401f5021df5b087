//! The queries ingest runs: the chain of stored messages (which one follows which), storing
//! new ones, and keeping the context list equal to what the host sent.

use std::collections::HashSet;

use rusqlite::{params, OptionalExtension};

use super::{now_ms, ItemKey, NewMessage, Prev, RawRef, SqliteStore, StoreError};
use crate::store::{context_change, ContextChange};
use ctxhost_sdk::EngineError;

/// Messages stored per transaction by [`SqliteStore::append_messages`].
const APPEND_BATCH: usize = 20_000;

const RAW_COLUMNS: &str = "id, seq, prev_id, hash";

fn raw_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawRef> {
    Ok(RawRef {
        rowid: row.get(0)?,
        seq: row.get(1)?,
        prev: row.get(2)?,
        hash: row.get(3)?,
    })
}

impl SqliteStore {
    /// Hashes of the head (leading system) messages stored for a conversation.
    pub fn head_hashes(&self, conv: i64) -> Result<HashSet<String>, EngineError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT hash FROM messages WHERE conversation_id = ?1 AND head = 1",
            )?;
            let hashes = stmt
                .query_map([conv], |r| r.get::<_, String>(0))?
                .collect::<Result<HashSet<_>, _>>()?;
            Ok(hashes)
        })
    }

    /// Whether the conversation holds any non-head message.
    pub fn has_raw_messages(&self, conv: i64) -> Result<bool, EngineError> {
        self.read(|c| {
            Ok(c.query_row(
                "SELECT EXISTS(SELECT 1 FROM messages WHERE conversation_id = ?1 AND head = 0)",
                [conv],
                |r| r.get(0),
            )?)
        })
    }

    /// Up to `limit` non-head messages stored after sequence number `seq`, in order.
    pub fn raw_after(&self, conv: i64, seq: i64, limit: usize) -> Result<Vec<RawRef>, EngineError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {RAW_COLUMNS} FROM messages \
                 WHERE conversation_id = ?1 AND seq > ?2 AND head = 0 ORDER BY seq LIMIT ?3"
            ))?;
            let rows = stmt
                .query_map(params![conv, seq, limit as i64], raw_from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    /// The stored message with this content that followed message `prev` (0: the first).
    pub fn raw_child(
        &self,
        conv: i64,
        prev: i64,
        hash: &str,
    ) -> Result<Option<RawRef>, EngineError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {RAW_COLUMNS} FROM messages \
                 WHERE conversation_id = ?1 AND prev_id = ?2 AND hash = ?3 AND head = 0 \
                 ORDER BY seq LIMIT 1"
            ))?;
            Ok(stmt
                .query_row(params![conv, prev, hash], raw_from_row)
                .optional()?)
        })
    }

    /// Every non-head message of the conversation with this content, in stored order.
    pub fn raw_with_hash(&self, conv: i64, hash: &str) -> Result<Vec<RawRef>, EngineError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {RAW_COLUMNS} FROM messages \
                 WHERE conversation_id = ?1 AND hash = ?2 AND head = 0 ORDER BY seq"
            ))?;
            let rows = stmt
                .query_map(params![conv, hash], raw_from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    /// The last message a summary covers, in the order the host sent them (its last source,
    /// through its last child for a condensed summary).
    pub fn summary_last_message(&self, id: &str) -> Result<Option<RawRef>, EngineError> {
        self.read(|c| {
            let mut id = id.to_string();
            // Depth is small; the bound only guards against a cycle in a damaged store.
            for _ in 0..64 {
                let leaf: Option<RawRef> = c
                    .query_row(
                        "SELECT m.id, m.seq, m.prev_id, m.hash FROM summary_messages sm \
                         JOIN messages m ON m.id = sm.message_id \
                         WHERE sm.summary_id = ?1 ORDER BY sm.ord DESC LIMIT 1",
                        [&id],
                        raw_from_row,
                    )
                    .optional()?;
                if leaf.is_some() {
                    return Ok(leaf);
                }
                let child: Option<String> = c
                    .query_row(
                        "SELECT child_id FROM summary_parents WHERE parent_id = ?1 \
                         ORDER BY ord DESC LIMIT 1",
                        [&id],
                        |r| r.get(0),
                    )
                    .optional()?;
                match child {
                    Some(child) => id = child,
                    None => return Ok(None),
                }
            }
            Err(StoreError::Corrupt(format!(
                "summary {id}: its children form a cycle"
            )))
        })
    }

    /// Whether message `rowid` is covered by any of `summaries` (through leaves and their
    /// condensed ancestors).
    pub fn covered_by_any(&self, rowid: i64, summaries: &[String]) -> Result<bool, EngineError> {
        if summaries.is_empty() {
            return Ok(false);
        }
        self.read(|c| {
            let mut stmt = c.prepare_cached(
                "WITH RECURSIVE up(id) AS ( \
                     SELECT summary_id FROM summary_messages WHERE message_id = ?1 \
                     UNION SELECT p.parent_id FROM summary_parents p JOIN up ON p.child_id = up.id \
                 ) SELECT id FROM up",
            )?;
            let ancestors = stmt
                .query_map([rowid], |r| r.get::<_, String>(0))?
                .collect::<Result<HashSet<_>, _>>()?;
            Ok(summaries.iter().any(|s| ancestors.contains(s)))
        })
    }

    /// Stores messages, numbering them after the conversation's last; their row ids, in order.
    ///
    /// A transaction per [`APPEND_BATCH`] messages: one huge transaction outgrows the page cache
    /// and spills into a log it then searches on every page read. A crash between batches
    /// leaves a prefix stored, which the next call recognises (ingest is exactly once).
    pub fn append_messages(
        &mut self,
        conv: i64,
        messages: &[NewMessage],
    ) -> Result<Vec<i64>, EngineError> {
        let mut rowids: Vec<i64> = Vec::with_capacity(messages.len());
        for start in (0..messages.len()).step_by(APPEND_BATCH) {
            let end = (start + APPEND_BATCH).min(messages.len());
            self.append_batch(conv, messages, start..end, &mut rowids)?;
        }
        Ok(rowids)
    }

    /// Stores `messages[range]` in one transaction, pushing their row ids onto `rowids` (which
    /// holds those of the batches before).
    fn append_batch(
        &mut self,
        conv: i64,
        messages: &[NewMessage],
        range: std::ops::Range<usize>,
        rowids: &mut Vec<i64>,
    ) -> Result<(), EngineError> {
        let now = now_ms();
        self.write(|tx| {
            let first_seq: i64 = tx.query_row(
                "SELECT coalesce(max(seq), -1) + 1 FROM messages WHERE conversation_id = ?1",
                [conv],
                |r| r.get(0),
            )?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO messages(conversation_id, seq, role, head, json, tokens, hash, \
                 prev_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            // One row per statement: no statement journal, so the index's pending terms stay
            // in memory until the transaction ends (see `hashsize` in the schema).
            let mut index =
                tx.prepare_cached("INSERT INTO messages_fts(rowid, text) VALUES (?1, ?2)")?;
            for (seq, message) in (first_seq..).zip(&messages[range]) {
                let prev = match message.prev {
                    Prev::First => 0,
                    Prev::Stored(rowid) => rowid,
                    Prev::New(index) => *rowids.get(index).ok_or_else(|| {
                        StoreError::Schema(format!(
                            "message {index} of a batch follows one stored after it"
                        ))
                    })?,
                };
                insert.execute(params![
                    conv,
                    seq,
                    message.role,
                    message.head,
                    super::codec::encode(&message.json),
                    message.tokens,
                    message.hash,
                    prev,
                    now
                ])?;
                let rowid = tx.last_insert_rowid();
                index.execute(params![rowid, message.text])?;
                rowids.push(rowid);
            }
            Ok(())
        })
    }

    /// Makes the conversation's context list `items`, in order: the items it already starts
    /// with stay (with their positions), the rest is replaced.
    pub fn set_context(&mut self, conv: i64, items: &[ItemKey]) -> Result<(), EngineError> {
        let current = self.read(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT position, message_id, summary_id FROM context_items \
                 WHERE conversation_id = ?1 ORDER BY position",
            )?;
            let rows = stmt
                .query_map([conv], |r| {
                    let position: i64 = r.get(0)?;
                    let message: Option<i64> = r.get(1)?;
                    let summary: Option<String> = r.get(2)?;
                    Ok((position, message, summary))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
        let Some(ContextChange {
            kept: same,
            delete_from: from,
            next_position: next,
        }) = context_change(&current, items)
        else {
            return Ok(());
        };
        self.write(|tx| {
            if let Some(from) = from {
                tx.execute(
                    "DELETE FROM context_items WHERE conversation_id = ?1 AND position >= ?2",
                    params![conv, from],
                )?;
            }
            let mut message = tx.prepare_cached(
                "INSERT INTO context_items(conversation_id, position, message_id) VALUES (?1, ?2, ?3)",
            )?;
            let mut summary = tx.prepare_cached(
                "INSERT INTO context_items(conversation_id, position, summary_id) VALUES (?1, ?2, ?3)",
            )?;
            for (position, item) in (next..).zip(&items[same..]) {
                match item {
                    ItemKey::Message(rowid) => message.execute(params![conv, position, rowid])?,
                    ItemKey::Summary(id) => summary.execute(params![conv, position, id])?,
                };
            }
            Ok(())
        })
    }
}
