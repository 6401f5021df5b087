//! The rows the store holds and hands out, the same whatever database keeps them.

use ctxhost_sdk::Message;
use serde_json::Value;

use super::StoreError;

/// A message as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// The database row id (links and context items use it).
    pub rowid: i64,
    /// The message's sequence number in its conversation (what tools and blocks show).
    pub seq: i64,
    pub role: String,
    /// A leading system message: stored, searchable, never summarized.
    pub head: bool,
    /// The message's JSON exactly as it was received.
    pub json: String,
    pub tokens: u64,
    pub created_at: i64,
}

impl StoredMessage {
    /// The id tools use: `msg_<seq>`.
    pub fn public_id(&self) -> String {
        message_id(self.seq)
    }

    pub fn message(&self) -> Result<Message, StoreError> {
        serde_json::from_str(&self.json)
            .map_err(|e| StoreError::Corrupt(format!("message {}: {e}", self.public_id())))
    }

    pub fn value(&self) -> Result<Value, StoreError> {
        serde_json::from_str(&self.json)
            .map_err(|e| StoreError::Corrupt(format!("message {}: {e}", self.public_id())))
    }
}

/// The id tools use for the message with sequence number `seq`.
pub fn message_id(seq: i64) -> String {
    format!("msg_{seq}")
}

/// `msg_<seq>` back to the sequence number.
pub fn parse_message_id(id: &str) -> Option<i64> {
    id.strip_prefix("msg_")?
        .parse()
        .ok()
        .filter(|seq| *seq >= 0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryKind {
    /// Summarizes raw messages.
    Leaf,
    /// Merges summaries of a lower depth.
    Condensed,
}

impl SummaryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryKind::Leaf => "leaf",
            SummaryKind::Condensed => "condensed",
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Self, StoreError> {
        match text {
            "leaf" => Ok(SummaryKind::Leaf),
            "condensed" => Ok(SummaryKind::Condensed),
            other => Err(StoreError::Corrupt(format!(
                "unknown summary kind `{other}`"
            ))),
        }
    }
}

/// A summary as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// `sum_<16 hex>`.
    pub id: String,
    pub conversation_id: i64,
    pub kind: SummaryKind,
    /// 0 for leaves; one more than the deepest child for condensed summaries.
    pub depth: u32,
    /// The sequence range of the messages it covers, inclusive.
    pub seq_start: i64,
    pub seq_end: i64,
    /// When the covered messages were stored (unix milliseconds).
    pub time_start: i64,
    pub time_end: i64,
    pub message_count: u64,
    /// Tokens of the original messages it covers.
    pub source_tokens: u64,
    /// Tokens of the summary text.
    pub tokens: u64,
    /// Tokens of the rendered block in the model's context.
    pub block_tokens: u64,
    pub text: String,
    /// Which summarizer wrote it (`truncation` when the engine's own fallback did).
    pub summarizer: String,
    /// 0 normal, 1 aggressive, 2 deterministic truncation.
    pub escalation: u8,
    pub created_at: i64,
}

/// What a new summary stands for.
#[derive(Debug, Clone)]
pub enum Sources {
    /// A leaf: message row ids, in order.
    Messages(Vec<i64>),
    /// A condensed summary: child summary ids, in order.
    Children(Vec<String>),
}

/// What search sees of a stored message: derived from its JSON, never stored twice.
pub fn searchable(json: &str, seq: i64) -> Result<String, StoreError> {
    let message: ctxhost_sdk::Message = serde_json::from_str(json)
        .map_err(|e| StoreError::Corrupt(format!("message {}: {e}", message_id(seq))))?;
    Ok(message.searchable_text().into_owned())
}

/// A message to store.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub role: String,
    pub head: bool,
    pub json: String,
    pub text: String,
    pub tokens: u64,
    pub hash: String,
    /// The message it follows in the host's order: part of its identity.
    pub prev: Prev,
}

/// The message a new one follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prev {
    /// None: it is the first (head messages are outside the chain and use this too).
    First,
    /// A message already stored, by row id.
    Stored(i64),
    /// An earlier message of the same batch, by index.
    New(usize),
}

/// A stored non-head message as ingest sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRef {
    pub rowid: i64,
    pub seq: i64,
    /// Row id of the message it follows (0: the first).
    pub prev: i64,
    pub hash: String,
}

/// What one entry of the context list is, without loading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKey {
    /// A stored message, by row id.
    Message(i64),
    /// A summary, by id.
    Summary(String),
}

/// How a conversation's context list becomes another: the items it already starts with stay
/// (with their positions), the rest is replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextChange {
    /// How many of the new items are there already.
    pub kept: usize,
    /// The position from which the stored items go (none: only additions).
    pub delete_from: Option<i64>,
    /// The position of the first new item.
    pub next_position: i64,
}

/// The change from `current` (position, message row id, summary id, in order) to `items`;
/// `None` when they are the same.
pub fn context_change(
    current: &[(i64, Option<i64>, Option<String>)],
    items: &[ItemKey],
) -> Option<ContextChange> {
    let kept = current
        .iter()
        .zip(items)
        .take_while(|((_, message, summary), item)| match item {
            ItemKey::Message(rowid) => *message == Some(*rowid),
            ItemKey::Summary(id) => summary.as_deref() == Some(id.as_str()),
        })
        .count();
    if kept == current.len() && kept == items.len() {
        return None;
    }
    Some(ContextChange {
        kept,
        delete_from: current.get(kept).map(|(position, ..)| *position),
        next_position: if kept == 0 {
            0
        } else {
            current[kept - 1].0 + 1
        },
    })
}

/// One entry of the context list.
#[derive(Debug, Clone, PartialEq)]
pub enum ContextItem {
    Message(StoredMessage),
    Summary(SummaryRow),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ItemRow {
    pub position: i64,
    pub item: ContextItem,
}

/// A full-text or regex match.
#[derive(Debug, Clone)]
pub enum Hit {
    Message {
        rowid: i64,
        seq: i64,
        role: String,
        text: String,
        /// bm25 rank for full-text matches (lower is better), match count for regex (higher is
        /// better, stored negated so lower is better too).
        rank: f64,
    },
    Summary {
        summary: SummaryRow,
        rank: f64,
    },
}

impl Hit {
    /// The newest sequence number the hit covers (for recency order).
    pub fn recency(&self) -> i64 {
        match self {
            Hit::Message { seq, .. } => *seq,
            Hit::Summary { summary, .. } => summary.seq_end,
        }
    }

    pub fn rank(&self) -> f64 {
        match self {
            Hit::Message { rank, .. } | Hit::Summary { rank, .. } => *rank,
        }
    }
}

/// Sizes of one conversation's store, for `status`.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub messages: u64,
    pub head_messages: u64,
    pub message_tokens: u64,
    /// (depth, count, tokens)
    pub summaries_by_depth: Vec<(u32, u64, u64)>,
    pub context_messages: u64,
    pub context_summaries: u64,
    pub compactions: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_round_trip() {
        assert_eq!(parse_message_id(&message_id(42)), Some(42));
        assert_eq!(parse_message_id("msg_x"), None);
        assert_eq!(parse_message_id("sum_0"), None);
    }
}
