//! The engine's queries on PostgreSQL, as methods of [`PostgresStore`]: conversations, the
//! context list, summaries and their links, lookups, telemetry.

use postgres::{GenericClient, Row};
use serde_json::Value;

use super::{get, unsigned, PostgresStore};
use crate::store::{
    now_ms, ContextItem, ItemRow, Sources, Stats, StoreError, StoredMessage, SummaryKind,
    SummaryRow,
};
use ctxhost_sdk::EngineError;

pub(super) const MESSAGE_COLUMNS: &str =
    "m.id, m.seq, m.role, m.head, m.json, m.tokens, m.created_at";

pub(super) fn message_from_row(row: &Row, at: usize) -> Result<StoredMessage, StoreError> {
    Ok(StoredMessage {
        rowid: get(row, at)?,
        seq: get(row, at + 1)?,
        role: get(row, at + 2)?,
        head: get(row, at + 3)?,
        json: get(row, at + 4)?,
        tokens: unsigned(row, at + 5)?,
        created_at: get(row, at + 6)?,
    })
}

pub(super) const SUMMARY_COLUMNS: &str = "s.id, s.conversation_id, s.kind, s.depth, s.seq_start, \
     s.seq_end, s.time_start, s.time_end, s.message_count, s.source_tokens, s.tokens, \
     s.block_tokens, s.text, s.summarizer, s.escalation, s.created_at";

pub(super) fn summary_from_row(row: &Row, at: usize) -> Result<SummaryRow, StoreError> {
    let depth: i32 = get(row, at + 3)?;
    let escalation: i16 = get(row, at + 14)?;
    Ok(SummaryRow {
        id: get(row, at)?,
        conversation_id: get(row, at + 1)?,
        kind: SummaryKind::parse(get(row, at + 2)?)?,
        depth: u32::try_from(depth)
            .map_err(|_| StoreError::Corrupt(format!("summary depth {depth}")))?,
        seq_start: get(row, at + 4)?,
        seq_end: get(row, at + 5)?,
        time_start: get(row, at + 6)?,
        time_end: get(row, at + 7)?,
        message_count: unsigned(row, at + 8)?,
        source_tokens: unsigned(row, at + 9)?,
        tokens: unsigned(row, at + 10)?,
        block_tokens: unsigned(row, at + 11)?,
        text: get(row, at + 12)?,
        summarizer: get(row, at + 13)?,
        escalation: u8::try_from(escalation)
            .map_err(|_| StoreError::Corrupt(format!("summary escalation {escalation}")))?,
        created_at: get(row, at + 15)?,
    })
}

