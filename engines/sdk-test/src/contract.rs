//! Contract checks any engine can run. Each returns a typed [`Violation`] saying what broke.
//!
//! The checks, for a conversation `input` and the engine's answer `output`:
//!
//! - **a valid chat sequence** ([`check_output`]): `output` passes
//!   [`ctxhost_sdk::sequence::validate`] (system prompt first, every tool call answered right
//!   after it, no result without its call);
//! - **nothing lost that the contract protects** ([`check_output`]): `output` is not empty when
//!   `input` was not; when `input` opens with a system prompt, `output` opens with the same
//!   message, byte for byte; the newest user message of `input` is in `output`, byte for byte;
//!   every role of `output` is `system`, `user`, `assistant` or `tool`, or one `input` used
//!   itself; `output` costs no more tokens than `input` ([`crate::tokens`]); the turn in
//!   progress (`input` from its newest assistant message on, or from its newest user message
//!   when that came later: the tool results the model has not seen yet) ends `output`, byte
//!   for byte;
//! - **unchanged under the threshold** ([`check_unchanged_under_threshold`]): for a
//!   conversation the engine does not want compressed (`should_compress(tokens)` is false for
//!   its token count), `compress` without `force` and with `current_tokens` set to that count
//!   returns `input` itself, byte for byte;
//! - **idempotent on its own output** ([`check_idempotent`]): the same engine instance,
//!   given its own `output` again without `force` (and `current_tokens` set to the output's
//!   count), returns `output` unchanged;
//! - **never larger, even with little to compress** ([`opening`]): a forced compression of
//!   the conversation's opening (its first few messages, on whole turns), where a summary or a
//!   marker costs about as much as what it would replace, keeps the output contract too: an
//!   engine that cannot shrink a context returns it as it was, never a larger one;
//! - **a selection keeps the request** ([`check_selection`]), for an engine that has
//!   [`select_context`](ContextEngine::select_context): asked about its own output, it keeps
//!   every message, in order and unchanged, adds only messages marked as recalled, stays a valid
//!   chat sequence, and answers the same selection when asked again.
//!
//! [`check_engine`] and [`check_plugin`] run all of them over the corpus for any engine
//! built from [`HostServices`]; [`EngineCheck`] does the same with a chosen config, window or
//! set of conversations.

use std::fmt;

use ctxhost_quality::corpus::Transcript;
use ctxhost_sdk::contract::{self, OutputViolation};
use ctxhost_sdk::{
    sequence, CompressOptions, ContextEngine, EngineError, EnginePlugin, HostServices, Message,
    SelectRequest, SelectionViolation,
};
use serde_json::Value;

use crate::corpus;
use crate::fake_host::FakeHost;
use crate::tokens;

/// A broken promise of the engine contract.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Violation {
    /// The output breaks the output contract ([`ctxhost_sdk::contract`]).
    #[error(transparent)]
    Output(#[from] OutputViolation),
    /// A conversation the engine did not want compressed came back changed.
    #[error(
        "a conversation under the threshold ({tokens} tokens) came back changed, \
         first at message {first_difference}"
    )]
    ChangedUnderThreshold {
        /// Tokens of the conversation.
        tokens: u64,
        /// The first index where input and output differ.
        first_difference: usize,
    },
    /// The check needs a conversation under the threshold, and the engine wants this one
    /// compressed.
    #[error(
        "the engine wants to compress {tokens} tokens in a {context_length}-token window, \
         so unchanged-under-the-threshold cannot be checked; use a larger context_length"
    )]
    NotUnderThreshold {
        /// Tokens of the conversation.
        tokens: u64,
        /// The window the engine was given.
        context_length: u64,
    },
    /// Compressing the engine's own output again, unforced, changed it.
    #[error(
        "not idempotent: compressing its own output again changed it, first at message \
         {first_difference} ({before} → {after} messages)"
    )]
    NotIdempotent {
        /// The first index where the two outputs differ.
        first_difference: usize,
        /// Messages in the first output.
        before: usize,
        /// Messages in the second.
        after: usize,
    },
    /// A selection breaks its contract.
    #[error(transparent)]
    Selection(#[from] SelectionViolation),
    /// The same request, asked twice, got two selections.
    #[error("select_context answered the same request with two different selections")]
    SelectionUnstable,
    /// An engine operation returned an error.
    #[error("{operation} failed: {error}")]
    Engine {
        /// The operation (`create`, `compress`, `should_compress`, `status`).
        operation: &'static str,
        /// Its error.
        error: EngineError,
    },
}

