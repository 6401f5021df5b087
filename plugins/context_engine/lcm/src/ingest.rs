//! Ingest: storing every message the host passes, exactly once.
//!
//! The host re-sends the whole context on every call: the full history, or the list this engine
//! returned last time (head, summary blocks, fresh tail) plus whatever arrived since. So:
//! - leading system messages are the head: stored once per distinct content;
//! - summary blocks this engine rendered are views of stored summaries and are skipped;
//! - the remaining messages are aligned against the newest stored ones: the longest run of them
//!   that ends exactly where the store ends is already stored, and only what follows is new.
//!   Aligning by position (not by content alone) keeps a repeated message ("ok", "continue")
//!   that really was said twice.
//! - messages *before* that run which match nothing in it (another engine's summary, or turns it
//!   kept, after the user swapped engines mid-session) are looked up by content in the whole
//!   conversation: those already stored are skipped, the others are stored, in order, ahead of
//!   the new messages, so nothing the host sends is ever lost.
//! - without any positional anchor (the host's own list after such messages were stored, say),
//!   the leading messages already stored in the conversation, by content and count, are the
//!   re-sent history, and what follows them is new.

use std::collections::HashMap;

use ctxhost_sdk::{sequence, EngineError, HostServices, Message, MESSAGE_OVERHEAD_TOKENS};

use crate::blocks;
use crate::ids::message_hash;
use crate::store::{NewMessage, Store};

/// What one ingest did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ingested {
    /// Messages newly stored (the recovered ones included).
    pub stored: usize,
    /// Summary blocks recognised and skipped.
    pub skipped_blocks: usize,
    /// Messages before the aligned run that were not stored yet (e.g. another engine's summary
    /// left in the context): stored ahead of the new messages.
    pub recovered: usize,
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
                new.push(prepare(message, json, hash, true, services));
            }
        }
    }

    let mut skipped_blocks = 0;
    let mut rest = Vec::new();
    for message in &messages[head_len..] {
        if blocks::block_id(message).is_some() {
            skipped_blocks += 1;
        } else {
            let json = to_json(message)?;
            let hash = message_hash(&json);
            rest.push((message, json, hash));
        }
    }
    let hashes: Vec<&str> = rest.iter().map(|(_, _, h)| h.as_str()).collect();
    let stored_tail = store.raw_tail_hashes(conv, hashes.len())?;
    let (known, matched) = align(&stored_tail, &hashes);
    let plan = if stored_tail.is_empty() || (matched > 0 && matched == known) {
        // The common case: nothing stored yet, or a clean positional match.
        Plan {
            recovered: Vec::new(),
            new_from: known,
        }
    } else {
        // Without an anchor any leading message may be re-sent history; with one, only those
        // up to the end of the aligned run.
        let upto = if matched == 0 { hashes.len() } else { known };
        let mut distinct: Vec<&str> = hashes[..upto].to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let counts = store.raw_hash_counts(conv, &distinct)?;
        let last = stored_tail.last().map_or("", String::as_str);
        by_content(&hashes, (known, matched), last, counts)
    };
    if !plan.recovered.is_empty() {
        services.info(&format!(
            "lcm: {} message(s) before the stored tail were not stored yet (another engine's \
             work?); stored ahead of the new ones",
            plan.recovered.len()
        ));
    }
    let recovered = plan.recovered.len();
    let mut rest: Vec<Option<(&Message, String, String)>> = rest.into_iter().map(Some).collect();
    let order = plan.recovered.into_iter().chain(plan.new_from..rest.len());
    for index in order {
        if let Some((message, json, hash)) = rest[index].take() {
            new.push(prepare(message, json, hash, false, services));
        }
    }
    let stored = store.append_messages(conv, &new)?;
    Ok(Ingested {
        stored,
        skipped_blocks,
        recovered,
    })
}

/// Which of the incoming (non-head, non-block) messages to store.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    /// Indexes before the aligned run that are not stored yet, in order.
    recovered: Vec<usize>,
    /// Everything from here on is new.
    new_from: usize,
}

