//! Chat-sequence rules every engine's output must keep, and the helpers to keep them.
//!
//! The rule the providers enforce: an assistant message with `tool_calls` is followed directly by
//! one `tool` message per call, and a `tool` message only ever answers such a call. Some recorded
//! transcripts reuse a call id; each use is answered before the next, so ids are tracked as a
//! multiset.

use std::collections::HashMap;

use crate::message::Message;

/// Why a message list is not a valid chat sequence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SequenceError {
    /// A system message somewhere other than first.
    #[error("message {index}: the system prompt must come first")]
    SystemNotFirst {
        /// Position of the misplaced system message, from 0.
        index: usize,
    },
    /// A tool result whose call is not in the assistant turn right before it.
    #[error("message {index}: tool result for `{id}` has no matching call before it")]
    OrphanResult {
        /// Position of the tool result, from 0.
        index: usize,
        /// The call id it answers.
        id: String,
    },
    /// A tool call that no tool result answers.
    #[error("message {index}: tool call `{id}` has no result")]
    UnansweredCall {
        /// Position of the assistant message holding the call, from 0.
        index: usize,
        /// The call's id.
        id: String,
    },
}

/// Checks the sequence rules: the first system message (if any) is the first message, every
/// tool result answers a call of the assistant turn right before it, and every call is answered.
pub fn validate(messages: &[Message]) -> Result<(), SequenceError> {
    if let Some(index) = messages.iter().position(Message::is_system) {
        if index != 0 {
            return Err(SequenceError::SystemNotFirst { index });
        }
    }
    let mut pending: HashMap<&str, (usize, usize)> = HashMap::new();
    for (index, message) in messages.iter().enumerate() {
        if message.is_tool_result() {
            let id = message.tool_call_id().unwrap_or("");
            match pending.get_mut(id) {
                Some((count, _)) if *count > 0 => *count -= 1,
                _ => {
                    return Err(SequenceError::OrphanResult {
                        index,
                        id: id.to_string(),
                    })
                }
            }
            continue;
        }
        if let Some((id, (_, at))) = pending.iter().find(|(_, (count, _))| *count > 0) {
            return Err(SequenceError::UnansweredCall {
                index: *at,
                id: id.to_string(),
            });
        }
        pending.clear();
        for call in message.tool_calls() {
            pending.entry(call.id()).or_insert((0, index)).0 += 1;
        }
    }
    match pending.iter().find(|(_, (count, _))| *count > 0) {
        Some((id, (_, at))) => Err(SequenceError::UnansweredCall {
            index: *at,
            id: id.to_string(),
        }),
        None => Ok(()),
    }
}

/// Moves a cut point back so the slice starting there does not begin with tool results cut off
/// from their call: `messages[start_of_turn(messages, i)..]` keeps whole tool turns.
pub fn start_of_turn(messages: &[Message], mut index: usize) -> usize {
    index = index.min(messages.len());
    while index > 0 && index < messages.len() && messages[index].is_tool_result() {
        index -= 1;
    }
    index
}

/// Moves a cut point forward past the results of a tool turn: `messages[..end_of_turn(m, i)]`
/// never ends on a call whose results were cut off.
pub fn end_of_turn(messages: &[Message], mut index: usize) -> usize {
    index = index.min(messages.len());
    while index < messages.len() && index > 0 && messages[index].is_tool_result() {
        index += 1;
    }
    index
}

/// Index of the first non-system message.
pub fn head_len(messages: &[Message]) -> usize {
    messages.iter().take_while(|m| m.is_system()).count()
}

/// Makes a list valid without touching anything that already is: drops tool results whose call
/// is not in the turn before them, and answers calls left without a result with a stub that
/// says so. Engines run it on their output as a last line of defence.
pub fn repair(messages: Vec<Message>) -> Vec<Message> {
    if validate(&messages).is_ok() {
        return messages;
    }
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut pending: Vec<String> = Vec::new();
    for message in messages {
        if message.is_tool_result() {
            let id = message.tool_call_id().unwrap_or("");
            if let Some(position) = pending.iter().position(|p| p == id) {
                pending.remove(position);
                out.push(message);
            }
            continue;
        }
        answer_missing(&mut out, &mut pending);
        pending = message
            .tool_calls()
            .iter()
            .map(|c| c.id().to_string())
            .collect();
        out.push(message);
    }
    answer_missing(&mut out, &mut pending);
    out
}

fn answer_missing(out: &mut Vec<Message>, pending: &mut Vec<String>) {
    for id in pending.drain(..) {
        out.push(Message::tool_result(
            id,
            "[no result: this tool call's output was not kept]",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn call(ids: &[&str]) -> Message {
        Message::assistant_tool_calls(ids.iter().map(|id| ToolCall::new(*id, "f", "{}")).collect())
    }

    #[test]
    fn accepts_parallel_calls_and_reused_ids() {
        let messages = vec![
            Message::system("s"),
            Message::user("u"),
            call(&["a", "b"]),
            Message::tool_result("b", "1"),
            Message::tool_result("a", "2"),
            call(&["a"]),
            Message::tool_result("a", "3"),
            Message::assistant("done"),
        ];
        assert_eq!(validate(&messages), Ok(()));
    }

    #[test]
    fn rejects_orphans_unanswered_and_late_system() {
        let orphan = vec![Message::user("u"), Message::tool_result("x", "1")];
        assert!(matches!(
            validate(&orphan),
            Err(SequenceError::OrphanResult { index: 1, .. })
        ));
        let unanswered = vec![
            Message::user("u"),
            call(&["a", "b"]),
            Message::tool_result("a", "1"),
        ];
        assert!(matches!(
            validate(&unanswered),
            Err(SequenceError::UnansweredCall { .. })
        ));
        let interrupted = vec![
            call(&["a"]),
            Message::user("u"),
            Message::tool_result("a", "1"),
        ];
        assert!(validate(&interrupted).is_err());
        let late = vec![Message::user("u"), Message::system("s")];
        assert_eq!(
            validate(&late),
            Err(SequenceError::SystemNotFirst { index: 1 })
        );
    }

    #[test]
    fn cut_points_keep_turns_whole() {
        let messages = vec![
            Message::user("u"),
            call(&["a", "b"]),
            Message::tool_result("a", "1"),
            Message::tool_result("b", "2"),
            Message::assistant("x"),
        ];
        assert_eq!(start_of_turn(&messages, 3), 1);
        assert_eq!(start_of_turn(&messages, 4), 4);
        assert_eq!(end_of_turn(&messages, 2), 4);
        assert_eq!(end_of_turn(&messages, 1), 1);
    }

    #[test]
    fn repair_fixes_only_what_is_broken() {
        let broken = vec![
            Message::user("u"),
            Message::tool_result("zz", "orphan"),
            call(&["a", "b"]),
            Message::tool_result("a", "1"),
            Message::assistant("x"),
        ];
        let repaired = repair(broken);
        assert_eq!(validate(&repaired), Ok(()));
        assert_eq!(repaired.len(), 5);
        assert_eq!(repaired[3].tool_call_id(), Some("b"));
    }
}
