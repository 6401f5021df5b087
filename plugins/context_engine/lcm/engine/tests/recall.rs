//! Recall (`select_context`): a fact stated 200 turns back, long summarized away, comes back
//! into the request when the newest message asks about it in other words; the selection is
//! the same, byte for byte, while the requests add nothing relevant; and it never drops or
//! changes a message of the request.

#[path = "common/mod.rs"]
mod common;

use common::*;
use ctxhost_engine_lcm::LcmEngine;
use ctxhost_sdk::{
    is_recalled, sequence, CompressOptions, ContextEngine, ContextSelection, Message,
    RecalledSource, SelectRequest,
};

const FACT: &str = "The deploy target is the eu-west-2 cluster.";

/// A session that states [`FACT`] once, then works through 200 turns on other things,
/// compacted as it goes; the view it ends with.
fn long_session(engine: &mut LcmEngine) -> Vec<Message> {
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    let mut view = vec![
        Message::system("You are a coding agent."),
        Message::user(format!("Before we start: {FACT}")),
        Message::assistant("Understood."),
    ];
    for turn in 0..200 {
        view.push(Message::user(format!(
            "Refactor the parser module number {turn}: rename helper_{turn} and add a unit test."
        )));
        view.push(Message::assistant(format!(
            "Renamed helper_{turn} to parse_step_{turn}; its unit test passes."
        )));
        if turn % 25 == 24 {
            view = engine.compress(&view, &force).unwrap();
            sequence::validate(&view).unwrap();
        }
    }
    view
}

fn ask(view: &[Message], question: &str) -> Vec<Message> {
    let mut request = view.to_vec();
    request.push(Message::user(question));
    request
}

fn select(engine: &mut LcmEngine, request: &[Message]) -> ContextSelection {
    let selection = engine
        .select_context(
            request,
            &SelectRequest {
                incoming: request.last().cloned(),
                budget_tokens: 2_000,
            },
        )
        .unwrap();
    selection.check(request).unwrap();
    sequence::validate(&selection.messages).unwrap();
    selection
}

fn recalled_text(selection: &ContextSelection) -> Vec<String> {
    selection
        .messages
        .iter()
        .filter(|m| is_recalled(m))
        .map(|m| m.content_text().into_owned())
        .collect()
}

#[test]
fn a_fact_from_200_turns_back_comes_back_when_asked_in_other_words() {
    let host = offline_host(small_config(), SMALL_WINDOW);
    let mut engine = engine(&host);
    let view = long_session(&mut engine);
    // Summarized away: the message that stated it is no longer in the view (a summary may
    // carry the fact among its standing facts).
    let stated = format!("Before we start: {FACT}");
    assert!(
        !view.iter().any(|m| m.content_text() == stated),
        "the message is still in the view"
    );
    let request = ask(&view, "Which region do we ship to?");
    let selection = select(&mut engine, &request);
    let recalled = recalled_text(&selection);
    assert!(
        recalled.iter().any(|text| text.contains(FACT)),
        "not recalled: {recalled:#?}"
    );
    // Marked, and saying where it came from.
    let stated = selection
        .recalled
        .iter()
        .zip(&recalled)
        .find(|(_, text)| text.contains(FACT))
        .map(|(item, _)| item.clone())
        .unwrap();
    // The message that stated it, or a stored summary of it the view does not show (the
    // stores rank them their own way: bm25 on SQLite, ts_rank on PostgreSQL).
    match &stated.source {
        RecalledSource::Messages { ids } => assert_eq!(ids, &["msg_1".to_string()]),
        RecalledSource::Summary { id } => assert!(
            !view
                .iter()
                .any(|m| block_id(m).as_deref() == Some(id.as_str())),
            "{id} is in the view already"
        ),
    }
    assert!(
        recalled[0].starts_with("[ctxhost recalled "),
        "{recalled:?}"
    );
    // After the summaries, before the verbatim messages: at a fixed place.
    let first = selection.messages.iter().position(is_recalled).unwrap();
    assert!(block_id(&selection.messages[first - 1]).is_some() || first == 1);
    assert!(selection.messages[first + selection.recalled.len()..]
        .iter()
        .all(|m| block_id(m).is_none()));
    assert!(stated.tokens > 0 && selection.recalled.iter().map(|r| r.tokens).sum::<u64>() <= 2_000);
}

#[test]
fn the_selection_is_byte_identical_while_the_requests_add_nothing_relevant() {
    let host = offline_host(small_config(), SMALL_WINDOW);
    let mut engine = engine(&host);
    let view = long_session(&mut engine);
    let first = ask(&view, "Which region do we ship to?");
    let selected = select(&mut engine, &first);
    assert!(!selected.recalled.is_empty());
    // The same question again (a tool round, a retry): the same selection.
    let again = select(&mut engine, &first);
    assert_eq!(again, selected);
    // The answer and a message that asks nothing: the same items, byte for byte, in the same
    // place.
    let mut next = first.clone();
    next.push(Message::assistant("We ship to eu-west-2."));
    next.push(Message::user("Thanks, please continue."));
    let later = select(&mut engine, &next);
    assert_eq!(later.recalled, selected.recalled);
    let bytes = |selection: &ContextSelection| {
        selection
            .messages
            .iter()
            .filter(|m| is_recalled(m))
            .map(|m| serde_json::to_string(m).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(bytes(&later), bytes(&selected));
    let at = |selection: &ContextSelection| selection.messages.iter().position(is_recalled);
    assert_eq!(at(&later), at(&selected));
    // A new question brings back something else.
    let other = select(&mut engine, &ask(&next, "What did we rename helper_7 to?"));
    assert_ne!(other.recalled, selected.recalled);
    assert!(recalled_text(&other)
        .iter()
        .any(|text| text.contains("parse_step_7")));
}

#[test]
fn nothing_to_ask_and_nothing_before_selects_nothing() {
    let host = offline_host(small_config(), SMALL_WINDOW);
    let mut engine = engine(&host);
    let request = vec![
        Message::system("You are a coding agent."),
        Message::user("ok, thanks"),
    ];
    let selection = select(&mut engine, &request);
    assert!(selection.recalled.is_empty());
    assert_eq!(selection.messages, request);
}
