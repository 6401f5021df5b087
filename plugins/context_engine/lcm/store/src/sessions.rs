//! Sessions as `ctxhost sessions` sees them, once for both databases: what the store holds per
//! session id, deleting all of it, and a whole session read out or written in as a
//! [`SessionDump`] (`migrate_session`).
//!
//! A session owns one or more conversations (a reset starts a new one). A session with no
//! message stored holds nothing worth listing: the engine opens a conversation for the default
//! session whenever it starts, so empty ones are left out.

use std::collections::HashMap;

use ctxhost_sdk::{EngineError, SessionInfo};
use serde_json::json;

use super::dump::{
    CompactionDump, ContextDump, ConversationDump, Copied, MessageDump, SessionDump, SummaryDump,
};
use super::queries::{insert_summary_row, link_children, link_sources, summary_from_row};
use super::sql::{signed, Backend, Param, Sql, Stmt};
use super::{chain, searchable, StoreError};

/// Every session holding messages, by id.
pub fn sessions(b: &impl Backend) -> Result<Vec<SessionInfo>, EngineError> {
    b.read(|c| list(c, None))
}

/// One session, `None` when the store holds no message for it.
pub fn session(b: &impl Backend, session_id: &str) -> Result<Option<SessionInfo>, EngineError> {
    b.read(|c| Ok(list(c, Some(session_id))?.pop()))
}

/// Deletes everything stored for `session_id` in one transaction: its conversations, their
/// messages, summaries and the links between them, context lists and compaction reports.
/// Returns whether the session held any message.
pub fn delete_session(b: &mut impl Backend, session_id: &str) -> Result<bool, EngineError> {
    b.write(|tx| {
        let session = [Param::Text(session_id)];
        let held = tx.one(Stmt::SessionMessages, &session, |row| row.u64(0))?;
        tx.execute(Stmt::DeleteSession, &session)?;
        Ok(held > 0)
    })
}

/// Everything stored for `session_id`.
pub fn export_session(b: &impl Backend, session_id: &str) -> Result<SessionDump, EngineError> {
    b.read(|c| export(c, session_id))
}

