//! What the model still knows after this engine compacts: typed facts (rules, constraints,
//! facts, goals, preferences) planted in a session, compacted five rounds in a row at a budget
//! of 20% of each round's input, with the quality harness of ctxhost-quality (the same one
//! `ctxhost quality` runs). `cargo test --test quality -- --nocapture` prints the table.

mod common;

use common::*;
use ctxhost_quality::{Budget, Settings};
use ctxhost_sdk_test::EngineSubject;
use serde_json::Value;

/// The share of every fact kind the last round must still show. This engine drops the middle
/// of the conversation, facts included, so it keeps few; an engine that carries standing facts
/// forward raises this toward 0.9.
const MIN_SURVIVAL: f64 = 0.0;

#[test]
fn planted_facts_after_five_compactions_at_a_fifth_of_the_input() {
    let session = ctxhost_quality::generated_session(1, 120);
    let settings = Settings {
        budget: Budget::Share(20.0),
        rounds: 5,
        seed: 1,
    };
    let mut subject = EngineSubject::new(engine(Value::Null, 8_000));
    let report = ctxhost_quality::run(&mut subject, &session, &settings)
        .expect("the session is long enough");
    println!("{}", report.table());
    assert_eq!(report.rounds.len(), 5);
    assert!(
        report.rounds.iter().all(|r| r.error.is_none()),
        "{}",
        report.table()
    );
    // The engine sizes its output to the budget it is given.
    assert_eq!(report.outcome.budgets_met, 5, "{}", report.table());
    // A value that was superseded is never shown as if it were still current.
    assert_eq!(report.outcome.stale, 0, "{}", report.table());
    assert!(report.passes(MIN_SURVIVAL), "{}", report.table());
}
