//! The host side: [`ProcessEngine`], a [`ContextEngine`](ctxhost_sdk::ContextEngine) whose
//! engine instance runs in a child process its plugin's sessions share ([`Pool`]). Whatever
//! the child does (abort, crash, exit, hang, run out of memory, print to stdout), the calls in
//! flight on it get an error naming the plugin and the cause; the next call of each of its
//! sessions starts a new child and opens the session on it again.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_protocol::{EngineCall, EngineReply, EngineTransport, Op, RemoteEngine};
use ctxhost_sdk::{CompressOptions, EngineError, ErrorKind, HostBackend, Message};
use serde::de::DeserializeOwned;

pub use super::connection::ChildSpec;
use super::connection::{start_process, Connection, Lost, NoAnswer};
use super::lists::{CompressedList, Copies, Shipped};
use super::pool::{Pool, Seat};
use super::protocol::{Call, Framed, Ready, Reply, Request, SessionCall};
use super::replies::{NoReply, Replies};
use super::{is_check, spawn, wait};

/// How long a call may take, and the setting that says so.
#[derive(Debug, Clone, Copy)]
struct Deadline {
    limit: Duration,
    key: &'static str,
    /// The size of the request: the child is given time to read it on top of `limit` (a long
    /// message list is the host's to send, not the engine's to answer).
    request_bytes: usize,
}

/// How fast a child is expected to read a request at the least, in bytes per second.
const READ_RATE: f64 = 10.0 * 1024.0 * 1024.0;

impl Deadline {
    fn new(limit: Duration, key: &'static str) -> Self {
        Deadline {
            limit,
            key,
            request_bytes: 0,
        }
    }

    /// The time to read the request.
    fn reading(&self) -> Duration {
        Duration::from_secs_f64(self.request_bytes as f64 / READ_RATE)
    }

    /// How long to wait for the answer.
    fn total(&self) -> Duration {
        self.limit + self.reading()
    }

    /// What the deadline was, for people: `2s (plugins.x.timeout)`.
    fn describe(&self, plugin: &str) -> String {
        let reading = self.reading();
        let plus = if reading >= Duration::from_secs(1) {
            format!(
                ", plus {:.0}s to read a {} MB request",
                reading.as_secs_f64(),
                self.request_bytes / (1024 * 1024)
            )
        } else {
            String::new()
        };
        format!(
            "{}s (plugins.{plugin}.{}{plus})",
            self.limit.as_secs_f64(),
            self.key
        )
    }
}

/// An engine in a child process: the SDK's remote engine over the pipes to it.
pub type ProcessEngine = RemoteEngine<ChildProcess>;

/// One session's engine instance in a process of its plugin's [`Pool`], and the calls to it:
/// the transport of a [`ProcessEngine`].
pub struct ChildProcess {
    name: String,
    seat: Seat,
    /// Where the session's engine keeps its state (its process opens it there).
    data_root: PathBuf,
    /// The process the session's engine instance is open in; another one (after a loss)
    /// opens it again first.
    open_on: Option<Arc<Connection>>,
    /// Requests that set the engine's state, replayed to a reopened instance.
    replay: Vec<Request>,
    /// The message list the instance holds (what the next list is sent as a change to).
    shipped: Shipped,
    /// How long the last reply to each operation took ([`wait::spin_for`]).
    last_reply: rustc_hash::FxHashMap<&'static str, Duration>,
    /// The copies the last `compress` made and did not use: freed while the child works on
    /// the next call, not while the caller waits for this one.
    unused_copies: Option<Copies>,
}

impl ChildProcess {
    /// Starts a process of its own for the engine `spec` names and opens a session on it; the
    /// engine's own start-up error (a bad setting, say) comes back as it is.
    pub fn start(
        spec: ChildSpec,
        services: Arc<dyn HostBackend>,
    ) -> Result<(ProcessEngine, Ready), EngineError> {
        let data_root = spec.init.data_root.clone();
        Self::open(&Pool::new(spec, services, 1), data_root)
    }

