//! The engine's queries on SQLite, as methods of [`SqliteStore`].

use std::path::Path;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ValueRef};
use rusqlite::{params, OptionalExtension, Row};
use serde_json::Value;

use super::{
    now_ms, ContextItem, Hit, ItemRow, Sources, SqliteStore, Stats, StoreError, StoredMessage,
    SummaryKind, SummaryRow,
};
use crate::store::{searchable, FullTextQuery};
use ctxhost_sdk::EngineError;

impl FromSql for SummaryKind {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let text = value.as_str()?;
        SummaryKind::parse(text).map_err(|e| FromSqlError::Other(e.to_string().into()))
    }
}

const MESSAGE_COLUMNS: &str = "m.id, m.seq, m.role, m.head, m.json, m.tokens, m.created_at";

fn message_from_row(row: &Row<'_>, at: usize) -> rusqlite::Result<StoredMessage> {
    Ok(StoredMessage {
        rowid: row.get(at)?,
        seq: row.get(at + 1)?,
        role: row.get(at + 2)?,
        head: row.get(at + 3)?,
        json: json_at(row, at + 4)?,
        tokens: row.get(at + 5)?,
        created_at: row.get(at + 6)?,
    })
}

/// A message's original JSON from column `at`, text or compressed.
pub(super) fn json_at(row: &Row<'_>, at: usize) -> rusqlite::Result<String> {
    super::codec::decode(row.get_ref(at)?).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(
            at,
            rusqlite::types::Type::Blob,
            Box::new(std::io::Error::other(e.to_string())),
        )
    })
}

pub(super) const SUMMARY_COLUMNS: &str =
    "s.id, s.conversation_id, s.kind, s.depth, s.seq_start, s.seq_end, \
     s.time_start, s.time_end, s.message_count, s.source_tokens, s.tokens, s.block_tokens, \
     s.text, s.summarizer, s.escalation, s.created_at";

pub(super) fn summary_from_row(row: &Row<'_>, at: usize) -> rusqlite::Result<SummaryRow> {
    Ok(SummaryRow {
        id: row.get(at)?,
        conversation_id: row.get(at + 1)?,
        kind: row.get(at + 2)?,
        depth: row.get(at + 3)?,
        seq_start: row.get(at + 4)?,
        seq_end: row.get(at + 5)?,
        time_start: row.get(at + 6)?,
        time_end: row.get(at + 7)?,
        message_count: row.get(at + 8)?,
        source_tokens: row.get(at + 9)?,
        tokens: row.get(at + 10)?,
        block_tokens: row.get(at + 11)?,
        text: row.get(at + 12)?,
        summarizer: row.get(at + 13)?,
        escalation: row.get(at + 14)?,
        created_at: row.get(at + 15)?,
    })
}

impl SqliteStore {
    // --- conversations -------------------------------------------------------------------

    /// The conversation a session currently writes to, created on first use.
    pub fn current_conversation(&mut self, session_id: &str) -> Result<i64, EngineError> {
        let found = self.read(|c| {
            Ok(c.query_row(
                "SELECT id FROM conversations WHERE session_id = ?1 ORDER BY id DESC LIMIT 1",
                [session_id],
                |r| r.get::<_, i64>(0),
            )
            .optional()?)
        })?;
        match found {
            Some(id) => Ok(id),
            None => self.new_conversation(session_id),
        }
    }

    /// Starts a fresh conversation for a session (after a reset); the old one stays stored.
    pub fn new_conversation(&mut self, session_id: &str) -> Result<i64, EngineError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO conversations(session_id, created_at) VALUES (?1, ?2)",
                params![session_id, now_ms()],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    // --- the context list ----------------------------------------------------------------