/// Writes `dump` in as session `session_id`, unless the session is there already.
pub fn import_session(
    b: &mut impl Backend,
    session_id: &str,
    dump: &SessionDump,
) -> Result<Copied, EngineError> {
    b.write(|tx| {
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

fn list(c: &mut dyn Sql, only: Option<&str>) -> Result<Vec<SessionInfo>, StoreError> {
    let rows = c.rows(Stmt::Sessions, &[Param::OptText(only)], |row| {
        Ok((
            row.text(0)?,
            row.u64(1)?,
            row.u64(2)?,
            row.u64(3)?,
            row.opt_i64(4)?,
            row.i64(5)?,
            row.opt_text(6)?,
        ))
    })?;
    let mut out = Vec::with_capacity(rows.len());
    for (id, messages, conversations, summaries, max_depth, current, updated) in rows {
        if messages == 0 {
            continue;
        }
        let (context_tokens, context_items) =
            c.one(Stmt::ContextTokens, &[Param::Int(current)], |row| {
                Ok((row.u64(0)?, row.u64(1)?))
            })?;
        out.push(SessionInfo {
            id,
            messages,
            context_tokens: Some(context_tokens),
            updated,
            details: json!({
                "conversations": conversations,
                "summaries": summaries,
                "max_depth": max_depth,
                "context_items": context_items,
            }),
        });
    }
    Ok(out)
}

fn export(c: &mut dyn Sql, session_id: &str) -> Result<SessionDump, StoreError> {
    let mut dump = SessionDump::default();
    let conversations = c.rows(
        Stmt::ExportConversations,
        &[Param::Text(session_id)],
        |row| Ok((row.i64(0)?, row.i64(1)?)),
    )?;
    for (conv, created_at) in conversations {
        let at = [Param::Int(conv)];
        let mut out = ConversationDump {
            created_at,
            ..ConversationDump::default()
        };
        out.messages = c.rows(Stmt::ExportMessages, &at, |row| {
            Ok(MessageDump {
                seq: row.i64(0)?,
                role: row.text(1)?,
                head: row.bool(2)?,
                json: row.json(3)?,
                tokens: row.u64(4)?,
                hash: row.text(5)?,
                prev_seq: row.opt_i64(6)?,
                created_at: row.i64(7)?,
            })
        })?;
        let mut sources: HashMap<String, Vec<i64>> = HashMap::new();
        for (summary, seq) in c.rows(Stmt::ExportSources, &at, |row| {
            Ok((row.text(0)?, row.i64(1)?))
        })? {
            sources.entry(summary).or_default().push(seq);
        }
        let mut children: HashMap<String, Vec<String>> = HashMap::new();
        for (parent, child) in c.rows(Stmt::ExportChildren, &at, |row| {
            Ok((row.text(0)?, row.text(1)?))
        })? {
            children.entry(parent).or_default().push(child);
        }
        for mut summary in c.rows(Stmt::ExportSummaries, &at, |row| summary_from_row(row, 0))? {
            summary.conversation_id = 0;
            out.summaries.push(SummaryDump {
                sources: sources.remove(&summary.id).unwrap_or_default(),
                children: children.remove(&summary.id).unwrap_or_default(),
                row: summary,
            });
        }
        out.summaries.sort_by(|a, b| a.row.id.cmp(&b.row.id));
        out.context = c.rows(Stmt::ExportContext, &at, |row| {
            Ok(ContextDump {
                position: row.i64(0)?,
                message_seq: row.opt_i64(1)?,
                summary_id: row.opt_text(2)?,
            })
        })?;
        out.compactions = c.rows(Stmt::ExportCompactions, &at, |row| {
            Ok(CompactionDump {
                created_at: row.i64(0)?,
                report: row.text(1)?,
            })
        })?;
        dump.conversations.push(out);
    }
    Ok(dump)
}

fn import_conversation(
    tx: &mut dyn Sql,
    session_id: &str,
    conversation: &ConversationDump,
) -> Result<(), StoreError> {
    let conv = tx.one(
        Stmt::NewConversation,
        &[Param::Text(session_id), Param::Int(conversation.created_at)],
        |row| row.i64(0),
    )?;
    let messages = &conversation.messages;
    let ids = chain::allocate_message_ids(tx, messages.len())?;
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
    let texts: Vec<String> = messages
        .iter()
        .map(|m| searchable(&m.json, m.seq))
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::with_capacity(messages.len());
    for ((m, id), text) in messages.iter().zip(&ids).zip(&texts) {
        rows.push(vec![
            Param::Int(*id),
            Param::Int(conv),
            Param::Int(m.seq),
            Param::Text(&m.role),
            Param::Bool(m.head),
            Param::Json(&m.json),
            Param::Text(text),
            Param::Int(signed(m.tokens)),
            Param::Text(&m.hash),
            Param::Int(m.prev_seq.map_or(Ok(0), row_of)?),
            Param::Int(m.created_at),
        ]);
    }
    tx.execute_rows(Stmt::InsertMessages, &rows)?;
    for summary in &conversation.summaries {
        let mut row = summary.row.clone();
        row.conversation_id = conv;
        insert_summary_row(tx, &row)?;
        let sources: Vec<i64> = summary
            .sources
            .iter()
            .map(|seq| row_of(*seq))
            .collect::<Result<_, _>>()?;
        link_sources(tx, &row.id, &sources)?;
        link_children(tx, &row.id, &summary.children)?;
    }
    let items: Vec<Option<i64>> = conversation
        .context
        .iter()
        .map(|c| c.message_seq.map(row_of).transpose())
        .collect::<Result<_, _>>()?;
    let context: Vec<Vec<Param<'_>>> = conversation
        .context
        .iter()
        .zip(items)
        .map(|(c, message)| {
            vec![
                Param::Int(conv),
                Param::Int(c.position),
                Param::OptInt(message),
                Param::OptText(c.summary_id.as_deref()),
            ]
        })
        .collect();
    tx.execute_rows(Stmt::InsertContextItems, &context)?;
    let compactions: Vec<Vec<Param<'_>>> = conversation
        .compactions
        .iter()
        .map(|c| {
            vec![
                Param::Int(conv),
                Param::Int(c.created_at),
                Param::Text(&c.report),
            ]
        })
        .collect();
    tx.execute_rows(Stmt::InsertCompactions, &compactions)
}