    /// Opens a session of `pool`'s engine, its state under `data_root`, on the pool's least
    /// loaded process (started if need be).
    pub fn open(
        pool: &Arc<Pool>,
        data_root: PathBuf,
    ) -> Result<(ProcessEngine, Ready), EngineError> {
        let name = pool.spec().init.name.clone();
        let mut child = ChildProcess {
            name: name.clone(),
            seat: pool.seat(),
            data_root,
            open_on: None,
            replay: Vec::new(),
            shipped: Shipped::default(),
            last_reply: Default::default(),
            unused_copies: None,
        };
        child.ensure_open()?;
        let ready = pool.ready().unwrap_or(Ready {
            name: name.clone(),
            version: String::new(),
        });
        Ok((RemoteEngine::new(name, child), ready))
    }

    /// Starts a child for a one-off question ([`Purpose`](super::protocol::Purpose) other than
    /// `Engine`) and returns its one answer; whatever the plugin does while it is asked (abort,
    /// crash, hang) comes back as an error naming the plugin and the cause, during `op`.
    pub fn ask<T: DeserializeOwned>(
        spec: ChildSpec,
        services: Arc<dyn HostBackend>,
        op: &'static str,
    ) -> Result<T, EngineError> {
        let name = spec.init.name.clone();
        let (mut process, mut input, output) = start_process(&spec, &services)?;
        let mut replies = Replies::new(output, spec.max_reply_bytes);
        let deadline = Deadline::new(spec.timeout, "timeout");
        let mut line = serde_json::to_vec(&spec.init)
            .map_err(|e| EngineError::failed(format!("cannot encode {op}: {e}")))?;
        line.push(b'\n');
        let written = input.write_all(&line).and_then(|()| input.flush());
        let outcome = match written {
            Err(_) => Err(NoReply::Closed),
            Ok(()) => replies.next(deadline.total(), Duration::ZERO),
        };
        drop(input);
        // Whatever it answered, it is done; what it started goes with it.
        let _ = spawn::kill(&mut process);
        let status = process.wait().ok();
        let line = match outcome {
            Ok(line) => line,
            Err(NoReply::TimedOut) => return Err(timed_out(&name, op, &deadline)),
            Err(NoReply::TooLarge) => {
                return Err(NoAnswer::too_large(&name, op, spec.max_reply_bytes))
            }
            Err(NoReply::Closed) => return Err(Lost::Ended(status).error(&name, op)),
        };
        read_reply(&name, op, &line).map_err(|unreadable| match unreadable {
            Unreadable::Engine(error) | Unreadable::Answer(error) => error,
            Unreadable::Broken(what) => Lost::Broken(what).error(&name, op),
        })
    }

    /// The deadline of operation `op`: a check's is `check_timeout`, unless `timeout` (every
    /// call's) is shorter.
    fn deadline(&self, op: Op) -> Deadline {
        let spec = self.seat.pool().spec();
        if is_check(op) && spec.check_timeout <= spec.timeout {
            Deadline::new(spec.check_timeout, "check_timeout")
        } else {
            Deadline::new(spec.timeout, "timeout")
        }
    }

    /// The process the session is open in: when it is not the one running (or none runs), the
    /// session's instance is opened on it first, its state set again.
    fn ensure_open(&mut self) -> Result<Arc<Connection>, EngineError> {
        let connection = self.seat.connection()?;
        if let Some(open) = &self.open_on {
            if Arc::ptr_eq(open, &connection) {
                return Ok(connection);
            }
        }
        self.open_on = None;
        // A new instance holds no list: the next one is sent whole.
        self.shipped.clear();
        let timeout = self.seat.pool().spec().timeout;
        let open = SessionCall::Open {
            data_root: self.data_root.clone(),
        };
        let deadline = Deadline::new(timeout, "timeout");
        let () = self.exchange(&connection, open, "start", None, deadline, |_| ())?;
        for request in self.replay.clone() {
            let op = request.op();
            let _: EngineReply = self.exchange(
                &connection,
                SessionCall::Request(request),
                op.name(),
                Some(op),
                deadline,
                |_| (),
            )?;
        }
        self.open_on = Some(connection.clone());
        Ok(connection)
    }

