//! Ingest: storing every message the host passes exactly once, and mapping what the host sent
//! onto the store.
//!
//! The rule (the engine's README states it for users): a message's identity in a session is
//! its content *and the message it follows*. Stored messages form a chain (each records the one
//! it followed when it arrived), and what the host sends is walked along that chain:
//! - leading system messages are the head: stored once per distinct content;
//! - a summary block this engine rendered (same id in this conversation, same text byte for
//!   byte) stands for the messages it covers: the walk continues from the last of them;
//! - any other message is the stored one that followed the walk's position with the same
//!   content, when there is one; else, when the host's list skipped stored messages without one
//!   of this engine's blocks (another engine's summary stood in for them), a stored message with
//!   the same content that this walk has not already met or passed under a block; else it is
//!   new, and is stored following the walk's position.
//!
//! So a message really said twice (a second "ok") is stored twice, because it follows a
//! different message; the same transcript replayed, or resumed at any point, or the view this
//! engine returned sent back, stores nothing again; and what the host sent becomes the context
//! list, in the host's order, so the view returned never reaches past where the caller is.

use std::collections::{HashMap, HashSet, VecDeque};

use ctxhost_sdk::{sequence, EngineError, HostServices, Message, MESSAGE_OVERHEAD_TOKENS};

use crate::blocks;
use ctxhost_lcm_store::ids::message_hash;
use ctxhost_lcm_store::{ItemKey, NewMessage, Prev, RawRef, Store, SummaryRow};

/// How many stored messages one read of the walk fetches ahead.
const READ_AHEAD: usize = 256;

/// What one ingest did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ingested {
    /// Messages newly stored.
    pub stored: usize,
    /// Summary blocks recognised (views of stored summaries, never stored as messages).
    pub skipped_blocks: usize,
    /// What the host sent after the head, mapped onto the store, in the host's order.
    pub context: Vec<ItemKey>,
}

/// One non-head message of what the host sent: a block this engine rendered (its summary's
/// id), or a message with its JSON and content hash.
enum Content {
    Block(String),
    Message { json: String, hash: String },
}

/// One non-head message of what the host sent, before it is known to be stored.
enum Slot {
    Known(ItemKey),
    /// Index into the messages to store.
    New(usize),
}

pub fn ingest(
    store: &mut Store,
    conv: i64,
    services: &HostServices,
    messages: &[Message],
) -> Result<Ingested, EngineError> {
    let head_len = sequence::head_len(messages);
    let mut new = Vec::new();
    if head_len > 0 {
        let known = store.head_hashes(conv)?;
        for message in &messages[..head_len] {
            let json = to_json(message)?;
            let hash = message_hash(&json);
            if !known.contains(&hash) && !new.iter().any(|n: &NewMessage| n.hash == hash) {
                new.push(prepare(message, json, hash, true, Prev::First, services));
            }
        }
    }
    let head_new = new.len();

    // The summaries the blocks name are read at once; what is not a block is hashed first,
    // and which of those hashes are stored asked at once: the walk then asks the store about
    // those messages only, not about each new one.
    let named: Vec<&str> = messages[head_len..]
        .iter()
        .filter_map(blocks::block_id)
        .collect();
    let summaries = if named.is_empty() {
        HashMap::new()
    } else {
        store.summaries(conv, &named)?
    };
    let mut contents = Vec::with_capacity(messages.len() - head_len);
    for message in &messages[head_len..] {
        contents.push(match recognised_block(&summaries, message) {
            Some(id) => Content::Block(id),
            None => {
                let json = to_json(message)?;
                let hash = message_hash(&json);
                Content::Message { json, hash }
            }
        });
    }
    let blocks: Vec<&str> = contents
        .iter()
        .filter_map(|content| match content {
            Content::Block(id) => Some(id.as_str()),
            Content::Message { .. } => None,
        })
        .collect();
    let last_messages = if blocks.is_empty() {
        HashMap::new()
    } else {
        store.summaries_last_messages(&blocks)?
    };
    let mut walk = Walk::new(conv, store.has_raw_messages(conv)?);
    if walk.stored_before {
        let hashes: Vec<&str> = contents
            .iter()
            .filter_map(|content| match content {
                Content::Message { hash, .. } => Some(hash.as_str()),
                Content::Block(_) => None,
            })
            .collect();
        walk.stored_hashes = store.stored_hashes(conv, &hashes)?;
    }
    let mut slots = Vec::with_capacity(contents.len());
    let mut skipped_blocks = 0;
    for (message, content) in messages[head_len..].iter().zip(contents) {
        let (json, hash) = match content {
            Content::Block(id) => {
                skipped_blocks += 1;
                walk.pass_block(&id, last_messages.get(&id));
                slots.push(Slot::Known(ItemKey::Summary(id)));
                continue;
            }
            Content::Message { json, hash } => (json, hash),
        };
        match walk.find(store, &hash)? {
            Some(rowid) => slots.push(Slot::Known(ItemKey::Message(rowid))),
            None => {
                let prev = walk.at.prev();
                walk.at = At::New(new.len());
                slots.push(Slot::New(new.len()));
                new.push(prepare(message, json, hash, false, prev, services));
            }
        }
    }
    let rowids = store.append_messages(conv, &new)?;
    if new.len() > head_new {
        services.debug(&format!(
            "lcm: stored {} new message(s)",
            new.len() - head_new
        ));
    }
    let context = slots
        .into_iter()
        .map(|slot| match slot {
            Slot::Known(key) => key,
            Slot::New(index) => ItemKey::Message(rowids[index]),
        })
        .collect();
    Ok(Ingested {
        stored: new.len(),
        skipped_blocks,
        context,
    })
}

