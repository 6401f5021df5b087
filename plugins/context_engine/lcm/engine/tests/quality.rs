//! lcm under the quality harness of ctxhost-quality, on ctxhost-sdk-test's fake host: five
//! compactions in a row at a fixed budget, which its view meets (`CompressOptions::target_tokens`
//! sizes its fresh tail and its summaries), and what a scripted agent recovers of the planted
//! facts with its tools.

mod common;

use common::{engine, host, Script};
use ctxhost_offline_summary::OfflineSummarizer;
use ctxhost_quality::{Budget, Settings, Style};
use ctxhost_sdk::{ContextEngine, SessionStart};
use ctxhost_sdk_test::{Answer, EngineSubject, FakeHost};
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

/// lcm on the fake host with the host's offline summarizer (the reader of standing facts and
/// files `ctxhost quality` measures with), session `id` started.
fn offline_lcm(id: &str) -> ctxhost_engine_lcm::LcmEngine {
    let host = FakeHost::builder("lcm")
        .config(common::with_store(Value::Null, None))
        .context_length(128_000)
        .default_answer(Answer::with(|request| {
            Ok(OfflineSummarizer.summary(request))
        }))
        .build();
    let mut lcm = engine(&host);
    lcm.on_session_start(&SessionStart {
        session_id: id.into(),
        ..SessionStart::default()
    })
    .unwrap();
    lcm
}

/// lcm at 20% under the quality harness with the host's offline summarizer, seed 27, the
/// facts phrased in `style`.
fn offline_run(
    name: &str,
    session: &[ctxhost_sdk::Message],
    style: Style,
) -> ctxhost_quality::QualityReport {
    let mut subject = EngineSubject::new(offline_lcm(name));
    let settings = Settings {
        budget: Budget::Share(20.0),
        rounds: 5,
        seed: 27,
    };
    ctxhost_quality::run_in_style(&mut subject, session, &settings, style).unwrap()
}

/// A single short task whose system prompt and first message alone are over a fifth of every
/// round (the corpus' sessions): at 20% the view is measured past that head, and the room the
/// newest turn leaves goes to one summary block with the standing facts first, so every fact
/// the summaries hold is in the view, round after round.
#[test]
fn past_a_head_over_the_budget_the_view_keeps_every_standing_fact() {
    for name in [
        "ctf__web__i_got_id_demo",
        "ctf__crypto__katy",
        "gpt4__swe-bench-dev-easy_first_only__default__install-1__pydicom__pydicom-1458",
    ] {
        let report = offline_run(
            name,
            &ctxhost_sdk_test::corpus::transcript(name),
            Style::Harness,
        );
        assert!(
            report
                .rounds
                .iter()
                .all(|r| r.head_tokens > r.budget_tokens),
            "{name}: the head is over the budget:\n{}",
            report.table()
        );
        assert_eq!(report.outcome.budgets_met, 5, "{name}:\n{}", report.table());
        assert_eq!(report.outcome.stale, 0, "{name}:\n{}", report.table());
        assert!(report.passes(0.9), "{name}:\n{}", report.table());
    }
}

/// A long session under a head smaller than the budget, in every phrasing family: the
/// newest turn stays whole and verbatim after the one summary block (no block of its own
/// after the newest user message, whose frame the room would pay twice), and every round's
/// view fits its budget.
#[test]
fn a_long_session_fits_every_round_in_every_phrasing() {
    for style in Style::ALL {
        let report = offline_run(
            "generated",
            &ctxhost_quality::generated_session(27, 120),
            style,
        );
        assert_eq!(
            report.outcome.budgets_met,
            5,
            "{style:?}:\n{}",
            report.table()
        );
    }
}
