//! The phrasing families: each plants every kind of fact (files as real tool calls), with its
//! own phrasing, acknowledgements and filler turns, and an engine that keeps everything keeps
//! every fact of every family.

use ctxhost_quality::{Budget, FactKind, FileAction, Planted, Settings, Style};
use ctxhost_sdk::Message;
use ctxhost_sdk_test::{EngineSubject, Rewrite};
use serde_json::Value;

const FILLER: &str = "Acknowledged. Continuing with the plan.";

fn session() -> Vec<Message> {
    ctxhost_quality::generated_session(3, 80)
}

/// The text of the message at `index`, with its tool calls.
fn said(planted: &Planted, index: usize) -> String {
    planted.messages[index].searchable_text().into_owned()
}

/// What every family but the harness's plants: three facts of each text kind, the first of
/// each superseded later with a change of value; four files touched by tool calls in the
/// OpenAI shape, three of them touched again; every statement acknowledged. Returns the
/// planted session for the family's own checks.
fn plants_every_kind(style: Style) -> Planted {
    let planted = ctxhost_quality::plant_in_style(&session(), 5, style).unwrap();
    assert_eq!(style.kinds(), FactKind::ALL);
    for kind in FactKind::ALL {
        let of_kind: Vec<_> = planted.facts.iter().filter(|f| f.kind == kind).collect();
        let (count, superseded) = if kind == FactKind::Artifact {
            (4, 1)
        } else {
            (3, 1)
        };
        assert_eq!(of_kind.len(), count, "{style} {kind}");
        assert_eq!(
            of_kind.iter().filter(|f| f.superseded_by.is_some()).count(),
            superseded,
            "{style} {kind}"
        );
    }
    for fact in &planted.facts {
        let first = planted.placement(fact.id, false).unwrap();
        assert!(
            said(&planted, first).contains(&fact.value),
            "{style} {fact:?}"
        );
        let update = planted.placement(fact.id, true);
        if let Some(new) = &fact.superseded_by {
            let at = update.expect("a superseded fact has its update planted");
            assert!(at > first, "{style} {fact:?}");
            let text = said(&planted, at);
            assert!(text.contains(new.as_str()), "{style} {fact:?}: {text}");
            if fact.kind != FactKind::Artifact {
                assert!(
                    [
                        "renamed",
                        "moved to",
                        "no longer",
                        "instead",
                        "changed to",
                        "now"
                    ]
                    .iter()
                    .any(|w| text.contains(w)),
                    "{style}: the update says the value changed: {text}"
                );
            }
        }
        match fact.file {
            Some(history) => {
                // A file: touched by an assistant's tool call, answered by a tool message.
                for (at, action) in [(Some(first), Some(history.first)), (update, history.then)] {
                    let (Some(at), Some(action)) = (at, action) else {
                        assert!(update.is_none() && history.then.is_none());
                        continue;
                    };
                    let call = &planted.messages[at];
                    assert!(call.is_assistant(), "{style} {fact:?}");
                    let [tool_call] = call.tool_calls() else {
                        panic!("{style}: one tool call in {call:?}")
                    };
                    let arguments: Value = serde_json::from_str(tool_call.arguments()).unwrap();
                    assert!(arguments.to_string().contains(&fact.value), "{arguments}");
                    let answer = &planted.messages[at + 1];
                    assert!(answer.is_tool_result());
                    assert_eq!(answer.tool_call_id(), Some(tool_call.id()));
                    let line = format!("{} {}", tool_call.name(), tool_call.arguments());
                    let shown = ctxhost_quality::probe::file(&line, &fact.value, action, None);
                    assert!(shown.kept, "{style}: the call states {action}: {line}");
                }
                assert!(fact.superseded_by.is_none() || history.then == Some(FileAction::Renamed));
            }
            None => {
                assert!(planted.messages[first].is_user(), "{style} {fact:?}");
                // A search for the subject's words finds the statement.
                let text = said(&planted, first);
                assert!(text.contains(&fact.subject), "{style}: {text}");
                assert!(update.is_none_or(|at| planted.messages[at].is_user()));
            }
        }
    }
    let actions: Vec<_> = planted
        .facts
        .iter()
        .filter_map(|f| f.file)
        .flat_map(|h| [Some(h.first), h.then])
        .flatten()
        .collect();
    for action in FileAction::ALL {
        assert!(actions.contains(&action), "{style}: a file is {action}");
    }
    // Every statement is acknowledged, and filler turns come between some of them.
    let statements = planted.placements.len();
    let acks = planted
        .messages
        .iter()
        .filter(|m| m.is_assistant() && m.text() == Some(FILLER))
        .count();
    assert!(
        acks > statements,
        "{style}: {acks} filler replies for {statements}"
    );
    // A statement is a turn of its own: it never parts a tool call from its results.
    let back = &planted.messages;
    for (i, m) in back.iter().enumerate() {
        for call in m.tool_calls() {
            assert!(back[i + 1..]
                .iter()
                .take_while(|n| n.is_tool_result())
                .any(|n| n.tool_call_id() == Some(call.id())));
        }
    }
    // The harness's own phrasing is not used.
    assert!(!planted
        .messages
        .iter()
        .any(|m| m.text().is_some_and(|t| t.starts_with("Update:"))));
    planted
}

