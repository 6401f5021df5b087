//! Reading the child's replies, one line each, with a deadline. On Unix the calling thread
//! waits on the pipe itself (`poll`), so a reply reaches the caller without passing through
//! another thread; elsewhere a reader thread hands lines over a channel.

use std::io::BufRead;
use std::process::ChildStdout;
use std::time::{Duration, Instant};

/// Why no reply came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoReply {
    /// The pipe closed or failed: the child is gone.
    Closed,
    /// Nothing complete within the deadline.
    TimedOut,
    /// The line is longer than the limit: the rest of it is not read.
    TooLarge,
}

#[cfg(not(unix))]
pub use self::threaded::Replies;
#[cfg(unix)]
pub use self::unix::Replies;

#[cfg(unix)]
mod unix {
    use std::io::BufReader;
    use std::os::fd::{AsRawFd, RawFd};

    use super::*;
    use crate::wait;

    /// The child's stdout, read on the caller's thread.
    pub struct Replies {
        output: BufReader<ChildStdout>,
        /// The longest line read, in bytes.
        limit: u64,
    }

    impl Replies {
        pub fn new(output: ChildStdout, limit: u64) -> Self {
            Replies {
                output: BufReader::with_capacity(64 * 1024, output),
                limit,
            }
        }

        /// The next line (without its newline), waiting at most `timeout` for it to complete;
        /// for its start, spinning for `spin` before sleeping ([`wait`]).
        pub fn next(&mut self, timeout: Duration, spin: Duration) -> Result<String, NoReply> {
            let deadline = Instant::now() + timeout;
            let fd = self.output.get_ref().as_raw_fd();
            let mut spin = spin;
            let mut line = Vec::new();
            loop {
                if self.output.buffer().is_empty()
                    && !wait::spin_until(|| wait::readable_now(fd), std::mem::take(&mut spin))
                {
                    wait_readable(fd, deadline)?;
                }
                let available = self.output.fill_buf().map_err(|_| NoReply::Closed)?;
                if available.is_empty() {
                    return Err(NoReply::Closed);
                }
                let end = available.iter().position(|b| *b == b'\n');
                let length = line.len() + end.unwrap_or(available.len());
                if length as u64 > self.limit {
                    return Err(NoReply::TooLarge);
                }
                match end {
                    Some(end) => {
                        line.extend_from_slice(&available[..end]);
                        self.output.consume(end + 1);
                        return String::from_utf8(line).map_err(|_| NoReply::Closed);
                    }
                    None => {
                        let read = available.len();
                        line.extend_from_slice(available);
                        self.output.consume(read);
                    }
                }
            }
        }
    }

    /// Waits until `fd` has data (or is closed), up to `deadline`.
    fn wait_readable(fd: RawFd, deadline: Instant) -> Result<(), NoReply> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NoReply::TimedOut);
            }
            // Rounded up, so a wait never ends just before the deadline.
            let millis = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
            let mut poll = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd for a descriptor this process owns, for the call only.
            let ready = unsafe { libc::poll(&mut poll, 1, millis) };
            match ready {
                1.. => return Ok(()),
                0 => continue,
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
                    continue
                }
                _ => return Err(NoReply::Closed),
            }
        }
    }
}

#[cfg(not(unix))]
mod threaded {
    use std::io::BufReader;
    use std::sync::mpsc::{self, Receiver, RecvTimeoutError};

    use super::*;

    /// The child's stdout, read by a thread of its own (lines of any length: the bound is
    /// Unix's).
    pub struct Replies {
        lines: Receiver<std::io::Result<String>>,
    }

    impl Replies {
        pub fn new(output: ChildStdout, _limit: u64) -> Self {
            let (sender, lines) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(output).lines() {
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            });
            Replies { lines }
        }

        /// The next line (without its newline), waiting at most `timeout` for it.
        pub fn next(&mut self, timeout: Duration, _spin: Duration) -> Result<String, NoReply> {
            match self.lines.recv_timeout(timeout) {
                Ok(Ok(line)) => Ok(line),
                Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => Err(NoReply::Closed),
                Err(RecvTimeoutError::Timeout) => Err(NoReply::TimedOut),
            }
        }
    }
}
