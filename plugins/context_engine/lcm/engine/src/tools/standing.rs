//! The standing facts a search touches: the rules, constraints, facts, goals and preferences
//! stated in the matching messages (read as the offline summary reads them), each with every
//! value its subject was given in the conversation and which one is current.

use std::collections::HashSet;

use ctxhost_offline_summary::budget::floor_boundary;
use ctxhost_offline_summary::standing::{extract, Origin, Standing};
use ctxhost_sdk::EngineError;
use serde_json::{json, Value};

use super::ToolContext;
use ctxhost_lcm_store::{message_id, FullTextQuery, Hit, Term};

/// Most messages read for one subject's history.
const HISTORY: usize = 50;
/// Most subjects reported for one search.
const SUBJECTS: usize = 4;
/// The first matches of a search read for standing facts, and how much of each: a search
/// stays about as fast as it was.
const HITS_READ: usize = 10;
const TEXT_READ: usize = 8 * 1024;

/// A standing item and the message that stated it.
struct Stated {
    item: Standing,
    seq: i64,
}

/// The standing items of the first `hits` that `matches` (their subject or value), each with
/// its subject's history: `[{kind, subject, current, values: [{value, text, id, seq,
/// current}]}]`.
pub fn touched(
    ctx: &ToolContext<'_>,
    hits: &[Hit],
    matches: impl Fn(&str) -> bool,
) -> Result<Vec<Value>, EngineError> {
    let mut subjects: Vec<Standing> = Vec::new();
    let messages = hits.iter().filter_map(|hit| match hit {
        Hit::Message { role, text, .. } => Some((role, text)),
        Hit::Summary { .. } => None,
    });
    for (role, text) in messages.take(HITS_READ) {
        for item in stated(role, text) {
            let relevant = matches(&format!("{} {}", item.subject, item.value));
            if relevant && !subjects.iter().any(|s| s.same_subject(&item)) {
                subjects.push(item);
            }
        }
    }
    subjects.truncate(SUBJECTS);
    let mut out = Vec::with_capacity(subjects.len());
    for subject in subjects {
        let history = history(ctx, &subject)?;
        let last = history.len().saturating_sub(1);
        let values: Vec<Value> = history
            .iter()
            .enumerate()
            .map(|(index, stated)| {
                json!({
                    "value": stated.item.value,
                    "text": stated.item.text,
                    "id": message_id(stated.seq),
                    "seq": stated.seq,
                    "current": index == last,
                })
            })
            .collect();
        out.push(json!({
            "kind": subject.kind.label(),
            "subject": subject.subject,
            "current": history.last().map(|s| s.item.value.as_str()),
            "values": values,
        }));
    }
    Ok(out)
}

/// Every value `subject` was given in the conversation, oldest first: the messages holding
/// any of its words, read for standing items of the same subject.
fn history(ctx: &ToolContext<'_>, subject: &Standing) -> Result<Vec<Stated>, EngineError> {
    let words: HashSet<&str> = subject.subject.split(' ').filter(|w| w.len() > 1).collect();
    let query = FullTextQuery {
        terms: words
            .iter()
            .map(|word| Term {
                text: word.to_string(),
                prefix: false,
            })
            .collect(),
        any: true,
    };
    let mut found: Vec<Stated> = Vec::new();
    if query.terms.is_empty() {
        return Ok(found);
    }
    let hits = ctx
        .store
        .fts_messages(ctx.conv, &query, (i64::MIN, i64::MAX), false, HISTORY)?;
    for hit in hits {
        let Hit::Message {
            seq, role, text, ..
        } = hit
        else {
            continue;
        };
        for item in stated(&role, &text) {
            let repeated = found
                .iter()
                .any(|f| f.item.text == item.text && f.item.value == item.value);
            if item.same_subject(subject) && !repeated {
                found.push(Stated { item, seq });
            }
        }
    }
    // Oldest first; a message's own items in the order it states them.
    found.sort_by_key(|stated| stated.seq);
    // The same value stated again is one entry, at its latest statement.
    let mut seen: HashSet<String> = HashSet::new();
    let mut unique: Vec<Stated> = Vec::new();
    for stated in found.into_iter().rev() {
        if seen.insert(stated.item.value.to_lowercase()) {
            unique.push(stated);
        }
    }
    unique.reverse();
    Ok(unique)
}

/// The standing items a stored message states (in its first [`TEXT_READ`] bytes), by its role.
fn stated(role: &str, text: &str) -> Vec<Standing> {
    let text = &text[..floor_boundary(text, TEXT_READ)];
    match role {
        "user" | "system" => extract(text, Origin::User),
        "tool" => extract(text, Origin::Tool),
        _ => Vec::new(),
    }
}