/// A block this engine rendered, by its summary's id. Anything else that merely looks like one
/// (a user quoting a block, a forged id, a block of another conversation, an edited block) is
/// an ordinary message.
fn recognised_block(summaries: &HashMap<String, SummaryRow>, message: &Message) -> Option<String> {
    let summary = summaries.get(blocks::block_id(message)?)?;
    let same = message
        .text()
        .is_some_and(|text| text == blocks::render_text(summary));
    same.then(|| summary.id.clone())
}

/// Where the walk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the first message.
    Start,
    /// At a stored message.
    Stored { rowid: i64, seq: i64 },
    /// At a message of this batch, not stored yet (nothing stored can follow it).
    New(usize),
}

impl At {
    fn prev(self) -> Prev {
        match self {
            At::Start => Prev::First,
            At::Stored { rowid, .. } => Prev::Stored(rowid),
            At::New(index) => Prev::New(index),
        }
    }
}

/// The walk along the stored chain.
struct Walk {
    conv: i64,
    at: At,
    /// Stored messages right after the walk's position by sequence number, read ahead: the
    /// chain's next message is nearly always the next one stored.
    ahead: VecDeque<RawRef>,
    ahead_is_all: bool,
    /// Messages this walk met, and the summaries it passed.
    met: HashSet<i64>,
    passed: Vec<String>,
    /// Whether anything was stored before this call: a first ingest (a transcript imported,
    /// say) has nothing to look up.
    stored_before: bool,
    /// Which of the hashes of what the host sent some stored message has: no other can be
    /// found in the store.
    stored_hashes: HashSet<String>,
}

impl Walk {
    fn new(conv: i64, stored_before: bool) -> Self {
        Walk {
            conv,
            at: At::Start,
            ahead: VecDeque::new(),
            ahead_is_all: false,
            met: HashSet::new(),
            passed: Vec::new(),
            stored_before,
            stored_hashes: HashSet::new(),
        }
    }

    fn move_to(&mut self, found: &RawRef) {
        self.at = At::Stored {
            rowid: found.rowid,
            seq: found.seq,
        };
        self.met.insert(found.rowid);
        if self
            .ahead
            .front()
            .is_some_and(|next| next.rowid == found.rowid)
        {
            self.ahead.pop_front();
        } else {
            self.ahead.clear();
            self.ahead_is_all = false;
        }
    }

    /// Passes the block of summary `id`, whose last message is `last` (if it covers one).
    fn pass_block(&mut self, id: &str, last: Option<&RawRef>) {
        self.passed.push(id.to_string());
        if let Some(last) = last {
            self.move_to(last);
            self.met.remove(&last.rowid);
        }
    }

    /// The stored message this one is, if any (the walk moves to it).
    fn find(&mut self, store: &Store, hash: &str) -> Result<Option<i64>, EngineError> {
        if !self.stored_before || !self.stored_hashes.contains(hash) {
            return Ok(None);
        }
        let from = match self.at {
            At::Start => Some((0, -1)),
            At::Stored { rowid, seq } => Some((rowid, seq)),
            At::New(_) => None,
        };
        if let Some((prev, seq)) = from {
            if self.ahead.is_empty() && !self.ahead_is_all {
                let batch = store.raw_after(self.conv, seq, READ_AHEAD)?;
                self.ahead_is_all = batch.len() < READ_AHEAD;
                self.ahead.extend(batch);
            }
            let next = self.ahead.front().cloned();
            let found = match next {
                Some(next) if next.prev == prev && next.hash == hash => Some(next),
                _ => store.raw_child(self.conv, prev, hash)?,
            };
            if let Some(found) = found {
                self.move_to(&found);
                return Ok(Some(found.rowid));
            }
        }
        for candidate in store.raw_with_hash(self.conv, hash)? {
            if !self.met.contains(&candidate.rowid)
                && !store.covered_by_any(candidate.rowid, &self.passed)?
            {
                self.move_to(&candidate);
                return Ok(Some(candidate.rowid));
            }
        }
        Ok(None)
    }
}

