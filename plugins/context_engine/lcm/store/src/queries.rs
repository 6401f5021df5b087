//! The store's queries, once for both databases: conversations, the context list, summaries
//! and their links, lookups, coverage, telemetry.

use std::collections::{HashMap, HashSet};

use ctxhost_sdk::EngineError;
use serde_json::Value;

use super::sql::{signed, Backend, Param, Row, Sql, Stmt};
use super::{
    now_ms, ContextItem, ItemRow, Sources, Stats, StoreError, StoredMessage, SummaryKind,
    SummaryRow,
};

/// The message columns from column `at` on.
pub(super) fn message_from_row(row: &dyn Row, at: usize) -> Result<StoredMessage, StoreError> {
    Ok(StoredMessage {
        rowid: row.i64(at)?,
        seq: row.i64(at + 1)?,
        role: row.text(at + 2)?,
        head: row.bool(at + 3)?,
        json: row.json(at + 4)?,
        tokens: row.u64(at + 5)?,
        created_at: row.i64(at + 6)?,
    })
}

/// The summary columns from column `at` on.
pub(super) fn summary_from_row(row: &dyn Row, at: usize) -> Result<SummaryRow, StoreError> {
    let depth = row.i64(at + 3)?;
    let escalation = row.i64(at + 14)?;
    Ok(SummaryRow {
        id: row.text(at)?,
        conversation_id: row.i64(at + 1)?,
        kind: SummaryKind::parse(&row.text(at + 2)?)?,
        depth: u32::try_from(depth)
            .map_err(|_| StoreError::Corrupt(format!("summary depth {depth}")))?,
        seq_start: row.i64(at + 4)?,
        seq_end: row.i64(at + 5)?,
        time_start: row.i64(at + 6)?,
        time_end: row.i64(at + 7)?,
        message_count: row.u64(at + 8)?,
        source_tokens: row.u64(at + 9)?,
        tokens: row.u64(at + 10)?,
        block_tokens: row.u64(at + 11)?,
        text: row.text(at + 12)?,
        summarizer: row.text(at + 13)?,
        escalation: u8::try_from(escalation)
            .map_err(|_| StoreError::Corrupt(format!("summary escalation {escalation}")))?,
        created_at: row.i64(at + 15)?,
    })
}

fn first_i64(row: &dyn Row) -> Result<i64, StoreError> {
    row.i64(0)
}

fn first_text(row: &dyn Row) -> Result<String, StoreError> {
    row.text(0)
}

// --- conversations ---------------------------------------------------------------------------

/// The conversation a session currently writes to, created on first use.
pub fn current_conversation(b: &mut impl Backend, session_id: &str) -> Result<i64, EngineError> {
    let found = b.read(|c| {
        c.opt(
            Stmt::CurrentConversation,
            &[Param::Text(session_id)],
            first_i64,
        )
    })?;
    if let Some(id) = found {
        return Ok(id);
    }
    // None yet: look again and create it in one write, which writers of the store take one
    // at a time, so two processes starting the session at once make one conversation.
    b.write(|tx| {
        tx.execute(Stmt::LockConversations, &[])?;
        if let Some(id) = tx.opt(
            Stmt::CurrentConversation,
            &[Param::Text(session_id)],
            first_i64,
        )? {
            return Ok(id);
        }
        tx.one(
            Stmt::NewConversation,
            &[Param::Text(session_id), Param::Int(now_ms())],
            first_i64,
        )
    })
}

/// Starts a fresh conversation for a session (after a reset); the old one stays stored.
pub fn new_conversation(b: &mut impl Backend, session_id: &str) -> Result<i64, EngineError> {
    b.write(|tx| {
        tx.one(
            Stmt::NewConversation,
            &[Param::Text(session_id), Param::Int(now_ms())],
            first_i64,
        )
    })
}

// --- the context list ------------------------------------------------------------------------

