//! Retries with jittered exponential backoff for the LLM clients.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use ctxhost_sdk::EngineError;

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff; each retry doubles it.
    pub base_delay: Duration,
    /// No backoff is longer than this.
    pub max_delay: Duration,
    /// A server's `Retry-After` is honoured up to this.
    pub max_retry_after: Duration,
}

impl RetryPolicy {
    pub fn new(max_retries: u32) -> Self {
        RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
        }
    }

    /// The wait before retry number `retry` (0-based): `base * 2^retry`, capped, with "equal
    /// jitter" (half fixed, half random) so that clients do not retry in lockstep. A server's
    /// `Retry-After` wins when longer, up to its own cap.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let exponential = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry.min(20)))
            .min(self.max_delay);
        let half = exponential / 2;
        let jitter = half.mul_f64(random_unit());
        let backoff = half + jitter;
        match retry_after {
            Some(after) => backoff.max(after.min(self.max_retry_after)),
            None => backoff,
        }
    }
}

/// A uniform number in [0, 1) from the standard library's randomly seeded hasher.
fn random_unit() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x5eed);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Why an attempt did not produce an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub error: EngineError,
    /// Whether another attempt may succeed (429, 5xx, timeouts, connection errors).
    pub retryable: bool,
    /// The server's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
}

impl Failure {
    pub fn fatal(error: EngineError) -> Self {
        Failure {
            error,
            retryable: false,
            retry_after: None,
        }
    }

    pub fn transient(error: EngineError, retry_after: Option<Duration>) -> Self {
        Failure {
            error,
            retryable: true,
            retry_after,
        }
    }
}

/// Runs `attempt` until it succeeds, fails for good, or the retries run out. The last error
/// says how many attempts were made when more than one was.
pub async fn with_retries<T, F, Fut>(policy: RetryPolicy, mut attempt: F) -> Result<T, EngineError>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut retry = 0;
    loop {
        match attempt(retry).await {
            Ok(value) => return Ok(value),
            Err(failure) if failure.retryable && retry < policy.max_retries => {
                tokio::time::sleep(policy.delay(retry, failure.retry_after)).await;
                retry += 1;
            }
            Err(failure) => {
                if retry == 0 {
                    return Err(failure.error);
                }
                let attempts = retry + 1;
                return Err(EngineError::new(
                    failure.error.kind(),
                    format!("{} (gave up after {attempts} attempts)", failure.error),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_doubles_with_jitter_and_caps() {
        let policy = RetryPolicy::new(5);
        for retry in 0..4 {
            let full = Duration::from_millis(200) * 2u32.pow(retry);
            let delay = policy.delay(retry, None);
            assert!(delay >= full / 2 && delay <= full, "{retry}: {delay:?}");
        }
        assert!(policy.delay(30, None) <= policy.max_delay);
    }

    #[test]
    fn retry_after_is_honoured_but_capped() {
        let policy = RetryPolicy::new(3);
        assert!(policy.delay(0, Some(Duration::from_secs(2))) >= Duration::from_secs(2));
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(3600))),
            policy.max_retry_after
        );
    }
}
