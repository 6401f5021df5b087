//! lcm under the quality harness of ctxhost-quality, on ctxhost-sdk-test's fake host: five
//! compactions in a row at a fixed budget, which its view meets (`CompressOptions::target_tokens`
//! sizes its fresh tail and its summaries), and what a scripted agent recovers of the planted
//! facts with its tools.

mod common;

use common::{engine, host, Script};
use ctxhost_quality::{Budget, Settings};
use ctxhost_sdk::{ContextEngine, SessionStart};
use ctxhost_sdk_test::EngineSubject;
use serde_json::Value;

fn run(budget: Budget) -> ctxhost_quality::QualityReport {
    let host = host(Script::Good, Value::Null, 128_000);
    let mut lcm = engine(&host);
    lcm.on_session_start(&SessionStart {
        session_id: "quality".into(),
        ..SessionStart::default()
    })
    .unwrap();
    let settings = Settings {
        budget,
        rounds: 5,
        seed: 4,
    };
    let mut subject = EngineSubject::new(lcm);
    ctxhost_quality::run(
        &mut subject,
        &ctxhost_quality::generated_session(4, 120),
        &settings,
    )
    .unwrap()
}

#[test]
fn the_view_fits_the_budget_and_the_tools_recover_every_fact() {
    for budget in [
        Budget::Share(20.0),
        Budget::Share(30.0),
        Budget::Tokens(800),
    ] {
        let report = run(budget);
        assert_eq!(
            report.outcome.budgets_met,
            5,
            "{budget}:\n{}",
            report.table()
        );
        assert!(report.rounds.iter().all(|r| r.error.is_none()));
        let tools = report
            .outcome
            .retrieval
            .as_ref()
            .expect("lcm has its tools");
        assert_eq!(tools.overall.kept, 15, "{}", report.table());
    }
}