/// The context list of a conversation, in order, with each message and summary loaded.
pub fn context(b: &impl Backend, conv: i64) -> Result<Vec<ItemRow>, EngineError> {
    b.read(|c| {
        c.rows(Stmt::Context, &[Param::Int(conv)], |row| {
            let position = row.i64(0)?;
            // A dangling item (its row is gone) reads as NULLs: report it, never guess.
            let item = if row.bool(1)? {
                if row.opt_i64(2)?.is_none() {
                    return Err(StoreError::Corrupt(format!(
                        "context item {position} points at a missing message"
                    )));
                }
                ContextItem::Message(message_from_row(row, 2)?)
            } else {
                if row.opt_text(9)?.is_none() {
                    return Err(StoreError::Corrupt(format!(
                        "context item {position} points at a missing summary"
                    )));
                }
                ContextItem::Summary(summary_from_row(row, 9)?)
            };
            Ok(ItemRow { position, item })
        })
    })
}

/// Stores a summary with its links, and puts it in the context list in place of the items
/// at `replaced` (it takes the first one's position), all in one transaction.
pub fn insert_summary(
    b: &mut impl Backend,
    summary: &SummaryRow,
    sources: &Sources,
    replaced: &[i64],
) -> Result<(), EngineError> {
    let Some(first) = replaced.first() else {
        return Err(b.error(no_items_replaced()));
    };
    let children: Vec<&str>;
    let (messages, children): (&[i64], &[&str]) = match sources {
        Sources::Messages(rowids) => (rowids, &[]),
        Sources::Children(ids) => {
            children = ids.iter().map(String::as_str).collect();
            (&[], &children)
        }
    };
    let mut params = summary_params(summary);
    params.extend([
        Param::Ints(messages),
        Param::Texts(children),
        Param::Ints(replaced),
        Param::Int(*first),
    ]);
    // One statement (on a server, one round trip): compaction writes thousands.
    b.write_one(Stmt::WriteSummary, &params, 1, || vanished(replaced))
}

fn no_items_replaced() -> StoreError {
    StoreError::Schema("a summary must replace at least one context item".into())
}

fn vanished(replaced: &[i64]) -> StoreError {
    StoreError::Corrupt(format!(
        "some of the context items {replaced:?} vanished during compaction"
    ))
}

/// Puts a stored summary in the context list in place of the items at `replaced`.
pub fn put_in_context(
    b: &mut impl Backend,
    summary: &SummaryRow,
    replaced: &[i64],
) -> Result<(), EngineError> {
    b.write(|tx| replace_items(tx, summary, replaced))
}

/// One summary row (and its full-text row, where the database keeps one apart).
pub(super) fn insert_summary_row(tx: &mut dyn Sql, s: &SummaryRow) -> Result<(), StoreError> {
    tx.execute(Stmt::InsertSummary, &summary_params(s))?;
    Ok(())
}

/// The parameters of [`Stmt::InsertSummary`] for `s`.
fn summary_params(s: &SummaryRow) -> Vec<Param<'_>> {
    vec![
        Param::Text(&s.id),
        Param::Int(s.conversation_id),
        Param::Text(s.kind.as_str()),
        Param::Int(i64::from(s.depth)),
        Param::Int(s.seq_start),
        Param::Int(s.seq_end),
        Param::Int(s.time_start),
        Param::Int(s.time_end),
        Param::Int(signed(s.message_count)),
        Param::Int(signed(s.source_tokens)),
        Param::Int(signed(s.tokens)),
        Param::Int(signed(s.block_tokens)),
        Param::Text(&s.text),
        Param::Text(&s.summarizer),
        Param::Int(i64::from(s.escalation)),
        Param::Int(s.created_at),
    ]
}

pub(super) fn link_sources(tx: &mut dyn Sql, id: &str, rowids: &[i64]) -> Result<(), StoreError> {
    let rows: Vec<Vec<Param<'_>>> = (0..)
        .zip(rowids)
        .map(|(ord, rowid)| vec![Param::Text(id), Param::Int(ord), Param::Int(*rowid)])
        .collect();
    tx.execute_rows(Stmt::LinkSources, &rows)
}