    /// Sends one request (made once the session is open, from the list its instance holds)
    /// and reads its reply.
    fn call<T: DeserializeOwned>(
        &mut self,
        request: impl FnOnce(&mut Shipped) -> Request,
    ) -> Result<T, EngineError> {
        self.call_meanwhile(request, |_| ())
    }

    /// [`Self::call`], running `meanwhile` once the request is sent, while the child works; it
    /// is given a check of whether the reply is in.
    fn call_meanwhile<T: DeserializeOwned>(
        &mut self,
        request: impl FnOnce(&mut Shipped) -> Request,
        meanwhile: impl FnOnce(&dyn Fn() -> bool),
    ) -> Result<T, EngineError> {
        let connection = self.ensure_open()?;
        let request = request(&mut self.shipped);
        let op = request.op();
        let deadline = self.deadline(op);
        let keeps_state = matches!(
            request,
            Request::Call(EngineCall::OnSessionStart { .. } | EngineCall::UpdateModel { .. })
        );
        let remembered = keeps_state.then(|| request.clone());
        let unused_copies = self.unused_copies.take();
        let result = self.exchange(
            &connection,
            SessionCall::Request(request),
            op.name(),
            Some(op),
            deadline,
            |reply_in| {
                drop(unused_copies);
                meanwhile(reply_in)
            },
        );
        if result.is_ok() {
            self.seat.pool().answered(op);
            if let Some(request) = remembered {
                // Only the latest of each kind matters to a reopened instance.
                self.replay.retain(|r| r.op() != request.op());
                self.replay.push(request);
            }
        }
        result
    }

    /// Writes one call and waits (up to the deadline) for its reply. A process that dies,
    /// hangs or answers nonsense is lost, for every call in flight on it; the error says why.
    #[allow(clippy::too_many_arguments)]
    fn exchange<T: DeserializeOwned>(
        &mut self,
        connection: &Arc<Connection>,
        body: SessionCall,
        op: &'static str,
        check: Option<Op>,
        deadline: Deadline,
        meanwhile: impl FnOnce(&dyn Fn() -> bool),
    ) -> Result<T, EngineError> {
        let spin = wait::spin_for(self.last_reply.get(op).copied());
        let call = connection.call_number();
        let request = Call {
            session: self.seat.session,
            call,
            body,
        };
        let mut line = serde_json::to_vec(&request)
            .map_err(|e| EngineError::failed(format!("cannot encode {op}: {e}")))?;
        line.push(b'\n');
        let deadline = Deadline {
            request_bytes: line.len(),
            ..deadline
        };
        let sent = Instant::now();
        let in_flight = connection.send(call, &line);
        drop(line);
        meanwhile(&|| in_flight.arrived());
        let outcome = connection.wait(in_flight, deadline.total(), spin);
        self.last_reply.insert(op, sent.elapsed());
        let line = match outcome {
            Ok(line) => line,
            Err(NoAnswer::Lost(lost)) => {
                self.open_on = None;
                return Err(lost.error(&self.name, op));
            }
            Err(NoAnswer::Interrupted(lost)) => {
                self.open_on = None;
                return Err(lost.interrupted(&self.name, op));
            }
            // Its process lives on, past the line it skipped.
            Err(NoAnswer::TooLarge { limit }) => {
                return Err(NoAnswer::too_large(&self.name, op, limit));
            }
            Err(NoAnswer::TimedOut) => {
                self.open_on = None;
                connection.kill(Lost::Hung {
                    op,
                    check: check.filter(|op| is_check(*op)),
                    deadline: deadline.describe(&self.name),
                });
                return Err(timed_out(&self.name, op, &deadline));
            }
        };
        read_reply(&self.name, op, &line).map_err(|unreadable| match unreadable {
            Unreadable::Engine(error) | Unreadable::Answer(error) => error,
            Unreadable::Broken(what) => {
                self.open_on = None;
                let lost = Lost::Broken(what);
                let error = lost.error(&self.name, op);
                connection.kill(lost);
                error
            }
        })
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // The instance is dropped in its process (its store closed) before the session ends.
        if let Some(connection) = self.open_on.take().filter(|c| c.alive()) {
            let deadline = Deadline::new(self.seat.pool().spec().timeout, "timeout");
            let _: Result<(), _> = self.exchange(
                &connection,
                SessionCall::Close,
                "close",
                None,
                deadline,
                |_| (),
            );
        }
    }
}

