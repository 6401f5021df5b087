//! Messages larger than the model's whole window. No engine can make a context holding one
//! fit (the turn in progress is kept as it is, and the others are the user's words), so
//! `compress` and `run` name each such message in one line on stderr. Their exit code stays
//! what the engine's work decides: a result over the window is reported, never an engine
//! failure, as for any other context that does not fit.

use ctxhost_sdk::{Message, MESSAGE_OVERHEAD_TOKENS};

use super::report::thousands;

/// Lines shown before the rest are only counted.
const SHOWN: usize = 3;

/// One warning line per message of `messages` larger than `window` tokens by itself (`count`
/// gives a message's tokens), the first few only, then how many more.
pub fn warnings(messages: &[Message], window: u64, count: impl Fn(&Message) -> u64) -> Vec<String> {
    if window == 0 {
        return Vec::new();
    }
    // A token is at least a byte: only a message with more bytes than the window is counted.
    let over: Vec<(usize, &Message, u64)> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.searchable_text().len() as u64 + MESSAGE_OVERHEAD_TOKENS > window)
        .map(|(index, m)| (index, m, count(m)))
        .filter(|(_, _, tokens)| *tokens > window)
        .collect();
    let mut lines: Vec<String> = over
        .iter()
        .take(SHOWN)
        .map(|(index, message, tokens)| {
            format!(
                "message {} ({}) is {} tokens, {:.1}x the model's window of {} tokens by \
                 itself: no engine can make it fit; cut or summarize that message, or use a \
                 model with a larger window (model.context_length)",
                index + 1,
                message.role(),
                thousands(*tokens),
                *tokens as f64 / window as f64,
                thousands(window)
            )
        })
        .collect();
    if over.len() > SHOWN {
        lines.push(format!(
            "{} more messages are each larger than the window",
            over.len() - SHOWN
        ));
    }
    lines
}

/// Prints [`warnings`] on stderr.
pub fn warn(messages: &[Message], window: u64, count: impl Fn(&Message) -> u64) {
    for line in warnings(messages, window, count) {
        eprintln!("warning: {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per byte, as the filter assumes at most.
    fn bytes(message: &Message) -> u64 {
        message.searchable_text().len() as u64 + MESSAGE_OVERHEAD_TOKENS
    }

    #[test]
    fn only_messages_larger_than_the_window_are_named_by_position() {
        let messages = vec![
            Message::user("short"),
            Message::assistant("x".repeat(5_000)),
            Message::user("y".repeat(70_000)),
        ];
        let lines = warnings(&messages, 1_000, bytes);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("message 2 (assistant) is 5,00"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("message 3 (user) is 70,00"),
            "{lines:?}"
        );
        assert!(lines[1].contains("window of 1,000 tokens"), "{lines:?}");
        assert!(warnings(&messages, 100_000, bytes).is_empty());
    }

    #[test]
    fn many_are_summed_up_after_the_first_few() {
        let messages = vec![Message::user("z".repeat(2_000)); 5];
        let lines = warnings(&messages, 1_000, bytes);
        assert_eq!(lines.len(), SHOWN + 1, "{lines:?}");
        assert_eq!(
            lines[SHOWN],
            "2 more messages are each larger than the window"
        );
    }
}
