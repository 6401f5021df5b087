//! Message lists across the pipe without sending what the other side already holds. The host
//! sends a list as a change to the last one the child received ([`Shipped`] → [`MessageList`] →
//! [`Received`]): most calls only add messages at the end. The child answers `compress` with
//! the runs of its input the engine kept and only the messages the engine wrote
//! ([`CompressedList`]): a window of a long conversation is mostly input, and it is already on
//! the host's side.

use ctxhost_sdk::{Content, Message};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// A message list, sent as a change to the last list the child received.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageList {
    /// How many messages of the previous list start this one.
    pub keep: usize,
    /// The messages after them.
    pub append: Vec<Message>,
}

/// The host's copy of the list the child holds.
#[derive(Debug, Default)]
pub struct Shipped {
    messages: Vec<Message>,
}

impl Shipped {
    /// `messages` as a change to what the child holds (the common start kept, the rest sent),
    /// which it holds from then on.
    pub fn ship(&mut self, messages: &[Message]) -> MessageList {
        let keep = common_prefix(&self.messages, messages);
        self.messages.truncate(keep);
        self.messages.extend_from_slice(&messages[keep..]);
        MessageList {
            keep,
            append: messages[keep..].to_vec(),
        }
    }

    /// A new child holds nothing.
    pub fn clear(&mut self) {
        self.messages.clear();
    }
}

/// How many messages `held` and `new` start with in common. Most messages differ in length
/// when they differ at all, so all lengths are compared before any text: a changed list costs
/// a pass over the lengths, an unchanged one a comparison of each text.
fn common_prefix(held: &[Message], new: &[Message]) -> usize {
    let same_shape = held
        .iter()
        .zip(new)
        .take_while(|(held, new)| shape(held) == shape(new))
        .count();
    held[..same_shape]
        .iter()
        .zip(new)
        .take_while(|(held, new)| held == new)
        .count()
}

/// The child's copy of the list the host sent last, which the next one is a change to.
#[derive(Debug, Default)]
pub struct Received {
    messages: Vec<Message>,
}

impl Received {
    /// Applies the change; returns the whole list, or `None` when it keeps more messages than
    /// are held (the host lost track of what this side holds).
    pub fn apply(&mut self, list: MessageList) -> Option<&[Message]> {
        if list.keep > self.messages.len() {
            return None;
        }
        self.messages.truncate(list.keep);
        self.messages.extend(list.append);
        Some(&self.messages)
    }

    /// The list as it stands.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }
}

/// `compress`'s output as the child sends it: runs of the input (which the host holds) and the
/// messages the engine wrote, in output order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompressedList {
    pub parts: Vec<Part>,
}

/// One piece of a [`CompressedList`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// Input messages `start..start + len`, unchanged.
    Kept { start: usize, len: usize },
    /// A message that is not in the input (a summary, a shortened tool output).
    New(Box<Message>),
}

impl CompressedList {
    /// `output` as runs of `input` and new messages. An output message equal to an input
    /// message is sent as its index: the next input message is tried first (the usual case:
    /// runs of the input in order), then any input message of the same shape.
    pub fn encode(input: &[Message], output: Vec<Message>) -> Self {
        let mut parts: Vec<Part> = Vec::new();
        let mut next = 0;
        let mut index: Option<ShapeIndex> = None;
        for message in output {
            let found = if input.get(next) == Some(&message) {
                Some(next)
            } else {
                index
                    .get_or_insert_with(|| ShapeIndex::new(input))
                    .find(input, &message, next)
            };
            match found {
                Some(at) => {
                    match parts.last_mut() {
                        Some(Part::Kept { start, len }) if *start + *len == at => *len += 1,
                        _ => parts.push(Part::Kept { start: at, len: 1 }),
                    }
                    next = at + 1;
                }
                None => parts.push(Part::New(Box::new(message))),
            }
        }
        CompressedList { parts }
    }

    /// The output, with the kept runs copied from `input` (what the host sent); `None` when a
    /// run lies outside it (a child that lost track of the list).
    pub fn decode(self, input: &[Message]) -> Option<Vec<Message>> {
        let mut output = Vec::with_capacity(self.len());
        for part in self.parts {
            match part {
                Part::Kept { start, len } => {
                    output.extend_from_slice(input.get(start..start.checked_add(len)?)?)
                }
                Part::New(message) => output.push(*message),
            }
        }
        Some(output)
    }

    /// How many messages the output holds.
    pub fn len(&self) -> usize {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Kept { len, .. } => *len,
                Part::New(_) => 1,
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What tells most messages apart without reading their text: role, content length, tool call
/// id and number of tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Shape<'a> {
    role: &'a str,
    content_bytes: usize,
    tool_call_id: Option<&'a str>,
    tool_calls: usize,
}

fn shape(message: &Message) -> Shape<'_> {
    let content_bytes = match message.content() {
        Content::Text(text) | Content::Json(text) => text.len(),
        Content::Absent | Content::Null => 0,
    };
    Shape {
        role: message.role(),
        content_bytes,
        tool_call_id: message.tool_call_id(),
        tool_calls: message.tool_calls().len(),
    }
}

/// The input's positions by [`shape`], each shape's positions chained in order: two tables
/// allocated once, hashed with Fx (a list per shape under SipHash cost more than the rest of
/// `encode` put together).
struct ShapeIndex<'a> {
    /// Shape → first position with it.
    first: FxHashMap<Shape<'a>, usize>,
    /// Position → next position of the same shape (`usize::MAX`: none).
    next_same: Vec<usize>,
}