    /// The context list of a conversation, in order, with each message and summary loaded.
    pub fn context(&self, conv: i64) -> Result<Vec<ItemRow>, EngineError> {
        self.read(|c| {
            let sql = format!(
                "SELECT ci.position, ci.message_id IS NOT NULL, {MESSAGE_COLUMNS}, {SUMMARY_COLUMNS} \
                 FROM context_items ci \
                 LEFT JOIN messages m ON m.id = ci.message_id \
                 LEFT JOIN summaries s ON s.id = ci.summary_id \
                 WHERE ci.conversation_id = ?1 ORDER BY ci.position"
            );
            let mut stmt = c.prepare_cached(&sql)?;
            let mut rows = stmt.query([conv])?;
            let mut items = Vec::new();
            while let Some(row) = rows.next()? {
                let position: i64 = row.get(0)?;
                let is_message: bool = row.get(1)?;
                // A dangling item (its row is gone) reads as NULLs: report it, never guess.
                let item = if is_message {
                    let id: Option<i64> = row.get(2)?;
                    if id.is_none() {
                        return Err(StoreError::Corrupt(format!(
                            "context item {position} points at a missing message"
                        )));
                    }
                    ContextItem::Message(message_from_row(row, 2)?)
                } else {
                    let id: Option<String> = row.get(9)?;
                    if id.is_none() {
                        return Err(StoreError::Corrupt(format!(
                            "context item {position} points at a missing summary"
                        )));
                    }
                    ContextItem::Summary(summary_from_row(row, 9)?)
                };
                items.push(ItemRow { position, item });
            }
            Ok(items)
        })
    }