/// A [`Violation`] on one conversation, as [`check_engine`] reports it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{conversation}: {check}: {violation}")]
pub struct ContractFailure {
    /// The conversation's name (a corpus file name, or the name given to
    /// [`EngineCheck::conversation`]).
    pub conversation: String,
    /// The check that failed.
    pub check: Check,
    /// What broke.
    pub violation: Violation,
}

/// The checks [`EngineCheck`] runs on every conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Check {
    /// A forced compression keeps the output contract ([`check_output`]).
    ForcedOutput,
    /// Compressing the forced output again changes nothing ([`check_idempotent`]).
    Idempotent,
    /// In a window four times the conversation's size, an unforced compression returns it
    /// unchanged ([`check_unchanged_under_threshold`]).
    UnchangedUnderThreshold,
    /// A forced compression of the conversation's [`opening`], where there is little to
    /// compress, keeps the output contract (in particular, it is no larger than its input).
    ForcedOpening,
    /// `select_context` on the forced output keeps the request and is stable
    /// ([`check_selection`]), when the engine has it.
    Selection,
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Check::ForcedOutput => "forced compression",
            Check::Idempotent => "idempotence",
            Check::UnchangedUnderThreshold => "unchanged under the threshold",
            Check::ForcedOpening => "forced compression of the opening",
            Check::Selection => "selection",
        })
    }
}

/// What [`EngineCheck::run`] saw, so a test can tell the checks were not vacuous.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Conversations checked.
    pub conversations: usize,
    /// Conversations a forced compression made smaller (in tokens).
    pub shrunk: usize,
    /// Tokens of every input, summed.
    pub tokens_before: u64,
    /// Tokens of every forced output, summed.
    pub tokens_after: u64,
    /// Conversations `select_context` answered (0 for an engine without it).
    pub selected: usize,
}

/// The output contract: `output` is a valid chat sequence and keeps everything the contract
/// protects from `input` (see the [module docs](self)).
pub fn check_output(input: &[Message], output: &[Message]) -> Result<(), Violation> {
    Ok(contract::check_output(
        input,
        output,
        tokens::count_messages,
    )?)
}

/// Messages in a conversation's opening, before [`opening`] moves the cut to a turn's end.
pub const OPENING_MESSAGES: usize = 8;

/// The opening of a conversation: its first [`OPENING_MESSAGES`] messages, moved forward to
/// the end of a tool turn so no call is cut from its results (the whole conversation when it
/// is that short).
pub fn opening(messages: &[Message]) -> &[Message] {
    &messages[..sequence::end_of_turn(messages, OPENING_MESSAGES)]
}

/// Unchanged under the threshold: `messages` must be a conversation `engine` does not want
/// compressed; `compress` without `force` must return it unchanged.
pub fn check_unchanged_under_threshold(
    engine: &mut dyn ContextEngine,
    messages: &[Message],
) -> Result<(), Violation> {
    let tokens = tokens::count_messages(messages);
    let wants = engine
        .should_compress(tokens)
        .map_err(|error| Violation::Engine {
            operation: "should_compress",
            error,
        })?;
    if wants {
        let status = engine.status().map_err(|error| Violation::Engine {
            operation: "status",
            error,
        })?;
        return Err(Violation::NotUnderThreshold {
            tokens,
            context_length: status.context_length,
        });
    }
    let output = compress(engine, messages, unforced(tokens))?;
    match first_difference(messages, &output) {
        None => Ok(()),
        Some(first_difference) => Err(Violation::ChangedUnderThreshold {
            tokens,
            first_difference,
        }),
    }
}