pub(super) fn link_children(
    tx: &mut dyn Sql,
    id: &str,
    children: &[String],
) -> Result<(), StoreError> {
    let rows: Vec<Vec<Param<'_>>> = (0..)
        .zip(children)
        .map(|(ord, child)| vec![Param::Text(id), Param::Int(ord), Param::Text(child)])
        .collect();
    tx.execute_rows(Stmt::LinkChildren, &rows)
}

/// The context items at `replaced` give way to `summary`, which takes the first one's position.
fn replace_items(
    tx: &mut dyn Sql,
    summary: &SummaryRow,
    replaced: &[i64],
) -> Result<(), StoreError> {
    let Some(first) = replaced.first() else {
        return Err(no_items_replaced());
    };
    let conv = summary.conversation_id;
    // One statement for them all: one round trip to a server, not one per item.
    let deleted = tx.execute(
        Stmt::DeleteContextItems,
        &[Param::Int(conv), Param::Ints(replaced)],
    )?;
    if deleted != replaced.len() as u64 {
        return Err(vanished(replaced));
    }
    tx.execute_rows(
        Stmt::InsertContextItems,
        &[vec![
            Param::Int(conv),
            Param::Int(*first),
            Param::OptInt(None),
            Param::OptText(Some(&summary.id)),
        ]],
    )
}

// --- lookups ---------------------------------------------------------------------------------

pub fn message_by_seq(
    b: &impl Backend,
    conv: i64,
    seq: i64,
) -> Result<Option<StoredMessage>, EngineError> {
    b.read(|c| {
        c.opt(
            Stmt::MessageBySeq,
            &[Param::Int(conv), Param::Int(seq)],
            |row| message_from_row(row, 0),
        )
    })
}

/// Messages by row id, in the order asked.
pub fn messages_by_rowid(
    b: &impl Backend,
    rowids: &[i64],
) -> Result<Vec<StoredMessage>, EngineError> {
    if rowids.is_empty() {
        return Ok(Vec::new());
    }
    b.read(|c| {
        c.rows(Stmt::MessagesByRowid, &[Param::Ints(rowids)], |row| {
            if row.opt_i64(1)?.is_none() {
                return Err(StoreError::Corrupt(format!(
                    "linked message row {} is missing",
                    row.i64(0)?
                )));
            }
            message_from_row(row, 1)
        })
    })
}

/// A summary of this conversation by id.
pub fn summary(b: &impl Backend, conv: i64, id: &str) -> Result<Option<SummaryRow>, EngineError> {
    b.read(|c| {
        c.opt(Stmt::Summary, &[Param::Text(id), Param::Int(conv)], |row| {
            summary_from_row(row, 0)
        })
    })
}

/// Those of `ids` that are summaries of this conversation, by id.
pub fn summaries(
    b: &impl Backend,
    conv: i64,
    ids: &[&str],
) -> Result<HashMap<String, SummaryRow>, EngineError> {
    b.read(|c| {
        let rows = c.rows(
            Stmt::Summaries,
            &[Param::Int(conv), Param::Texts(ids)],
            |row| summary_from_row(row, 0),
        )?;
        Ok(rows.into_iter().map(|row| (row.id.clone(), row)).collect())
    })
}

/// The summaries over any of `messages` (leaves with one of them as a source) or any of
/// `summaries` (condensed summaries with one of them as a child).
pub fn summaries_over(
    b: &impl Backend,
    messages: &[i64],
    summaries: &[&str],
) -> Result<HashSet<String>, EngineError> {
    b.read(|c| {
        let params = [Param::Ints(messages), Param::Texts(summaries)];
        Ok(c.rows(Stmt::SummariesOver, &params, first_text)?
            .into_iter()
            .collect())
    })
}

