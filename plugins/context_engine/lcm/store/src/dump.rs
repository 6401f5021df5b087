//! A session as it travels between stores: everything stored for it, with row ids replaced by
//! what they stand for (a message by its sequence number, a conversation by its place among
//! the session's), so the same session reads back as the same dump from either database. Its
//! checksum is a sha256 over that dump's canonical JSON.
//!
//! `sessions.rs` reads a dump out of a store and writes one in; `migrate.rs` moves one.

use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::SummaryRow;

/// Everything stored for one session, independent of row ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionDump {
    /// The session's conversations, oldest first (a reset starts a new one).
    pub conversations: Vec<ConversationDump>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConversationDump {
    pub created_at: i64,
    /// By sequence number.
    pub messages: Vec<MessageDump>,
    /// By id; `conversation_id` is 0 (it is the place of the conversation that counts).
    pub summaries: Vec<SummaryDump>,
    /// By position.
    pub context: Vec<ContextDump>,
    /// Oldest first.
    pub compactions: Vec<CompactionDump>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageDump {
    pub seq: i64,
    pub role: String,
    pub head: bool,
    pub json: String,
    pub tokens: u64,
    pub hash: String,
    /// The sequence number of the message it follows; `None` for the first (and the head).
    pub prev_seq: Option<i64>,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryDump {
    #[serde(serialize_with = "summary_fields")]
    pub row: SummaryRow,
    /// A leaf's source messages by sequence number, in order.
    pub sources: Vec<i64>,
    /// A condensed summary's children, in order.
    pub children: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextDump {
    pub position: i64,
    /// The message at this position, by sequence number (else a summary).
    pub message_seq: Option<i64>,
    pub summary_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionDump {
    pub created_at: i64,
    pub report: String,
}

fn summary_fields<S: serde::Serializer>(row: &SummaryRow, s: S) -> Result<S::Ok, S::Error> {
    json!({
        "id": row.id, "kind": row.kind.as_str(), "depth": row.depth,
        "seq_start": row.seq_start, "seq_end": row.seq_end,
        "time_start": row.time_start, "time_end": row.time_end,
        "message_count": row.message_count, "source_tokens": row.source_tokens,
        "tokens": row.tokens, "block_tokens": row.block_tokens, "text": row.text,
        "summarizer": row.summarizer, "escalation": row.escalation,
        "created_at": row.created_at,
    })
    .serialize(s)
}

impl SessionDump {
    pub fn messages(&self) -> u64 {
        self.conversations
            .iter()
            .map(|c| c.messages.len() as u64)
            .sum()
    }

    pub fn summaries(&self) -> u64 {
        self.conversations
            .iter()
            .map(|c| c.summaries.len() as u64)
            .sum()
    }

    pub fn context_items(&self) -> u64 {
        self.conversations
            .iter()
            .map(|c| c.context.len() as u64)
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.conversations.is_empty()
    }

    /// sha256 (hex) over the canonical JSON of the dump.
    pub fn checksum(&self) -> String {
        let canonical = serde_json::to_vec(self).expect("a dump serializes");
        Sha256::digest(&canonical)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// What became of a session copied into PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// It was not there: copied.
    Added,
    /// The same session, byte for byte, was there already: nothing added.
    Unchanged,
    /// Another version of it is there (it went on in PostgreSQL): kept as it is.
    KeptNewer,
}

impl Copied {
    pub fn as_str(self) -> &'static str {
        match self {
            Copied::Added => "added",
            Copied::Unchanged => "unchanged",
            Copied::KeptNewer => "kept_newer",
        }
    }
}
