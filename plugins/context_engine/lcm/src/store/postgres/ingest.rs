//! The queries ingest runs on PostgreSQL: the chain of stored messages, storing new ones, and
//! keeping the context list equal to what the host sent.

use std::collections::HashSet;

use postgres::Row;

use super::queries::signed;
use super::{get, PostgresStore};
use crate::store::{
    context_change, now_ms, ContextChange, ItemKey, NewMessage, Prev, RawRef, StoreError,
};
use ctxhost_sdk::EngineError;

/// `count` new message row ids, in ascending order, drawn before the rows are written so a
/// message may name one of the same batch as the one it follows.
pub(super) fn allocate_message_ids(
    tx: &mut impl postgres::GenericClient,
    count: usize,
) -> Result<Vec<i64>, StoreError> {
    tx.query(
        "SELECT nextval(pg_get_serial_sequence('lcm_messages', 'id')) \
         FROM generate_series(1, $1::bigint)",
        &[&(count as i64)],
    )?
    .iter()
    .map(|row| get(row, 0))
    .collect()
}

/// A batch this large refreshes the planner's statistics of the messages table.
const ANALYZE_AFTER: usize = 5_000;

/// Messages stored per statement (one transaction holds them all).
const APPEND_BATCH: usize = 2_000;

const RAW_COLUMNS: &str = "id, seq, prev_id, hash";

fn raw_from_row(row: &Row) -> Result<RawRef, StoreError> {
    Ok(RawRef {
        rowid: get(row, 0)?,
        seq: get(row, 1)?,
        prev: get(row, 2)?,
        hash: get(row, 3)?,
    })
}

impl PostgresStore {
    pub fn head_hashes(&self, conv: i64) -> Result<HashSet<String>, EngineError> {
        self.read(|c| {
            c.query(
                "SELECT hash FROM lcm_messages WHERE conversation_id = $1 AND head",
                &[&conv],
            )?
            .iter()
            .map(|row| get(row, 0))
            .collect()
        })
    }

    pub fn has_raw_messages(&self, conv: i64) -> Result<bool, EngineError> {
        self.read(|c| {
            get(
                &c.query_one(
                    "SELECT EXISTS (SELECT 1 FROM lcm_messages \
                     WHERE conversation_id = $1 AND NOT head)",
                    &[&conv],
                )?,
                0,
            )
        })
    }

    pub fn raw_after(&self, conv: i64, seq: i64, limit: usize) -> Result<Vec<RawRef>, EngineError> {
        self.read(|c| {
            c.query(
                &format!(
                    "SELECT {RAW_COLUMNS} FROM lcm_messages \
                     WHERE conversation_id = $1 AND seq > $2 AND NOT head ORDER BY seq LIMIT $3"
                ),
                &[&conv, &seq, &(limit as i64)],
            )?
            .iter()
            .map(raw_from_row)
            .collect()
        })
    }

    pub fn raw_child(
        &self,
        conv: i64,
        prev: i64,
        hash: &str,
    ) -> Result<Option<RawRef>, EngineError> {
        self.read(|c| {
            c.query_opt(
                &format!(
                    "SELECT {RAW_COLUMNS} FROM lcm_messages \
                     WHERE conversation_id = $1 AND prev_id = $2 AND hash = $3 AND NOT head \
                     ORDER BY seq LIMIT 1"
                ),
                &[&conv, &prev, &hash],
            )?
            .map(|row| raw_from_row(&row))
            .transpose()
        })
    }

    pub fn raw_with_hash(&self, conv: i64, hash: &str) -> Result<Vec<RawRef>, EngineError> {
        self.read(|c| {
            c.query(
                &format!(
                    "SELECT {RAW_COLUMNS} FROM lcm_messages \
                     WHERE conversation_id = $1 AND hash = $2 AND NOT head ORDER BY seq"
                ),
                &[&conv, &hash],
            )?
            .iter()
            .map(raw_from_row)
            .collect()
        })
    }

    /// The last message a summary covers, through its last child for a condensed summary.
    pub fn summary_last_message(&self, id: &str) -> Result<Option<RawRef>, EngineError> {
        self.read(|c| {
            let mut id = id.to_string();
            // Depth is small; the bound only guards against a cycle in a damaged store.
            for _ in 0..64 {
                let leaf = c.query_opt(
                    "SELECT m.id, m.seq, m.prev_id, m.hash FROM lcm_summary_messages sm \
                     JOIN lcm_messages m ON m.id = sm.message_id \
                     WHERE sm.summary_id = $1 ORDER BY sm.ord DESC LIMIT 1",
                    &[&id],
                )?;
                if let Some(leaf) = leaf {
                    return raw_from_row(&leaf).map(Some);
                }
                let child = c.query_opt(
                    "SELECT child_id FROM lcm_summary_parents WHERE parent_id = $1 \
                     ORDER BY ord DESC LIMIT 1",
                    &[&id],
                )?;
                match child {
                    Some(child) => id = get(&child, 0)?,
                    None => return Ok(None),
                }
            }
            Err(StoreError::Corrupt(format!(
                "summary {id}: its children form a cycle"
            )))
        })
    }

