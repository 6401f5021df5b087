//! One running engine process and its multiplexed pipes: any thread sends a call line and
//! waits for the reply to that call, which a reader thread of the connection hands over by
//! the call number the reply line starts with ([`Framed`]). When the process is lost (it
//! crashed or exited, or a call's deadline passed and it was killed), every call in flight
//! on it fails with why, once; the connection is then dead, and a new one is started for the
//! next call ([`super::pool`]).
//!
//! A reply answers only the call it names, and only a call waiting for it: call numbers are
//! drawn so that the process cannot guess them ([`CallNumbers`]), so a session's engine can
//! answer its own calls and no other session's. A reply line naming a call nobody waits for
//! (guessed, forged, or a second answer) breaks the protocol: the process is lost as if it
//! had crashed, and the calls in flight on it fail, answered by nothing it wrote.

use std::hash::BuildHasher;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use ctxhost_protocol::Op;
use ctxhost_sdk::{EngineError, HostBackend, LogLevel};

use super::protocol::{Framed, Init, INIT_CALL};
use super::{spawn, wait};

/// How to start the child.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// The `ctxhost` binary.
    pub program: PathBuf,
    pub init: Init,
    /// Longest a call may take before the child is killed.
    pub timeout: Duration,
    /// The same for the per-turn checks (`is_check`).
    pub check_timeout: Duration,
    /// The child's address-space limit, in bytes (`None`: unlimited).
    pub memory_limit: Option<u64>,
    /// The longest reply line the host reads, in bytes: a longer one fails its call unread.
    pub max_reply_bytes: u64,
}

/// Why the process is gone, as every call that was in flight on it hears it.
#[derive(Debug, Clone)]
pub enum Lost {
    /// It ended on its own (crashed, aborted, exited); its status, when it could be reaped.
    Ended(Option<ExitStatus>),
    /// It was killed because a call (`op`, of some session) did not answer within `deadline`;
    /// `check` is that operation when it is a per-turn check (it counts for the breaker).
    Hung {
        op: &'static str,
        check: Option<Op>,
        deadline: String,
    },
    /// It wrote something that is not a reply.
    Broken(String),
    /// The host closed it.
    Closed,
}

impl Lost {
    /// The one-line error of a call of operation `op` that was in flight.
    pub fn error(&self, plugin: &str, op: &str) -> EngineError {
        match self {
            Lost::Ended(status) => EngineError::failed(format!(
                "plugin '{plugin}' {} during {op}",
                describe_exit(*status)
            )),
            Lost::Hung {
                op: hung, deadline, ..
            } => EngineError::failed(format!(
                "plugin '{plugin}' was killed during {op}: another call ({hung}) did not \
                 answer within {deadline}"
            )),
            Lost::Broken(what) => EngineError::failed(format!(
                "plugin '{plugin}' broke its process's protocol in {op}: {what}"
            )),
            Lost::Closed => EngineError::failed(format!(
                "plugin '{plugin}': its process was closed during {op}"
            )),
        }
    }

    /// [`Self::error`] for a call that was only in flight with the one at fault
    /// ([`NoAnswer::Interrupted`]).
    pub fn interrupted(&self, plugin: &str, op: &str) -> EngineError {
        let error = self.error(plugin, op);
        EngineError::new(
            ctxhost_sdk::ErrorKind::Interrupted,
            format!(
                "{} (another call in flight on the same process; this session reopens at its \
                 next call)",
                error.message()
            ),
        )
    }

    /// The per-turn check that hung, if that is why.
    pub fn hung_check(&self) -> Option<Op> {
        match self {
            Lost::Hung { check, .. } => *check,
            _ => None,
        }
    }
}

