//! The context list in memory: what the model sees after the head, as compaction and assembly
//! work on it. The store's `context_items` table is the truth; this mirrors it for one call.

use ctxhost_sdk::{EngineError, Message};

use ctxhost_lcm_store::{ContextItem, Store, StoredMessage, SummaryRow};

/// One entry of the context list.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its position in `context_items` (ordered, possibly with gaps).
    pub position: i64,
    /// What it costs in the prompt: the message, or the rendered summary block.
    pub tokens: u64,
    pub kind: EntryKind,
}

#[derive(Debug, Clone)]
pub enum EntryKind {
    Message {
        stored: StoredMessage,
        message: Message,
    },
    Summary(SummaryRow),
}

impl Entry {
    pub fn message(&self) -> Option<&Message> {
        match &self.kind {
            EntryKind::Message { message, .. } => Some(message),
            EntryKind::Summary(_) => None,
        }
    }

    pub fn summary(&self) -> Option<&SummaryRow> {
        match &self.kind {
            EntryKind::Summary(summary) => Some(summary),
            EntryKind::Message { .. } => None,
        }
    }

    pub fn is_message(&self) -> bool {
        self.message().is_some()
    }

    pub fn is_tool_result(&self) -> bool {
        self.message().is_some_and(Message::is_tool_result)
    }

    pub fn is_user_message(&self) -> bool {
        self.message().is_some_and(Message::is_user)
    }
}

/// Loads a conversation's context list, parsing each stored message.
pub fn load(store: &Store, conv: i64) -> Result<Vec<Entry>, EngineError> {
    store
        .context(conv)?
        .into_iter()
        .map(|row| {
            let (tokens, kind) = match row.item {
                ContextItem::Message(stored) => {
                    let message = stored.message().map_err(|e| store.error(e))?;
                    (stored.tokens, EntryKind::Message { stored, message })
                }
                ContextItem::Summary(summary) => {
                    (summary.block_tokens, EntryKind::Summary(summary))
                }
            };
            Ok(Entry {
                position: row.position,
                tokens,
                kind,
            })
        })
        .collect()
}

pub fn tokens(entries: &[Entry]) -> u64 {
    entries.iter().map(|e| e.tokens).sum()
}
