//! The algorithm: keep the head and a recent tail, drop the middle behind one marker.
//!
//! ```text
//! [system…, first user] [ middle ……………………………… ] [ tail: recent turns, by token budget ]
//!        kept               dropped → one marker        kept, old tool outputs cleared
//! ```
//!
//! Every cut lands on a turn boundary, so an assistant message with `tool_calls` always stays
//! with all of its results (parallel calls included): the output is a valid chat sequence
//! whenever the input is.

use std::ops::Range;

use ctxhost_sdk::{sequence, HostServices, Message};

use crate::notes::{self, Dropped};

/// The limits of one compression.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits<'a> {
    /// Tokens the tail may use.
    pub tail_budget: u64,
    /// The tail keeps at least this many messages, even over budget.
    pub min_tail_messages: usize,
    /// Tool outputs in the tail beyond the newest this many are cleared.
    pub keep_tool_outputs: usize,
    /// Middle turns mentioning this are kept, while the tail budget has room for them.
    pub focus_topic: Option<&'a str>,
}

/// Where a conversation splits: `..head_end` is kept, `head_end..tail_start` is the middle,
/// `tail_start..` is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Split {
    head_end: usize,
    tail_start: usize,
}

impl Split {
    fn of(messages: &[Message], services: &HostServices, limits: &Limits) -> Split {
        let head_end = head_end(messages);
        let tail_start = tail_start(messages, head_end, services, limits);
        Split {
            head_end,
            tail_start,
        }
    }

    fn middle(&self) -> Range<usize> {
        self.head_end..self.tail_start
    }
}

/// A compressed conversation, with what it cost.
#[derive(Debug, Clone)]
pub(crate) struct Compacted {
    pub messages: Vec<Message>,
    /// Dropped by this pass and every earlier one (the marker's numbers).
    pub dropped: Dropped,
    pub cleared_outputs: usize,
}

/// Compresses `messages`, or returns `None` when nothing can be dropped or dropping would not
/// make the context smaller.
pub(crate) fn compact(
    messages: &[Message],
    services: &HostServices,
    limits: &Limits,
) -> Option<Compacted> {
    let split = Split::of(messages, services, limits);
    let tail = &messages[split.tail_start..];
    let room = limits
        .tail_budget
        .saturating_sub(services.count_messages_tokens(tail));
    let focus = focus_turns(messages, split, limits.focus_topic, room, services);
    let is_focus = |index: usize| focus.iter().any(|turn| turn.contains(&index));

    // An earlier marker in the middle is replaced, its numbers carried into the new one, so
    // markers never stack. A middle that holds nothing else leaves nothing to do.
    let mut dropped = Dropped::default();
    let mut dropped_now = 0;
    for index in split.middle() {
        let message = &messages[index];
        if let Some(earlier) = notes::read_marker(message) {
            dropped.add(earlier);
        } else if !is_focus(index) {
            dropped_now += 1;
            dropped.add(Dropped {
                messages: 1,
                tokens: services.count_message_tokens(message),
            });
        }
    }
    if dropped_now == 0 {
        return None;
    }

    let kept_focus: Vec<&Message> = focus
        .iter()
        .flat_map(|turn| &messages[turn.clone()])
        .collect();
    let focus_note = limits
        .focus_topic
        .filter(|_| !kept_focus.is_empty())
        .map(|topic| (kept_focus.len(), topic.trim()));
    let mut tail = tail.to_vec();
    let cleared_outputs = clear_old_tool_outputs(&mut tail, limits.keep_tool_outputs, services);

    let mut out = Vec::with_capacity(split.head_end + 1 + kept_focus.len() + tail.len());
    out.extend_from_slice(&messages[..split.head_end]);
    // The marker goes right after the head, before any kept focus turns: that way a later
    // pass always finds it at the start of the middle, and a tail that grows back over the
    // focus turns can never leave an old marker behind next to a new one.
    out.push(notes::marker(dropped, focus_note));
    out.extend(kept_focus.into_iter().cloned());
    out.extend(tail);

    if services.count_messages_tokens(&out) >= services.count_messages_tokens(messages) {
        return None;
    }
    Some(Compacted {
        messages: out,
        dropped,
        cleared_outputs,
    })
}