impl<'a> ShapeIndex<'a> {
    fn new(input: &'a [Message]) -> Self {
        let mut first = FxHashMap::with_capacity_and_hasher(input.len(), Default::default());
        let mut next_same = vec![usize::MAX; input.len()];
        for (at, message) in input.iter().enumerate().rev() {
            if let Some(later) = first.insert(shape(message), at) {
                next_same[at] = later;
            }
        }
        ShapeIndex { first, next_same }
    }

    /// The input message equal to `message`: the first at or after `from`, else the first
    /// before.
    fn find(&self, input: &[Message], message: &Message, from: usize) -> Option<usize> {
        let mut at = *self.first.get(&shape(message))?;
        let mut before = None;
        while at != usize::MAX {
            if input[at] == *message {
                if at >= from {
                    return Some(at);
                }
                before = before.or(Some(at));
            }
            at = self.next_same[at];
        }
        before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(texts: &[&str]) -> Vec<Message> {
        texts.iter().map(|t| Message::user(*t)).collect()
    }

    #[test]
    fn a_list_is_shipped_as_what_changed_since_the_last() {
        let mut shipped = Shipped::default();
        let mut received = Received::default();
        let first = messages(&["a", "b", "c"]);
        let change = shipped.ship(&first);
        assert_eq!((change.keep, change.append.len()), (0, 3));
        assert_eq!(received.apply(change).unwrap(), &first[..]);

        let longer = messages(&["a", "b", "c", "d"]);
        let change = shipped.ship(&longer);
        assert_eq!((change.keep, change.append.len()), (3, 1));
        assert_eq!(received.apply(change).unwrap(), &longer[..]);

        // Same length, another text: not the same message.
        let edited = messages(&["a", "x", "c", "d"]);
        let change = shipped.ship(&edited);
        assert_eq!((change.keep, change.append.len()), (1, 3));
        assert_eq!(received.apply(change).unwrap(), &edited[..]);

        let change = shipped.ship(&edited);
        assert_eq!((change.keep, change.append.len()), (4, 0));
        assert_eq!(received.apply(change).unwrap(), &edited[..]);

        let shorter = messages(&["a"]);
        let change = shipped.ship(&shorter);
        assert_eq!((change.keep, change.append.len()), (1, 0));
        assert_eq!(received.apply(change).unwrap(), &shorter[..]);

        // A side that holds less than the change keeps says so.
        let mut fresh = Received::default();
        assert!(fresh.apply(shipped.ship(&longer)).is_none());
    }

    #[test]
    fn compress_output_crosses_as_runs_of_the_input_and_new_messages() {
        let input = messages(&["s", "a", "b", "c", "d", "e", "f", "a"]);
        let summary = Message::user("summary of b, c");
        let shortened = Message::user("[e cleared]");
        let output = vec![
            input[0].clone(),
            input[1].clone(),
            summary.clone(),
            input[4].clone(),
            shortened.clone(),
            input[6].clone(),
            input[7].clone(),
            // Out of order, and equal to two input messages: found all the same.
            input[2].clone(),
            input[1].clone(),
        ];
        let encoded = CompressedList::encode(&input, output.clone());
        assert_eq!(
            encoded.parts,
            vec![
                Part::Kept { start: 0, len: 2 },
                Part::New(Box::new(summary)),
                Part::Kept { start: 4, len: 1 },
                Part::New(Box::new(shortened)),
                Part::Kept { start: 6, len: 2 },
                Part::Kept { start: 2, len: 1 },
                // The first equal one after the last found.
                Part::Kept { start: 7, len: 1 },
            ]
        );
        assert_eq!(encoded.len(), output.len());
        assert_eq!(encoded.clone().decode(&input), Some(output));
        assert_eq!(encoded.decode(&input[..3]), None, "a run past the input");
    }

    #[test]
    fn messages_of_one_shape_are_told_apart_by_their_text() {
        // Every text the same length: one shape, one chain of positions to search.
        let input = messages(&["aa", "bb", "cc", "dd", "bb", "ee"]);
        let same_shape_but_new = Message::user("zz");
        let output = vec![
            input[2].clone(),
            same_shape_but_new.clone(),
            input[1].clone(),
            input[0].clone(),
            input[5].clone(),
            input[4].clone(),
        ];
        let encoded = CompressedList::encode(&input, output.clone());
        assert_eq!(
            encoded.parts,
            vec![
                Part::Kept { start: 2, len: 1 },
                Part::New(Box::new(same_shape_but_new)),
                // Two "bb": the first at or after the last found (3) is at 4.
                Part::Kept { start: 4, len: 1 },
                // None at or after 5: the first before.
                Part::Kept { start: 0, len: 1 },
                Part::Kept { start: 5, len: 1 },
                Part::Kept { start: 1, len: 1 },
            ]
        );
        assert_eq!(encoded.decode(&input), Some(output));
    }

    #[test]
    fn an_output_of_new_messages_only_or_of_nothing_crosses_as_it_is() {
        let input = messages(&["a", "b"]);
        let output = messages(&["x", "y"]);
        let encoded = CompressedList::encode(&input, output.clone());
        assert!(encoded.parts.iter().all(|p| matches!(p, Part::New(_))));
        assert_eq!(encoded.decode(&input), Some(output));
        let empty = CompressedList::encode(&input, Vec::new());
        assert!(empty.is_empty());
        assert_eq!(empty.decode(&input), Some(Vec::new()));
    }
}
