//! The fake host's token counter: one rule, simple enough to reason about in a test.
//!
//! **A text costs one token per four characters (Unicode scalar values), rounded up**:
//! `""` is 0 tokens, `"abc"` is 1, `"abcd"` is 1, `"abcde"` is 2. A message costs its
//! [`searchable_text`](ctxhost_sdk::Message::searchable_text) plus
//! [`MESSAGE_OVERHEAD_TOKENS`], exactly as
//! [`HostServices::count_message_tokens`](ctxhost_sdk::HostServices::count_message_tokens)
//! computes it on a real host.
//!
//! A real host counts with a BPE tokenizer; engines must not depend on the exact figures, only
//! on the counter being the one the host hands them.

use ctxhost_sdk::{Message, MESSAGE_OVERHEAD_TOKENS};

/// Tokens in `text`: its characters divided by four, rounded up.
pub fn count_text(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Tokens one message costs in a prompt under [`count_text`]: its text and tool calls, plus
/// the per-message framing.
pub fn count_message(message: &Message) -> u64 {
    count_text(&message.searchable_text()) + MESSAGE_OVERHEAD_TOKENS
}

/// Tokens a list of messages costs in a prompt under [`count_text`].
pub fn count_messages(messages: &[Message]) -> u64 {
    messages.iter().map(count_message).sum()
}
