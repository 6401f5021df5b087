//! The circuit breaker of an isolated engine: after [`FAILURES`] failures in a row its child
//! is not started again for a while ([`BASE`], doubling each time it opens, up to [`MAX`]), so
//! an engine that keeps crashing or hanging costs each call an error, not a restart or a wait.
//!
//! An answer ends a run of failures, with one exception: while a per-turn check keeps timing
//! out, other calls answered in between (by a child started again for them) do not count, or a
//! check that hangs on every turn would never open the breaker. Only that check answering does.

use std::time::{Duration, Instant};

use ctxhost_protocol::Op;

/// Failures in a row after which the child is no longer started for a while.
pub const FAILURES: u32 = 3;
/// How long the breaker stays open at first; it doubles each time, up to [`MAX`].
pub const BASE: Duration = Duration::from_secs(30);
pub const MAX: Duration = Duration::from_secs(600);

/// The breaker's state.
#[derive(Debug, Default)]
pub struct Breaker {
    failures: u32,
    /// The checks whose last call timed out.
    hung_checks: Vec<Op>,
    open_until: Option<Instant>,
    trips: u32,
}

impl Breaker {
    /// `op` was answered.
    pub fn answered(&mut self, op: Op) {
        self.hung_checks.retain(|hung| *hung != op);
        if self.hung_checks.is_empty() {
            self.failures = 0;
            self.trips = 0;
        }
    }

    /// The child was lost (it crashed, exited, could not start, or was killed at a deadline)
    /// at `now`; `hung_check` names the per-turn check that timed out, if that was it.
    pub fn lost(&mut self, hung_check: Option<Op>, now: Instant) {
        if let Some(op) = hung_check.filter(|op| !self.hung_checks.contains(op)) {
            self.hung_checks.push(op);
        }
        self.failures += 1;
        if self.failures >= FAILURES {
            let wait = BASE.saturating_mul(1 << self.trips.min(5)).min(MAX);
            self.open_until = Some(now + wait);
            self.trips += 1;
            self.failures = 0;
        }
    }

    /// How much longer the breaker stays open after `now`; `None` when a child may be
    /// started. Past its time, it closes.
    pub fn open_for(&mut self, now: Instant) -> Option<Duration> {
        match self.open_until {
            Some(until) if now < until => Some(until - now),
            Some(_) => {
                self.open_until = None;
                None
            }
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_in_a_row_open_it_and_an_answer_between_them_resets_the_count() {
        let now = Instant::now();
        let mut breaker = Breaker::default();
        for _ in 0..FAILURES - 1 {
            breaker.lost(None, now);
        }
        breaker.answered(Op::Status);
        for _ in 0..FAILURES - 1 {
            breaker.lost(None, now);
        }
        assert_eq!(breaker.open_for(now), None);
        breaker.lost(None, now);
        assert_eq!(breaker.open_for(now), Some(BASE));
        assert_eq!(breaker.open_for(now + BASE), None);
    }

    #[test]
    fn a_check_that_keeps_timing_out_opens_it_whatever_answers_between() {
        let now = Instant::now();
        let mut breaker = Breaker::default();
        for _ in 0..FAILURES {
            // A turn: usage recorded (by a child started again for it), then the check hangs.
            breaker.answered(Op::UpdateFromResponse);
            assert_eq!(breaker.open_for(now), None);
            breaker.lost(Some(Op::ShouldCompress), now);
        }
        assert_eq!(breaker.open_for(now), Some(BASE));
        // Once closed, it opens again after as many turns, for twice as long.
        let later = now + BASE;
        assert_eq!(breaker.open_for(later), None);
        for _ in 0..FAILURES {
            breaker.answered(Op::UpdateFromResponse);
            breaker.lost(Some(Op::ShouldCompress), later);
        }
        assert_eq!(breaker.open_for(later), Some(BASE * 2));
    }

    #[test]
    fn the_hung_check_answering_ends_the_run() {
        let now = Instant::now();
        let mut breaker = Breaker::default();
        for _ in 0..FAILURES - 1 {
            breaker.lost(Some(Op::ShouldCompress), now);
        }
        breaker.answered(Op::ShouldCompress);
        breaker.lost(Some(Op::ShouldCompress), now);
        assert_eq!(breaker.open_for(now), None);
    }
}
