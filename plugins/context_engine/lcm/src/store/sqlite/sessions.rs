//! Sessions as `ctxhost sessions` sees them: what the store holds per session id, and deleting
//! all of it.
//!
//! A session owns one or more conversations (a reset starts a new one). A session with no
//! message stored holds nothing worth listing: the engine opens a conversation for the default
//! session whenever it starts, so empty ones are left out.

use ctxhost_sdk::{EngineError, SessionInfo};
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::json;

use std::collections::HashMap;

use super::queries::{json_at, summary_from_row, SUMMARY_COLUMNS};
use super::{SqliteStore, StoreError};
use crate::store::migrate::{
    CompactionDump, ContextDump, ConversationDump, MessageDump, SessionDump, SummaryDump,
};

/// One row per session with messages: id, messages, conversations, summaries, deepest
/// summary, newest conversation, last change (RFC 3339, UTC). `?1` limits it to one session
/// when not null.
const SESSIONS: &str = "
    WITH convs AS (
        SELECT session_id, id FROM conversations
        WHERE ?1 IS NULL OR session_id = ?1
    )
    SELECT c.session_id,
           (SELECT count(*) FROM messages m JOIN convs x ON m.conversation_id = x.id
             WHERE x.session_id = c.session_id) AS messages,
           count(*) AS conversations,
           (SELECT count(*) FROM summaries s JOIN convs x ON s.conversation_id = x.id
             WHERE x.session_id = c.session_id) AS summaries,
           (SELECT max(depth) FROM summaries s JOIN convs x ON s.conversation_id = x.id
             WHERE x.session_id = c.session_id) AS max_depth,
           max(c.id) AS current,
           (SELECT strftime('%Y-%m-%dT%H:%M:%fZ', max(t) / 1000.0, 'unixepoch') FROM (
                SELECT max(created_at) AS t FROM conversations WHERE session_id = c.session_id
                UNION ALL
                SELECT max(m.created_at) FROM messages m JOIN convs x ON m.conversation_id = x.id
                 WHERE x.session_id = c.session_id
                UNION ALL
                SELECT max(s.created_at) FROM summaries s JOIN convs x ON s.conversation_id = x.id
                 WHERE x.session_id = c.session_id
           )) AS updated
    FROM convs c
    GROUP BY c.session_id
    HAVING messages > 0
    ORDER BY c.session_id";

/// Tokens of the context list after the head (the system prompt, which the host sends each
/// turn, is not counted): raw messages and summary blocks.
const CONTEXT_TOKENS: &str = "
    SELECT coalesce(sum(coalesce(m.tokens, s.block_tokens)), 0), count(*)
    FROM context_items ci
    LEFT JOIN messages m ON m.id = ci.message_id
    LEFT JOIN summaries s ON s.id = ci.summary_id
    WHERE ci.conversation_id = ?1";

/// Everything of the session `?1`, in an order that never leaves a row pointing at a deleted one
/// mid-way; conversations go last, since every other statement finds the rows through them.
const DELETE_SESSION: &[&str] = &[
    "DELETE FROM context_items WHERE conversation_id IN
         (SELECT id FROM conversations WHERE session_id = ?1)",
    "DELETE FROM summary_messages WHERE summary_id IN
         (SELECT s.id FROM summaries s JOIN conversations c ON c.id = s.conversation_id
          WHERE c.session_id = ?1)",
    "DELETE FROM summary_parents WHERE parent_id IN
         (SELECT s.id FROM summaries s JOIN conversations c ON c.id = s.conversation_id
          WHERE c.session_id = ?1)",
    "DELETE FROM summaries WHERE conversation_id IN
         (SELECT id FROM conversations WHERE session_id = ?1)",
    "DELETE FROM messages WHERE conversation_id IN
         (SELECT id FROM conversations WHERE session_id = ?1)",
    "DELETE FROM compactions WHERE conversation_id IN
         (SELECT id FROM conversations WHERE session_id = ?1)",
    "DELETE FROM conversations WHERE session_id = ?1",
];

impl SqliteStore {
    /// Every session holding messages, by id.
    pub fn sessions(&self) -> Result<Vec<SessionInfo>, EngineError> {
        self.read(|c| sessions(c, None))
    }

    /// One session, `None` when the store holds no message for it.
    pub fn session(&self, session_id: &str) -> Result<Option<SessionInfo>, EngineError> {
        self.read(|c| Ok(sessions(c, Some(session_id))?.pop()))
    }

    /// Deletes everything stored for `session_id` in one transaction: its conversations, their
    /// messages, summaries and the links between them, context lists and compaction reports
    /// (the full-text rows go with their messages and summaries, through the delete triggers).
    /// Returns whether the session held any message.
    pub fn delete_session(&mut self, session_id: &str) -> Result<bool, EngineError> {
        self.write(|tx| {
            let held: i64 = tx.query_row(
                "SELECT count(*) FROM messages WHERE conversation_id IN \
                 (SELECT id FROM conversations WHERE session_id = ?1)",
                [session_id],
                |r| r.get(0),
            )?;
            for delete in DELETE_SESSION {
                tx.execute(delete, [session_id])?;
            }
            Ok(held > 0)
        })
    }
}

