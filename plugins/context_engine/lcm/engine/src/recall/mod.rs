//! Recall (`select_context`): per request, the stored summaries and messages most relevant to
//! the newest message that the request does not already hold, brought back within a budget and
//! marked as recalled.
//!
//! The store finds the candidates (its best matches of the words it already indexes, for a
//! query widened by [`expand`]) and recall ranks them itself ([`rank`]: one BM25 over their
//! text), so the same conversation recalls the same items on SQLite and on PostgreSQL (which
//! candidates a store returns can differ only when more than [`CANDIDATES`] match); ties go to
//! the older id, so the same query over the same store always selects the same items. The items go after the request's
//! head and summary blocks, before its verbatim messages: a fixed place, not the end of the
//! conversation. A request that asks nothing new (no words to search for, or nothing found
//! outside the request) keeps the last selection of its conversation, so the provider's prompt
//! cache holds between them.

mod expand;
mod facts_read;
mod rank;

pub use facts_read::FactsRead;
use facts_read::Reading;

use std::cmp::Ordering;

use ctxhost_offline_summary::budget::floor_boundary;
use ctxhost_offline_summary::standing::Standing;
use ctxhost_sdk::{
    ContextSelection, EngineError, HostServices, Message, Recalled, RecalledSource, SelectRequest,
};

use crate::blocks;
use ctxhost_lcm_store::{message_id, FullTextQuery, Hit, Store, Term};

/// Most items one request gets back.
const MAX_ITEMS: usize = 6;
/// Most tokens one request gets back, whatever the budget allows: recall brings back what the
/// newest message needs, not the conversation.
const MAX_TOKENS: u64 = 4_000;
/// Matches read from each of messages and summaries, the store's best first, to be ranked.
const CANDIDATES: usize = 200;
/// The first bytes of a message read for standing facts.
const TEXT_READ: usize = 8 * 1024;

/// One recalled item and its message.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub recalled: Recalled,
    pub message: Message,
    /// A recalled message's text as search sees it: the request may come to carry it verbatim.
    pub verbatim: Option<String>,
}

impl Item {
    /// Whether the request holds this item already: its summary's block, or its message.
    fn held_by(&self, messages: &[Message]) -> bool {
        held(messages, &self.recalled.source, self.verbatim.as_deref())
    }
}

/// What one conversation last selected, kept for requests that ask nothing new.
#[derive(Debug, Clone, Default)]
pub struct LastRecall {
    pub conv: i64,
    pub items: Vec<Item>,
}

/// The selection for `messages` in conversation `conv`. `last` is the conversation's previous
/// selection, replaced by this one; `read` what the previous requests read.
pub fn select(
    store: &Store,
    conv: i64,
    services: &HostServices,
    messages: &[Message],
    request: &SelectRequest,
    last: &mut Option<LastRecall>,
    read: &mut FactsRead,
) -> Result<ContextSelection, EngineError> {
    let asked = request
        .incoming
        .as_ref()
        .or_else(|| messages.iter().rev().find(|m| m.is_user()))
        .map(|message| expand::words(&message.content_text()))
        .unwrap_or_default();
    let budget = request.budget_tokens.min(MAX_TOKENS);
    let mut items = if asked.is_empty() {
        Vec::new()
    } else {
        read.start();
        let standing = standing_in(messages, read);
        let mut terms = expand::expand(&asked, &standing);
        let mut hits = search(store, conv, &terms)?;
        // The facts the first matches state widen the query once more: their subjects and
        // values are the session's own words for what was asked.
        let stated: Vec<Standing> = hits.iter().flat_map(|hit| stated_by(hit, read)).collect();
        let wider = expand::expand(&terms, &stated);
        if wider.len() > terms.len() {
            terms = wider;
            hits = search(store, conv, &terms)?;
        }
        choose(hits, messages, services, budget)
    };
    let previous = last.take().filter(|last| last.conv == conv);
    if items.is_empty() {
        // Nothing new asked or found: the last selection stands, less what the request now holds
        // and what no longer fits.
        items = previous
            .map(|last| last.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|item| !item.held_by(messages))
            .collect();
        let mut spent = 0;
        items.retain(|item| {
            spent += item.recalled.tokens;
            spent <= budget
        });
    }
    *last = Some(LastRecall {
        conv,
        items: items.clone(),
    });
    let at = place(messages);
    let mut selected = Vec::with_capacity(messages.len() + items.len());
    selected.extend_from_slice(&messages[..at]);
    selected.extend(items.iter().map(|item| item.message.clone()));
    selected.extend_from_slice(&messages[at..]);
    Ok(ContextSelection {
        messages: selected,
        recalled: items.into_iter().map(|item| item.recalled).collect(),
    })
}

/// Where recalled items go: after the system prompt and the summary blocks that follow it.
fn place(messages: &[Message]) -> usize {
    let head = ctxhost_sdk::sequence::head_len(messages);
    head + messages[head..]
        .iter()
        .take_while(|m| blocks::block_id(m).is_some())
        .count()
}