/// Why a call got no reply.
#[derive(Debug, Clone)]
pub enum NoAnswer {
    /// Its deadline passed (the process is not killed yet: the caller does it, with why).
    TimedOut,
    /// The process was lost while it waited, and this call may be why (it was the only one
    /// in flight, or its own reply broke the protocol).
    Lost(Lost),
    /// The process was lost while it waited, to another call in flight with it (or with
    /// others, none of them known to be why): this one failed once, through no fault of its
    /// session's, which reopens on a new process at its next call.
    Interrupted(Lost),
    /// The reply was longer than `limit` bytes: it was skipped, unread (the process lives on).
    TooLarge { limit: u64 },
}

impl NoAnswer {
    /// The error of a call of operation `op` whose reply was over `limit` bytes.
    pub fn too_large(plugin: &str, op: &str, limit: u64) -> EngineError {
        EngineError::failed(format!(
            "plugin '{plugin}' answered {op} with more than the host reads: its answer is over \
             its limit of {} MiB (plugins.{plugin}.max_reply_mb) and was refused unread",
            limit >> 20
        ))
    }
}

/// Who a lost process's calls in flight may blame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blame {
    /// A call no longer waited for (it hung, or its reply broke the protocol): every call
    /// still in flight was only beside it.
    Caller,
    /// Nobody known (the process ended, or wrote what answers no call): a call alone in
    /// flight is why; of several, none is known to be.
    Unknown,
}

/// Where one call's reply arrives.
#[derive(Default)]
struct Slot {
    arrived: AtomicBool,
    reply: Mutex<Option<Result<String, NoAnswer>>>,
    signal: Condvar,
}

impl Slot {
    fn fill(&self, reply: Result<String, NoAnswer>) {
        *lock(&self.reply) = Some(reply);
        self.arrived.store(true, Ordering::Release);
        self.signal.notify_one();
    }
}

/// A call sent, waiting for its reply.
pub struct InFlight {
    call: u64,
    slot: Arc<Slot>,
}

impl InFlight {
    /// Whether the reply (or the news that none will come) is in.
    pub fn arrived(&self) -> bool {
        self.slot.arrived.load(Ordering::Acquire)
    }
}

/// The calls waiting for replies, and whether the process is lost.
#[derive(Default)]
struct Calls {
    waiting: rustc_hash::FxHashMap<u64, Arc<Slot>>,
    /// Calls no longer waited for (their deadline passed; the process is being killed): a
    /// reply to one is late, not forged, and is dropped.
    given_up: rustc_hash::FxHashSet<u64>,
    lost: Option<Lost>,
}

impl Calls {
    /// Takes the call `call` names out of the waiting ones: its slot, `Ok(None)` for a call
    /// given up on, `Err` for a call nobody waits for.
    fn answered(&mut self, call: u64) -> Result<Option<Arc<Slot>>, NotWaited> {
        if let Some(slot) = self.waiting.remove(&call) {
            return Ok(Some(slot));
        }
        if self.given_up.remove(&call) || self.lost.is_some() {
            return Ok(None);
        }
        Err(NotWaited)
    }
}

/// A reply line named a call nobody waits for.
struct NotWaited;

impl NotWaited {
    /// What the process did, for the error of the calls in flight.
    fn what(&self) -> String {
        "it wrote a reply for no call in flight (guessed, forged or a second answer)".to_string()
    }
}

/// The numbers of one process's calls: distinct, never [`INIT_CALL`], and not to be guessed
/// from the ones the process has seen (the count through SipHash under a key drawn from the
/// OS's randomness, which `RandomState` holds), so a reply the process writes can only name a
/// call it was given.
struct CallNumbers {
    key: std::collections::hash_map::RandomState,
    count: AtomicU64,
}

impl CallNumbers {
    fn new() -> Self {
        CallNumbers {
            key: std::collections::hash_map::RandomState::new(),
            count: AtomicU64::new(0),
        }
    }

    /// A number for the next call, other than every call waiting (`taken`).
    fn next(&self, taken: impl Fn(u64) -> bool) -> u64 {
        loop {
            let number = self
                .key
                .hash_one(self.count.fetch_add(1, Ordering::Relaxed));
            if number != INIT_CALL && !taken(number) {
                return number;
            }
        }
    }
}