/// The plan when the positional alignment leaves something open: `known` leading messages of
/// which only the last `matched` lined up with the stored tail (or none did). `counts` holds how
/// often each incoming hash is stored among the conversation's non-head messages; `last` is the
/// newest stored one.
fn by_content(
    incoming: &[&str],
    (known, matched): (usize, usize),
    last: &str,
    counts: HashMap<String, u64>,
) -> Plan {
    let mut available = counts;
    let mut take = |hash: &str| match available.get_mut(hash) {
        Some(count) if *count > 0 => {
            *count -= 1;
            true
        }
        _ => false,
    };
    if matched == 0 {
        // No anchor: the leading run of messages already stored is re-sent history, up to the
        // newest stored message when it is in there (what follows it may repeat an old "ok"
        // that was really said again).
        let run = incoming.iter().take_while(|hash| take(hash)).count();
        let new_from = incoming[..run]
            .iter()
            .rposition(|hash| *hash == last)
            .map_or(run, |at| at + 1);
        return Plan {
            recovered: Vec::new(),
            new_from,
        };
    }
    // The aligned run accounts for its own stored copies first.
    for hash in &incoming[known - matched..known] {
        take(hash);
    }
    let recovered = (0..known - matched)
        .filter(|&index| !take(incoming[index]))
        .collect();
    Plan {
        recovered,
        new_from: known,
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
    }
}