/// The standing facts the request states: those its summary blocks carry and its user and
/// system messages state.
fn standing_in(messages: &[Message], read: &mut FactsRead) -> Vec<Standing> {
    let mut out = Vec::new();
    for message in messages {
        let reading = if blocks::block_id(message).is_some() {
            Reading::Listed
        } else if message.is_user() || message.role() == "system" {
            Reading::User
        } else {
            continue;
        };
        let text = message.content_text();
        out.extend(read.read(&text[..floor_boundary(&text, TEXT_READ)], reading));
    }
    out
}

/// The standing facts a match states.
fn stated_by(hit: &Hit, read: &mut FactsRead) -> Vec<Standing> {
    let (text, reading) = match hit {
        Hit::Message { role, text, .. } => match role.as_str() {
            "user" | "system" => (text.as_str(), Reading::User),
            "tool" => (text.as_str(), Reading::Tool),
            _ => return Vec::new(),
        },
        Hit::Summary { summary, .. } => (summary.text.as_str(), Reading::Listed),
    };
    let text = match reading {
        Reading::Listed => text,
        _ => &text[..floor_boundary(text, TEXT_READ)],
    };
    read.read(text, reading)
}

/// The store's matches for any of `terms`, messages and summaries (its best [`CANDIDATES`]
/// of each), best first by [`rank::bm25`] over their text; ties by id, older first.
fn search(store: &Store, conv: i64, terms: &[String]) -> Result<Vec<Hit>, EngineError> {
    let query = FullTextQuery {
        terms: terms
            .iter()
            .map(|text| Term {
                text: text.clone(),
                prefix: false,
            })
            .collect(),
        any: true,
    };
    let everything = (i64::MIN, i64::MAX);
    let mut hits = store.fts_messages(conv, &query, everything, true, CANDIDATES)?;
    hits.extend(store.fts_summaries(conv, &query, everything, true, CANDIDATES)?);
    let texts: Vec<&str> = hits.iter().map(hit_text).collect();
    let scores = rank::bm25(terms, &texts);
    let mut ranked: Vec<(f64, Hit)> = scores.into_iter().zip(hits).collect();
    ranked.sort_by(|(a, a_hit), (b, b_hit)| {
        b.partial_cmp(a)
            .unwrap_or(Ordering::Equal)
            .then_with(|| key(a_hit).cmp(&key(b_hit)))
    });
    Ok(ranked.into_iter().map(|(_, hit)| hit).collect())
}

/// The text a hit is ranked on: a message's as search sees it, a summary's own.
fn hit_text(hit: &Hit) -> &str {
    match hit {
        Hit::Message { text, .. } => text,
        Hit::Summary { summary, .. } => &summary.text,
    }
}

/// A hit's place among equals: messages by sequence number, then summaries by id.
fn key(hit: &Hit) -> (u8, i64, String) {
    match hit {
        Hit::Message { seq, .. } => (0, *seq, String::new()),
        Hit::Summary { summary, .. } => (1, summary.seq_start, summary.id.clone()),
    }
}

/// The best `hits` the request does not hold, as recalled messages, within `budget` tokens and
/// [`MAX_ITEMS`].
fn choose(hits: Vec<Hit>, messages: &[Message], services: &HostServices, budget: u64) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    let mut spent = 0;
    for hit in hits {
        if items.len() == MAX_ITEMS {
            break;
        }
        let (source, body) = match &hit {
            Hit::Message {
                seq, role, text, ..
            } => (
                RecalledSource::Messages {
                    ids: vec![message_id(*seq)],
                },
                format!("{role}: {text}"),
            ),
            Hit::Summary { summary, .. } => (
                RecalledSource::Summary {
                    id: summary.id.clone(),
                },
                format!(
                    "{}\nuse lcm_expand with id {} to recover the detail",
                    blocks::escape(summary.text.trim_end()),
                    summary.id
                ),
            ),
        };
        let verbatim = match &hit {
            Hit::Message { text, .. } => Some(text.clone()),
            Hit::Summary { .. } => None,
        };
        if held(messages, &source, verbatim.as_deref())
            || items.iter().any(|i| i.recalled.source == source)
        {
            continue;
        }
        let mut recalled = Recalled { source, tokens: 0 };
        let message = Message::user(format!("{}\n{body}", recalled.marker_line()));
        recalled.tokens = services.count_messages_tokens(std::slice::from_ref(&message));
        if spent + recalled.tokens > budget {
            continue;
        }
        spent += recalled.tokens;
        items.push(Item {
            recalled,
            message,
            verbatim,
        });
    }
    items
}

/// Whether the request holds `source` already: a summary's block, or a message carried
/// verbatim (`verbatim` is its text as search sees it).
fn held(messages: &[Message], source: &RecalledSource, verbatim: Option<&str>) -> bool {
    match source {
        RecalledSource::Summary { id } => messages
            .iter()
            .any(|m| blocks::block_id(m) == Some(id.as_str())),
        RecalledSource::Messages { .. } => {
            verbatim.is_some_and(|text| messages.iter().any(|m| m.searchable_text() == text))
        }
    }
}