/// A count the rows carry as unsigned, as the BIGINT PostgreSQL stores.
pub(super) fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl PostgresStore {
    // --- conversations -------------------------------------------------------------------

    pub fn current_conversation(&mut self, session_id: &str) -> Result<i64, EngineError> {
        let found = self.read(|c| {
            c.query_opt(
                "SELECT id FROM lcm_conversations WHERE session_id = $1 ORDER BY id DESC LIMIT 1",
                &[&session_id],
            )?
            .map(|row| get::<i64>(&row, 0))
            .transpose()
        })?;
        match found {
            Some(id) => Ok(id),
            None => self.new_conversation(session_id),
        }
    }

    pub fn new_conversation(&mut self, session_id: &str) -> Result<i64, EngineError> {
        self.write(|tx| {
            get(
                &tx.query_one(
                    "INSERT INTO lcm_conversations (session_id, created_at) VALUES ($1, $2) \
                     RETURNING id",
                    &[&session_id, &now_ms()],
                )?,
                0,
            )
        })
    }

    // --- the context list ----------------------------------------------------------------

    pub fn context(&self, conv: i64) -> Result<Vec<ItemRow>, EngineError> {
        self.read(|c| {
            let sql = format!(
                "SELECT ci.position, ci.message_id IS NOT NULL, {MESSAGE_COLUMNS}, {SUMMARY_COLUMNS} \
                 FROM lcm_context_items ci \
                 LEFT JOIN lcm_messages m ON m.id = ci.message_id \
                 LEFT JOIN lcm_summaries s ON s.id = ci.summary_id \
                 WHERE ci.conversation_id = $1 ORDER BY ci.position"
            );
            let mut items = Vec::new();
            for row in c.query(&sql, &[&conv])? {
                let position: i64 = get(&row, 0)?;
                let is_message: bool = get(&row, 1)?;
                // A dangling item (its row is gone) reads as NULLs: report it, never guess.
                let item = if is_message {
                    if get::<Option<i64>>(&row, 2)?.is_none() {
                        return Err(StoreError::Corrupt(format!(
                            "context item {position} points at a missing message"
                        )));
                    }
                    ContextItem::Message(message_from_row(&row, 2)?)
                } else {
                    if get::<Option<String>>(&row, 9)?.is_none() {
                        return Err(StoreError::Corrupt(format!(
                            "context item {position} points at a missing summary"
                        )));
                    }
                    ContextItem::Summary(summary_from_row(&row, 9)?)
                };
                items.push(ItemRow { position, item });
            }
            Ok(items)
        })
    }

    pub fn insert_summary(
        &mut self,
        summary: &SummaryRow,
        sources: &Sources,
        replaced: &[i64],
    ) -> Result<(), EngineError> {
        self.write(|tx| {
            insert_summary_row(tx, summary)?;
            match sources {
                Sources::Messages(rowids) => {
                    let ords: Vec<i32> = (0..rowids.len() as i32).collect();
                    tx.execute(
                        "INSERT INTO lcm_summary_messages (summary_id, ord, message_id) \
                         SELECT $1, o, m FROM unnest($2::int[], $3::bigint[]) AS t(o, m)",
                        &[&summary.id, &ords, rowids],
                    )?;
                }
                Sources::Children(children) => {
                    let ords: Vec<i32> = (0..children.len() as i32).collect();
                    tx.execute(
                        "INSERT INTO lcm_summary_parents (parent_id, ord, child_id) \
                         SELECT $1, o, c FROM unnest($2::int[], $3::text[]) AS t(o, c)",
                        &[&summary.id, &ords, children],
                    )?;
                }
            }
            replace_items(tx, summary, replaced)
        })
    }

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
                "SELECT {MESSAGE_COLUMNS} FROM lcm_messages m \
                 WHERE m.conversation_id = $1 AND m.seq = $2"
            );
            c.query_opt(&sql, &[&conv, &seq])?
                .map(|row| message_from_row(&row, 0))
                .transpose()
        })
    }

    /// Messages by row id, in the order asked.
    pub fn messages_by_rowid(&self, rowids: &[i64]) -> Result<Vec<StoredMessage>, EngineError> {
        self.read(|c| {
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM unnest($1::bigint[]) WITH ORDINALITY AS w(id, ord) \
                 LEFT JOIN lcm_messages m ON m.id = w.id ORDER BY w.ord"
            );
            let rows = c.query(&sql, &[&rowids])?;
            let mut out = Vec::with_capacity(rows.len());
            for (row, rowid) in rows.iter().zip(rowids) {
                if get::<Option<i64>>(row, 0)?.is_none() {
                    return Err(StoreError::Corrupt(format!(
                        "linked message row {rowid} is missing"
                    )));
                }
                out.push(message_from_row(row, 0)?);
            }
            Ok(out)
        })
    }

    pub fn summary(&self, conv: i64, id: &str) -> Result<Option<SummaryRow>, EngineError> {
        self.read(|c| {
            let sql = format!(
                "SELECT {SUMMARY_COLUMNS} FROM lcm_summaries s \
                 WHERE s.id = $1 AND s.conversation_id = $2"
            );
            c.query_opt(&sql, &[&id, &conv])?
                .map(|row| summary_from_row(&row, 0))
                .transpose()
        })
    }

    pub fn summary_children(&self, id: &str) -> Result<Vec<String>, EngineError> {
        self.strings(
            "SELECT child_id FROM lcm_summary_parents WHERE parent_id = $1 ORDER BY ord",
            id,
        )
    }

    pub fn summary_parents(&self, id: &str) -> Result<Vec<String>, EngineError> {
        self.strings(
            "SELECT parent_id FROM lcm_summary_parents WHERE child_id = $1 ORDER BY parent_id",
            id,
        )
    }

    pub fn summary_source_seqs(&self, id: &str) -> Result<Vec<i64>, EngineError> {
        self.read(|c| {
            c.query(
                "SELECT m.seq FROM lcm_summary_messages sm JOIN lcm_messages m \
                 ON m.id = sm.message_id WHERE sm.summary_id = $1 ORDER BY sm.ord",
                &[&id],
            )?
            .iter()
            .map(|row| get(row, 0))
            .collect()
        })
    }

    pub fn summary_in_context(&self, conv: i64, id: &str) -> Result<bool, EngineError> {
        self.read(|c| {
            get(
                &c.query_one(
                    "SELECT EXISTS (SELECT 1 FROM lcm_context_items \
                     WHERE conversation_id = $1 AND summary_id = $2)",
                    &[&conv, &id],
                )?,
                0,
            )
        })
    }

    /// (row id, seq, tokens) of every message under a summary, in conversation order.
    pub fn messages_under(&self, id: &str) -> Result<Vec<(i64, i64, u64)>, EngineError> {
        self.read(|c| {
            c.query(
                "WITH RECURSIVE tree(id) AS ( \
                     SELECT $1::text \
                     UNION SELECT p.child_id FROM lcm_summary_parents p \
                       JOIN tree ON p.parent_id = tree.id \
                 ) \
                 SELECT m.id, m.seq, m.tokens FROM tree \
                 JOIN lcm_summary_messages sm ON sm.summary_id = tree.id \
                 JOIN lcm_messages m ON m.id = sm.message_id \
                 ORDER BY m.seq",
                &[&id],
            )?
            .iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?, unsigned(row, 2)?)))
            .collect()
        })
    }

    /// For a message: its leaf summary and that leaf's topmost ancestor; `None` while raw.
    pub fn covering(&self, message_rowid: i64) -> Result<Option<(String, String)>, EngineError> {
        self.read(|c| {
            let Some(leaf) = c.query_opt(
                "SELECT summary_id FROM lcm_summary_messages WHERE message_id = $1 LIMIT 1",
                &[&message_rowid],
            )?
            else {
                return Ok(None);
            };
            let leaf: String = get(&leaf, 0)?;
            let top: String = get(
                &c.query_one(
                    "WITH RECURSIVE up(id, level) AS ( \
                         SELECT $1::text, 0 \
                         UNION SELECT p.parent_id, up.level + 1 FROM lcm_summary_parents p \
                           JOIN up ON p.child_id = up.id \
                     ) SELECT id FROM up ORDER BY level DESC LIMIT 1",
                    &[&leaf],
                )?,
                0,
            )?;
            Ok(Some((leaf, top)))
        })
    }

    fn strings(&self, sql: &str, arg: &str) -> Result<Vec<String>, EngineError> {
        self.read(|c| {
            c.query(sql, &[&arg])?
                .iter()
                .map(|row| get(row, 0))
                .collect()
        })
    }

    // --- telemetry -----------------------------------------------------------------------

    pub fn record_compaction(&mut self, conv: i64, report: &Value) -> Result<(), EngineError> {
        let text = report.to_string();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO lcm_compactions (conversation_id, created_at, report) \
                 VALUES ($1, $2, $3)",
                &[&conv, &now_ms(), &text],
            )?;
            Ok(())
        })
    }

    pub fn last_compaction(&self, conv: i64) -> Result<Option<Value>, EngineError> {
        let text: Option<String> = self.read(|c| {
            c.query_opt(
                "SELECT report FROM lcm_compactions WHERE conversation_id = $1 \
                 ORDER BY id DESC LIMIT 1",
                &[&conv],
            )?
            .map(|row| get(&row, 0))
            .transpose()
        })?;
        text.map(|t| {
            serde_json::from_str(&t)
                .map_err(|e| self.error(StoreError::Corrupt(format!("compaction report: {e}"))))
        })
        .transpose()
    }

    pub fn stats(&self, conv: i64) -> Result<Stats, EngineError> {
        self.read(|c| {
            let mut stats = Stats::default();
            let row = c.query_one(
                "SELECT count(*), count(*) FILTER (WHERE head), coalesce(sum(tokens), 0)::bigint \
                 FROM lcm_messages WHERE conversation_id = $1",
                &[&conv],
            )?;
            (stats.messages, stats.head_messages, stats.message_tokens) =
                (unsigned(&row, 0)?, unsigned(&row, 1)?, unsigned(&row, 2)?);
            for row in c.query(
                "SELECT depth, count(*), coalesce(sum(tokens), 0)::bigint FROM lcm_summaries \
                 WHERE conversation_id = $1 GROUP BY depth ORDER BY depth",
                &[&conv],
            )? {
                let depth: i32 = get(&row, 0)?;
                stats.summaries_by_depth.push((
                    depth.max(0) as u32,
                    unsigned(&row, 1)?,
                    unsigned(&row, 2)?,
                ));
            }
            let row = c.query_one(
                "SELECT count(message_id), count(summary_id) FROM lcm_context_items \
                 WHERE conversation_id = $1",
                &[&conv],
            )?;
            (stats.context_messages, stats.context_summaries) =
                (unsigned(&row, 0)?, unsigned(&row, 1)?);
            stats.compactions = unsigned(
                &c.query_one(
                    "SELECT count(*) FROM lcm_compactions WHERE conversation_id = $1",
                    &[&conv],
                )?,
                0,
            )?;
            Ok(stats)
        })
    }
}