/// How many leading `incoming` messages are already stored, and how many of those were
/// matched one for one against the newest stored messages (`stored`, oldest first).
///
/// Candidates are the places where `incoming` has the newest stored message. A *clean*
/// candidate matches everything before it (the host sent our tail, or the full history): the
/// latest clean one wins. Without one, the longest run of at least two matches wins (unknown
/// messages such as another engine's summary precede it); a lone match after unknown messages
/// could be a repeated "ok", so it is not trusted.
fn align(stored: &[String], incoming: &[&str]) -> (usize, usize) {
    let Some(last) = stored.last() else {
        return (0, 0);
    };
    let m = stored.len();
    let run_at = |end: usize| {
        let mut run = 0;
        while run < end && run < m && incoming[end - 1 - run] == stored[m - 1 - run] {
            run += 1;
        }
        run
    };
    // A clean run is at most as long as the store.
    for end in (1..=incoming.len().min(m)).rev() {
        if incoming[end - 1] == last && run_at(end) == end {
            return (end, end);
        }
    }
    let mut best: Option<(usize, usize)> = None; // (run, end)
    for end in (1..=incoming.len()).rev() {
        if incoming[end - 1] != last {
            continue;
        }
        let run = run_at(end);
        if run >= 2 && best.is_none_or(|(best_run, _)| run > best_run) {
            best = Some((run, end));
            if run == incoming.len().min(m) {
                break; // no later candidate can have a longer run
            }
        }
    }
    best.map_or((0, 0), |(run, end)| (end, run))
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
            let prepared = prepare(&message, json.clone(), hash, false, &services);
            assert_eq!(prepared.tokens, services.count_message_tokens(&message));
            assert_eq!(prepared.text, message.searchable_text());
            assert_eq!(prepared.json, json);
        }
    }

    fn s(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn nothing_stored_means_everything_is_new() {
        assert_eq!(align(&[], &["a", "b"]), (0, 0));
    }

    #[test]
    fn a_full_resend_is_recognised() {
        assert_eq!(align(&s(&["a", "b", "c"]), &["a", "b", "c", "d"]), (3, 3));
    }

    #[test]
    fn a_returned_tail_plus_new_messages_is_recognised() {
        // The store holds a..e; the host sends the tail d, e and one new message.
        assert_eq!(align(&s(&["c", "d", "e"]), &["d", "e", "f"]), (2, 2));
        assert_eq!(align(&s(&["d", "e"]), &["e", "f"]), (1, 1));
    }

    #[test]
    fn a_repeated_message_is_new_when_it_follows_the_stored_end() {
        // Stored ends with "ok"; the host appends another "ok".
        assert_eq!(align(&s(&["x", "ok"]), &["x", "ok", "ok"]), (2, 2));
        assert_eq!(align(&s(&["ok"]), &["ok", "ok"]), (1, 1));
    }

    #[test]
    fn a_repeating_loop_is_not_mistaken_for_the_stored_tail() {
        // The agent repeats A, B, C: the context is our tail A, B, C plus a new A, B, C.
        let stored = s(&["Z", "A", "B", "C"]);
        assert_eq!(align(&stored, &["A", "B", "C", "A", "B", "C"]), (3, 3));
    }

    fn counts(items: &[(&str, u64)]) -> HashMap<String, u64> {
        items.iter().map(|(h, n)| (h.to_string(), *n)).collect()
    }

    #[test]
    fn a_foreign_message_before_the_aligned_run_is_recovered() {
        // Stored a..d; the host sends another engine's summary S, our c, d, and a new e.
        let incoming = ["S", "c", "d", "e"];
        let (known, matched) = align(&s(&["a", "b", "c", "d"]), &incoming);
        let plan = by_content(
            &incoming,
            (known, matched),
            "d",
            counts(&[("c", 1), ("d", 1)]),
        );
        assert_eq!(
            plan,
            Plan {
                recovered: vec![0],
                new_from: 3
            }
        );
    }

    #[test]
    fn messages_stored_long_ago_are_not_recovered_twice() {
        // The other engine kept the first exchange (stored long ago) ahead of its summary; the
        // aligned run's own copies are not counted for the prefix ("c" twice: once stored).
        let incoming = ["a", "c", "S", "S", "c", "d", "e"];
        let (known, matched) = align(&s(&["x", "y", "z", "b", "c", "d"]), &incoming);
        assert_eq!((known, matched), (6, 2));
        let plan = by_content(
            &incoming,
            (known, matched),
            "d",
            counts(&[("a", 1), ("c", 1), ("d", 1)]),
        );
        assert_eq!(
            plan,
            Plan {
                recovered: vec![1, 2, 3],
                new_from: 6
            }
        );
    }

    #[test]
    fn without_an_anchor_the_leading_stored_messages_are_history() {
        // The host's own list after S was stored behind our d: S, c, d, e are all stored (out
        // of their stored order); the "ok" after e is new even though an older "ok" is stored.
        let incoming = ["S", "c", "d", "e", "ok", "f"];
        let (known, matched) = align(&s(&["c", "d", "S", "e"]), &incoming);
        assert_eq!((known, matched), (0, 0));
        let stored = counts(&[("S", 1), ("c", 1), ("d", 1), ("e", 1), ("ok", 1)]);
        let plan = by_content(&incoming, (known, matched), "e", stored);
        assert_eq!(
            plan,
            Plan {
                recovered: vec![],
                new_from: 4
            }
        );
        // The newest stored message is gone (another engine summarized it): the leading
        // stored messages (its protected first exchange) are still history.
        let plan = by_content(&["a", "n", "c"], (0, 0), "e", counts(&[("a", 1), ("c", 1)]));
        assert_eq!(plan.new_from, 1);
        // Nothing stored in front: everything is new.
        let plan = by_content(&["n", "c"], (0, 0), "e", counts(&[("c", 1)]));
        assert_eq!(plan.new_from, 0);
    }

    #[test]
    fn foreign_messages_before_the_tail_are_not_aligned() {
        // Another engine's summary, then our stored tail c, d, then a new message.
        assert_eq!(
            align(&s(&["a", "b", "c", "d"]), &["S", "c", "d", "e"]),
            (3, 2)
        );
        // A lone match after a foreign message is not trusted.
        assert_eq!(align(&s(&["a", "b", "c", "d"]), &["S", "d", "e"]), (0, 0));
    }
}