    pub fn covered_by_any(&self, rowid: i64, summaries: &[String]) -> Result<bool, EngineError> {
        if summaries.is_empty() {
            return Ok(false);
        }
        self.read(|c| {
            get(
                &c.query_one(
                    "WITH RECURSIVE up(id) AS ( \
                         SELECT summary_id FROM lcm_summary_messages WHERE message_id = $1 \
                         UNION SELECT p.parent_id FROM lcm_summary_parents p \
                           JOIN up ON p.child_id = up.id \
                     ) SELECT EXISTS (SELECT 1 FROM up WHERE id = ANY($2))",
                    &[&rowid, &summaries],
                )?,
                0,
            )
        })
    }

    /// Stores messages, numbering them after the conversation's last, in one transaction;
    /// their row ids, in order. The ids are drawn first, so a message may follow one of the
    /// same batch.
    pub fn append_messages(
        &mut self,
        conv: i64,
        messages: &[NewMessage],
    ) -> Result<Vec<i64>, EngineError> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let now = now_ms();
        self.write(|tx| {
            let rowids = allocate_message_ids(tx, messages.len())?;
            let first_seq: i64 = get(
                &tx.query_one(
                    "SELECT coalesce(max(seq), -1) + 1 FROM lcm_messages WHERE conversation_id = $1",
                    &[&conv],
                )?,
                0,
            )?;
            for (start, chunk) in (0..).step_by(APPEND_BATCH).zip(messages.chunks(APPEND_BATCH)) {
                let ids = &rowids[start..start + chunk.len()];
                let seqs: Vec<i64> = (first_seq + start as i64..).take(chunk.len()).collect();
                let prevs = chunk
                    .iter()
                    .map(|message| match message.prev {
                        Prev::First => Ok(0),
                        Prev::Stored(rowid) => Ok(rowid),
                        Prev::New(index) => rowids.get(index).copied().ok_or_else(|| {
                            StoreError::Schema(format!(
                                "message {index} of a batch follows one stored after it"
                            ))
                        }),
                    })
                    .collect::<Result<Vec<i64>, _>>()?;
                let roles: Vec<&str> = chunk.iter().map(|m| m.role.as_str()).collect();
                let heads: Vec<bool> = chunk.iter().map(|m| m.head).collect();
                let jsons: Vec<&str> = chunk.iter().map(|m| m.json.as_str()).collect();
                let texts: Vec<&str> = chunk.iter().map(|m| m.text.as_str()).collect();
                let tokens: Vec<i64> = chunk.iter().map(|m| signed(m.tokens)).collect();
                let hashes: Vec<&str> = chunk.iter().map(|m| m.hash.as_str()).collect();
                tx.execute(
                    "INSERT INTO lcm_messages (id, conversation_id, seq, role, head, json, text, \
                     tokens, hash, prev_id, created_at) \
                     SELECT id, $1, seq, role, head, json, text, tokens, hash, prev_id, $2 \
                     FROM unnest($3::bigint[], $4::bigint[], $5::text[], $6::bool[], $7::text[], \
                                 $8::text[], $9::bigint[], $10::text[], $11::bigint[]) \
                       AS t(id, seq, role, head, json, text, tokens, hash, prev_id)",
                    &[
                        &conv, &now, &ids, &seqs, &roles, &heads, &jsons, &texts, &tokens,
                        &hashes, &prevs,
                    ],
                )?;
            }
            Ok(rowids)
        })
        .and_then(|rowids| {
            // After a large import the planner's statistics are stale until autovacuum comes
            // by, and searches meanwhile pick slow plans: refresh them now.
            if messages.len() >= ANALYZE_AFTER {
                self.read(|c| Ok(c.batch_execute("ANALYZE lcm_messages")?))?;
            }
            Ok(rowids)
        })
    }

    /// Makes the conversation's context list `items`, in order: the items it already starts
    /// with stay (with their positions), the rest is replaced.
    pub fn set_context(&mut self, conv: i64, items: &[ItemKey]) -> Result<(), EngineError> {
        let current: Vec<(i64, Option<i64>, Option<String>)> = self.read(|c| {
            c.query(
                "SELECT position, message_id, summary_id FROM lcm_context_items \
                 WHERE conversation_id = $1 ORDER BY position",
                &[&conv],
            )?
            .iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?, get(row, 2)?)))
            .collect()
        })?;
        let Some(ContextChange {
            kept: same,
            delete_from: from,
            next_position: next,
        }) = context_change(&current, items)
        else {
            return Ok(());
        };
        let rest = &items[same..];
        let positions: Vec<i64> = (next..).take(rest.len()).collect();
        let messages: Vec<Option<i64>> = rest
            .iter()
            .map(|item| match item {
                ItemKey::Message(rowid) => Some(*rowid),
                ItemKey::Summary(_) => None,
            })
            .collect();
        let summaries: Vec<Option<&str>> = rest
            .iter()
            .map(|item| match item {
                ItemKey::Message(_) => None,
                ItemKey::Summary(id) => Some(id.as_str()),
            })
            .collect();
        self.write(|tx| {
            if let Some(from) = from {
                tx.execute(
                    "DELETE FROM lcm_context_items WHERE conversation_id = $1 AND position >= $2",
                    &[&conv, &from],
                )?;
            }
            tx.execute(
                "INSERT INTO lcm_context_items (conversation_id, position, message_id, summary_id) \
                 SELECT $1, p, m, s FROM unnest($2::bigint[], $3::bigint[], $4::text[]) AS t(p, m, s)",
                &[&conv, &positions, &messages, &summaries],
            )?;
            Ok(())
        })
    }
}
