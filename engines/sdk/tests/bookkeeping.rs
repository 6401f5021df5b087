//! The host's bookkeeping the SDK does for an engine that hands out its `TokenTracker`: the
//! trait's defaults record usage, compare with the threshold, follow the window, reset and
//! report, and an engine without a tracker is told it must answer `should_compress` and
//! `status` itself.

use ctxhost_sdk::{
    CompressOptions, ContextEngine, EngineError, ErrorKind, Message, SessionStart, TokenTracker,
    Usage,
};
use serde_json::{json, Value};

/// An engine that writes nothing but its tracker and its own status figures.
struct Tracked {
    tracker: TokenTracker,
    compressions: u64,
}

impl ContextEngine for Tracked {
    fn name(&self) -> &str {
        "tracked"
    }

    fn tracker(&mut self) -> Option<&mut TokenTracker> {
        Some(&mut self.tracker)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        _: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        self.compressions += 1;
        self.tracker.compression_count += 1;
        Ok(messages.to_vec())
    }

    fn status_details(&mut self) -> Result<Value, EngineError> {
        Ok(json!({ "compressions_seen": self.compressions }))
    }
}

/// An engine with no tracker at all.
struct Untracked;

impl ContextEngine for Untracked {
    fn name(&self) -> &str {
        "untracked"
    }

    fn compress(
        &mut self,
        messages: &[Message],
        _: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        Ok(messages.to_vec())
    }
}

fn usage(prompt_tokens: u64) -> Usage {
    Usage {
        prompt_tokens,
        completion_tokens: 7,
        total_tokens: prompt_tokens + 7,
        ..Usage::default()
    }
}

#[test]
fn the_defaults_keep_the_tracker() {
    let mut engine = Tracked {
        tracker: TokenTracker::new(1_000, 0.75),
        compressions: 0,
    };
    // The threshold: three quarters of the window.
    assert!(!engine.should_compress(749).unwrap());
    assert!(engine.should_compress(750).unwrap());

    // Usage is recorded and reported, with the engine's own figures beside it.
    engine.update_from_response(&usage(600)).unwrap();
    engine.compress(&[], &CompressOptions::default()).unwrap();
    let status = engine.status().unwrap();
    assert_eq!(
        (
            status.last_prompt_tokens,
            status.threshold_tokens,
            status.context_length,
            status.usage_percent,
            status.compression_count,
        ),
        (600, 750, 1_000, 60.0, 1)
    );
    assert_eq!(status.details, json!({ "compressions_seen": 1 }));
    assert_eq!(engine.tracker.last_completion_tokens, 7);
    assert_eq!(engine.tracker.last_total_tokens, 607);

    // A session's window replaces the configured one; a session without one keeps it.
    let start = |context_length| SessionStart {
        session_id: "s".into(),
        model: None,
        context_length,
    };
    engine.on_session_start(&start(Some(2_000))).unwrap();
    assert!(!engine.should_compress(1_499).unwrap());
    assert!(engine.should_compress(1_500).unwrap());
    engine.on_session_start(&start(None)).unwrap();
    assert_eq!(engine.status().unwrap().context_length, 2_000);

    // A new model's window, likewise.
    engine.update_model("small", 400).unwrap();
    assert!(engine.should_compress(300).unwrap());
    assert_eq!(engine.status().unwrap().threshold_tokens, 300);

    // A reset forgets the counts and keeps the window and threshold.
    engine.on_session_reset().unwrap();
    let status = engine.status().unwrap();
    assert_eq!(
        (
            status.last_prompt_tokens,
            status.compression_count,
            status.context_length
        ),
        (0, 0, 400)
    );
}

#[test]
fn an_unknown_window_never_fires() {
    let mut engine = Tracked {
        tracker: TokenTracker::new(0, 0.75),
        compressions: 0,
    };
    assert!(!engine.should_compress(u64::MAX).unwrap());
    assert_eq!(engine.status().unwrap().usage_percent, 0.0);
}

#[test]
fn without_a_tracker_the_engine_must_answer_itself() {
    let mut engine = Untracked;
    let error = engine.should_compress(10).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
    assert!(error.to_string().contains("should_compress"), "{error}");
    let error = engine.status().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
    assert!(error.to_string().contains("status"), "{error}");
    // The bookkeeping that needs no answer is a no-op, as Hermes' defaults are.
    engine.update_from_response(&usage(5)).unwrap();
    engine.update_model("m", 100).unwrap();
    engine.on_session_reset().unwrap();
    engine
        .on_session_start(&SessionStart {
            session_id: "s".into(),
            model: None,
            context_length: Some(10),
        })
        .unwrap();
}
