//! Message lists across the pipe without sending what the other side already holds. The host
//! sends a list as a change to the last one the child received ([`Shipped`] → [`MessageList`] →
//! [`Received`]): most calls only add messages at the end. The child answers `compress` with
//! the runs of its input the engine kept and only the messages the engine wrote
//! ([`CompressedList`]): a window of a long conversation is mostly input, and it is already on
//! the host's side.

use ctxhost_sdk::contract::{self, OutputViolation};
use ctxhost_sdk::{Content, Message, Stamp};
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
        let keep = common_prefix(&mut self.messages, messages);
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

/// How many messages `held` and `new` start with in common. A message handed on or cloned
/// keeps its [`Stamp`](ctxhost_sdk::Stamp), so most of an unchanged list compares without
/// reading any text. Past the stamps, most messages differ in length when they differ at all,
/// so all lengths are compared before any text; a held message found equal takes the new
/// one's stamp, and the next call finds it by stamp.
fn common_prefix(held: &mut [Message], new: &[Message]) -> usize {
    let same_stamp = held
        .iter()
        .zip(new)
        .take_while(|(held, new)| held.stamp() == new.stamp())
        .count();
    let (held, new) = (&mut held[same_stamp..], &new[same_stamp..]);
    let same_shape = held
        .iter()
        .zip(new)
        .take_while(|(held, new)| shape(held) == shape(new))
        .count();
    let mut same = same_stamp;
    for (held, new) in held[..same_shape].iter_mut().zip(new) {
        if !held.share_stamp(new) {
            break;
        }
        same += 1;
    }
    same
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
    /// `output` as runs of `input` and new messages. An output message that is one of the
    /// input's (the same [`Stamp`](ctxhost_sdk::Stamp): handed on or cloned) is sent as its
    /// index: the next input message is tried first (the usual case: runs of the input in
    /// order), then the input's stamps. One that the engine built again, equal to an input
    /// message, is searched for by its text only when sending it would cost more
    /// ([`SEARCHED_BYTES`]).
    ///
    /// The output's messages that are sent as indexes go to `set_aside`, for the caller to
    /// drop once the answer is sent: freeing a few hundred messages is work no one should
    /// wait for.
    pub fn encode(input: &[Message], output: Vec<Message>, set_aside: &mut Vec<Message>) -> Self {
        let mut parts: Vec<Part> = Vec::new();
        let mut next = 0;
        let mut stamps: Option<StampIndex> = None;
        let mut shapes: Option<ShapeIndex> = None;
        set_aside.reserve(output.len());
        for message in output {
            let found = if input.get(next).map(Message::stamp) == Some(message.stamp()) {
                Some(next)
            } else {
                let stamps = stamps.get_or_insert_with(|| StampIndex::new(input));
                match stamps.find(input, message.stamp()) {
                    Some(at) => Some(at),
                    None if shape(&message).content_bytes >= SEARCHED_BYTES => shapes
                        .get_or_insert_with(|| ShapeIndex::new(input))
                        .find(input, &message, next),
                    None => None,
                }
            };
            match found {
                Some(at) => {
                    match parts.last_mut() {
                        Some(Part::Kept { start, len }) if *start + *len == at => *len += 1,
                        _ => parts.push(Part::Kept { start: at, len: 1 }),
                    }
                    next = at + 1;
                    set_aside.push(message);
                }
                None => parts.push(Part::New(Box::new(message))),
            }
        }
        CompressedList { parts }
    }

    /// [`contract::check_fields`] on the messages the engine wrote, by their index in the
    /// output. The kept runs need no check: the host puts its own copies in their place.
    pub fn check_new_fields(&self) -> Result<(), OutputViolation> {
        let mut index = 0;
        for part in &self.parts {
            match part {
                Part::Kept { len, .. } => index += len,
                Part::New(message) => {
                    contract::check_message_fields(index, message)?;
                    index += 1;
                }
            }
        }
        Ok(())
    }

    /// The output, with the kept runs copied from `input` (what the host sent), or taken from
    /// `copies` made of it beforehand; `None` when a run lies outside it (a child that lost
    /// track of the list).
    pub fn decode(self, input: &[Message], copies: &mut Copies) -> Option<Vec<Message>> {
        let mut output = Vec::with_capacity(self.len());
        for part in self.parts {
            match part {
                Part::Kept { start, len } => {
                    let end = start.checked_add(len).filter(|&end| end <= input.len())?;
                    output.extend((start..end).map(|at| copies.take(input, at)));
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

/// Below this many bytes of content, a message the engine built is sent as it is rather than
/// searched for among the input's texts.
const SEARCHED_BYTES: usize = 512;

/// The input's positions by stamp. The child's list is read from the host's lines in order,
/// so its stamps usually rise from one message to the next, and are searched by halves; a
/// list in any other order gets a table.
enum StampIndex {
    Rising,
    Table(FxHashMap<Stamp, usize>),
}

impl StampIndex {
    fn new(input: &[Message]) -> Self {
        if input
            .windows(2)
            .all(|pair| pair[0].stamp() < pair[1].stamp())
        {
            return StampIndex::Rising;
        }
        let mut table = FxHashMap::with_capacity_and_hasher(input.len(), Default::default());
        for (at, message) in input.iter().enumerate() {
            // The first, for clones in the input.
            table.entry(message.stamp()).or_insert(at);
        }
        StampIndex::Table(table)
    }

    fn find(&self, input: &[Message], stamp: Stamp) -> Option<usize> {
        match self {
            StampIndex::Rising => input.binary_search_by_key(&stamp, Message::stamp).ok(),
            StampIndex::Table(table) => table.get(&stamp).copied(),
        }
    }
}

/// Copies of an input's messages made ahead of need, newest first, while the host waits for
/// the child's answer anyway: what `compress` keeps is mostly the newest messages, and a copy
/// made in advance costs nothing once the answer is in.
#[derive(Debug, Default)]
pub struct Copies {
    slots: Vec<Option<Message>>,
}

/// How many bytes of text are copied between two calls of [`Copies::made`]'s `stop`.
const COPIED_BETWEEN_CHECKS: usize = 32 * 1024;

impl Copies {
    /// Copies `input`'s messages from the newest back, until all are copied or `stop` says
    /// to (asked after about every [`COPIED_BETWEEN_CHECKS`] bytes).
    pub fn made(input: &[Message], stop: impl Fn() -> bool) -> Self {
        let mut slots = vec![None; input.len()];
        let mut copied = 0;
        for (slot, message) in slots.iter_mut().zip(input).rev() {
            if copied >= COPIED_BETWEEN_CHECKS {
                if stop() {
                    break;
                }
                copied = 0;
            }
            copied += shape(message).content_bytes + 64;
            *slot = Some(message.clone());
        }
        Copies { slots }
    }

    /// Message `at` of `input`: its copy made beforehand, or a copy made now.
    fn take(&mut self, input: &[Message], at: usize) -> Message {
        self.slots
            .get_mut(at)
            .and_then(Option::take)
            .unwrap_or_else(|| input[at].clone())
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
    fn a_list_read_again_is_compared_by_text_once_then_by_stamp() {
        let mut shipped = Shipped::default();
        let first = messages(&["a", "b", "c"]);
        shipped.ship(&first);
        // The same messages, read again: new stamps, the same text.
        let again: Vec<Message> = first
            .iter()
            .map(|m| Message::user(m.text().unwrap()))
            .collect();
        assert_eq!(shipped.ship(&again).keep, 3);
        // The held copies took the new stamps: the next call compares no text.
        assert!(shipped
            .messages
            .iter()
            .zip(&again)
            .all(|(held, new)| held.stamp() == new.stamp()));
        // An edit of the same length, in the caller's own list, is seen.
        let mut edited = again.clone();
        edited[1].set_text("x");
        let change = shipped.ship(&edited);
        assert_eq!((change.keep, change.append), (1, edited[1..].to_vec()));
    }

    #[test]
    fn copies_made_beforehand_are_used_once_then_copied_again() {
        let input = messages(&["a", "b", "c", "d"]);
        let mut copies = Copies::made(&input, || false);
        assert!(copies.slots.iter().all(Option::is_some));
        let output = vec![
            input[2].clone(),
            input[3].clone(),
            input[2].clone(),
            Message::user("new"),
        ];
        let encoded = CompressedList::encode(&input, output.clone(), &mut Vec::new());
        assert_eq!(encoded.decode(&input, &mut copies), Some(output));
        // The two taken are gone; the rest wait to be freed.
        assert_eq!(copies.slots.iter().filter(|s| s.is_some()).count(), 2);

        // A reply that comes in early stops the copying (checked between chunks of text).
        let long: Vec<Message> = (0..8)
            .map(|i| Message::user(i.to_string().repeat(COPIED_BETWEEN_CHECKS)))
            .collect();
        let mut early = Copies::made(&long, || true);
        assert_eq!(early.slots.iter().filter(|s| s.is_some()).count(), 1);
        assert!(early.slots[7].is_some(), "the newest first");
        assert_eq!(
            CompressedList::encode(&long, long.clone(), &mut Vec::new()).decode(&long, &mut early),
            Some(long)
        );
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
            // Out of order, and equal to two input messages: found by stamp all the same.
            input[2].clone(),
            input[1].clone(),
            // Equal to an input message but built again, and short: sent as it is.
            Message::user("c"),
        ];
        let encoded = CompressedList::encode(&input, output.clone(), &mut Vec::new());
        assert_eq!(
            encoded.parts,
            vec![
                Part::Kept { start: 0, len: 2 },
                Part::New(Box::new(summary)),
                Part::Kept { start: 4, len: 1 },
                Part::New(Box::new(shortened)),
                Part::Kept { start: 6, len: 2 },
                Part::Kept { start: 2, len: 1 },
                // The clone of the first "a", not the other "a".
                Part::Kept { start: 1, len: 1 },
                Part::New(Box::new(Message::user("c"))),
            ]
        );
        assert_eq!(encoded.len(), output.len());
        let new = encoded.parts.iter().filter(|p| matches!(p, Part::New(_)));
        assert_eq!(new.count(), 3);
        assert_eq!(
            encoded.clone().decode(&input, &mut Copies::default()),
            Some(output)
        );
        assert_eq!(
            encoded.decode(&input[..3], &mut Copies::default()),
            None,
            "a run past the input"
        );
    }

    #[test]
    fn kept_messages_are_found_by_stamp_whatever_the_inputs_order() {
        let mut input = messages(&["a", "b", "c", "d"]);
        for rising in [true, false] {
            assert_eq!(
                matches!(StampIndex::new(&input), StampIndex::Rising),
                rising
            );
            let output = vec![input[3].clone(), Message::user("x"), input[1].clone()];
            let encoded = CompressedList::encode(&input, output.clone(), &mut Vec::new());
            assert_eq!(
                encoded.parts,
                vec![
                    Part::Kept { start: 3, len: 1 },
                    Part::New(Box::new(Message::user("x"))),
                    Part::Kept { start: 1, len: 1 },
                ]
            );
            assert_eq!(encoded.decode(&input, &mut Copies::default()), Some(output));
            input.reverse();
        }
    }

    #[test]
    fn long_messages_built_again_are_found_by_their_text() {
        // Every text the same length: one shape, one chain of positions to search.
        let long = |c: char| c.to_string().repeat(SEARCHED_BYTES);
        let texts: Vec<String> = "abcdbe".chars().map(long).collect();
        let input: Vec<Message> = texts.iter().map(Message::user).collect();
        let again = |at: usize| Message::user(&texts[at]);
        let same_shape_but_new = Message::user(long('z'));
        let output = vec![
            again(2),
            same_shape_but_new.clone(),
            again(1),
            again(0),
            again(5),
            again(4),
        ];
        let encoded = CompressedList::encode(&input, output.clone(), &mut Vec::new());
        assert_eq!(
            encoded.parts,
            vec![
                Part::Kept { start: 2, len: 1 },
                Part::New(Box::new(same_shape_but_new)),
                // Two "b": the first at or after the last found (3) is at 4.
                Part::Kept { start: 4, len: 1 },
                // None at or after 5: the first before.
                Part::Kept { start: 0, len: 1 },
                Part::Kept { start: 5, len: 1 },
                Part::Kept { start: 1, len: 1 },
            ]
        );
        assert_eq!(encoded.decode(&input, &mut Copies::default()), Some(output));
    }

    #[test]
    fn an_output_of_new_messages_only_or_of_nothing_crosses_as_it_is() {
        let input = messages(&["a", "b"]);
        let output = messages(&["x", "y"]);
        let encoded = CompressedList::encode(&input, output.clone(), &mut Vec::new());
        assert!(encoded.parts.iter().all(|p| matches!(p, Part::New(_))));
        assert_eq!(encoded.decode(&input, &mut Copies::default()), Some(output));
        let empty = CompressedList::encode(&input, Vec::new(), &mut Vec::new());
        assert!(empty.is_empty());
        assert_eq!(
            empty.decode(&input, &mut Copies::default()),
            Some(Vec::new())
        );
    }
}