/// Idempotent on its own output: `output` (what `engine` just returned) compressed again
/// without `force` comes back unchanged.
pub fn check_idempotent(
    engine: &mut dyn ContextEngine,
    output: &[Message],
) -> Result<(), Violation> {
    let again = compress(engine, output, unforced(tokens::count_messages(output)))?;
    match first_difference(output, &again) {
        None => Ok(()),
        Some(first_difference) => Err(Violation::NotIdempotent {
            first_difference,
            before: output.len(),
            after: again.len(),
        }),
    }
}

/// Runs every check over the corpus for the engine `make` builds, on a [`FakeHost`]
/// for engine `name` with its defaults (no config section, an 8,000-token window).
pub fn check_engine<E, F>(name: &str, make: F) -> Result<CheckReport, ContractFailure>
where
    E: ContextEngine,
    F: FnMut(HostServices) -> Result<E, EngineError>,
{
    EngineCheck::new(name, make).run()
}

/// [`check_engine`] for a plugin type, named by its manifest and built by its
/// [`EnginePlugin::create`].
pub fn check_plugin<E: EnginePlugin>() -> Result<CheckReport, ContractFailure> {
    for_plugin::<E>().run()
}

/// The contract checks for one engine, configured: which conversations, which config section,
/// which window. [`run`](Self::run) builds a fresh engine on a fresh [`FakeHost`] for every
/// conversation and check, so no state leaks from one to the next.
pub struct EngineCheck<F> {
    name: String,
    make: F,
    config: Value,
    context_length: u64,
    conversations: Vec<Transcript>,
}

/// How [`for_plugin`] builds a plugin: its [`EnginePlugin::create`].
pub type Create<E> = fn(HostServices) -> Result<E, EngineError>;

/// The checks for plugin type `E`, named by its manifest and built by its
/// [`EnginePlugin::create`], to configure before [`run`](EngineCheck::run).
pub fn for_plugin<E: EnginePlugin>() -> EngineCheck<Create<E>> {
    EngineCheck::new(&E::manifest().name, E::create as Create<E>)
}

impl<E, F> EngineCheck<F>
where
    E: ContextEngine,
    F: FnMut(HostServices) -> Result<E, EngineError>,
{
    /// The checks for engine `name`, built by `make` (`MyEngine::create`, or a closure).
    pub fn new(name: &str, make: F) -> Self {
        EngineCheck {
            name: name.to_string(),
            make,
            config: Value::Null,
            context_length: 8_000,
            conversations: Vec::new(),
        }
    }

    /// The engine's config section. Default: none.
    pub fn config(mut self, config: Value) -> Self {
        self.config = config;
        self
    }

    /// The window for the forced compressions and idempotence. Default: 8,000 tokens.
    pub fn context_length(mut self, tokens: u64) -> Self {
        self.context_length = tokens;
        self
    }

    /// Checks this conversation; once any is given, the corpus is not used.
    pub fn conversation(mut self, name: &str, messages: Vec<Message>) -> Self {
        self.conversations.push(Transcript {
            name: name.to_string(),
            messages,
        });
        self
    }

    /// Runs every [`Check`] on every conversation (the whole corpus unless some were given),
    /// stopping at the first failure.
    ///
    /// # Panics
    /// When no conversation was given and the corpus is missing (see [`corpus`]).
    pub fn run(mut self) -> Result<CheckReport, ContractFailure> {
        let conversations = if self.conversations.is_empty() {
            corpus::transcripts()
        } else {
            std::mem::take(&mut self.conversations)
        };
        let mut report = CheckReport::default();
        for conversation in &conversations {
            let (before, after, selected) = self.check_one(conversation)?;
            report.conversations += 1;
            report.selected += usize::from(selected);
            report.tokens_before += before;
            report.tokens_after += after;
            if after < before {
                report.shrunk += 1;
            }
        }
        Ok(report)
    }

    /// The checks on one conversation; the tokens before and after a forced compression, and
    /// whether the engine answered `select_context`.
    fn check_one(
        &mut self,
        conversation: &Transcript,
    ) -> Result<(u64, u64, bool), ContractFailure> {
        let input = &conversation.messages;
        let failure = |check: Check| {
            let name = conversation.name.clone();
            move |violation: Violation| ContractFailure {
                conversation: name,
                check,
                violation,
            }
        };

        let mut engine = self
            .engine(self.context_length)
            .map_err(failure(Check::ForcedOutput))?;
        let output = compress(&mut engine, input, forced())
            .and_then(|output| check_output(input, &output).map(|()| output))
            .map_err(failure(Check::ForcedOutput))?;
        check_idempotent(&mut engine, &output).map_err(failure(Check::Idempotent))?;
        let selected = check_selection(&mut engine, &output).map_err(failure(Check::Selection))?;

        let opening = opening(input);
        let mut engine = self
            .engine(self.context_length)
            .map_err(failure(Check::ForcedOpening))?;
        compress(&mut engine, opening, forced())
            .and_then(|output| check_output(opening, &output))
            .map_err(failure(Check::ForcedOpening))?;

        let before = tokens::count_messages(input);
        let roomy = before.saturating_mul(4).max(1_000);
        let mut engine = self
            .engine(roomy)
            .map_err(failure(Check::UnchangedUnderThreshold))?;
        check_unchanged_under_threshold(&mut engine, input)
            .map_err(failure(Check::UnchangedUnderThreshold))?;
        Ok((before, tokens::count_messages(&output), selected))
    }

    fn engine(&mut self, context_length: u64) -> Result<E, Violation> {
        let host = FakeHost::builder(self.name.clone())
            .config(self.config.clone())
            .context_length(context_length)
            .build();
        (self.make)(host.services()).map_err(|error| Violation::Engine {
            operation: "create",
            error,
        })
    }
}

