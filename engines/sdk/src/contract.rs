//! The output contract of [`ContextEngine::compress`](crate::ContextEngine::compress), as
//! checks both sides run: the host on every compression, and an engine's own tests (through
//! `ctxhost-sdk-test`).
//!
//! - [`check_structure`]: every text is valid UTF-8, no extra field shadows a core one (`role`,
//!   `content`, `tool_calls`, `tool_call_id`, `name`), `output` is a valid chat sequence, not
//!   empty when `input` was not, opens with `input`'s system prompt unchanged, and uses only
//!   chat-format roles or roles `input` used. Breaking it loses or forges the conversation.
//! - [`check_newest_user`]: the newest user message of `input` that an engine did not write
//!   itself is in `output`, unchanged. An engine's own summary may be a user message (it
//!   stands between head and tail), and a later compression folds it into the next summary:
//!   that summary is the engine's to replace, the user's words are not. Which messages an
//!   engine wrote is the caller's to say: from what it saw come out of the engine (the host
//!   tracks it per session), or from the engine itself (the built-in compressor knows its
//!   own summaries from before a session), never from a plugin's say-so.
//! - [`check_turn_in_progress`]: what the model has not answered yet ends `output` unchanged:
//!   the input from its newest round on (the newest assistant message and the tool results
//!   after it), or from the newest user message when that came later. An engine that drops
//!   or rewrites them sends the model a request without the results it is waiting for.
//!   Earlier rounds of a long turn the model has already seen stay the engine's to compress
//!   (a session that is one long turn must still fit its window).
//! - [`check_output`]: the whole contract: the structure, plus the newest user message of
//!   `input` kept unchanged, the turn in progress ending `output` unchanged and `output`
//!   costing no more tokens than `input`. The host checks
//!   it on every compression, for every engine (with the messages each session's engines
//!   wrote exempt); a violation is an engine failure.

use crate::message::{role, Message};
use crate::sequence::{self, SequenceError};

/// A broken promise of the output contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputViolation {
    /// The output is not a valid chat sequence (tool calls and results unpaired, system
    /// prompt not first).
    #[error("the output is not a valid chat sequence: {0}")]
    InvalidSequence(#[from] SequenceError),
    /// The input had messages and the output has none.
    #[error("the output is empty, the input had {input_len} messages")]
    Empty {
        /// Messages in the input.
        input_len: usize,
    },
    /// The input's system prompt is not the output's first message, unchanged.
    #[error("the system prompt is not kept: the output's first message is {found}")]
    SystemPromptLost {
        /// A short description of what the output starts with instead.
        found: String,
    },
    /// The output has a role that is neither a chat-format role nor one the input used.
    #[error("output message {index} has the unknown role `{role}`")]
    UnknownRole {
        /// Its index in the output.
        index: usize,
        /// The role.
        role: String,
    },
    /// The input's newest user message (that the engine did not write) is not in the output,
    /// unchanged.
    #[error("the newest user message (input message {index}) is not in the output")]
    NewestUserLost {
        /// Its index in the input.
        index: usize,
    },
    /// The input's turn in progress (its newest round, or its newest user message and what
    /// follows) does not end the output unchanged.
    #[error(
        "the turn in progress (input messages {start}..{end}) does not end the output unchanged"
    )]
    TurnInProgressLost {
        /// The index in the input where the turn in progress starts.
        start: usize,
        /// The input's length.
        end: usize,
    },
    /// A message holds text that is not valid UTF-8.
    #[error("output message {index} holds text that is not valid UTF-8")]
    InvalidText {
        /// Its index in the output.
        index: usize,
    },
    /// A message carries an extra field that would shadow a core one when written out (a
    /// second `role`, say).
    #[error("output message {index} carries a second `{field}` among its extra fields")]
    ShadowedField {
        /// Its index in the output.
        index: usize,
        /// The core field it would shadow.
        field: String,
    },
    /// The output costs more tokens than the input.
    #[error("the output is larger than the input: {before} → {after} tokens")]
    Larger {
        /// Tokens of the input.
        before: u64,
        /// Tokens of the output.
        after: u64,
    },
}

