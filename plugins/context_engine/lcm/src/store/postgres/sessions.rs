//! Sessions on PostgreSQL: listing and deleting what each session holds, and a whole session
//! read out or written in as a [`SessionDump`] (`migrate_session`).

use std::collections::HashMap;

use ctxhost_sdk::{EngineError, SessionInfo};
use postgres::GenericClient;
use serde_json::json;

use super::queries::{insert_summary_row, signed, summary_from_row, SUMMARY_COLUMNS};
use super::{get, unsigned, PostgresStore};
use crate::store::migrate::{
    CompactionDump, ContextDump, ConversationDump, Copied, MessageDump, SessionDump, SummaryDump,
};
use crate::store::{searchable, StoreError};

/// One row per session with messages (as the SQLite store's listing): id, messages,
/// conversations, summaries, deepest summary, newest conversation, last change.
const SESSIONS: &str = "
    WITH convs AS (
        SELECT session_id, id, created_at FROM lcm_conversations
        WHERE $1::text IS NULL OR session_id = $1
    ),
    per_session AS (
        SELECT c.session_id,
               count(*) AS conversations,
               max(c.id) AS current,
               max(c.created_at) AS created
        FROM convs c GROUP BY c.session_id
    )
    SELECT p.session_id,
           (SELECT count(*) FROM lcm_messages m JOIN convs x ON m.conversation_id = x.id
             WHERE x.session_id = p.session_id) AS messages,
           p.conversations,
           (SELECT count(*) FROM lcm_summaries s JOIN convs x ON s.conversation_id = x.id
             WHERE x.session_id = p.session_id) AS summaries,
           (SELECT max(depth) FROM lcm_summaries s JOIN convs x ON s.conversation_id = x.id
             WHERE x.session_id = p.session_id) AS max_depth,
           p.current,
           to_char(to_timestamp(greatest(p.created,
               (SELECT max(m.created_at) FROM lcm_messages m JOIN convs x ON m.conversation_id = x.id
                 WHERE x.session_id = p.session_id),
               (SELECT max(s.created_at) FROM lcm_summaries s JOIN convs x ON s.conversation_id = x.id
                 WHERE x.session_id = p.session_id)) / 1000.0) AT TIME ZONE 'UTC',
               'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS updated
    FROM per_session p
    ORDER BY p.session_id COLLATE \"C\"";

const CONTEXT_TOKENS: &str = "
    SELECT coalesce(sum(coalesce(m.tokens, s.block_tokens)), 0)::bigint, count(*)
    FROM lcm_context_items ci
    LEFT JOIN lcm_messages m ON m.id = ci.message_id
    LEFT JOIN lcm_summaries s ON s.id = ci.summary_id
    WHERE ci.conversation_id = $1";

/// Everything of the session `$1`, links first, conversations last.
const DELETE_SESSION: &[&str] = &[
    "DELETE FROM lcm_context_items WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = $1)",
    "DELETE FROM lcm_summary_messages WHERE summary_id IN
         (SELECT s.id FROM lcm_summaries s JOIN lcm_conversations c ON c.id = s.conversation_id
          WHERE c.session_id = $1)",
    "DELETE FROM lcm_summary_parents WHERE parent_id IN
         (SELECT s.id FROM lcm_summaries s JOIN lcm_conversations c ON c.id = s.conversation_id
          WHERE c.session_id = $1)",
    "DELETE FROM lcm_summaries WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = $1)",
    "DELETE FROM lcm_messages WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = $1)",
    "DELETE FROM lcm_compactions WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = $1)",
    "DELETE FROM lcm_conversations WHERE session_id = $1",
];

impl PostgresStore {
    pub fn sessions(&self) -> Result<Vec<SessionInfo>, EngineError> {
        self.read(|c| sessions(c, None))
    }

    pub fn session(&self, session_id: &str) -> Result<Option<SessionInfo>, EngineError> {
        self.read(|c| Ok(sessions(c, Some(session_id))?.pop()))
    }

    pub fn delete_session(&mut self, session_id: &str) -> Result<bool, EngineError> {
        self.write(|tx| {
            let held = unsigned(
                &tx.query_one(
                    "SELECT count(*) FROM lcm_messages WHERE conversation_id IN \
                     (SELECT id FROM lcm_conversations WHERE session_id = $1)",
                    &[&session_id],
                )?,
                0,
            )?;
            for delete in DELETE_SESSION {
                tx.execute(*delete, &[&session_id])?;
            }
            Ok(held > 0)
        })
    }

    /// Everything stored for `session_id`.
    pub fn export_session(&self, session_id: &str) -> Result<SessionDump, EngineError> {
        self.read(|c| export(c, session_id))
    }

    /// Writes `dump` in as session `session_id`, unless the session is there already.
    pub fn import_session(
        &self,
        session_id: &str,
        dump: &SessionDump,
    ) -> Result<Copied, EngineError> {
        self.write(|tx| {
            let present = export(tx, session_id)?;
            if !present.is_empty() {
                return Ok(if present == *dump {
                    Copied::Unchanged
                } else {
                    Copied::KeptNewer
                });
            }
            for conversation in &dump.conversations {
                import_conversation(tx, session_id, conversation)?;
            }
            Ok(Copied::Added)
        })
    }
}

fn sessions(
    c: &mut impl GenericClient,
    only: Option<&str>,
) -> Result<Vec<SessionInfo>, StoreError> {
    let mut out = Vec::new();
    for row in c.query(SESSIONS, &[&only])? {
        let messages = unsigned(&row, 1)?;
        if messages == 0 {
            continue;
        }
        let current: i64 = get(&row, 5)?;
        let tokens = c.query_one(CONTEXT_TOKENS, &[&current])?;
        let max_depth: Option<i32> = get(&row, 4)?;
        out.push(SessionInfo {
            id: get(&row, 0)?,
            messages,
            context_tokens: Some(unsigned(&tokens, 0)?),
            updated: get(&row, 6)?,
            details: json!({
                "conversations": unsigned(&row, 2)?,
                "summaries": unsigned(&row, 3)?,
                "max_depth": max_depth,
                "context_items": unsigned(&tokens, 1)?,
            }),
        });
    }
    Ok(out)
}

fn export(c: &mut impl GenericClient, session_id: &str) -> Result<SessionDump, StoreError> {
    let mut dump = SessionDump::default();
    let conversations = c.query(
        "SELECT id, created_at FROM lcm_conversations WHERE session_id = $1 ORDER BY id",
        &[&session_id],
    )?;
    for conversation in conversations {
        let conv: i64 = get(&conversation, 0)?;
        let mut out = ConversationDump {
            created_at: get(&conversation, 1)?,
            ..ConversationDump::default()
        };
        for row in c.query(
            "SELECT m.seq, m.role, m.head, m.json, m.tokens, m.hash, p.seq, m.created_at \
             FROM lcm_messages m LEFT JOIN lcm_messages p ON p.id = m.prev_id \
             WHERE m.conversation_id = $1 ORDER BY m.seq",
            &[&conv],
        )? {
            out.messages.push(MessageDump {
                seq: get(&row, 0)?,
                role: get(&row, 1)?,
                head: get(&row, 2)?,
                json: get(&row, 3)?,
                tokens: unsigned(&row, 4)?,
                hash: get(&row, 5)?,
                prev_seq: get(&row, 6)?,
                created_at: get(&row, 7)?,
            });
        }
        let mut sources: HashMap<String, Vec<i64>> = HashMap::new();
        for row in c.query(
            "SELECT sm.summary_id, m.seq FROM lcm_summary_messages sm \
             JOIN lcm_summaries s ON s.id = sm.summary_id \
             JOIN lcm_messages m ON m.id = sm.message_id \
             WHERE s.conversation_id = $1 ORDER BY sm.summary_id, sm.ord",
            &[&conv],
        )? {
            sources
                .entry(get(&row, 0)?)
                .or_default()
                .push(get(&row, 1)?);
        }
        let mut children: HashMap<String, Vec<String>> = HashMap::new();
        for row in c.query(
            "SELECT p.parent_id, p.child_id FROM lcm_summary_parents p \
             JOIN lcm_summaries s ON s.id = p.parent_id \
             WHERE s.conversation_id = $1 ORDER BY p.parent_id, p.ord",
            &[&conv],
        )? {
            children
                .entry(get(&row, 0)?)
                .or_default()
                .push(get(&row, 1)?);
        }
        for row in c.query(
            &format!("SELECT {SUMMARY_COLUMNS} FROM lcm_summaries s WHERE s.conversation_id = $1"),
            &[&conv],
        )? {
            let mut summary = summary_from_row(&row, 0)?;
            summary.conversation_id = 0;
            out.summaries.push(SummaryDump {
                sources: sources.remove(&summary.id).unwrap_or_default(),
                children: children.remove(&summary.id).unwrap_or_default(),
                row: summary,
            });
        }
        out.summaries.sort_by(|a, b| a.row.id.cmp(&b.row.id));
        for row in c.query(
            "SELECT ci.position, m.seq, ci.summary_id FROM lcm_context_items ci \
             LEFT JOIN lcm_messages m ON m.id = ci.message_id \
             WHERE ci.conversation_id = $1 ORDER BY ci.position",
            &[&conv],
        )? {
            out.context.push(ContextDump {
                position: get(&row, 0)?,
                message_seq: get(&row, 1)?,
                summary_id: get(&row, 2)?,
            });
        }
        for row in c.query(
            "SELECT created_at, report FROM lcm_compactions WHERE conversation_id = $1 ORDER BY id",
            &[&conv],
        )? {
            out.compactions.push(CompactionDump {
                created_at: get(&row, 0)?,
                report: get(&row, 1)?,
            });
        }
        dump.conversations.push(out);
    }
    Ok(dump)
}

fn import_conversation(
    tx: &mut impl GenericClient,
    session_id: &str,
    conversation: &ConversationDump,
) -> Result<(), StoreError> {
    let conv: i64 = get(
        &tx.query_one(
            "INSERT INTO lcm_conversations (session_id, created_at) VALUES ($1, $2) RETURNING id",
            &[&session_id, &conversation.created_at],
        )?,
        0,
    )?;
    let messages = &conversation.messages;
    let ids = super::ingest::allocate_message_ids(tx, messages.len())?;
    let by_seq: HashMap<i64, i64> = messages
        .iter()
        .map(|m| m.seq)
        .zip(ids.iter().copied())
        .collect();
    let row_of = |seq: i64| {
        by_seq
            .get(&seq)
            .copied()
            .ok_or_else(|| StoreError::Corrupt(format!("no message with seq {seq} to link to")))
    };
    for (chunk, chunk_ids) in messages.chunks(2_000).zip(ids.chunks(2_000)) {
        let seqs: Vec<i64> = chunk.iter().map(|m| m.seq).collect();
        let roles: Vec<&str> = chunk.iter().map(|m| m.role.as_str()).collect();
        let heads: Vec<bool> = chunk.iter().map(|m| m.head).collect();
        let jsons: Vec<&str> = chunk.iter().map(|m| m.json.as_str()).collect();
        let texts: Vec<String> = chunk
            .iter()
            .map(|m| searchable(&m.json, m.seq))
            .collect::<Result<_, _>>()?;
        let tokens: Vec<i64> = chunk.iter().map(|m| signed(m.tokens)).collect();
        let hashes: Vec<&str> = chunk.iter().map(|m| m.hash.as_str()).collect();
        let prevs: Vec<i64> = chunk
            .iter()
            .map(|m| m.prev_seq.map_or(Ok(0), row_of))
            .collect::<Result<_, _>>()?;
        let created: Vec<i64> = chunk.iter().map(|m| m.created_at).collect();
        tx.execute(
            "INSERT INTO lcm_messages (id, conversation_id, seq, role, head, json, text, tokens, \
             hash, prev_id, created_at) \
             SELECT id, $1, seq, role, head, json, text, tokens, hash, prev_id, created_at \
             FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::bool[], $6::text[], \
                         $7::text[], $8::bigint[], $9::text[], $10::bigint[], $11::bigint[]) \
               AS t(id, seq, role, head, json, text, tokens, hash, prev_id, created_at)",
            &[
                &conv, &chunk_ids, &seqs, &roles, &heads, &jsons, &texts, &tokens, &hashes, &prevs,
                &created,
            ],
        )?;
    }
    for summary in &conversation.summaries {
        let mut row = summary.row.clone();
        row.conversation_id = conv;
        insert_summary_row(tx, &row)?;
        let sources: Vec<i64> = summary
            .sources
            .iter()
            .map(|seq| row_of(*seq))
            .collect::<Result<_, _>>()?;
        let ords: Vec<i32> = (0..sources.len() as i32).collect();
        tx.execute(
            "INSERT INTO lcm_summary_messages (summary_id, ord, message_id) \
             SELECT $1, o, m FROM unnest($2::int[], $3::bigint[]) AS t(o, m)",
            &[&row.id, &ords, &sources],
        )?;
        let ords: Vec<i32> = (0..summary.children.len() as i32).collect();
        tx.execute(
            "INSERT INTO lcm_summary_parents (parent_id, ord, child_id) \
             SELECT $1, o, c FROM unnest($2::int[], $3::text[]) AS t(o, c)",
            &[&row.id, &ords, &summary.children],
        )?;
    }
    let positions: Vec<i64> = conversation.context.iter().map(|c| c.position).collect();
    let items: Vec<Option<i64>> = conversation
        .context
        .iter()
        .map(|c| c.message_seq.map(row_of).transpose())
        .collect::<Result<_, _>>()?;
    let summaries: Vec<Option<&str>> = conversation
        .context
        .iter()
        .map(|c| c.summary_id.as_deref())
        .collect();
    tx.execute(
        "INSERT INTO lcm_context_items (conversation_id, position, message_id, summary_id) \
         SELECT $1, p, m, s FROM unnest($2::bigint[], $3::bigint[], $4::text[]) AS t(p, m, s)",
        &[&conv, &positions, &items, &summaries],
    )?;
    for compaction in &conversation.compactions {
        tx.execute(
            "INSERT INTO lcm_compactions (conversation_id, created_at, report) VALUES ($1, $2, $3)",
            &[&conv, &compaction.created_at, &compaction.report],
        )?;
    }
    Ok(())
}