/// The selection contract on `messages`, asked about their newest user message with room for
/// 2,000 tokens: true when the engine has `select_context` and kept it, false when it has none
/// ([`ErrorKind::Unsupported`](ctxhost_sdk::ErrorKind::Unsupported)).
pub fn check_selection(
    engine: &mut dyn ContextEngine,
    messages: &[Message],
) -> Result<bool, Violation> {
    let request = SelectRequest {
        incoming: messages.iter().rev().find(|m| m.is_user()).cloned(),
        budget_tokens: 2_000,
    };
    let selection = match engine.select_context(messages, &request) {
        Err(error) if error.is_unsupported() => return Ok(false),
        Err(error) => {
            return Err(Violation::Engine {
                operation: "select_context",
                error,
            })
        }
        Ok(selection) => selection,
    };
    selection.check(messages)?;
    sequence::validate(&selection.messages)
        .map_err(|error| Violation::Output(OutputViolation::InvalidSequence(error)))?;
    let again = engine
        .select_context(messages, &request)
        .map_err(|error| Violation::Engine {
            operation: "select_context",
            error,
        })?;
    if again != selection {
        return Err(Violation::SelectionUnstable);
    }
    Ok(true)
}

fn forced() -> CompressOptions {
    CompressOptions {
        force: true,
        ..CompressOptions::default()
    }
}

fn unforced(tokens: u64) -> CompressOptions {
    CompressOptions {
        current_tokens: Some(tokens),
        ..CompressOptions::default()
    }
}

fn compress(
    engine: &mut dyn ContextEngine,
    messages: &[Message],
    options: CompressOptions,
) -> Result<Vec<Message>, Violation> {
    engine
        .compress(messages, &options)
        .map_err(|error| Violation::Engine {
            operation: "compress",
            error,
        })
}

/// The first index where `a` and `b` differ, or `None` when they are equal.
fn first_difference(a: &[Message], b: &[Message]) -> Option<usize> {
    if a == b {
        return None;
    }
    Some(
        a.iter()
            .zip(b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len())),
    )
}

/// The key an engine's settings error names (relative to its config section), after checking
/// the error is one: engines report a wrong setting with
/// [`EngineError::invalid_setting`](ctxhost_sdk::EngineError::invalid_setting).
pub fn setting_key(error: &EngineError) -> &str {
    assert_eq!(
        error.kind(),
        ctxhost_sdk::ErrorKind::InvalidSetting,
        "not a setting error: {error}"
    );
    &error.setting().expect("a setting error names its key").key
}