/// Why a reply line gave no answer.
enum Unreadable {
    /// The engine's own error.
    Engine(EngineError),
    /// A well-formed reply whose answer is not what the operation returns.
    Answer(EngineError),
    /// Not a reply at all: the process broke the protocol.
    Broken(String),
}

/// The answer in a reply line (framed by its call, or not, for a one-off question).
fn read_reply<T: DeserializeOwned>(name: &str, op: &str, line: &str) -> Result<T, Unreadable> {
    let reply = Framed::split(line).map_or(line, |(_, reply)| reply);
    match serde_json::from_str::<Reply<T>>(reply) {
        Ok(Reply::Ok(value)) => Ok(value),
        Ok(Reply::Err(error)) => Err(Unreadable::Engine(error.into())),
        // Read again, only now, to tell which.
        Err(error) => match serde_json::from_str::<Reply>(reply) {
            Ok(_) => Err(Unreadable::Answer(EngineError::failed(format!(
                "plugin '{name}' answered {op} with something unreadable: {error}"
            )))),
            Err(error) => Err(Unreadable::Broken(error.to_string())),
        },
    }
}

/// The error of a call whose process was killed at its deadline.
fn timed_out(name: &str, op: &str, deadline: &Deadline) -> EngineError {
    EngineError::new(
        ErrorKind::TimedOut,
        format!(
            "plugin '{name}' did not answer within {}; its process was killed during {op}",
            deadline.describe(name)
        ),
    )
}

impl EngineTransport for ChildProcess {
    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.call(|_| Request::ShouldCompress { prompt_tokens })
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        let mut copies = Copies::default();
        let compressed: CompressedList = self.call_meanwhile(
            |shipped| Request::Compress {
                messages: shipped.ship(messages),
                options: options.clone(),
            },
            |reply_in| copies = Copies::made(messages, reply_in),
        )?;
        let output = compressed.decode(messages, &mut copies);
        self.unused_copies = Some(copies);
        output.ok_or_else(|| {
            EngineError::failed(format!(
                "plugin '{}' answered compress with messages outside its input",
                self.name
            ))
        })
    }

    fn call(&mut self, call: &EngineCall<&[Message]>) -> Result<EngineReply, EngineError> {
        ChildProcess::call(self, |shipped| {
            Request::Call(call.clone().map_list(|messages| shipped.ship(messages)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_request_gives_the_child_time_to_read_it_on_top_of_the_deadline() {
        let short = Deadline {
            request_bytes: 2_000,
            ..Deadline::new(Duration::from_millis(500), "check_timeout")
        };
        assert!(short.total() < Duration::from_millis(501));
        assert_eq!(short.describe("x"), "0.5s (plugins.x.check_timeout)");
        let long = Deadline {
            request_bytes: 50 * 1024 * 1024,
            ..Deadline::new(Duration::from_secs(10), "check_timeout")
        };
        assert_eq!(long.total(), Duration::from_secs(15));
        assert_eq!(
            long.describe("x"),
            "10s (plugins.x.check_timeout, plus 5s to read a 50 MB request)"
        );
    }
}
