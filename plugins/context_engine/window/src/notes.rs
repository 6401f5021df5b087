//! The texts the engine writes into a conversation, and how it recognizes them on a later pass.
//!
//! The engine keeps no state between compressions: everything it needs to know about an earlier
//! pass (how much was dropped, which outputs were cleared) is read back from these texts. That
//! keeps it correct across restarts and after the host saves and reloads a session.

use ctxhost_sdk::Message;

const MARKER_PREFIX: &str = "[window engine: ";
const CLEARED_PREFIX: &str = "[tool output cleared by the window engine: ";

/// What one marker says was dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Dropped {
    pub messages: u64,
    pub tokens: u64,
}

impl Dropped {
    pub fn add(&mut self, other: Dropped) {
        self.messages += other.messages;
        self.tokens += other.tokens;
    }
}

/// The one message that stands in for the dropped middle. It is a `user` message because every
/// provider accepts one anywhere after the system prompt; the bracketed text makes plain that it
/// comes from the engine, not the person.
pub(crate) fn marker(dropped: Dropped, focus: Option<(usize, &str)>) -> Message {
    let (noun, verb) = if dropped.messages == 1 {
        ("message", "was")
    } else {
        ("messages", "were")
    };
    let mut text = format!(
        "{MARKER_PREFIX}{} earlier {noun} ({} tokens) {verb} dropped from this context to fit the \
         model's window. They are no longer visible; if you need something from them, ask the user.",
        dropped.messages,
        thousands(dropped.tokens),
    );
    if let Some((kept, topic)) = focus {
        text.push_str(&format!(
            " The {kept} messages right after this note come from that stretch and were kept \
             because they mention \"{topic}\"."
        ));
    }
    text.push(']');
    Message::user(text)
}

/// The numbers of a marker written by [`marker`], or `None` when `message` is not one. A marker
/// whose numbers cannot be read (edited by hand) still counts as a marker, with zeros.
pub(crate) fn read_marker(message: &Message) -> Option<Dropped> {
    if !message.is_user() {
        return None;
    }
    let text = message.content_text();
    let rest = text.strip_prefix(MARKER_PREFIX)?;
    let mut words = rest.split_whitespace();
    let messages = words.next().and_then(number).unwrap_or(0);
    let tokens = words
        .find_map(|word| word.strip_prefix('('))
        .and_then(number)
        .unwrap_or(0);
    Some(Dropped { messages, tokens })
}

pub(crate) fn is_marker(message: &Message) -> bool {
    read_marker(message).is_some()
}

/// The one line that replaces an old tool output. The message keeps its `tool_call_id`, so the
/// call and its result still pair up.
pub(crate) fn cleared_output(tokens: u64) -> String {
    format!("{CLEARED_PREFIX}{} tokens]", thousands(tokens))
}

pub(crate) fn is_cleared_output(text: &str) -> bool {
    text.starts_with(CLEARED_PREFIX)
}

/// `12345` → `12,345`: the marker is read by a model and by people.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Reads `12,345` back.
fn number(word: &str) -> Option<u64> {
    let digits: String = word.chars().filter(|c| *c != ',').collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_read_back_their_numbers() {
        for dropped in [
            Dropped {
                messages: 1,
                tokens: 7,
            },
            Dropped {
                messages: 37,
                tokens: 12_345,
            },
            Dropped {
                messages: 1_000,
                tokens: 9_876_543,
            },
        ] {
            assert_eq!(read_marker(&marker(dropped, None)), Some(dropped));
            assert_eq!(
                read_marker(&marker(dropped, Some((2, "parser")))),
                Some(dropped)
            );
        }
        assert_eq!(
            read_marker(&Message::user("[window engine: ?")),
            Some(Dropped::default())
        );
        assert_eq!(read_marker(&Message::user("hello")), None);
        assert_eq!(
            read_marker(&Message::assistant("[window engine: 3 x (4 tokens)")),
            None
        );
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
        assert_eq!(
            cleared_output(812),
            "[tool output cleared by the window engine: 812 tokens]"
        );
    }
}
