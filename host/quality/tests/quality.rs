//! The quality harness through its public API: planting, rounds, probing, the gate and the
//! report's JSON shape, on small engines whose effect on the facts is known.

use ctxhost_quality::{Budget, QualityError, Settings, Style, Subject, SubjectError};
use ctxhost_sdk::{CompressOptions, ContextEngine, Message};
use ctxhost_sdk_test::{EngineSubject, Rewrite};
use serde_json::{json, Value};

/// Returns its input: loses nothing, shrinks nothing.
fn keep() -> EngineSubject<impl ContextEngine> {
    EngineSubject::new(Rewrite::new("keep", |m: &[Message]| m.to_vec()))
}

/// The system prompt and the newest user message with what follows it.
fn tail(m: &[Message]) -> Vec<Message> {
    let last_user = m.iter().rposition(Message::is_user).unwrap_or(0);
    let mut out = vec![m[0].clone()];
    out.extend_from_slice(&m[last_user.max(1)..]);
    out
}

/// Keeps the system prompt and the newest user message with what follows it.
fn tail_engine() -> EngineSubject<impl ContextEngine> {
    EngineSubject::new(Rewrite::new("tail", tail))
}

/// Keeps everything but the lines announcing an update: every superseded value stays current.
fn drops_updates(m: &[Message]) -> Vec<Message> {
    m.iter()
        .map(|message| {
            let mut message = message.clone();
            if let Some(text) = message.text() {
                let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with("Update:")).collect();
                message.set_text(kept.join("\n"));
            }
            message
        })
        .collect()
}

fn session() -> Vec<Message> {
    ctxhost_quality::generated_session(3, 80)
}

fn settings() -> Settings {
    Settings {
        budget: Budget::Share(20.0),
        rounds: 5,
        seed: 11,
    }
}

#[test]
fn every_fact_is_planted_once_with_its_update_after_it() {
    let planted = ctxhost_quality::plant(&session(), 11).unwrap();
    assert_eq!(planted.facts.len(), 15);
    for kind in Style::Harness.kinds() {
        let of_kind: Vec<_> = planted.facts.iter().filter(|f| f.kind == kind).collect();
        assert_eq!(of_kind.len(), 3, "{kind}");
        assert_eq!(
            of_kind.iter().filter(|f| f.superseded_by.is_some()).count(),
            1,
            "{kind}"
        );
    }
    let text: String = planted
        .messages
        .iter()
        .map(|m| m.content_text().into_owned())
        .collect();
    for fact in &planted.facts {
        assert_eq!(text.matches(&fact.value).count(), 1, "{fact:?}");
        let first = planted.placement(fact.id, false).unwrap();
        assert!(planted.messages[first].is_user());
        if let Some(new) = &fact.superseded_by {
            assert_eq!(text.matches(new.as_str()).count(), 1, "{fact:?}");
            assert!(
                planted.placement(fact.id, true).unwrap() > first,
                "{fact:?}"
            );
        }
    }
    // Same seed, same plan; another seed, other values.
    assert_eq!(
        ctxhost_quality::plant(&session(), 11).unwrap().facts,
        planted.facts
    );
    let other = ctxhost_quality::plant(&session(), 12).unwrap();
    assert!(other
        .facts
        .iter()
        .zip(&planted.facts)
        .all(|(a, b)| a.value != b.value));
}

#[test]
fn an_engine_that_keeps_everything_keeps_every_fact_and_misses_the_budget() {
    let report = ctxhost_quality::run(&mut keep(), &session(), &settings()).unwrap();
    assert_eq!(report.rounds.len(), 5);
    assert_eq!(report.outcome.overall.planted, 15);
    assert_eq!(report.outcome.overall.kept, 15);
    assert_eq!(report.outcome.stale, 0);
    assert!(report.passes(1.0));
    assert_eq!(report.outcome.budgets_met, 0);
    for round in &report.rounds {
        assert!(!round.budget_met);
        assert_eq!(round.budget_tokens, round.input_tokens / 5);
    }
    // Facts count from the round the session reaches them: fewer early on.
    assert!(report.rounds[0].overall.planted < 15);
    assert!(report
        .outcome
        .first_under_half
        .iter()
        .all(|f| f.round.is_none()));
    assert!(report.table().contains("kept 15 of 15 facts (100%)"));
}

#[test]
fn an_engine_that_keeps_only_the_tail_loses_facts_and_fails_the_gate() {
    let report = ctxhost_quality::run(&mut tail_engine(), &session(), &settings()).unwrap();
    assert!(report.outcome.overall.kept < 5, "{}", report.table());
    assert!(!report.passes(0.9));
    assert!(report.outcome.weakest < 0.5);
    assert!(report
        .outcome
        .first_under_half
        .iter()
        .any(|f| f.round == Some(1)));
    assert_eq!(report.outcome.budgets_met, 5, "{}", report.table());
}

#[test]
fn a_superseded_value_shown_without_its_update_is_stale() {
    let report = ctxhost_quality::run(
        &mut EngineSubject::new(Rewrite::new("drops-updates", drops_updates)),
        &session(),
        &settings(),
    )
    .unwrap();
    assert_eq!(report.outcome.stale, 5, "{}", report.table());
    assert_eq!(report.outcome.overall.kept, 10);
    for kind in &report.outcome.survival {
        assert_eq!(kind.score.kept, 2, "{kind:?}");
    }
    let stale: Vec<_> = report.rounds[4].stale.clone();
    assert!(stale
        .iter()
        .all(|&id| report.facts[id].superseded_by.is_some()));
}

