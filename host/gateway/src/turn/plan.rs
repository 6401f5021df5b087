//! What a turn does about compression before its request goes upstream, decided from where the
//! session stands and whether what it would send fits the window: no turn waits for a
//! summarizer unless what it would send does not fit.

/// Where a session stands against its engine's threshold when a request comes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// A compression is being prepared (on this gateway or another) and is not ready.
    Preparing,
    /// The engine compresses on this request: its threshold is crossed (and no deferral holds).
    Crossing,
    /// Near the threshold: the engine would compress with `serve.compression.margin` more.
    Near,
    /// Neither.
    Below,
    /// The cache-aware policy compresses early: the session's prompt cache has expired, so
    /// the rewrite is free on this request only (the next finds the cache warm again).
    CacheExpired,
}

/// The settings the plan follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// `serve.compression.background`.
    pub background: bool,
    /// `serve.cache.min_tokens_saved` is set: a compression on a request is weighed against
    /// the warm cache before it is applied, which only one run on the request can be (the
    /// request must go with the view or the compression, not both).
    pub weighs_saving: bool,
}

/// What a turn does before its request goes upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnPlan {
    /// The view plus what is new goes upstream at once.
    SendView,
    /// The view plus what is new goes upstream at once, while a compression of it is prepared
    /// in the background for a later request to take in.
    SendViewAndPrepare,
    /// What it would send does not fit: the compression being prepared (started now if none
    /// is) is waited for, at most `serve.compression.wait_seconds`, then as a synchronous one
    /// would be, and the request goes with its result.
    WaitThenSend,
    /// The engine compresses on the request, which waits for it (`background: false`).
    CompressNow,
}

impl TurnPlan {
    /// The plan for a request of a session that stands at `standing`, whose view plus what is
    /// new `fits` the window (the model's, less the room kept for the answer).
    pub(crate) fn decide(standing: Standing, fits: bool, policy: Policy) -> TurnPlan {
        match standing {
            Standing::Preparing if fits => TurnPlan::SendView,
            Standing::Preparing => TurnPlan::WaitThenSend,
            Standing::CacheExpired => TurnPlan::CompressNow,
            Standing::Crossing if !policy.background || policy.weighs_saving => {
                TurnPlan::CompressNow
            }
            Standing::Crossing if fits => TurnPlan::SendViewAndPrepare,
            Standing::Crossing => TurnPlan::WaitThenSend,
            Standing::Near if policy.background => TurnPlan::SendViewAndPrepare,
            Standing::Near | Standing::Below => TurnPlan::SendView,
        }
    }

    /// Whether the request waits for a summarizer before it goes upstream.
    pub(crate) fn waits(self) -> bool {
        matches!(self, TurnPlan::WaitThenSend | TurnPlan::CompressNow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BACKGROUND: Policy = Policy {
        background: true,
        weighs_saving: false,
    };
    const ON_REQUEST: Policy = Policy {
        background: false,
        weighs_saving: false,
    };

    #[test]
    fn a_request_that_crosses_the_threshold_goes_at_once_when_its_view_fits() {
        let plan = TurnPlan::decide(Standing::Crossing, true, BACKGROUND);
        assert_eq!(plan, TurnPlan::SendViewAndPrepare);
        assert!(!plan.waits());
    }

    #[test]
    fn only_a_request_that_would_not_fit_waits() {
        for standing in [Standing::Crossing, Standing::Preparing] {
            let plan = TurnPlan::decide(standing, false, BACKGROUND);
            assert_eq!(plan, TurnPlan::WaitThenSend, "{standing:?}");
            assert!(plan.waits());
        }
        for standing in [
            Standing::Crossing,
            Standing::Preparing,
            Standing::Near,
            Standing::Below,
        ] {
            assert!(
                !TurnPlan::decide(standing, true, BACKGROUND).waits(),
                "{standing:?}"
            );
        }
    }

    #[test]
    fn a_request_that_finds_a_compression_being_prepared_does_not_start_another() {
        assert_eq!(
            TurnPlan::decide(Standing::Preparing, true, BACKGROUND),
            TurnPlan::SendView
        );
    }

    #[test]
    fn near_the_threshold_a_compression_is_prepared_and_below_it_nothing_is() {
        assert_eq!(
            TurnPlan::decide(Standing::Near, true, BACKGROUND),
            TurnPlan::SendViewAndPrepare
        );
        assert_eq!(
            TurnPlan::decide(Standing::Below, true, BACKGROUND),
            TurnPlan::SendView
        );
    }

    #[test]
    fn without_background_compressions_every_one_runs_on_its_request_as_before() {
        for fits in [true, false] {
            assert_eq!(
                TurnPlan::decide(Standing::Crossing, fits, ON_REQUEST),
                TurnPlan::CompressNow
            );
        }
        assert_eq!(
            TurnPlan::decide(Standing::Near, true, ON_REQUEST),
            TurnPlan::SendView
        );
    }

    #[test]
    fn a_compression_weighed_against_the_warm_cache_runs_on_its_request() {
        let weighed = Policy {
            background: true,
            weighs_saving: true,
        };
        assert_eq!(
            TurnPlan::decide(Standing::Crossing, true, weighed),
            TurnPlan::CompressNow
        );
        // Preparing near the threshold is forced, not weighed: unchanged by it.
        assert_eq!(
            TurnPlan::decide(Standing::Near, true, weighed),
            TurnPlan::SendViewAndPrepare
        );
    }

    #[test]
    fn an_early_compression_on_an_expired_cache_runs_on_its_request_whatever_the_settings() {
        // The rewrite is free on this request only: the next finds the cache warm again.
        for policy in [BACKGROUND, ON_REQUEST] {
            for fits in [true, false] {
                assert_eq!(
                    TurnPlan::decide(Standing::CacheExpired, fits, policy),
                    TurnPlan::CompressNow
                );
            }
        }
    }
}
