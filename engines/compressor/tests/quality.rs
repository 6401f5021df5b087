//! The compressor under the quality harness of ctxhost-sdk-test: five compactions in a row at a
//! fixed budget, which it meets with its own sizing (`CompressOptions::target_tokens`), not the
//! window's.

mod common;

use common::compressor;
use ctxhost_sdk_test::quality::{self, Budget, EngineSubject, Settings};
use ctxhost_sdk_test::FakeHost;
use serde_json::Value;

fn run(budget: Budget) -> quality::QualityReport {
    // The fake host's summarizer digests what it is given within the tokens asked for.
    let host = FakeHost::builder("compressor").build();
    let mut subject = EngineSubject::new(compressor(&host, 128_000, Value::Null));
    let settings = Settings {
        budget,
        rounds: 5,
        seed: 3,
    };
    quality::run(&mut subject, &quality::generated_session(3, 120), &settings).unwrap()
}

#[test]
fn five_rounds_fit_the_budget_whatever_the_window() {
    for budget in [
        Budget::Share(30.0),
        Budget::Share(20.0),
        Budget::Tokens(700),
    ] {
        let report = run(budget);
        assert_eq!(
            report.outcome.budgets_met,
            5,
            "{budget}:\n{}",
            report.table()
        );
        for round in &report.rounds {
            assert!(round.error.is_none(), "{}", report.table());
            // Far under the window's threshold: the engine sized the output itself.
            assert!(
                round.output_tokens < round.input_tokens / 4,
                "{}",
                report.table()
            );
        }
    }
}

#[test]
fn no_tools_no_retrieval_score() {
    assert!(run(Budget::Share(20.0)).outcome.retrieval.is_none());
}
