//! The host side: [`ProcessEngine`], a [`ContextEngine`] whose engine runs in a child process.
//! Whatever the child does (abort, crash, exit, hang, run out of memory, print to stdout), the
//! host gets an error naming the plugin and the cause; the next call starts a new child.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxhost_sdk::protocol::{EngineCall, EngineReply, EngineTransport, Op, RemoteEngine};
use ctxhost_sdk::{CompressOptions, EngineError, ErrorKind, LogLevel, Message};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::breaker::{self, Breaker};
use super::lists::{CompressedList, Copies, Shipped};
use super::protocol::{Init, Ready, Reply, Request};
use super::replies::{NoReply, Replies};
use super::{is_check, spawn, wait};
use crate::services::HostServicesImpl;

/// How to start the child.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// The `ctxhost` binary.
    pub program: PathBuf,
    pub init: Init,
    /// Longest a call may take before the child is killed.
    pub timeout: Duration,
    /// The same for the per-turn checks ([`is_check`]).
    pub check_timeout: Duration,
    /// The child's address-space limit, in bytes (`None`: unlimited).
    pub memory_limit: Option<u64>,
}

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

struct Running {
    process: Child,
    input: ChildStdin,
    replies: Replies,
}

/// An engine in a child process: the SDK's remote engine over the pipes to it.
pub type ProcessEngine = RemoteEngine<ChildProcess>;

/// The child process an isolated engine runs in, and the pipes to it: the transport of a
/// [`ProcessEngine`].
pub struct ChildProcess {
    name: String,
    spec: ChildSpec,
    services: Arc<HostServicesImpl>,
    child: Option<Running>,
    /// Requests that set the engine's state, replayed to a restarted child.
    replay: Vec<Request>,
    breaker: Breaker,
    /// The message list the child holds (what the next list is sent as a change to).
    shipped: Shipped,
    /// How long the last reply to each operation took ([`wait::spin_for`]).
    last_reply: rustc_hash::FxHashMap<&'static str, Duration>,
    /// The copies the last `compress` made and did not use: freed while the child works on
    /// the next call, not while the caller waits for this one.
    unused_copies: Option<Copies>,
}

impl ChildProcess {
    /// Starts the child and waits for its engine to be ready; the engine's own start-up error
    /// (a bad setting, say) comes back as it is.
    pub fn start(
        spec: ChildSpec,
        services: Arc<HostServicesImpl>,
    ) -> Result<(ProcessEngine, Ready), EngineError> {
        let mut child = Self::new(spec, services);
        let ready = child.spawn()?;
        Ok((RemoteEngine::new(child.name.clone(), child), ready))
    }

    fn new(spec: ChildSpec, services: Arc<HostServicesImpl>) -> Self {
        ChildProcess {
            name: spec.init.name.clone(),
            spec,
            services,
            child: None,
            replay: Vec::new(),
            breaker: Breaker::default(),
            shipped: Shipped::default(),
            last_reply: Default::default(),
            unused_copies: None,
        }
    }

    /// Starts a child for a one-off question ([`Purpose`](super::protocol::Purpose) other than
    /// `Engine`) and returns its one answer; whatever the plugin does while it is asked (abort,
    /// crash, hang) comes back as an error naming the plugin and the cause, during `op`.
    pub fn ask<T: DeserializeOwned>(
        spec: ChildSpec,
        services: Arc<HostServicesImpl>,
        op: &'static str,
    ) -> Result<T, EngineError> {
        let mut engine = Self::new(spec, services);
        engine.launch()?;
        let init = engine.spec.init.clone();
        let deadline = engine.call_deadline();
        engine.exchange_line(&init, op, deadline, |_| ())
    }

    fn spawn(&mut self) -> Result<Ready, EngineError> {
        self.launch()?;
        let init = self.spec.init.clone();
        let deadline = self.call_deadline();
        let ready: Ready = self.exchange_line(&init, "start", deadline, |_| ())?;
        for request in self.replay.clone() {
            let op = request.op().name();
            let _: EngineReply = self.exchange_line(&request, op, deadline, |_| ())?;
        }
        Ok(ready)
    }

    /// The deadline of any call but the per-turn checks.
    fn call_deadline(&self) -> Deadline {
        Deadline::new(self.spec.timeout, "timeout")
    }

    /// The deadline of operation `op`.
    fn deadline(&self, op: Op) -> Deadline {
        if is_check(op) {
            Deadline::new(self.spec.check_timeout, "check_timeout")
        } else {
            self.call_deadline()
        }
    }

