//! The compaction report in the shape the host reports for every engine
//! ([`CompressionReport`]): the common figures promoted, the rest kept as details.

use ctxhost_sdk::{CompressionReport, Escalation};
use serde_json::Value;

use crate::compaction::Report;
use crate::summarize::{AGGRESSIVE, NORMAL, TRUNCATION_NAME};

/// The report's fields that [`CompressionReport`] carries itself; every other field goes to
/// `details`.
const PROMOTED: &[&str] = &[
    "tokens_before",
    "tokens_after",
    "messages_before",
    "messages_after",
    "summarizer",
    "summarizer_calls",
    "escalation_level",
    "elapsed_ms",
];

pub fn compression_report(report: &Report) -> CompressionReport {
    let mut details = serde_json::to_value(report).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut details {
        fields.retain(|key, _| !PROMOTED.contains(&key.as_str()));
    }
    // The summarizer did not answer when the engine had to truncate; its last failure says why.
    let fallback_reason = (report.summarizer.as_deref() == Some(TRUNCATION_NAME))
        .then(|| report.summarizer_failures.last().cloned())
        .flatten();
    CompressionReport {
        tokens_before: report.tokens_before,
        tokens_after: report.tokens_after,
        messages_before: report.messages_before as u64,
        messages_after: report.messages_after as u64,
        summarizer: report.summarizer.clone(),
        summarizer_calls: report.summarizer_calls,
        fallback_reason,
        escalation: escalation(report.escalation_level),
        elapsed_ms: report.elapsed_ms,
        details,
    }
}

/// The engine's levels (normal, aggressive, truncation) as the contract names them.
fn escalation(level: u8) -> Escalation {
    match level {
        NORMAL => Escalation::Normal,
        AGGRESSIVE => Escalation::Aggressive,
        _ => Escalation::Deterministic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::TRUNCATION;

    #[test]
    fn levels_map_to_the_contracts_escalation() {
        assert_eq!(escalation(NORMAL), Escalation::Normal);
        assert_eq!(escalation(AGGRESSIVE), Escalation::Aggressive);
        assert_eq!(escalation(TRUNCATION), Escalation::Deterministic);
    }

    #[test]
    fn a_truncation_says_why_and_the_rest_goes_to_details() {
        let report = Report {
            tokens_before: 900,
            tokens_after: 300,
            passes: 2,
            stopped: crate::compaction::StopReason::UnderTarget,
            escalation_level: TRUNCATION,
            summarizer: Some(TRUNCATION_NAME.into()),
            summarizer_failures: vec!["HTTP 500".into(), "timeout".into()],
            ..Report::default()
        };
        let typed = compression_report(&report);
        assert_eq!(typed.escalation, Escalation::Deterministic);
        assert_eq!(typed.fallback_reason.as_deref(), Some("timeout"));
        assert_eq!(typed.details["passes"], 2);
        assert_eq!(typed.details["stopped"], "under_target");
        assert!(typed.details.get("tokens_before").is_none());
    }
}
