//! What ingest asks of the store, once for both databases: the chain of stored messages
//! (which one follows which), storing new ones, and keeping the context list equal to what the
//! host sent.

use std::collections::{HashMap, HashSet};

use ctxhost_sdk::EngineError;

use super::sql::{signed, Backend, Param, Row, Sql, Stmt};
use super::{context_change, now_ms, ContextChange, ItemKey, NewMessage, Prev, RawRef, StoreError};

/// Messages stored per transaction: one huge transaction outgrows SQLite's page cache and
/// spills into a log it then searches on every page read. A crash between batches leaves a
/// prefix stored, which the next call recognises (ingest is exactly once).
pub const APPEND_BATCH: usize = 20_000;

fn raw_from_row(row: &dyn Row) -> Result<RawRef, StoreError> {
    raw_at(row, 0)
}

/// The id, seq, prev id and hash of a stored message, from column `at` on.
fn raw_at(row: &dyn Row, at: usize) -> Result<RawRef, StoreError> {
    Ok(RawRef {
        rowid: row.i64(at)?,
        seq: row.i64(at + 1)?,
        prev: row.i64(at + 2)?,
        hash: row.text(at + 3)?,
    })
}

/// Hashes of the head (leading system) messages stored for a conversation.
pub fn head_hashes(b: &impl Backend, conv: i64) -> Result<HashSet<String>, EngineError> {
    b.read(|c| {
        let hashes = c.rows(Stmt::HeadHashes, &[Param::Int(conv)], |row| row.text(0))?;
        Ok(hashes.into_iter().collect())
    })
}

/// Whether the conversation holds any non-head message.
pub fn has_raw_messages(b: &impl Backend, conv: i64) -> Result<bool, EngineError> {
    b.read(|c| c.one(Stmt::HasRawMessages, &[Param::Int(conv)], |row| row.bool(0)))
}

/// Up to `limit` non-head messages stored after sequence number `seq`, in order.
pub fn raw_after(
    b: &impl Backend,
    conv: i64,
    seq: i64,
    limit: usize,
) -> Result<Vec<RawRef>, EngineError> {
    let params = [
        Param::Int(conv),
        Param::Int(seq),
        Param::Int(signed(limit as u64)),
    ];
    b.read(|c| c.rows(Stmt::RawAfter, &params, raw_from_row))
}

/// The stored message with this content that followed message `prev` (0: the first).
pub fn raw_child(
    b: &impl Backend,
    conv: i64,
    prev: i64,
    hash: &str,
) -> Result<Option<RawRef>, EngineError> {
    let params = [Param::Int(conv), Param::Int(prev), Param::Text(hash)];
    b.read(|c| c.opt(Stmt::RawChild, &params, raw_from_row))
}

/// Every non-head message of the conversation with this content, in stored order.
pub fn raw_with_hash(b: &impl Backend, conv: i64, hash: &str) -> Result<Vec<RawRef>, EngineError> {
    b.read(|c| {
        c.rows(
            Stmt::RawWithHash,
            &[Param::Int(conv), Param::Text(hash)],
            raw_from_row,
        )
    })
}

/// Hashes looked up per statement by [`stored_hashes`].
const HASHES_PER_LOOKUP: usize = 2_000;

/// Those of `hashes` that some non-head message of the conversation has: ingest looks up
/// only those, instead of asking for each new message whether it was stored.
pub fn stored_hashes(
    b: &impl Backend,
    conv: i64,
    hashes: &[&str],
) -> Result<HashSet<String>, EngineError> {
    let mut found = HashSet::new();
    for chunk in hashes.chunks(HASHES_PER_LOOKUP) {
        let params = [Param::Int(conv), Param::Texts(chunk)];
        b.read(|c| {
            c.query(Stmt::StoredHashes, &params, &mut |row| {
                found.insert(row.text(0)?);
                Ok(true)
            })
        })?;
    }
    Ok(found)
}

/// The last message each of `ids` covers, in the order the host sent them (a leaf's last
/// stored source, a condensed summary's through its last child), for those that cover a stored
/// one: one statement, whatever their number and depth.
pub fn summaries_last_messages(
    b: &impl Backend,
    ids: &[&str],
) -> Result<HashMap<String, RawRef>, EngineError> {
    b.read(|c| {
        let rows = c.rows(Stmt::LastMessages, &[Param::Texts(ids)], |row| {
            Ok((row.text(0)?, raw_at(row, 1)?))
        })?;
        Ok(rows.into_iter().collect())
    })
}