/// A running engine process (see the [module docs](self)).
pub struct Connection {
    pid: u32,
    process: Mutex<Option<Child>>,
    input: Mutex<Option<ChildStdin>>,
    calls: Mutex<Calls>,
    numbers: CallNumbers,
    /// Told once, when the process is lost, why (for the plugin's breaker).
    on_lost: Box<dyn Fn(&Lost) + Send + Sync>,
    /// Where a broken protocol is logged (the plugin's name, the host's log).
    name: String,
    services: Arc<dyn HostBackend>,
}

impl Connection {
    /// Starts the engine process `spec` describes and the threads reading its output; its
    /// first line (`Init`) is sent, and its answer is the call [`INIT_CALL`].
    pub fn launch(
        spec: &ChildSpec,
        services: Arc<dyn HostBackend>,
        on_lost: Box<dyn Fn(&Lost) + Send + Sync>,
    ) -> Result<(Arc<Connection>, InFlight), EngineError> {
        let (process, input, output) = start_process(spec, &services)?;
        let connection = Arc::new(Connection {
            pid: process.id(),
            process: Mutex::new(Some(process)),
            input: Mutex::new(Some(input)),
            calls: Mutex::default(),
            numbers: CallNumbers::new(),
            on_lost,
            name: spec.init.name.clone(),
            services,
        });
        let init = connection.expect(INIT_CALL);
        let reader = Arc::downgrade(&connection);
        let limit = spec.max_reply_bytes;
        std::thread::Builder::new()
            .name("ctxhost-engine-replies".to_string())
            .spawn(move || read_replies(reader, output, limit))
            .map_err(|error| {
                EngineError::failed(format!("cannot start a thread for an engine: {error}"))
            })?;
        let mut line = serde_json::to_vec(&spec.init)
            .map_err(|e| EngineError::failed(format!("cannot encode start: {e}")))?;
        line.push(b'\n');
        if connection.write(&line).is_err() {
            connection.lose(Lost::Ended(None), Blame::Unknown);
        }
        Ok((connection, init))
    }

    /// The process's id while it runs.
    pub fn id(&self) -> Option<u32> {
        self.alive().then_some(self.pid)
    }

    /// Whether the process is still there to call.
    pub fn alive(&self) -> bool {
        lock(&self.calls).lost.is_none()
    }

    /// A number for the next call ([`CallNumbers`]).
    pub fn call_number(&self) -> u64 {
        let calls = lock(&self.calls);
        self.numbers
            .next(|number| calls.waiting.contains_key(&number))
    }

    /// Expects a reply to `call`: register before the line is written.
    fn expect(&self, call: u64) -> InFlight {
        let slot = Arc::new(Slot::default());
        let mut calls = lock(&self.calls);
        match &calls.lost {
            Some(lost) => slot.fill(Err(NoAnswer::Lost(lost.clone()))),
            None => {
                calls.waiting.insert(call, slot.clone());
            }
        }
        InFlight { call, slot }
    }

    /// Sends `line` (a call numbered `call`, newline included); its reply is awaited with
    /// [`Self::wait`].
    pub fn send(&self, call: u64, line: &[u8]) -> InFlight {
        let in_flight = self.expect(call);
        if !in_flight.arrived() && self.write(line).is_err() {
            // The pipe is closed: the process is gone, and the reader says how.
            self.reap_on_close();
        }
        in_flight
    }

    fn write(&self, line: &[u8]) -> std::io::Result<()> {
        let mut input = lock(&self.input);
        let input = input
            .as_mut()
            .ok_or_else(|| std::io::Error::other("closed"))?;
        input.write_all(line)?;
        input.flush()
    }