/// Tokens every output of `messages` costs whatever the tail keeps: the head and the marker.
pub(crate) fn fixed_tokens(messages: &[Message], services: &HostServices) -> u64 {
    services.count_messages_tokens(&messages[..head_end(messages)])
        // The widest numbers a marker is likely to carry, so a real one is no larger.
        + services.count_message_tokens(&notes::marker(
            Dropped {
                messages: 999_999,
                tokens: 999_999_999,
            },
            None,
        ))
}

/// The protected head: every leading system message plus the first user message. A marker
/// right after the system prompt (a conversation that opened with an assistant turn) belongs
/// to the middle, so it is replaced rather than kept forever.
fn head_end(messages: &[Message]) -> usize {
    let systems = sequence::head_len(messages);
    match messages.get(systems) {
        Some(first) if first.is_user() && !notes::is_marker(first) => systems + 1,
        _ => systems,
    }
}

/// The start of the kept tail: the newest messages that fit the token budget, never fewer than
/// `min_tail_messages`, moved to a turn boundary.
fn tail_start(
    messages: &[Message],
    head_end: usize,
    services: &HostServices,
    limits: &Limits,
) -> usize {
    // messages[floor..] are kept whatever their size.
    let floor = messages
        .len()
        .saturating_sub(limits.min_tail_messages)
        .max(head_end);
    let mut start = messages.len();
    let mut used = 0;
    while start > head_end {
        let cost = services.count_message_tokens(&messages[start - 1]);
        if start <= floor && used + cost > limits.tail_budget {
            break;
        }
        used += cost;
        start -= 1;
    }
    // A cut chosen by budget moves forward past a tool turn's results (the whole turn goes to
    // the middle, so the budget holds); the floor moves back to the turn's call (so the floor
    // holds). Both are turn boundaries, and so is the earlier of the two.
    sequence::end_of_turn(messages, start)
        .min(sequence::start_of_turn(messages, floor))
        .max(head_end)
}

/// The middle turns that mention the focus topic (case-insensitive), newest first while they
/// fit in `room` tokens, returned in conversation order. A turn is a whole unit (an assistant
/// message with its tool results), so keeping one never breaks a call/result pair.
fn focus_turns(
    messages: &[Message],
    split: Split,
    topic: Option<&str>,
    mut room: u64,
    services: &HostServices,
) -> Vec<Range<usize>> {
    let topic = topic.map(|t| t.trim().to_lowercase()).unwrap_or_default();
    if topic.is_empty() {
        return Vec::new();
    }
    let mut turns = Vec::new();
    let mut start = split.head_end;
    while start < split.tail_start {
        let end = if messages[start].tool_calls().is_empty() {
            start + 1
        } else {
            sequence::end_of_turn(messages, start + 1).min(split.tail_start)
        };
        turns.push(start..end);
        start = end;
    }
    let mut kept = Vec::new();
    for turn in turns.into_iter().rev() {
        let turn_messages = &messages[turn.clone()];
        let first = &turn_messages[0];
        // A stray tool result (invalid input) or an old marker is never worth keeping.
        if first.is_tool_result() || notes::is_marker(first) {
            continue;
        }
        let mentions = turn_messages
            .iter()
            .any(|m| m.searchable_text().to_lowercase().contains(&topic));
        let cost = services.count_messages_tokens(turn_messages);
        if mentions && cost <= room {
            room -= cost;
            kept.push(turn);
        }
    }
    kept.reverse();
    kept
}

/// Replaces every tool output in `tail` but the newest `keep` with a one-line note. Results
/// keep their `tool_call_id`, so pairs stay valid. Returns how many were cleared.
fn clear_old_tool_outputs(tail: &mut [Message], keep: usize, services: &HostServices) -> usize {
    let results: Vec<usize> = (0..tail.len())
        .filter(|&i| tail[i].is_tool_result())
        .collect();
    let old = results.len().saturating_sub(keep);
    let mut cleared = 0;
    for &index in &results[..old] {
        let text = tail[index].content_text().into_owned();
        if notes::is_cleared_output(&text) {
            continue;
        }
        let tokens = services.count_tokens(&text);
        let note = notes::cleared_output(tokens);
        // A short output is cheaper than the note about it.
        if services.count_tokens(&note) < tokens {
            tail[index].set_text(note);
            cleared += 1;
        }
    }
    cleared
}