/// Whether message `rowid` is covered by any of `summaries` (through leaves and their
/// condensed ancestors).
pub fn covered_by_any(
    b: &impl Backend,
    rowid: i64,
    summaries: &[String],
) -> Result<bool, EngineError> {
    if summaries.is_empty() {
        return Ok(false);
    }
    let ancestors: HashSet<String> = b
        .read(|c| c.rows(Stmt::Ancestors, &[Param::Int(rowid)], |row| row.text(0)))?
        .into_iter()
        .collect();
    Ok(summaries.iter().any(|s| ancestors.contains(s)))
}

/// Stores messages, numbering them after the conversation's last; their row ids, in order.
/// A transaction per [`APPEND_BATCH`] messages.
pub fn append_messages(
    b: &mut impl Backend,
    conv: i64,
    messages: &[NewMessage],
) -> Result<Vec<i64>, EngineError> {
    let mut rowids: Vec<i64> = Vec::with_capacity(messages.len());
    let now = now_ms();
    for batch in messages.chunks(APPEND_BATCH) {
        b.write(|tx| append_batch(tx, conv, batch, now, &mut rowids))?;
        b.wrote_messages(batch.len());
    }
    Ok(rowids)
}

/// Stores `batch`, pushing their row ids onto `rowids` (which holds those of the batches
/// before). The ids are drawn first, so a message may follow one of the same batch.
fn append_batch(
    tx: &mut dyn Sql,
    conv: i64,
    batch: &[NewMessage],
    now: i64,
    rowids: &mut Vec<i64>,
) -> Result<(), StoreError> {
    let ids = allocate_message_ids(tx, batch.len())?;
    let first_seq = tx
        .opt(Stmt::NextSeq, &[Param::Int(conv)], |row| row.i64(0))?
        .ok_or_else(|| {
            StoreError::Corrupt(format!(
                "conversation {conv} is not stored (deleted while its session was written)"
            ))
        })?;
    let start = rowids.len();
    rowids.extend(&ids);
    let mut rows = Vec::with_capacity(batch.len());
    for ((message, id), seq) in batch.iter().zip(&ids).zip(first_seq..) {
        let prev = match message.prev {
            Prev::First => 0,
            Prev::Stored(rowid) => rowid,
            Prev::New(index) => *rowids[..start + rows.len()].get(index).ok_or_else(|| {
                StoreError::Schema(format!(
                    "message {index} of a batch follows one stored after it"
                ))
            })?,
        };
        rows.push(vec![
            Param::Int(*id),
            Param::Int(conv),
            Param::Int(seq),
            Param::Text(&message.role),
            Param::Bool(message.head),
            Param::Json(&message.json),
            Param::Text(&message.text),
            Param::Int(signed(message.tokens)),
            Param::Text(&message.hash),
            Param::Int(prev),
            Param::Int(now),
        ]);
    }
    tx.execute_rows(Stmt::InsertMessages, &rows)
}

/// `count` new message row ids, ascending.
pub(super) fn allocate_message_ids(tx: &mut dyn Sql, count: usize) -> Result<Vec<i64>, StoreError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let ids = tx.rows(
        Stmt::AllocateMessageIds,
        &[Param::Int(signed(count as u64))],
        |row| row.i64(0),
    )?;
    if ids.len() != count {
        return Err(StoreError::Schema(format!(
            "{count} message ids asked, {} drawn",
            ids.len()
        )));
    }
    Ok(ids)
}

/// Makes the conversation's context list `items`, in order: the items it already starts with
/// stay (with their positions), the rest is replaced.
pub fn set_context(b: &mut impl Backend, conv: i64, items: &[ItemKey]) -> Result<(), EngineError> {
    let current = b.read(|c| {
        c.rows(Stmt::ContextKeys, &[Param::Int(conv)], |row| {
            Ok((row.i64(0)?, row.opt_i64(1)?, row.opt_text(2)?))
        })
    })?;
    let Some(ContextChange {
        kept,
        delete_from,
        next_position,
    }) = context_change(&current, items)
    else {
        return Ok(());
    };
    let rows: Vec<Vec<Param<'_>>> = (next_position..)
        .zip(&items[kept..])
        .map(|(position, item)| {
            let (message, summary) = match item {
                ItemKey::Message(rowid) => (Some(*rowid), None),
                ItemKey::Summary(id) => (None, Some(id.as_str())),
            };
            vec![
                Param::Int(conv),
                Param::Int(position),
                Param::OptInt(message),
                Param::OptText(summary),
            ]
        })
        .collect();
    b.write(|tx| {
        if let Some(from) = delete_from {
            tx.execute(
                Stmt::DeleteContextFrom,
                &[Param::Int(conv), Param::Int(from)],
            )?;
        }
        tx.execute_rows(Stmt::InsertContextItems, &rows)
    })
}
