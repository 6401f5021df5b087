//! The child side: the `ctxhost` binary in its hidden engine mode. It loads the plugin once,
//! with host services of its own built from the same config, builds an engine instance for
//! each session the host opens, and answers their calls (one per line, [`super::protocol`])
//! until the host closes its input.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::Duration;

use rustc_hash::FxHashMap;

use ctxhost_protocol::dispatch;
use ctxhost_sdk::{CompressOptions, ContextEngine, EngineError, ErrorKind, Message};
use serde::Serialize;

use super::lists::{CompressedList, MessageList, Received};
use super::protocol::{Call, Framed, Reply, Request, SessionCall, WireError};

/// Runs one request on the engine; its reply, framed for `call`. Messages the answer no longer
/// needs go to `set_aside`, to be dropped after it is sent.
fn answer(
    engine: &mut dyn ContextEngine,
    received: &mut Received,
    call: u64,
    request: Request,
    set_aside: &mut Vec<Message>,
) -> Vec<u8> {
    match request {
        Request::ShouldCompress { prompt_tokens } => {
            framed(call, &reply(engine.should_compress(prompt_tokens)))
        }
        Request::Compress { messages, options } => {
            let compressed = compress(engine, received, messages, &options, set_aside);
            framed(call, &reply(compressed))
        }
        Request::Call(request) => {
            let answered = request
                .try_map_list(|list| apply(received, list))
                .and_then(|request| dispatch(engine, request));
            framed(call, &reply(answered))
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

/// Writes one reply line (unframed: the answer of a child asked one thing).
pub fn send<T: Serialize>(out: &mut impl Write, reply: &Reply<T>) -> std::io::Result<()> {
    let mut line = match serde_json::to_vec(reply) {
        Ok(line) => line,
        Err(error) => serde_json::to_vec(&unsendable(error)).map_err(std::io::Error::other)?,
    };
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// The reply line answering `call`.
pub fn framed<T: Serialize>(call: u64, reply: &Reply<T>) -> Vec<u8> {
    Framed::line(call, reply).unwrap_or_else(|error| {
        Framed::line(call, &unsendable(error)).expect("an error reply is always JSON")
    })
}

/// An answer JSON cannot hold: the operation failed, and the host hears so.
fn unsendable(error: serde_json::Error) -> Reply<()> {
    Reply::Err(WireError::from(&EngineError::failed(format!(
        "the engine's answer cannot be sent: {error}"
    ))))
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

/// Builds a session's engine instance, its state under the data root given.
pub type OpenEngine = dyn Fn(&Path) -> Result<Box<dyn ContextEngine>, EngineError> + Send + Sync;

/// Serves the sessions' calls from `input` until it closes, then drops every session's engine
/// (waiting for the calls they are answering); `input_ready` says whether `input` has more to
/// read beyond its buffer. This thread reads; each session with calls waiting is served by a
/// thread of its own ([`Workers`]), so a slow call holds only its own session.
pub fn serve<R: Read>(
    open: Arc<OpenEngine>,
    mut input: BufReader<R>,
    input_ready: impl Fn() -> bool,
    out: impl Write + Send + 'static,
) -> std::io::Result<()> {
    let served = Arc::new(Served {
        open,
        out: Mutex::new(Box::new(out)),
    });
    let workers = Workers::new(served.clone());
    let mut sessions: FxHashMap<u64, Arc<Slot>> = FxHashMap::default();
    let mut line = String::new();
    loop {
        if input.buffer().is_empty() {
            super::wait::spin_until(&input_ready, REQUEST_SPIN);
        }
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let Call {
            session,
            call,
            body,
        } = match serde_json::from_str::<Call>(&line) {
            Ok(call) => call,
            Err(error) => match serde_json::from_str::<CallNumber>(&line) {
                Ok(CallNumber { call }) => {
                    let refused = Reply::<()>::Err(WireError::from(&EngineError::new(
                        ErrorKind::InvalidInput,
                        format!("the engine's process cannot read the request: {error}"),
                    )));
                    served.write(&framed(call, &refused))?;
                    continue;
                }
                // Nothing to answer to: the host broke the protocol.
                Err(_) => {
                    return Err(std::io::Error::other(format!(
                        "the host sent a line that is not a call: {error}"
                    )))
                }
            },
        };
        let slot = match &body {
            SessionCall::Open { .. } => sessions.entry(session).or_default().clone(),
            // The slot goes once its last call is queued; its thread answers it.
            SessionCall::Close => match sessions.remove(&session) {
                Some(slot) => slot,
                None => {
                    served.write(&framed(call, &Reply::Ok(())))?;
                    continue;
                }
            },
            SessionCall::Request(_) => match sessions.get(&session) {
                Some(slot) => slot.clone(),
                None => {
                    let unknown = Reply::<()>::Err(WireError::from(&EngineError::new(
                        ErrorKind::InvalidInput,
                        format!("the engine's process holds no session {session}"),
                    )));
                    served.write(&framed(call, &unknown))?;
                    continue;
                }
            },
        };
        if slot.queue(call, body) {
            workers.serve(slot)?;
        }
    }
    // The host is done: each engine is dropped once its calls are answered.
    for (_, slot) in sessions.drain() {
        drop(lock(&slot.engine).engine.take());
    }
    Ok(())
}

/// The `call` field of a line, when the rest cannot be read.
#[derive(serde::Deserialize)]
struct CallNumber {
    call: u64,
}

/// What every session's thread shares.
struct Served {
    open: Arc<OpenEngine>,
    out: Mutex<Box<dyn Write + Send>>,
}

impl Served {
    /// Writes one reply line whole (threads answer in any order, a line at a time).
    fn write(&self, line: &[u8]) -> std::io::Result<()> {
        let mut out = lock(&self.out);
        out.write_all(line)?;
        out.flush()
    }
}

/// One session in the child: the calls waiting for it, and its engine.
#[derive(Default)]
struct Slot {
    waiting: Mutex<Waiting>,
    engine: Mutex<Instance>,
}

#[derive(Default)]
struct Waiting {
    calls: VecDeque<(u64, SessionCall)>,
    /// Whether a thread is serving the session (it takes every call queued meanwhile).
    served: bool,
}

/// A session's engine instance and the message list it last received.
#[derive(Default)]
struct Instance {
    engine: Option<Box<dyn ContextEngine>>,
    received: Received,
}

impl Slot {
    /// Queues a call; `true` when the session needs a thread to serve it.
    fn queue(&self, call: u64, body: SessionCall) -> bool {
        let mut waiting = lock(&self.waiting);
        waiting.calls.push_back((call, body));
        !std::mem::replace(&mut waiting.served, true)
    }

    /// The next call, in order; `None` (and the session is no longer served) when none waits.
    fn next(&self) -> Option<(u64, SessionCall)> {
        let mut waiting = lock(&self.waiting);
        let next = waiting.calls.pop_front();
        waiting.served = next.is_some();
        next
    }

    /// Answers the session's calls until none waits.
    fn serve(&self, served: &Served) -> std::io::Result<()> {
        let mut set_aside = Vec::new();
        while let Some((call, body)) = self.next() {
            let mut instance = lock(&self.engine);
            let line = match body {
                SessionCall::Open { data_root } => match (served.open)(&data_root) {
                    Ok(engine) => {
                        instance.engine = Some(engine);
                        framed(call, &Reply::Ok(()))
                    }
                    Err(error) => framed(call, &Reply::<()>::Err(WireError::from(&error))),
                },
                SessionCall::Close => {
                    *instance = Instance::default();
                    framed(call, &Reply::Ok(()))
                }
                SessionCall::Request(request) => {
                    let Instance { engine, received } = &mut *instance;
                    match engine {
                        Some(engine) => {
                            answer(engine.as_mut(), received, call, request, &mut set_aside)
                        }
                        None => framed(
                            call,
                            &Reply::<()>::Err(WireError::from(&EngineError::failed(
                                "the session's engine did not start in its process",
                            ))),
                        ),
                    }
                }
            };
            drop(instance);
            served.write(&line)?;
            // The host has its answer: now the time is the child's own.
            set_aside.clear();
        }
        Ok(())
    }
}

/// The threads serving sessions: one per session with calls waiting, kept for the next once
/// it has none (so there are as many as sessions were ever busy at once, not as sessions).
struct Workers {
    served: Arc<Served>,
    idle: Arc<Mutex<Vec<mpsc::Sender<Arc<Slot>>>>>,
}

impl Workers {
    fn new(served: Arc<Served>) -> Self {
        Workers {
            served,
            idle: Arc::default(),
        }
    }

    /// Serves `slot` on an idle thread, or a new one (threads get the default stack, as the
    /// host's own threads that run engines in process do).
    fn serve(&self, slot: Arc<Slot>) -> std::io::Result<()> {
        let idle = lock(&self.idle).pop();
        let slot = match idle {
            Some(worker) => match worker.send(slot) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(slot)) => slot,
            },
            None => slot,
        };
        let (served, idle) = (self.served.clone(), self.idle.clone());
        let kept = slot.clone();
        let started = std::thread::Builder::new()
            .name("ctxhost-engine-session".to_string())
            .spawn(move || {
                let (sender, jobs) = mpsc::channel::<Arc<Slot>>();
                let mut slot = slot;
                loop {
                    if slot.serve(&served).is_err() {
                        // The host is gone: nothing is left to answer.
                        std::process::exit(0);
                    }
                    lock(&idle).push(sender.clone());
                    match jobs.recv() {
                        Ok(next) => slot = next,
                        Err(_) => return,
                    }
                }
            });
        match started {
            Ok(_) => Ok(()),
            // No thread to spare (the address space is full, say): this one answers, and the
            // other sessions wait for it rather than lose their calls.
            Err(_) => kept.serve(&self.served),
        }
    }
}

/// A lock, whatever a thread that held it did (an engine's panic is caught before it).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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