    /// Stores a summary with its links, and puts it in the context list in place of the items
    /// at `replaced` (it takes the first one's position), all in one transaction.
    pub fn insert_summary(
        &mut self,
        summary: &SummaryRow,
        sources: &Sources,
        replaced: &[i64],
    ) -> Result<(), EngineError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO summaries(id, conversation_id, kind, depth, seq_start, seq_end, \
                 time_start, time_end, message_count, source_tokens, tokens, block_tokens, text, \
                 summarizer, escalation, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                params![
                    summary.id,
                    summary.conversation_id,
                    summary.kind.as_str(),
                    summary.depth,
                    summary.seq_start,
                    summary.seq_end,
                    summary.time_start,
                    summary.time_end,
                    summary.message_count,
                    summary.source_tokens,
                    summary.tokens,
                    summary.block_tokens,
                    summary.text,
                    summary.summarizer,
                    summary.escalation,
                    summary.created_at
                ],
            )?;
            tx.execute(
                "INSERT INTO summaries_fts(rowid, text) VALUES (last_insert_rowid(), ?1)",
                [&summary.text],
            )?;
            match sources {
                Sources::Messages(rowids) => {
                    let mut link = tx.prepare_cached(
                        "INSERT INTO summary_messages(summary_id, ord, message_id) VALUES (?1, ?2, ?3)",
                    )?;
                    for (ord, rowid) in rowids.iter().enumerate() {
                        link.execute(params![summary.id, ord as i64, rowid])?;
                    }
                }
                Sources::Children(children) => {
                    let mut link = tx.prepare_cached(
                        "INSERT INTO summary_parents(parent_id, ord, child_id) VALUES (?1, ?2, ?3)",
                    )?;
                    for (ord, child) in children.iter().enumerate() {
                        link.execute(params![summary.id, ord as i64, child])?;
                    }
                }
            }
            replace_items(tx, summary, replaced)
        })
    }

    /// Puts a stored summary in the context list in place of the items at `replaced`.
    pub fn put_in_context(
        &mut self,
        summary: &SummaryRow,
        replaced: &[i64],
    ) -> Result<(), EngineError> {
        self.write(|tx| replace_items(tx, summary, replaced))
    }

    // --- lookups -------------------------------------------------------------------------

    pub fn message_by_seq(
        &self,
        conv: i64,
        seq: i64,
    ) -> Result<Option<StoredMessage>, EngineError> {
        self.read(|c| {
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id = ?1 AND m.seq = ?2"
            );
            Ok(c.query_row(&sql, params![conv, seq], |r| message_from_row(r, 0))
                .optional()?)
        })
    }

    /// Messages by row id, in the order asked.
    pub fn messages_by_rowid(&self, rowids: &[i64]) -> Result<Vec<StoredMessage>, EngineError> {
        self.read(|c| {
            let sql = format!("SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?1");
            let mut stmt = c.prepare_cached(&sql)?;
            let mut out = Vec::with_capacity(rowids.len());
            for rowid in rowids {
                match stmt
                    .query_row([rowid], |r| message_from_row(r, 0))
                    .optional()?
                {
                    Some(message) => out.push(message),
                    None => {
                        return Err(StoreError::Corrupt(format!(
                            "linked message row {rowid} is missing"
                        )))
                    }
                }
            }
            Ok(out)
        })
    }

    /// A summary of this conversation by id.
    pub fn summary(&self, conv: i64, id: &str) -> Result<Option<SummaryRow>, EngineError> {
        self.read(|c| {
            let sql = format!(
                "SELECT {SUMMARY_COLUMNS} FROM summaries s WHERE s.id = ?1 AND s.conversation_id = ?2"
            );
            Ok(c.query_row(&sql, params![id, conv], |r| summary_from_row(r, 0))
                .optional()?)
        })
    }

    /// The summaries a condensed summary merges, in order.
    pub fn summary_children(&self, id: &str) -> Result<Vec<String>, EngineError> {
        self.strings(
            "SELECT child_id FROM summary_parents WHERE parent_id = ?1 ORDER BY ord",
            id,
        )
    }

    /// The summaries that merge this one (normally at most one).
    pub fn summary_parents(&self, id: &str) -> Result<Vec<String>, EngineError> {
        self.strings(
            "SELECT parent_id FROM summary_parents WHERE child_id = ?1 ORDER BY parent_id",
            id,
        )
    }

    /// Sequence numbers of a leaf's source messages, in order.
    pub fn summary_source_seqs(&self, id: &str) -> Result<Vec<i64>, EngineError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT m.seq FROM summary_messages sm JOIN messages m ON m.id = sm.message_id \
                 WHERE sm.summary_id = ?1 ORDER BY sm.ord",
            )?;
            let seqs = stmt
                .query_map([id], |r| r.get(0))?
                .collect::<Result<Vec<i64>, _>>()?;
            Ok(seqs)
        })
    }

    pub fn summary_in_context(&self, conv: i64, id: &str) -> Result<bool, EngineError> {
        self.read(|c| {
            Ok(c.query_row(
                "SELECT EXISTS(SELECT 1 FROM context_items WHERE conversation_id = ?1 AND summary_id = ?2)",
                params![conv, id],
                |r| r.get(0),
            )?)
        })
    }

    /// (row id, seq, tokens) of every message under a summary, through condensed summaries
    /// down to the leaves, in conversation order. `CROSS JOIN` keeps the walk going from the
    /// tree outwards (the planner may otherwise scan every link in the store).
    pub fn messages_under(&self, id: &str) -> Result<Vec<(i64, i64, u64)>, EngineError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(
                "WITH RECURSIVE tree(id) AS ( \
                     SELECT ?1 \
                     UNION SELECT p.child_id FROM summary_parents p JOIN tree ON p.parent_id = tree.id \
                 ) \
                 SELECT m.id, m.seq, m.tokens FROM tree \
                 CROSS JOIN summary_messages sm ON sm.summary_id = tree.id \
                 CROSS JOIN messages m ON m.id = sm.message_id \
                 ORDER BY m.seq",
            )?;
            let rows = stmt
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    /// For a message: the leaf summary that covers it and the summary that covers it in the
    /// context now (the leaf's topmost ancestor). `None` while it is still raw.
    pub fn covering(&self, message_rowid: i64) -> Result<Option<(String, String)>, EngineError> {
        self.read(|c| {
            let leaf: Option<String> = c
                .query_row(
                    "SELECT summary_id FROM summary_messages WHERE message_id = ?1 LIMIT 1",
                    [message_rowid],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(leaf) = leaf else {
                return Ok(None);
            };
            let top: String = c.query_row(
                "WITH RECURSIVE up(id, level) AS ( \
                     SELECT ?1, 0 \
                     UNION SELECT p.parent_id, up.level + 1 FROM summary_parents p \
                       JOIN up ON p.child_id = up.id \
                 ) SELECT id FROM up ORDER BY level DESC LIMIT 1",
                [&leaf],
                |r| r.get(0),
            )?;
            Ok(Some((leaf, top)))
        })
    }

    fn strings(&self, sql: &str, arg: &str) -> Result<Vec<String>, EngineError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(sql)?;
            let out = stmt
                .query_map([arg], |r| r.get(0))?
                .collect::<Result<Vec<String>, _>>()?;
            Ok(out)
        })
    }

    // --- search --------------------------------------------------------------------------

    /// Full-text matches among a conversation's messages with `since <= seq < before`.
    ///
    /// Two steps: the page's row ids first, then the text of just those rows, so no sorter
    /// ever carries message text. `CROSS JOIN` pins the full-text index as the outer loop:
    /// newest first then walks it backwards by rowid (which follows `seq`) and stops at
    /// `limit`. Left to itself, SQLite's planner scans the conversation's messages and
    /// probes the index for each, which is orders of magnitude slower on a large store.
    pub fn fts_messages(
        &self,
        conv: i64,
        query: &FullTextQuery,
        (since, before): (i64, i64),
        relevance: bool,
        limit: usize,
    ) -> Result<Vec<Hit>, EngineError> {
        let order = if relevance {
            "messages_fts.rank, messages_fts.rowid DESC"
        } else {
            "messages_fts.rowid DESC"
        };
        let query = fts5_query(query);
        let sql = format!(
            "SELECT messages_fts.rowid, messages_fts.rank FROM messages_fts \
             CROSS JOIN messages m ON m.id = messages_fts.rowid \
             WHERE messages_fts MATCH ?1 AND m.conversation_id = ?2 AND m.seq >= ?3 AND m.seq < ?4 \
             ORDER BY {order} LIMIT ?5"
        );
        self.read(|c| {
            let mut stmt = c.prepare_cached(&sql)?;
            let page = stmt
                .query_map(params![query, conv, since, before, limit as i64], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            let mut row = c.prepare_cached("SELECT seq, role, json FROM messages WHERE id = ?1")?;
            let mut hits = Vec::with_capacity(page.len());
            for (rowid, rank) in page {
                let (seq, role, json): (i64, String, String) =
                    row.query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?, json_at(r, 2)?)))?;
                let text = searchable(&json, seq)?;
                hits.push(Hit::Message {
                    rowid,
                    seq,
                    role,
                    text,
                    rank,
                });
            }
            Ok(hits)
        })
    }

    /// Full-text matches among a conversation's summaries overlapping `since <= seq < before`,
    /// in the same two steps as [`SqliteStore::fts_messages`].
    pub fn fts_summaries(
        &self,
        conv: i64,
        query: &FullTextQuery,
        (since, before): (i64, i64),
        relevance: bool,
        limit: usize,
    ) -> Result<Vec<Hit>, EngineError> {
        let query = fts5_query(query);
        // Newest first walks the conversation's summaries by `seq_end` (an index) and keeps
        // those in the match set, which is read once: no sorter, no lookup and no rank for the
        // matches past the page. Relevance needs every match's rank anyway.
        let sql = if relevance {
            "SELECT summaries_fts.rowid, summaries_fts.rank FROM summaries_fts \
             CROSS JOIN summaries s ON s.rowid = summaries_fts.rowid \
             WHERE summaries_fts MATCH ?1 AND s.conversation_id = ?2 \
               AND s.seq_end >= ?3 AND s.seq_start < ?4 \
             ORDER BY summaries_fts.rank, s.seq_end DESC LIMIT ?5"
        } else {
            "SELECT s.rowid, 0.0 FROM summaries s INDEXED BY summaries_by_end \
             WHERE s.conversation_id = ?2 AND s.seq_end >= ?3 AND s.seq_start < ?4 \
               AND s.rowid IN (SELECT rowid FROM summaries_fts WHERE summaries_fts MATCH ?1) \
             ORDER BY s.seq_end DESC LIMIT ?5"
        };
        self.read(|c| {
            let mut stmt = c.prepare_cached(sql)?;
            let page = stmt
                .query_map(params![query, conv, since, before, limit as i64], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            let mut row = c.prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM summaries s WHERE s.rowid = ?1"
            ))?;
            let mut hits = Vec::with_capacity(page.len());
            for (rowid, rank) in page {
                let summary = row.query_row([rowid], |r| summary_from_row(r, 0))?;
                hits.push(Hit::Summary { summary, rank });
            }
            Ok(hits)
        })
    }

    /// Calls `visit(rowid, seq, role, text)` for each message in range, newest first, until it
    /// returns false.
    pub fn scan_messages(
        &self,
        conv: i64,
        (since, before): (i64, i64),
        mut visit: impl FnMut(i64, i64, &str, &str) -> bool,
    ) -> Result<(), EngineError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, seq, role, json FROM messages \
                 WHERE conversation_id = ?1 AND seq >= ?2 AND seq < ?3 ORDER BY seq DESC",
            )?;
            let mut rows = stmt.query(params![conv, since, before])?;
            while let Some(row) = rows.next()? {
                let seq: i64 = row.get(1)?;
                let role = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
                let json = json_at(row, 3)?;
                let text = searchable(&json, seq)?;
                if !visit(row.get(0)?, seq, role, &text) {
                    break;
                }
            }
            Ok(())
        })
    }

    /// Calls `visit` for each summary overlapping the range, newest first, until it returns
    /// false.
    pub fn scan_summaries(
        &self,
        conv: i64,
        (since, before): (i64, i64),
        mut visit: impl FnMut(SummaryRow) -> bool,
    ) -> Result<(), EngineError> {
        self.read(|c| {
            let sql = format!(
                "SELECT {SUMMARY_COLUMNS} FROM summaries s WHERE s.conversation_id = ?1 \
                 AND s.seq_end >= ?2 AND s.seq_start < ?3 ORDER BY s.seq_end DESC, s.depth DESC"
            );
            let mut stmt = c.prepare_cached(&sql)?;
            let mut rows = stmt.query(params![conv, since, before])?;
            while let Some(row) = rows.next()? {
                if !visit(summary_from_row(row, 0)?) {
                    break;
                }
            }
            Ok(())
        })
    }

    // --- telemetry -----------------------------------------------------------------------

    pub fn record_compaction(&mut self, conv: i64, report: &Value) -> Result<(), EngineError> {
        let text = report.to_string();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO compactions(conversation_id, created_at, report) VALUES (?1, ?2, ?3)",
                params![conv, now_ms(), text],
            )?;
            Ok(())
        })
    }

    pub fn last_compaction(&self, conv: i64) -> Result<Option<Value>, EngineError> {
        let text: Option<String> = self.read(|c| {
            Ok(c.query_row(
                "SELECT report FROM compactions WHERE conversation_id = ?1 ORDER BY id DESC LIMIT 1",
                [conv],
                |r| r.get(0),
            )
            .optional()?)
        })?;
        text.map(|t| {
            serde_json::from_str(&t)
                .map_err(|e| self.error(StoreError::Corrupt(format!("compaction report: {e}"))))
        })
        .transpose()
    }

    // --- operations ----------------------------------------------------------------------

    pub fn stats(&self, conv: i64) -> Result<Stats, EngineError> {
        self.read(|c| {
            let mut stats = Stats::default();
            (stats.messages, stats.head_messages, stats.message_tokens) = c.query_row(
                "SELECT count(*), coalesce(sum(head), 0), coalesce(sum(tokens), 0) \
                 FROM messages WHERE conversation_id = ?1",
                [conv],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let mut stmt = c.prepare_cached(
                "SELECT depth, count(*), coalesce(sum(tokens), 0) FROM summaries \
                 WHERE conversation_id = ?1 GROUP BY depth ORDER BY depth",
            )?;
            stats.summaries_by_depth = stmt
                .query_map([conv], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            (stats.context_messages, stats.context_summaries) = c.query_row(
                "SELECT count(message_id), count(summary_id) FROM context_items \
                 WHERE conversation_id = ?1",
                [conv],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            stats.compactions = c.query_row(
                "SELECT count(*) FROM compactions WHERE conversation_id = ?1",
                [conv],
                |r| r.get(0),
            )?;
            Ok(stats)
        })
    }

    /// A consistent copy of the whole database at `to` (which must not exist yet).
    pub fn backup(&self, to: &Path) -> Result<u64, EngineError> {
        if to.exists() {
            return Err(EngineError::invalid_input(format!(
                "backup target {} already exists; choose a new path",
                to.display()
            )));
        }
        if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::private_files::create_dir(dir).map_err(|e| {
                EngineError::failed(format!("backup: cannot create {}: {e}", dir.display()))
            })?;
        }
        // Owner-only from the start: VACUUM INTO writes into an empty file and keeps its mode.
        crate::private_files::create_new_empty(to).map_err(|e| {
            EngineError::failed(format!("backup: cannot create {}: {e}", to.display()))
        })?;
        let target = to.to_string_lossy().into_owned();
        let copied = self.read(|c| {
            c.execute("VACUUM INTO ?1", [&target])?;
            Ok(())
        });
        if let Err(error) = copied {
            // No half-written backup left behind to be mistaken for a good one.
            let _ = std::fs::remove_file(to);
            return Err(error);
        }
        let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
        Ok(bytes)
    }

    /// Size on disk of the database file and of its write-ahead log.
    pub fn disk_bytes(&self) -> (u64, u64) {
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut wal = self.path.as_os_str().to_owned();
        wal.push("-wal");
        (size(&self.path), size(Path::new(&wal)))
    }
}

/// The query in FTS5's language: each term a quoted phrase (so punctuation and FTS operators
/// in it are literal), all required; `*` after a prefix term.
fn fts5_query(query: &FullTextQuery) -> String {
    query
        .terms
        .iter()
        .map(|term| format!("\"{}\"{}", term.text, if term.prefix { "*" } else { "" }))
        .collect::<Vec<_>>()
        .join(if query.any { " OR " } else { " " })
}

/// The context items at `replaced` give way to `summary`, which takes the first one's position.
fn replace_items(
    tx: &rusqlite::Transaction<'_>,
    summary: &SummaryRow,
    replaced: &[i64],
) -> Result<(), StoreError> {
    let Some(first) = replaced.first() else {
        return Err(StoreError::Schema(
            "a summary must replace at least one context item".into(),
        ));
    };
    let mut delete = tx
        .prepare_cached("DELETE FROM context_items WHERE conversation_id = ?1 AND position = ?2")?;
    for position in replaced {
        if delete.execute(params![summary.conversation_id, position])? != 1 {
            return Err(StoreError::Corrupt(format!(
                "context item {position} vanished during compaction"
            )));
        }
    }
    tx.execute(
        "INSERT INTO context_items(conversation_id, position, summary_id) VALUES (?1, ?2, ?3)",
        params![summary.conversation_id, first, summary.id],
    )?;
    Ok(())
}