    /// Waits up to `timeout` for the reply, spinning for `spin` first ([`wait`]).
    pub fn wait(
        &self,
        in_flight: InFlight,
        timeout: Duration,
        spin: Duration,
    ) -> Result<String, NoAnswer> {
        let deadline = Instant::now() + timeout;
        wait::spin_until(|| in_flight.arrived(), spin);
        let slot = &in_flight.slot;
        let mut reply = lock(&slot.reply);
        loop {
            if let Some(reply) = reply.take() {
                return reply;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                drop(reply);
                let mut calls = lock(&self.calls);
                if calls.waiting.remove(&in_flight.call).is_some() {
                    calls.given_up.insert(in_flight.call);
                }
                drop(calls);
                // It may have come just now.
                return match lock(&slot.reply).take() {
                    Some(reply) => reply,
                    None => Err(NoAnswer::TimedOut),
                };
            }
            reply = slot
                .signal
                .wait_timeout(reply, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Kills the process (and what it started) for `why`, a call of the caller's (one no
    /// longer waited for: it hung, or its reply broke the protocol), failing every call in
    /// flight with it as interrupted, and reaps it; nothing when it is already lost.
    pub fn kill(&self, why: Lost) {
        self.kill_blaming(why, Blame::Caller);
    }

    fn kill_blaming(&self, why: Lost, blame: Blame) {
        if !self.lose(why, blame) {
            return;
        }
        let process = lock(&self.process).take();
        if let Some(mut process) = process {
            let _ = spawn::kill(&mut process);
            let _ = process.wait();
        }
    }

    /// Marks the process lost for `why` (the first reason wins) and fails the calls in flight,
    /// as `blame` says; `true` the first time.
    fn lose(&self, why: Lost, blame: Blame) -> bool {
        let waiting = {
            let mut calls = lock(&self.calls);
            if calls.lost.is_some() {
                return false;
            }
            calls.lost = Some(why.clone());
            std::mem::take(&mut calls.waiting)
        };
        // Its input goes too: nothing more is sent to it.
        drop(lock(&self.input).take());
        // One call alone in flight when the process ended is why, as far as anyone can tell.
        let interrupted = blame == Blame::Caller || waiting.len() > 1;
        for slot in waiting.into_values() {
            slot.fill(Err(if interrupted {
                NoAnswer::Interrupted(why.clone())
            } else {
                NoAnswer::Lost(why.clone())
            }));
        }
        (self.on_lost)(&why);
        true
    }

    /// The process closed its output (or its input): it is gone; reaps it and says how.
    fn reap_on_close(&self) {
        let process = lock(&self.process).take();
        let Some(mut process) = process else {
            // Killed by a caller, who said why.
            return;
        };
        // What it started goes with it.
        let _ = spawn::kill(&mut process);
        let status = process.wait().ok();
        self.lose(Lost::Ended(status), Blame::Unknown);
    }

    /// Hands `line` to the call it answers; a line that is not a reply, or answers a call
    /// nobody waits for, breaks the protocol.
    fn deliver(&self, line: String) {
        let Some((call, _)) = Framed::split(&line) else {
            let what = format!("it wrote a line that is not a reply: {}", preview(&line));
            self.broken(what);
            return;
        };
        let answered = lock(&self.calls).answered(call);
        match answered {
            Ok(Some(slot)) => slot.fill(Ok(line)),
            // Late, for a call given up on (or the process is already lost): dropped.
            Ok(None) => {}
            Err(not_waited) => self.broken(not_waited.what()),
        }
    }

    /// The process broke the protocol (`what` it did): it is lost as if it had crashed (the
    /// calls in flight fail; a call alone in flight is taken for why), and the host's log says
    /// so, whether or not a call was in flight to hear it.
    fn broken(&self, what: String) {
        if !self.alive() {
            return;
        }
        self.services.log(
            &self.name,
            LogLevel::Warn,
            &format!(
                "plugin '{}' broke its process's protocol: {what}; its process is killed, \
                 its sessions reopen on a new one at their next call",
                self.name
            ),
        );
        self.kill_blaming(Lost::Broken(what), Blame::Unknown);
    }
}

impl Connection {
    /// Fails the call a reply over `limit` bytes answers (its start is `start`), unread; a
    /// line that does not even name its call breaks the protocol.
    fn refuse_oversized(&self, start: &[u8], limit: u64) {
        let call = start
            .iter()
            .position(|b| *b == b' ')
            .and_then(|end| std::str::from_utf8(&start[..end]).ok())
            .and_then(|call| call.parse::<u64>().ok());
        let Some(call) = call else {
            let what = format!("it wrote a line of more than {limit} bytes that is not a reply");
            self.broken(what);
            return;
        };
        let answered = lock(&self.calls).answered(call);
        match answered {
            Ok(Some(slot)) => slot.fill(Err(NoAnswer::TooLarge { limit })),
            Ok(None) => {}
            Err(not_waited) => self.broken(not_waited.what()),
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Closing its input ends the child's loop; it drops its engines and exits on its own.
        drop(lock(&self.input).take());
        let Some(mut process) = lock(&self.process).take() else {
            return;
        };
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

/// Starts the engine process `spec` describes, its stderr relayed to the host's log; the
/// process, its input and its output.
pub fn start_process(
    spec: &ChildSpec,
    services: &Arc<dyn HostBackend>,
) -> Result<(Child, ChildStdin, std::process::ChildStdout), EngineError> {
    let name = &spec.init.name;
    let mut command = Command::new(&spec.program);
    command
        .arg("__engine-child")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(limit) = spec.memory_limit {
        command.arg("--memory-limit").arg(limit.to_string());
    }
    let mut process = spawn::spawn(command).map_err(|error| {
        EngineError::failed(format!(
            "plugin '{name}': cannot start its process ({}): {error}",
            spec.program.display()
        ))
    })?;
    let input = process.stdin.take().expect("piped stdin");
    let output = process.stdout.take().expect("piped stdout");
    let errors = process.stderr.take().expect("piped stderr");
    // The plugin's own output (and its log lines) reach the host's log, never its stdout.
    let relayed = services.clone();
    let relayed_name = name.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(errors).lines().map_while(Result::ok) {
            relay(relayed.as_ref(), &relayed_name, &line);
        }
    });
    Ok((process, input, output))
}

/// The reader thread: each reply line to its call, until the output closes. A line longer
/// than `limit` bytes is not kept: its start names the call it fails ([`Line::TooLong`]).
fn read_replies(connection: Weak<Connection>, output: std::process::ChildStdout, limit: u64) {
    let mut output = BufReader::with_capacity(64 * 1024, output);
    let limit_bytes = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = read_line(&mut output, &mut line, limit_bytes);
        let Some(connection) = connection.upgrade() else {
            return;
        };
        match read {
            Line::Closed => {
                connection.reap_on_close();
                return;
            }
            Line::TooLong => {
                connection.refuse_oversized(&line, limit);
                // What was kept of it goes now, not at the next reply.
                line = Vec::new();
            }
            Line::Read => match String::from_utf8(std::mem::take(&mut line)) {
                Ok(text) => connection.deliver(text),
                Err(_) => connection.broken("it wrote bytes that are not UTF-8".into()),
            },
        }
    }
}

/// How reading one line ended.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// `line` holds it, without its newline.
    Read,
    /// It was longer than the limit: `line` holds its start, the rest was read past.
    TooLong,
    /// The output closed (or failed) before a line ended.
    Closed,
}

/// Reads one line from `input` into `line`, keeping at most `limit` bytes of it.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>, limit: usize) -> Line {
    let mut too_long = false;
    loop {
        let available = match input.fill_buf() {
            Ok([]) | Err(_) => return Line::Closed,
            Ok(available) => available,
        };
        let (end, used) = match available.iter().position(|b| *b == b'\n') {
            Some(end) => (Some(end), end + 1),
            None => (None, available.len()),
        };
        let piece = &available[..end.unwrap_or(used)];
        if !too_long {
            if line.len() + piece.len() > limit {
                too_long = true;
                // The start is enough to name the call.
                line.extend_from_slice(&piece[..piece.len().min(64)]);
                line.truncate(64);
            } else {
                line.extend_from_slice(piece);
            }
        }
        input.consume(used);
        if end.is_some() {
            return if too_long { Line::TooLong } else { Line::Read };
        }
    }
}

/// The start of a line, for an error message.
fn preview(line: &str) -> String {
    let end = line.char_indices().nth(80).map_or(line.len(), |(at, _)| at);
    format!("{:?}", &line[..end])
}

/// Why a child ended, for people.
pub fn describe_exit(status: Option<ExitStatus>) -> String {
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
pub fn relay(services: &dyn HostBackend, name: &str, line: &str) {
    let prefix = format!("[{name}] ");
    let (level, message) = match line.strip_prefix(&prefix).and_then(|r| r.split_once(": ")) {
        Some(("debug", m)) => (LogLevel::Debug, m),
        Some(("info", m)) => (LogLevel::Info, m),
        Some(("warn", m)) => (LogLevel::Warn, m),
        Some(("error", m)) => (LogLevel::Error, m),
        _ => (LogLevel::Info, line),
    };
    services.log(name, level, message);
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_limit_is_read_past_keeping_only_its_start() {
        let text = format!("7 {}\n3 ok\n", "x".repeat(1000));
        let mut input = BufReader::with_capacity(16, text.as_bytes());
        let mut line = Vec::new();
        assert_eq!(read_line(&mut input, &mut line, 100), Line::TooLong);
        assert!(
            line.starts_with(b"7 x") && line.len() <= 64,
            "{}",
            line.len()
        );
        line.clear();
        assert_eq!(read_line(&mut input, &mut line, 100), Line::Read);
        assert_eq!(line, b"3 ok");
        line.clear();
        assert_eq!(read_line(&mut input, &mut line, 100), Line::Closed);
    }

    #[test]
    fn a_reply_is_taken_only_for_a_call_waiting_for_it() {
        let mut calls = Calls::default();
        calls.waiting.insert(7, Arc::default());
        calls.given_up.insert(9);
        assert!(matches!(calls.answered(7), Ok(Some(_))));
        assert!(calls.answered(7).is_err(), "a second answer");
        assert!(matches!(calls.answered(9), Ok(None)), "a late answer");
        assert!(calls.answered(9).is_err(), "a late answer, twice");
        assert!(calls.answered(8).is_err(), "a call never made");
        calls.lost = Some(Lost::Closed);
        assert!(
            matches!(calls.answered(8), Ok(None)),
            "once lost, nothing more is a fault"
        );
    }

    #[test]
    fn call_numbers_are_distinct_and_follow_from_nothing_the_process_sees() {
        let numbers = CallNumbers::new();
        let drawn: Vec<u64> = (0..10_000).map(|_| numbers.next(|_| false)).collect();
        let distinct: std::collections::HashSet<u64> = drawn.iter().copied().collect();
        assert_eq!(distinct.len(), drawn.len());
        assert!(!distinct.contains(&INIT_CALL));
        // No number is its predecessor's plus a small step.
        assert!(drawn
            .windows(2)
            .all(|pair| pair[1].wrapping_sub(pair[0]) > 1 << 20));
        // Another process's numbers are others.
        assert!(!distinct.contains(&CallNumbers::new().next(|_| false)));
        // A number a call in flight holds is not given again.
        let asked = std::cell::RefCell::new(Vec::new());
        let given = numbers.next(|number| {
            asked.borrow_mut().push(number);
            asked.borrow().len() == 1
        });
        let asked = asked.into_inner();
        assert_eq!(asked.len(), 2);
        assert_eq!(given, asked[1]);
        assert_ne!(given, asked[0]);
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_read() {
        let mut input = BufReader::with_capacity(4, &b"5 abcdef\n"[..]);
        let mut line = Vec::new();
        assert_eq!(read_line(&mut input, &mut line, 8), Line::Read);
        assert_eq!(line, b"5 abcdef");
    }
}