/// The structure every output must keep (see the [module docs](self)). An invalid `input` is
/// not the engine's fault: only breaking a valid sequence counts.
pub fn check_structure(input: &[Message], output: &[Message]) -> Result<(), OutputViolation> {
    check_fields(output)?;
    if let Err(problem) = sequence::validate(output) {
        if sequence::validate(input).is_ok() {
            return Err(problem.into());
        }
    }
    if output.is_empty() && !input.is_empty() {
        return Err(OutputViolation::Empty {
            input_len: input.len(),
        });
    }
    if let Some(system) = input.first().filter(|m| m.is_system()) {
        if output.first() != Some(system) {
            let found = output.first().map_or("absent".to_string(), describe);
            return Err(OutputViolation::SystemPromptLost { found });
        }
    }
    for (index, message) in output.iter().enumerate() {
        let known = [role::SYSTEM, role::USER, role::ASSISTANT, role::TOOL];
        if !known.contains(&message.role()) && !input.iter().any(|m| m.role() == message.role()) {
            return Err(OutputViolation::UnknownRole {
                index,
                role: message.role().to_string(),
            });
        }
    }
    Ok(())
}

/// What each message of `output` holds on its own: valid UTF-8, and no extra field that would
/// shadow a core one when written out. The part of [`check_structure`] that must run before the
/// messages are serialized (a shadowing field changes meaning once written as JSON).
pub fn check_fields(output: &[Message]) -> Result<(), OutputViolation> {
    output
        .iter()
        .enumerate()
        .try_for_each(|(index, message)| check_message_fields(index, message))
}

/// [`check_fields`] for the message at `index` of an output.
pub fn check_message_fields(index: usize, message: &Message) -> Result<(), OutputViolation> {
    if !message.is_valid_utf8() {
        return Err(OutputViolation::InvalidText { index });
    }
    if let Some(field) = message.shadowing_field() {
        return Err(OutputViolation::ShadowedField { index, field });
    }
    Ok(())
}

/// The newest user message of `input` for which `written_by_engine` is false is in `output`,
/// unchanged.
pub fn check_newest_user(
    input: &[Message],
    output: &[Message],
    written_by_engine: impl Fn(&Message) -> bool,
) -> Result<(), OutputViolation> {
    let newest = input
        .iter()
        .rposition(|m| m.is_user() && !written_by_engine(m));
    match newest {
        Some(index) if !output.contains(&input[index]) => {
            Err(OutputViolation::NewestUserLost { index })
        }
        _ => Ok(()),
    }
}

/// The turn in progress ends `output` unchanged: `input` from its newest assistant message
/// on, or from its newest user message (that `written_by_engine` says the engine did not
/// write) when that is later. Nothing to keep when `input` has neither.
pub fn check_turn_in_progress(
    input: &[Message],
    output: &[Message],
    written_by_engine: impl Fn(&Message) -> bool,
) -> Result<(), OutputViolation> {
    let newest_user = input
        .iter()
        .rposition(|m| m.is_user() && !written_by_engine(m));
    let newest_round = input.iter().rposition(Message::is_assistant);
    let Some(start) = newest_user.max(newest_round) else {
        return Ok(());
    };
    if output.ends_with(&input[start..]) {
        Ok(())
    } else {
        Err(OutputViolation::TurnInProgressLost {
            start,
            end: input.len(),
        })
    }
}

/// `output` costs no more tokens than `input`; `count` gives a message list's tokens.
pub fn check_size(
    input: &[Message],
    output: &[Message],
    count: impl Fn(&[Message]) -> u64,
) -> Result<(), OutputViolation> {
    let (before, after) = (count(input), count(output));
    if after > before {
        return Err(OutputViolation::Larger { before, after });
    }
    Ok(())
}

/// The whole output contract (see the [module docs](self)); `count` gives a message list's
/// tokens.
pub fn check_output(
    input: &[Message],
    output: &[Message],
    count: impl Fn(&[Message]) -> u64,
) -> Result<(), OutputViolation> {
    check_structure(input, output)?;
    check_newest_user(input, output, |_| false)?;
    check_size(input, output, &count)?;
    check_turn_in_progress(input, output, |_| false)
}

/// `a user message: "first ask"`, cut to 40 characters.
fn describe(message: &Message) -> String {
    let text = message.content_text();
    let short: String = text.chars().take(40).collect();
    let ellipsis = if text.chars().count() > 40 { "…" } else { "" };
    format!("a {} message: {short:?}{ellipsis}", message.role())
}
