//! Sessions as `ctxhost sessions` sees them: what the store holds per session id, and deleting
//! all of it.
//!
//! A session owns one or more conversations (a reset starts a new one). A session with no
//! message stored holds nothing worth listing: the engine opens a conversation for the default
//! session whenever it starts, so empty ones are left out.

use ctxhost_sdk::{EngineError, SessionInfo};
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::json;

use super::{Store, StoreError};

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

impl Store {
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