fn to_json(message: &Message) -> Result<String, EngineError> {
    serde_json::to_string(message)
        .map_err(|e| EngineError::invalid_input(format!("message cannot be stored: {e}")))
}

fn prepare(
    message: &Message,
    json: String,
    hash: String,
    head: bool,
    prev: Prev,
    services: &HostServices,
) -> NewMessage {
    // The searchable text is built once and counted as it is: the same sum as
    // `HostServices::count_message_tokens`, without building the text a second time.
    let text = message.searchable_text().into_owned();
    let tokens = services.count_tokens(&text) + MESSAGE_OVERHEAD_TOKENS;
    NewMessage {
        role: message.role().to_string(),
        head,
        json,
        text,
        tokens,
        hash,
        prev,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use ctxhost_sdk::ToolCall;
    use ctxhost_sdk_test::FakeHost;

    #[test]
    fn a_prepared_message_costs_what_the_host_would_count() {
        let services = FakeHost::new("lcm").services();
        for message in [
            Message::user("hello there"),
            Message::assistant_tool_calls(vec![ToolCall::new("c1", "bash", "{\"cmd\":\"ls\"}")]),
            Message::tool_result("c1", "a.txt\nb.txt"),
        ] {
            let json = to_json(&message).unwrap();
            let hash = message_hash(&json);
            let prepared = prepare(&message, json.clone(), hash, false, Prev::First, &services);
            assert_eq!(prepared.tokens, services.count_message_tokens(&message));
            assert_eq!(prepared.text, message.searchable_text());
            assert_eq!(prepared.json, json);
        }
    }

    fn store() -> (tempfile::TempDir, Store, i64) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::Sqlite(
            ctxhost_lcm_store::SqliteStore::open(
                &dir.path().join("lcm.sqlite"),
                std::time::Duration::from_millis(100),
            )
            .unwrap(),
        );
        let conv = store.current_conversation("s").unwrap();
        (dir, store, conv)
    }

    fn said(texts: &[&str]) -> Vec<Message> {
        let mut out = vec![Message::system("sys")];
        for (i, text) in texts.iter().enumerate() {
            out.push(if i % 2 == 0 {
                Message::user(*text)
            } else {
                Message::assistant(*text)
            });
        }
        out
    }

    fn stored(store: &Store, conv: i64) -> u64 {
        store.stats(conv).unwrap().messages
    }

    #[test]
    fn a_prefix_sent_again_stores_nothing_and_a_repeat_is_stored() {
        let services = FakeHost::new("lcm").services();
        let (_dir, mut store, conv) = store();
        let all = said(&["a", "ok", "b", "ok", "ok"]);
        let first = ingest(&mut store, conv, &services, &all[..4]).unwrap();
        assert_eq!(first.stored, 4); // the head and a, ok, b
        for end in 1..=4 {
            assert_eq!(
                ingest(&mut store, conv, &services, &all[..end])
                    .unwrap()
                    .stored,
                0
            );
        }
        // The second and third "ok" follow other messages: both are new.
        let rest = ingest(&mut store, conv, &services, &all).unwrap();
        assert_eq!(rest.stored, 2);
        assert_eq!(rest.context.len(), 5);
        assert_eq!(stored(&store, conv), 6);
        assert_eq!(ingest(&mut store, conv, &services, &all).unwrap().stored, 0);
    }

    #[test]
    fn a_view_that_skips_messages_continues_after_them() {
        let services = FakeHost::new("lcm").services();
        let (_dir, mut store, conv) = store();
        let all = said(&["a", "b", "c", "d", "e"]);
        ingest(&mut store, conv, &services, &all).unwrap();
        // Another engine's summary in place of a, b, c; then d, e and a new f.
        let mut view = vec![all[0].clone(), Message::user("[summary of a, b, c]")];
        view.extend_from_slice(&all[4..]);
        view.push(Message::user("f"));
        let again = ingest(&mut store, conv, &services, &view).unwrap();
        assert_eq!(again.stored, 2, "the foreign summary and f");
        assert_eq!(stored(&store, conv), 8);
        assert_eq!(
            ingest(&mut store, conv, &services, &view).unwrap().stored,
            0
        );
    }
}
