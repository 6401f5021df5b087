//! Search on SQLite: full-text through the FTS5 indexes (bm25 ranks), and the scans a
//! regular expression is matched against. The rest of the store's queries are written once, in
//! `store/`; these stay here because FTS5's query language and plans are SQLite's own.

use rusqlite::params;
use rusqlite::types::{Value, ValueRef};

use super::sql::LiteRow;
use super::{codec, Hit, SqliteStore, SummaryRow};
use crate::queries::summary_from_row;
use crate::{searchable, FullTextQuery};
use ctxhost_sdk::EngineError;

/// The summary columns, for the statements written here.
const SUMMARY_COLUMNS: &str = summary_columns!();

impl SqliteStore {
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
            "lcm_messages_fts.rank, lcm_messages_fts.rowid DESC"
        } else {
            "lcm_messages_fts.rowid DESC"
        };
        let query = fts5_query(query);
        let sql = format!(
            "SELECT lcm_messages_fts.rowid, lcm_messages_fts.rank FROM lcm_messages_fts \
             CROSS JOIN lcm_messages m ON m.id = lcm_messages_fts.rowid \
             WHERE lcm_messages_fts MATCH ?1 AND m.conversation_id = ?2 AND m.seq >= ?3 AND m.seq < ?4 \
             ORDER BY {order} LIMIT ?5"
        );
        self.with_connection(|c| {
            let mut stmt = c.prepare_cached(&sql)?;
            let page = stmt
                .query_map(params![query, conv, since, before, limit as i64], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            let mut row =
                c.prepare_cached("SELECT seq, role, json FROM lcm_messages WHERE id = ?1")?;
            let mut hits = Vec::with_capacity(page.len());
            for (rowid, rank) in page {
                let (seq, role, json): (i64, String, Value) = row.query_row([rowid], |r| {
                    Ok((r.get(0)?, r.get(1)?, Value::from(r.get_ref(2)?)))
                })?;
                let json = codec::decode(ValueRef::from(&json))?;
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
            "SELECT lcm_summaries_fts.rowid, lcm_summaries_fts.rank FROM lcm_summaries_fts \
             CROSS JOIN lcm_summaries s ON s.rowid = lcm_summaries_fts.rowid \
             WHERE lcm_summaries_fts MATCH ?1 AND s.conversation_id = ?2 \
               AND s.seq_end >= ?3 AND s.seq_start < ?4 \
             ORDER BY lcm_summaries_fts.rank, s.seq_end DESC LIMIT ?5"
        } else {
            "SELECT s.rowid, 0.0 FROM lcm_summaries s INDEXED BY summaries_by_end \
             WHERE s.conversation_id = ?2 AND s.seq_end >= ?3 AND s.seq_start < ?4 \
               AND s.rowid IN (SELECT rowid FROM lcm_summaries_fts \
                               WHERE lcm_summaries_fts MATCH ?1) \
             ORDER BY s.seq_end DESC LIMIT ?5"
        };
        self.with_connection(|c| {
            let mut stmt = c.prepare_cached(sql)?;
            let page = stmt
                .query_map(params![query, conv, since, before, limit as i64], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            let mut row = c.prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM lcm_summaries s WHERE s.rowid = ?1"
            ))?;
            let mut hits = Vec::with_capacity(page.len());
            for (rowid, rank) in page {
                let summary =
                    row.query_row([rowid], |r| Ok(summary_from_row(&LiteRow(r), 0)))??;
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
        self.with_connection(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, seq, role, json FROM lcm_messages \
                 WHERE conversation_id = ?1 AND seq >= ?2 AND seq < ?3 ORDER BY seq DESC",
            )?;
            let mut rows = stmt.query(params![conv, since, before])?;
            while let Some(row) = rows.next()? {
                let seq: i64 = row.get(1)?;
                let role = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
                let json = codec::decode(row.get_ref(3)?)?;
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
        self.with_connection(|c| {
            let sql = format!(
                "SELECT {SUMMARY_COLUMNS} FROM lcm_summaries s WHERE s.conversation_id = ?1 \
                 AND s.seq_end >= ?2 AND s.seq_start < ?3 ORDER BY s.seq_end DESC, s.depth DESC"
            );
            let mut stmt = c.prepare_cached(&sql)?;
            let mut rows = stmt.query(params![conv, since, before])?;
            while let Some(row) = rows.next()? {
                if !visit(summary_from_row(&LiteRow(row), 0)?) {
                    break;
                }
            }
            Ok(())
        })
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