    /// Starts the child process and the threads that read its output.
    fn launch(&mut self) -> Result<(), EngineError> {
        let mut command = Command::new(&self.spec.program);
        command
            .arg("__engine-child")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(limit) = self.spec.memory_limit {
            command.arg("--memory-limit").arg(limit.to_string());
        }
        let mut process = spawn::spawn(command).map_err(|error| {
            EngineError::failed(format!(
                "plugin '{}': cannot start its process ({}): {error}",
                self.name,
                self.spec.program.display()
            ))
        })?;
        let input = process.stdin.take().expect("piped stdin");
        let output = process.stdout.take().expect("piped stdout");
        let errors = process.stderr.take().expect("piped stderr");
        // The plugin's own output (and its log lines) reach the host's log, never its stdout.
        let services = self.services.clone();
        let name = self.name.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(errors).lines().map_while(Result::ok) {
                relay(&services, &name, &line);
            }
        });
        self.child = Some(Running {
            process,
            input,
            replies: Replies::new(output),
        });
        Ok(())
    }

    /// Sends one request and reads its reply, starting a child first when none runs.
    fn call<T: DeserializeOwned>(&mut self, request: Request) -> Result<T, EngineError> {
        self.call_meanwhile(request, |_| ())
    }

    /// [`Self::call`], running `meanwhile` once the request is sent, while the child works; it
    /// is given a check of whether the reply is in.
    fn call_meanwhile<T: DeserializeOwned>(
        &mut self,
        request: Request,
        meanwhile: impl FnOnce(&dyn Fn() -> bool),
    ) -> Result<T, EngineError> {
        let op = request.op();
        let deadline = self.deadline(op);
        self.ensure_running()?;
        let keeps_state = matches!(
            request,
            Request::Call(EngineCall::OnSessionStart { .. } | EngineCall::UpdateModel { .. })
        );
        let remembered = keeps_state.then(|| request.clone());
        let unused_copies = self.unused_copies.take();
        let result = self.exchange_line(&request, op.name(), deadline, |reply_in| {
            drop(unused_copies);
            meanwhile(reply_in)
        });
        match &result {
            Ok(_) => {
                self.breaker.answered(op);
                if let Some(request) = remembered {
                    // Only the latest of each kind matters to a restarted child.
                    self.replay.retain(|r| r.op() != request.op());
                    self.replay.push(request);
                }
            }
            Err(error) if self.child.is_none() => {
                let timed_out = error.kind() == ErrorKind::TimedOut;
                let hung_check = (timed_out && is_check(op)).then_some(op);
                self.breaker.lost(hung_check, Instant::now());
            }
            Err(_) => {}
        }
        result
    }

    /// Starts a child when none runs (unless the breaker is open). A message list is shipped
    /// only after this: a new child holds none.
    fn ensure_running(&mut self) -> Result<(), EngineError> {
        if self.child.is_some() {
            return Ok(());
        }
        if let Some(left) = self.breaker.open_for(Instant::now()) {
            return Err(EngineError::failed(format!(
                "plugin '{}' failed {} times in a row; not restarted for another {}s",
                self.name,
                breaker::FAILURES,
                left.as_secs()
            )));
        }
        if let Err(error) = self.spawn() {
            self.breaker.lost(None, Instant::now());
            return Err(error);
        }
        Ok(())
    }

    /// Writes one line and waits (up to the deadline) for the reply. A child that dies, hangs
    /// or answers nonsense is killed and reaped; the error says why.
    fn exchange_line<T: DeserializeOwned>(
        &mut self,
        request: &impl Serialize,
        op: &'static str,
        deadline: Deadline,
        meanwhile: impl FnOnce(&dyn Fn() -> bool),
    ) -> Result<T, EngineError> {
        let spin = wait::spin_for(self.last_reply.get(op).copied());
        let mut line = serde_json::to_vec(request)
            .map_err(|e| EngineError::failed(format!("cannot encode {op}: {e}")))?;
        line.push(b'\n');
        let deadline = Deadline {
            request_bytes: line.len(),
            ..deadline
        };
        let timeout = deadline.total();
        let running = self.child.as_mut().expect("a running child");
        let written = running
            .input
            .write_all(&line)
            .and_then(|()| running.input.flush());
        let sent = Instant::now();
        let outcome = match written {
            Err(_) => Err(None),
            Ok(()) => {
                meanwhile(&|| running.replies.ready());
                running
                    .replies
                    .next(timeout, spin)
                    .map_err(|missing| match missing {
                        NoReply::Closed => None,
                        NoReply::TimedOut => Some(deadline),
                    })
            }
        };
        self.last_reply.insert(op, sent.elapsed());
        let line = match outcome {
            Ok(line) => line,
            Err(hung) => return Err(self.lost(op, hung)),
        };
        match serde_json::from_str::<Reply<T>>(&line) {
            Ok(Reply::Ok(value)) => Ok(value),
            Ok(Reply::Err(error)) => Err(error.into()),
            // A well-formed reply whose answer is not what the operation returns, or a broken
            // line: read again, only now, to tell which.
            Err(error) => match serde_json::from_str::<Reply>(&line) {
                Ok(_) => Err(EngineError::failed(format!(
                    "plugin '{}' answered {op} with something unreadable: {error}",
                    self.name
                ))),
                Err(error) => {
                    let error = EngineError::failed(format!(
                        "plugin '{}' broke its process's protocol in {op}: {error}",
                        self.name
                    ));
                    self.kill();
                    Err(error)
                }
            },
        }
    }

    /// The child is gone (or hung, and is killed now): reaps it and says why, in one line.
    fn lost(&mut self, op: &str, hung: Option<Deadline>) -> EngineError {
        let status = self.kill();
        match hung {
            Some(deadline) => EngineError::new(
                ErrorKind::TimedOut,
                format!(
                    "plugin '{}' did not answer within {}; its process was killed during {op}",
                    self.name,
                    deadline.describe(&self.name)
                ),
            ),
            None => EngineError::failed(format!(
                "plugin '{}' {} during {op}",
                self.name,
                describe_exit(status)
            )),
        }
    }

    fn kill(&mut self) -> Option<ExitStatus> {
        // The next child starts with no list: the next one is sent whole.
        self.shipped.clear();
        let mut running = self.child.take()?;
        drop(running.input);
        // What the plugin started goes with it.
        let _ = spawn::kill(&mut running.process);
        running.process.wait().ok()
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if let Some(running) = self.child.take() {
            // Closing its input ends the child's loop; it exits on its own.
            let Running {
                mut process, input, ..
            } = running;
            drop(input);
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                match process.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() >= deadline => {
                        let _ = spawn::kill(&mut process);
                        let _ = process.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        }
    }
}