/// A subject that keeps only the tail in view but searches everything it was given with
/// lcm's tool names: the retrieval agent recovers what the view lost.
struct Searchable {
    seen: Vec<Message>,
}

impl Subject for Searchable {
    fn engine(&self) -> String {
        "searchable".into()
    }
    fn count(&self, messages: &[Message]) -> u64 {
        ctxhost_sdk_test::tokens::count_messages(messages)
    }
    fn compress(
        &mut self,
        messages: &[Message],
        _: &CompressOptions,
    ) -> Result<Vec<Message>, SubjectError> {
        for message in messages {
            if !self.seen.contains(message) {
                self.seen.push(message.clone());
            }
        }
        Ok(tail(messages))
    }
    fn tool_names(&mut self) -> Vec<String> {
        vec!["lcm_grep".into(), "lcm_expand".into()]
    }
    fn call_tool(&mut self, name: &str, args: &Value) -> Result<String, SubjectError> {
        match name {
            // Ids only, no snippet: the agent must open a match to read the value.
            "lcm_grep" => {
                let pattern = args["pattern"].as_str().unwrap_or_default();
                let matches: Vec<Value> = self
                    .seen
                    .iter()
                    .enumerate()
                    .rev()
                    .filter(|(_, m)| m.content_text().contains(pattern))
                    .map(|(i, _)| json!({"id": format!("msg_{i}")}))
                    .collect();
                Ok(json!({ "matches": matches }).to_string())
            }
            "lcm_expand" => {
                let id = args["id"].as_str().unwrap_or_default();
                let index: usize = id.trim_start_matches("msg_").parse().unwrap();
                Ok(self.seen[index].content_text().into_owned())
            }
            other => Err(SubjectError(format!("no tool {other}"))),
        }
    }
}

#[test]
fn the_retrieval_agent_recovers_with_the_tools_what_the_view_lost() {
    let mut subject = Searchable { seen: Vec::new() };
    let report = ctxhost_quality::run(&mut subject, &session(), &settings()).unwrap();
    let retrieval = report
        .outcome
        .retrieval
        .as_ref()
        .expect("lcm's tools are there");
    assert!(report.outcome.overall.kept < 5);
    assert_eq!(retrieval.overall.kept, 15, "{}", report.table());
    assert!(report.table().contains("tools recover 100%"));
    // An engine without the tools has no retrieval score.
    let plain = ctxhost_quality::run(&mut tail_engine(), &session(), &settings()).unwrap();
    assert!(plain.outcome.retrieval.is_none());
}

#[test]
fn the_json_report_has_a_stable_shape() {
    let report = ctxhost_quality::run(&mut tail_engine(), &session(), &settings()).unwrap();
    let value = serde_json::to_value(&report).unwrap();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&value),
        [
            "engine",
            "style",
            "seed",
            "budget",
            "session_messages",
            "session_tokens",
            "facts",
            "rounds",
            "outcome"
        ]
    );
    assert_eq!(value["budget"], json!({"share": 20.0}));
    assert_eq!(value["style"], "harness");
    assert_eq!(
        keys(&value["rounds"][0]),
        [
            "round",
            "input_messages",
            "input_tokens",
            "budget_tokens",
            "output_messages",
            "output_tokens",
            "head_tokens",
            "measured_tokens",
            "budget_met",
            "survival",
            "overall",
            "stale",
            "facts"
        ]
    );
    assert_eq!(
        keys(&value["rounds"][0]["survival"][0]),
        ["kind", "planted", "kept", "share"]
    );
    assert_eq!(value["rounds"][0]["survival"][0]["kind"], "rule");
    assert_eq!(
        keys(&value["outcome"]),
        [
            "survival",
            "overall",
            "weakest",
            "first_under_half",
            "stale",
            "budgets_met"
        ]
    );
    assert_eq!(
        keys(&value["facts"][0]),
        ["id", "kind", "subject", "value", "superseded_by"]
    );
    // It reads back as the same report.
    let back: ctxhost_quality::QualityReport = serde_json::from_value(value).unwrap();
    assert_eq!(back, report);
}

#[test]
fn budgets_read_as_shares_or_tokens() {
    assert_eq!("20%".parse::<Budget>().unwrap(), Budget::Share(20.0));
    assert_eq!("4000".parse::<Budget>().unwrap(), Budget::Tokens(4000));
    for bad in ["0%", "120%", "abc", "0", "-5"] {
        assert!(bad.parse::<Budget>().is_err(), "{bad}");
    }
    assert_eq!(Budget::Share(20.0).tokens_for(1000), 200);
    assert_eq!(Budget::Tokens(300).tokens_for(1000), 300);
}

#[test]
fn a_session_too_short_for_the_rounds_is_an_error() {
    // Three turns and the fifteen planted user messages: fewer turn boundaries than 40 rounds
    // need.
    let short = ctxhost_quality::generated_session(1, 3);
    let many = Settings {
        rounds: 40,
        ..settings()
    };
    let error = ctxhost_quality::run(&mut keep(), &short, &many).unwrap_err();
    assert_eq!(error, QualityError::TooShort { parts: 41 });
    let none = vec![Message::system("s"), Message::user("only ask")];
    let error = ctxhost_quality::run(&mut keep(), &none, &settings()).unwrap_err();
    assert_eq!(error, QualityError::NowhereToPlant);
}
