//! The child side: the `ctxhost` binary in its hidden engine mode. It builds the engine in its
//! own process, with host services of its own built from the same config, and answers one
//! request per line until the host closes its input.

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use ctxhost_sdk::protocol::dispatch;
use ctxhost_sdk::{CompressOptions, ContextEngine, EngineError, ErrorKind, Message};
use serde::Serialize;

use super::lists::{CompressedList, MessageList, Received};
use super::protocol::{Reply, Request, WireError};

/// Runs one request on the engine and writes its reply. Messages the answer no longer needs go
/// to `set_aside`, to be dropped after it is sent.
fn answer(
    engine: &mut dyn ContextEngine,
    received: &mut Received,
    request: Request,
    set_aside: &mut Vec<Message>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    match request {
        Request::ShouldCompress { prompt_tokens } => {
            send(out, &reply(engine.should_compress(prompt_tokens)))
        }
        Request::Compress { messages, options } => {
            let compressed = compress(engine, received, messages, &options, set_aside);
            send(out, &reply(compressed))
        }
        Request::Call(call) => {
            let answered = call
                .try_map_list(|list| apply(received, list))
                .and_then(|call| dispatch(engine, call));
            send(out, &reply(answered))
        }
    }
}

fn reply<T>(result: Result<T, EngineError>) -> Reply<T> {
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

/// `compress` on the list the request carries, answered as runs of it and new messages.
fn compress(
    engine: &mut dyn ContextEngine,
    received: &mut Received,
    messages: MessageList,
    options: &CompressOptions,
    set_aside: &mut Vec<Message>,
) -> Result<CompressedList, EngineError> {
    let messages = apply(received, messages)?;
    let output = engine.compress(messages, options)?;
    let compressed = CompressedList::encode(received.messages(), output, set_aside);
    // A forged field would change meaning on the way through JSON (the last of two `role` keys
    // wins): refuse it here, where it is still visible. The host checks the rest of the
    // contract on what arrives.
    compressed.check_new_fields().map_err(|violation| {
        EngineError::failed(format!("returned an invalid context: {violation}"))
    })?;
    Ok(compressed)
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
        match serde_json::from_str::<Request>(&line) {
            Ok(request) => answer(engine, &mut received, request, &mut set_aside, out)?,
            Err(error) => send(
                out,
                &Reply::<()>::Err(WireError::from(&EngineError::new(
                    ErrorKind::InvalidInput,
                    format!("the engine's process cannot read the request: {error}"),
                ))),
            )?,
        }
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