/// Why a child ended, for people.
fn describe_exit(status: Option<ExitStatus>) -> String {
    let Some(status) = status else {
        return "lost its process".to_string();
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let what = match signal {
                libc::SIGABRT => {
                    "aborted (SIGABRT; a failed allocation or a stack overflow ends this way)"
                }
                libc::SIGSEGV => "crashed (SIGSEGV: an invalid memory access)",
                libc::SIGBUS => "crashed (SIGBUS)",
                libc::SIGILL => "crashed (SIGILL)",
                libc::SIGFPE => "crashed (SIGFPE)",
                libc::SIGKILL => "was killed (SIGKILL; out of memory?)",
                _ => "was killed by a signal",
            };
            return format!("{what} [signal {signal}]");
        }
    }
    match status.code() {
        Some(0) => "exited (status 0) instead of answering".to_string(),
        Some(code) => format!("exited with status {code}"),
        None => "ended".to_string(),
    }
}

/// One line of the child's stderr into the host's log: the child's own log lines keep their
/// level (`[engine] warn: ...`); anything else the plugin printed is `info`.
fn relay(services: &HostServicesImpl, name: &str, line: &str) {
    let prefix = format!("[{name}] ");
    let (level, message) = match line.strip_prefix(&prefix).and_then(|r| r.split_once(": ")) {
        Some(("debug", m)) => (LogLevel::Debug, m),
        Some(("info", m)) => (LogLevel::Info, m),
        Some(("warn", m)) => (LogLevel::Warn, m),
        Some(("error", m)) => (LogLevel::Error, m),
        _ => (LogLevel::Info, line),
    };
    services.log_sink().log(name, level, message);
}

impl EngineTransport for ChildProcess {
    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.call(Request::ShouldCompress { prompt_tokens })
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        self.ensure_running()?;
        let list = self.shipped.ship(messages);
        let mut copies = Copies::default();
        let compressed: CompressedList = self.call_meanwhile(
            Request::Compress {
                messages: list,
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
        if call.list().is_some() {
            self.ensure_running()?;
        }
        let call = call
            .clone()
            .map_list(|messages| self.shipped.ship(messages));
        ChildProcess::call(self, Request::Call(call))
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
