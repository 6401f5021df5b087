//! Waiting for the other side of a pipe. A process that sleeps on a pipe is woken by the
//! kernel, which costs tens of microseconds when its core has gone idle (more in a virtual
//! machine): as much as a whole per-turn check. So a side that expects an answer within a
//! short, known time checks the pipe in a loop first, giving its core away on each turn
//! (`yield_now`), and sleeps only past that time.

use std::time::{Duration, Instant};

/// Calls `ready` until it says yes (`true`) or `spin` has passed (`false`), yielding the core
/// between calls.
pub fn spin_until(ready: impl Fn() -> bool, spin: Duration) -> bool {
    if spin.is_zero() {
        return ready();
    }
    let start = Instant::now();
    loop {
        if ready() {
            return true;
        }
        if start.elapsed() >= spin {
            return false;
        }
        std::thread::yield_now();
    }
}

/// Whether reading `fd` would not block now: it has data, or it is closed.
#[cfg(unix)]
pub fn readable_now(fd: std::os::fd::RawFd) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for a descriptor this process owns, for the call only.
    unsafe { libc::poll(&mut poll, 1, 0) != 0 }
}

/// How long to spin for a reply, from how long the last one took: replies that came within
/// [`SPIN_MAX`] are spun for, up to twice as long as the last; slower ones (an engine that
/// calls a model) are slept for at once.
pub fn spin_for(last: Option<Duration>) -> Duration {
    match last {
        Some(last) if last <= SPIN_MAX => (last * 2).min(SPIN_MAX),
        _ => Duration::ZERO,
    }
}

/// The longest spin for one reply.
pub const SPIN_MAX: Duration = Duration::from_millis(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_replies_expected_soon_are_spun_for() {
        assert_eq!(spin_for(None), Duration::ZERO);
        assert_eq!(
            spin_for(Some(Duration::from_micros(100))),
            Duration::from_micros(200)
        );
        assert_eq!(spin_for(Some(Duration::from_micros(900))), SPIN_MAX);
        assert_eq!(spin_for(Some(Duration::from_millis(50))), Duration::ZERO);
    }

    #[test]
    fn a_spin_ends_when_ready_or_when_its_time_is_up() {
        let calls = std::cell::Cell::new(0);
        assert!(spin_until(
            || {
                calls.set(calls.get() + 1);
                calls.get() == 3
            },
            Duration::from_secs(60)
        ));
        assert_eq!(calls.get(), 3);
        assert!(!spin_until(|| false, Duration::from_micros(50)));
        assert!(!spin_until(|| false, Duration::ZERO));
    }
}