impl SqliteStore {
    /// Everything stored for `session_id`, for `migrate_session`.
    pub fn export_session(&self, session_id: &str) -> Result<SessionDump, EngineError> {
        self.read(|c| export(c, session_id))
    }
}

fn export(c: &Connection, session_id: &str) -> Result<SessionDump, StoreError> {
    let mut dump = SessionDump::default();
    let conversations = c
        .prepare("SELECT id, created_at FROM conversations WHERE session_id = ?1 ORDER BY id")?
        .query_map([session_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for (conv, created_at) in conversations {
        let mut out = ConversationDump {
            created_at,
            ..ConversationDump::default()
        };
        let mut messages = c.prepare(
            "SELECT m.seq, m.role, m.head, m.json, m.tokens, m.hash, p.seq, m.created_at \
             FROM messages m LEFT JOIN messages p ON p.id = m.prev_id \
             WHERE m.conversation_id = ?1 ORDER BY m.seq",
        )?;
        out.messages = messages
            .query_map([conv], |r| {
                Ok(MessageDump {
                    seq: r.get(0)?,
                    role: r.get(1)?,
                    head: r.get(2)?,
                    json: json_at(r, 3)?,
                    tokens: r.get(4)?,
                    hash: r.get(5)?,
                    prev_seq: r.get(6)?,
                    created_at: r.get(7)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        let mut sources: HashMap<String, Vec<i64>> = HashMap::new();
        let mut links = c.prepare(
            "SELECT sm.summary_id, m.seq FROM summary_messages sm \
             JOIN summaries s ON s.id = sm.summary_id \
             JOIN messages m ON m.id = sm.message_id \
             WHERE s.conversation_id = ?1 ORDER BY sm.summary_id, sm.ord",
        )?;
        for link in links.query_map([conv], |r| Ok((r.get::<_, String>(0)?, r.get(1)?)))? {
            let (summary, seq) = link?;
            sources.entry(summary).or_default().push(seq);
        }
        let mut children: HashMap<String, Vec<String>> = HashMap::new();
        let mut links = c.prepare(
            "SELECT p.parent_id, p.child_id FROM summary_parents p \
             JOIN summaries s ON s.id = p.parent_id \
             WHERE s.conversation_id = ?1 ORDER BY p.parent_id, p.ord",
        )?;
        for link in links.query_map([conv], |r| Ok((r.get::<_, String>(0)?, r.get(1)?)))? {
            let (parent, child) = link?;
            children.entry(parent).or_default().push(child);
        }
        let mut summaries = c.prepare(&format!(
            "SELECT {SUMMARY_COLUMNS} FROM summaries s WHERE s.conversation_id = ?1"
        ))?;
        for summary in summaries.query_map([conv], |r| summary_from_row(r, 0))? {
            let mut summary = summary?;
            summary.conversation_id = 0;
            out.summaries.push(SummaryDump {
                sources: sources.remove(&summary.id).unwrap_or_default(),
                children: children.remove(&summary.id).unwrap_or_default(),
                row: summary,
            });
        }
        out.summaries.sort_by(|a, b| a.row.id.cmp(&b.row.id));
        let mut items = c.prepare(
            "SELECT ci.position, m.seq, ci.summary_id FROM context_items ci \
             LEFT JOIN messages m ON m.id = ci.message_id \
             WHERE ci.conversation_id = ?1 ORDER BY ci.position",
        )?;
        out.context = items
            .query_map([conv], |r| {
                Ok(ContextDump {
                    position: r.get(0)?,
                    message_seq: r.get(1)?,
                    summary_id: r.get(2)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        let mut compactions = c.prepare(
            "SELECT created_at, report FROM compactions WHERE conversation_id = ?1 ORDER BY id",
        )?;
        out.compactions = compactions
            .query_map([conv], |r| {
                Ok(CompactionDump {
                    created_at: r.get(0)?,
                    report: r.get(1)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        dump.conversations.push(out);
    }
    Ok(dump)
}

fn sessions(c: &Connection, only: Option<&str>) -> Result<Vec<SessionInfo>, StoreError> {
    let mut stmt = c.prepare_cached(SESSIONS)?;
    let rows = stmt
        .query_map(params![only], |r| {
            Ok(Row {
                id: r.get(0)?,
                messages: r.get(1)?,
                conversations: r.get(2)?,
                summaries: r.get(3)?,
                max_depth: r.get(4)?,
                current: r.get(5)?,
                updated: r.get(6)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut tokens = c.prepare_cached(CONTEXT_TOKENS)?;
    rows.into_iter()
        .map(|row| {
            let (context_tokens, context_items): (u64, u64) = tokens
                .query_row([row.current], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?
                .unwrap_or_default();
            Ok(SessionInfo {
                id: row.id,
                messages: row.messages,
                context_tokens: Some(context_tokens),
                updated: row.updated,
                details: json!({
                    "conversations": row.conversations,
                    "summaries": row.summaries,
                    "max_depth": row.max_depth,
                    "context_items": context_items,
                }),
            })
        })
        .collect()
}

/// One row of [`SESSIONS`].
struct Row {
    id: String,
    messages: u64,
    conversations: u64,
    summaries: u64,
    max_depth: Option<u32>,
    current: i64,
    updated: Option<String>,
}