/// The summaries a condensed summary merges, in order.
pub fn summary_children(b: &impl Backend, id: &str) -> Result<Vec<String>, EngineError> {
    b.read(|c| c.rows(Stmt::SummaryChildren, &[Param::Text(id)], first_text))
}

/// The summaries that merge this one (normally at most one).
pub fn summary_parents(b: &impl Backend, id: &str) -> Result<Vec<String>, EngineError> {
    b.read(|c| c.rows(Stmt::SummaryParents, &[Param::Text(id)], first_text))
}

/// Sequence numbers of a leaf's source messages, in order.
pub fn summary_source_seqs(b: &impl Backend, id: &str) -> Result<Vec<i64>, EngineError> {
    b.read(|c| c.rows(Stmt::SummarySourceSeqs, &[Param::Text(id)], first_i64))
}

pub fn summary_in_context(b: &impl Backend, conv: i64, id: &str) -> Result<bool, EngineError> {
    b.read(|c| {
        c.one(
            Stmt::SummaryInContext,
            &[Param::Int(conv), Param::Text(id)],
            |row| row.bool(0),
        )
    })
}

/// (row id, seq, tokens) of every message under a summary, through condensed summaries down to
/// the leaves, in conversation order.
pub fn messages_under(b: &impl Backend, id: &str) -> Result<Vec<(i64, i64, u64)>, EngineError> {
    b.read(|c| {
        c.rows(Stmt::MessagesUnder, &[Param::Text(id)], |row| {
            Ok((row.i64(0)?, row.i64(1)?, row.u64(2)?))
        })
    })
}

/// For a message: the leaf summary that covers it and the summary that covers it in the
/// context now (the leaf's topmost ancestor). `None` while it is still raw.
pub fn covering(
    b: &impl Backend,
    message_rowid: i64,
) -> Result<Option<(String, String)>, EngineError> {
    b.read(|c| {
        let Some(leaf) = c.opt(Stmt::LeafOf, &[Param::Int(message_rowid)], first_text)? else {
            return Ok(None);
        };
        let top = c.one(Stmt::TopOf, &[Param::Text(&leaf)], first_text)?;
        Ok(Some((leaf, top)))
    })
}

// --- telemetry -------------------------------------------------------------------------------

pub fn record_compaction(
    b: &mut impl Backend,
    conv: i64,
    report: &Value,
) -> Result<(), EngineError> {
    let text = report.to_string();
    b.write(|tx| {
        tx.execute_rows(
            Stmt::InsertCompactions,
            &[vec![
                Param::Int(conv),
                Param::Int(now_ms()),
                Param::Text(&text),
            ]],
        )
    })
}

pub fn last_compaction(b: &impl Backend, conv: i64) -> Result<Option<Value>, EngineError> {
    let text = b.read(|c| c.opt(Stmt::LastCompaction, &[Param::Int(conv)], first_text))?;
    text.map(|t| {
        serde_json::from_str(&t)
            .map_err(|e| b.error(StoreError::Corrupt(format!("compaction report: {e}"))))
    })
    .transpose()
}

/// Sizes of one conversation, for `status`.
pub fn stats(b: &impl Backend, conv: i64) -> Result<Stats, EngineError> {
    b.read(|c| {
        let conv = [Param::Int(conv)];
        let mut stats = Stats::default();
        (stats.messages, stats.head_messages, stats.message_tokens) =
            c.one(Stmt::MessageStats, &conv, |r| {
                Ok((r.u64(0)?, r.u64(1)?, r.u64(2)?))
            })?;
        stats.summaries_by_depth = c.rows(Stmt::SummaryStats, &conv, |r| {
            Ok((r.i64(0)?.max(0) as u32, r.u64(1)?, r.u64(2)?))
        })?;
        (stats.context_messages, stats.context_summaries) =
            c.one(Stmt::ContextStats, &conv, |r| Ok((r.u64(0)?, r.u64(1)?)))?;
        stats.compactions = c.one(Stmt::CompactionCount, &conv, |r| r.u64(0))?;
        Ok(stats)
    })
}
