//! The child side: the `ctxhost` binary in its hidden engine mode. It builds the engine in its
//! own process, with host services of its own built from the same config, and answers one
//! request per line until the host closes its input.

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use ctxhost_sdk::{ContextEngine, EngineError, ErrorKind, Message};
use serde::Serialize;

use super::lists::{CompressedList, MessageList, Received};
use super::protocol::{Answer, Reply, Request, WireError};

/// Runs one request on the engine.
fn answer(
    engine: &mut dyn ContextEngine,
    received: &mut Received,
    request: Request,
    set_aside: &mut Vec<Message>,
) -> Reply<Answer> {
    let result = run(engine, received, request, set_aside);
    match result {
        Ok(value) => Reply::Ok(value),
        Err(error) => Reply::Err(WireError::from(&error)),
    }
}

/// The list a request carries, as a change applied to what this side holds.
fn apply(received: &mut Received, list: MessageList) -> Result<&[Message], EngineError> {
    received.apply(list).ok_or_else(|| {
        EngineError::new(
            ErrorKind::InvalidInput,
            "the engine's process holds fewer messages than the host's change keeps",
        )
    })
}

/// Messages the answer no longer needs go to `set_aside`, to be dropped after it is sent.
fn run(
    engine: &mut dyn ContextEngine,
    received: &mut Received,
    request: Request,
    set_aside: &mut Vec<Message>,
) -> Result<Answer, EngineError> {
    let nothing = |()| Answer::Nothing;
    match request {
        Request::UpdateFromResponse { usage } => engine.update_from_response(&usage).map(nothing),
        Request::ShouldCompress { prompt_tokens } => {
            engine.should_compress(prompt_tokens).map(Answer::Flag)
        }
        Request::ShouldCompressPreflight { messages } => engine
            .should_compress_preflight(apply(received, messages)?)
            .map(Answer::Flag),
        Request::Compress { messages, options } => {
            let messages = apply(received, messages)?;
            engine.compress(messages, &options).and_then(|output| {
                let compressed = CompressedList::encode(received.messages(), output, set_aside);
                // A forged field would change meaning on the way through JSON (the last of
                // two `role` keys wins): refuse it here, where it is still visible. The host
                // checks the rest of the contract on what arrives.
                compressed.check_new_fields().map_err(|violation| {
                    EngineError::failed(format!("returned an invalid context: {violation}"))
                })?;
                Ok(Answer::Compressed(compressed))
            })
        }
        Request::HasContentToCompress { messages } => engine
            .has_content_to_compress(apply(received, messages)?)
            .map(Answer::Flag),
        Request::OnSessionStart { session } => engine.on_session_start(&session).map(nothing),
        Request::OnSessionEnd {
            session_id,
            messages,
        } => engine.on_session_end(&session_id, &messages).map(nothing),
        Request::OnSessionReset => engine.on_session_reset().map(nothing),
        Request::ToolSchemas => engine
            .tool_schemas()
            .map(|schemas| Answer::Json(serde_json::Value::Array(schemas))),
        Request::HandleToolCall { name, args } => {
            engine.handle_tool_call(&name, &args).map(Answer::Text)
        }
        Request::Status => engine.status().map(Answer::Status),
        Request::UpdateModel {
            model,
            context_length,
        } => engine.update_model(&model, context_length).map(nothing),
        Request::LastCompression => engine.last_compression().map(Answer::LastCompression),
        Request::Sessions => engine.sessions().map(Answer::Sessions),
        Request::Session { session_id } => engine.session(&session_id).map(Answer::Session),
        Request::DeleteSession { session_id } => {
            engine.delete_session(&session_id).map(Answer::Flag)
        }
        Request::Invoke { name, payload } => engine.invoke(&name, &payload).map(Answer::Json),
    }
}

/// Writes one reply line.
pub fn send<T: Serialize>(out: &mut impl Write, reply: &Reply<T>) -> std::io::Result<()> {
    let mut line = match serde_json::to_vec(reply) {
        Ok(line) => line,
        // An answer JSON cannot hold: the operation failed, and the host hears so.
        Err(error) => serde_json::to_vec(&Reply::<()>::Err(WireError::from(&EngineError::failed(
            format!("the engine's answer cannot be sent: {error}"),
        ))))
        .map_err(std::io::Error::other)?,
    };
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// How long the child spins for the next request after a reply ([`super::wait`]): the host's
/// calls come in bursts (the per-turn check, then `compress`; a model update, then usage).
/// Not at all where [`stdin_ready`] cannot tell.
const REQUEST_SPIN: Duration = if cfg!(unix) {
    Duration::from_micros(300)
} else {
    Duration::ZERO
};

/// Whether the host's next request (or the end of input) is there to read on stdin.
pub fn stdin_ready() -> bool {
    #[cfg(unix)]
    {
        super::wait::readable_now(0)
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// Serves requests from `input` until it closes; `input_ready` says whether `input` has more
/// to read beyond its buffer.
pub fn serve<R: Read>(
    engine: &mut dyn ContextEngine,
    mut input: BufReader<R>,
    input_ready: impl Fn() -> bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let mut received = Received::default();
    let mut line = String::new();
    let mut set_aside = Vec::new();
    loop {
        if input.buffer().is_empty() {
            super::wait::spin_until(&input_ready, REQUEST_SPIN);
        }
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Request>(&line) {
            Ok(request) => answer(engine, &mut received, request, &mut set_aside),
            Err(error) => Reply::Err(WireError::from(&ctxhost_sdk::EngineError::new(
                ctxhost_sdk::ErrorKind::InvalidInput,
                format!("the engine's process cannot read the request: {error}"),
            ))),
        };
        send(out, &reply)?;
        // The host has its answer: now the time is the child's own.
        set_aside.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_json_cannot_hold_is_sent_as_the_operations_failure() {
        // JSON object keys are strings: a map keyed by pairs cannot be written.
        let answer: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let mut out = Vec::new();
        send(&mut out, &Reply::Ok(answer)).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(
            line.ends_with('\n') && line.matches('\n').count() == 1,
            "{line}"
        );
        let Reply::<serde_json::Value>::Err(error) = serde_json::from_str(&line).unwrap() else {
            panic!("an error reply: {line}");
        };
        assert_eq!(error.kind, ErrorKind::Failed);
        assert!(
            error.message.contains("cannot be sent"),
            "{}",
            error.message
        );
    }
}