/// The user's words of the session, one string.
fn user_text(planted: &Planted) -> String {
    planted
        .messages
        .iter()
        .filter(|m| m.is_user())
        .map(|m| m.content_text().into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_chat_family_plants_every_kind_in_chat_phrasing() {
    let text = user_text(&plants_every_kind(Style::Chat));
    for phrase in ["btw, always ", "oh and never ", "wait, scratch that: "] {
        assert!(text.contains(phrase), "{phrase}");
    }
}

#[test]
fn the_ticket_family_plants_every_kind_in_ticket_phrasing() {
    let text = user_text(&plants_every_kind(Style::Ticket));
    for phrase in [
        "Acceptance criteria: ",
        "Constraint — do not ",
        "Open question: ",
        "Change request: ",
    ] {
        assert!(text.contains(phrase), "{phrase}");
    }
}

#[test]
fn the_labelled_family_plants_every_kind_in_terse_labels() {
    let text = user_text(&plants_every_kind(Style::Labelled));
    for phrase in ["SAFETY RULE: Never ", "LIMIT: ", "DECISION: ", "CHANGED: "] {
        assert!(text.contains(phrase), "{phrase}");
    }
}

#[test]
fn the_prose_family_plants_every_kind_inside_sentences() {
    let planted = plants_every_kind(Style::Prose);
    // No statement starts with a label: each value sits inside a sentence.
    for fact in planted.facts.iter().filter(|f| f.file.is_none()) {
        let text = said(&planted, planted.placement(fact.id, false).unwrap());
        let before = &text[..text.find(&fact.value).unwrap()];
        assert!(before.split(' ').count() > 4, "{text}");
        assert!(!before.contains(':'), "{text}");
    }
}

#[test]
fn the_families_phrase_the_same_fact_differently() {
    let text = |style| {
        let planted = ctxhost_quality::plant_in_style(&session(), 5, style).unwrap();
        let at = planted.placement(0, false).unwrap();
        let value = &planted.facts[0].value;
        said(&planted, at).replace(value.as_str(), "{v}")
    };
    let phrasings: Vec<String> = [Style::Chat, Style::Ticket, Style::Labelled, Style::Prose]
        .into_iter()
        .map(text)
        .collect();
    for (i, a) in phrasings.iter().enumerate() {
        for b in &phrasings[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert_eq!(
        "all".parse::<Style>().ok(),
        None,
        "all is the command's, not a style"
    );
    assert_eq!("labelled".parse::<Style>().unwrap(), Style::Labelled);
}

/// Keeps the text of every message and drops the tool calls and their results.
fn drops_tools(m: &[Message]) -> Vec<Message> {
    m.iter()
        .filter(|m| !m.is_tool_result() && m.tool_calls().is_empty())
        .cloned()
        .collect()
}

fn settings(seed: u64) -> Settings {
    Settings {
        budget: Budget::Share(20.0),
        rounds: 5,
        seed,
    }
}

#[test]
fn an_engine_that_keeps_everything_keeps_every_fact_of_every_family() {
    for style in Style::ALL {
        let report = ctxhost_quality::run_in_style(
            &mut EngineSubject::new(Rewrite::new("keep", |m: &[Message]| m.to_vec())),
            &session(),
            &settings(9),
            style,
        )
        .unwrap();
        assert_eq!(report.style, style);
        let kinds: Vec<FactKind> = report.outcome.survival.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, style.kinds());
        assert_eq!(
            report.outcome.overall.kept,
            report.facts.len(),
            "{style}\n{}",
            report.table()
        );
        assert_eq!(report.outcome.stale, 0, "{style}");
        // A file's state is its last action once the session reaches it.
        for fact in report.rounds[4].facts.iter() {
            let planted = &report.facts[fact.fact];
            assert_eq!(
                fact.state,
                planted.file.map(|h| h.then.unwrap_or(h.first)),
                "{planted:?}"
            );
        }
    }
}

#[test]
fn files_touched_only_by_tool_calls_are_lost_when_the_calls_are_dropped() {
    let report = ctxhost_quality::run_in_style(
        &mut EngineSubject::new(Rewrite::new("drops-tools", drops_tools)),
        &session(),
        &settings(9),
        Style::Ticket,
    )
    .unwrap();
    for kind in &report.outcome.survival {
        let expected = if kind.kind == FactKind::Artifact {
            0
        } else {
            kind.score.planted
        };
        assert_eq!(kind.score.kept, expected, "{kind:?}\n{}", report.table());
    }
    assert_eq!(report.outcome.stale, 0);
}