/// One summary row (its search columns follow from its text).
pub(super) fn insert_summary_row(
    tx: &mut impl GenericClient,
    summary: &SummaryRow,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO lcm_summaries (id, conversation_id, kind, depth, seq_start, seq_end, \
         time_start, time_end, message_count, source_tokens, tokens, block_tokens, text, \
         summarizer, escalation, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        &[
            &summary.id,
            &summary.conversation_id,
            &summary.kind.as_str(),
            &(summary.depth as i32),
            &summary.seq_start,
            &summary.seq_end,
            &summary.time_start,
            &summary.time_end,
            &signed(summary.message_count),
            &signed(summary.source_tokens),
            &signed(summary.tokens),
            &signed(summary.block_tokens),
            &summary.text,
            &summary.summarizer,
            &(summary.escalation as i16),
            &summary.created_at,
        ],
    )?;
    Ok(())
}

/// The context items at `replaced` give way to `summary`, which takes the first one's position.
fn replace_items(
    tx: &mut impl GenericClient,
    summary: &SummaryRow,
    replaced: &[i64],
) -> Result<(), StoreError> {
    let Some(first) = replaced.first() else {
        return Err(StoreError::Schema(
            "a summary must replace at least one context item".into(),
        ));
    };
    let deleted = tx.execute(
        "DELETE FROM lcm_context_items WHERE conversation_id = $1 AND position = ANY($2)",
        &[&summary.conversation_id, &replaced],
    )?;
    if deleted != replaced.len() as u64 {
        return Err(StoreError::Corrupt(format!(
            "{} of the context items {replaced:?} vanished during compaction",
            replaced.len() as u64 - deleted.min(replaced.len() as u64)
        )));
    }
    tx.execute(
        "INSERT INTO lcm_context_items (conversation_id, position, summary_id) VALUES ($1, $2, $3)",
        &[&summary.conversation_id, first, &summary.id],
    )?;
    Ok(())
}
