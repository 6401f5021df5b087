//! An agent's own compaction, with one owner per history. Agents compact on their own (Codex's
//! handoff-summary request or its `compaction_trigger` and compact route, Claude Code's summary
//! request, Hermes' compressor); each agent's profile recognises its own
//! ([`ctxhost_agents::compaction`]) and, with `serve.client_compaction: engine`, the gateway
//! answers it from the session's engine with no model call: the engine compresses (or its
//! prepared compression is taken in), and the agent gets a handoff of that view in the shape
//! it keeps ([`ctxhost_agents::handoff`], rendered by its wire: [`Wire::handoff_answer`]) carrying a signed
//! reference to it ([`reference`](ctxhost_gateway_state::reference), the session state's). The
//! agent's next, compacted history takes the handoff up where it sits: the lineage goes on
//! from it, the view standing for what the handoff replaced, so the engine keeps its state
//! (and the upstream never sees the reference).

use axum::response::Response;
use ctxhost_agents::compaction::Compaction;
use ctxhost_agents::handoff::{handoff, FromEngine, Handoff};
use ctxhost_agents::Agent;
use ctxhost_sdk::{Content, Message};
use ctxhost_wire::responses::{carried_items, carries_item_of_type, set_carried_items};
use serde_json::Value;

use crate::conversation::{Digest, Resumed};
use crate::record::unix_now;
use crate::session::live::Prepared;
use crate::store::random_u64;
use crate::turn::{set_header, with_session_headers, Turn};
use ctxhost_gateway_state::reference::{Reference, Signer, Unverified};
use ctxhost_gateway_wire::own_answer::{Counts, OwnAnswer};
use ctxhost_gateway_wire::Wire;

/// A handoff of the gateway's found in a request's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenUp {
    pub reference: Reference,
    pub resumed: Resumed,
}

/// What a history holds of the gateway's handoffs.
#[derive(Debug, Default)]
pub struct Found {
    /// The latest handoff that verifies, taken up.
    pub taken: Option<TakenUp>,
    /// References in the gateway's form that do not verify here, and why: they resume nothing
    /// (a text stays text; an item, which no provider can read, is taken out).
    pub unverified: Vec<Unverified>,
}

/// Finds the latest handoff the gateway gave in `history` (a `compaction` item whose
/// `encrypted_content` is its reference, or a summary text where `agent` keeps one: its profile
/// says where, [`Agent::kept_handoffs`]), and takes every item in the gateway's form out of the
/// items the upstream would see. One that does not verify is not refused: it resumes nothing,
/// and the caller says so.
pub fn take_up(
    history: &mut Vec<Message>,
    agent: Agent,
    signer: &Signer,
    credential: &str,
) -> Found {
    let mut latest = None;
    let mut unverified = Vec::new();
    // The text handoffs, where the agent keeps them (read before the items are taken out).
    let mut texts = agent.kept_handoffs(history).into_iter().peekable();
    // The content part holding the latest text handoff, when parts of the agent's own follow it
    // in the same message (Claude Code merges the user's next words into the summary's turn).
    let mut split = None;
    for (index, message) in history.iter_mut().enumerate() {
        // Read whole only where there is one to take up: a history's items hold its texts.
        let items = if carries_item_of_type(message, "compaction") {
            carried_items(message)
        } else {
            Vec::new()
        };
        let mut kept = Vec::with_capacity(items.len());
        let mut own = None;
        for (position, item) in items.iter().enumerate() {
            let content = item["encrypted_content"].as_str().unwrap_or_default();
            let verified = match item["type"].as_str() {
                Some("compaction") => signer.verify(credential, content),
                _ => Ok(None),
            };
            match verified {
                Ok(Some(reference)) => own = Some((reference, position)),
                Ok(None) => kept.push(item.clone()),
                // The gateway's form, not the provider's: no provider can read it.
                Err(why) => unverified.push(why),
            }
        }
        if own.is_none() && kept.len() < items.len() {
            set_carried_items(message, kept);
            continue;
        }
        if let Some((reference, position)) = own {
            // An item leading the message's own items stands before it; otherwise after.
            let at = if position == 0 && !kept.is_empty() {
                index
            } else {
                index + 1
            };
            set_carried_items(message, kept);
            latest = Some(taken(reference, at, None));
            split = None;
            continue;
        }
        while let Some(text) = texts.next_if(|kept| kept.message == index) {
            match signer.verify(credential, &text.reference) {
                Ok(Some(reference)) => {
                    split = text
                        .block
                        .filter(|block| block + 1 < parts_of(message).len())
                        .map(|block| (index, block));
                    let text = text.rendered.as_deref().map(Digest::of_handoff);
                    latest = Some(taken(reference, index + 1, text));
                }
                Ok(None) => {}
                Err(why) => unverified.push(why),
            }
        }
    }
    if let Some((index, part)) = split {
        let (handoff, rest) = split_parts(&history[index], part);
        history[index] = handoff;
        history.insert(index + 1, rest);
    }
    Found {
        taken: latest,
        unverified,
    }
}

/// A message's content parts (none when its content is a plain text).
fn parts_of(message: &Message) -> Vec<Value> {
    match message.content() {
        Content::Json(json) => serde_json::from_str(json).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// `message` as two of the same role: its parts up to `part`, and the rest.
fn split_parts(message: &Message, part: usize) -> (Message, Message) {
    let parts = parts_of(message);
    let (head, tail) = parts.split_at((part + 1).min(parts.len()));
    let mut handoff = message.clone();
    handoff.set_content_json(&Value::Array(head.to_vec()));
    let mut rest = message.clone();
    rest.set_content_json(&Value::Array(tail.to_vec()));
    (handoff, rest)
}

fn taken(reference: Reference, at: usize, text: Option<Digest>) -> TakenUp {
    TakenUp {
        resumed: Resumed {
            at,
            view_version: reference.view_version,
            text,
        },
        reference,
    }
}

/// How the answer goes out.
pub struct Shape<'a> {
    pub model: &'a str,
    pub stream: bool,
    /// `POST /v1/responses/compact`: always whole.
    pub compact_route: bool,
}

/// How the answer goes out, and for whom.
pub struct Answering<'a> {
    pub kind: Compaction,
    pub shape: Shape<'a>,
}

/// Answers the agent's compaction from the session's engine (the turn was prepared with
/// [`AnsweredBy::Engine`](crate::turn::AnsweredBy)): the view is made to stand for the whole history, the handoff
/// names it, and the session is saved and released.
pub async fn answer<W: Wire>(
    mut turn: Turn,
    prepared: Prepared,
    answering: Answering<'_>,
) -> Response {
    let signer = turn.gateway.signer.clone();
    let live = turn.live();
    let conversation = &mut live.record.conversation;
    // A compression that failed or was still being prepared elsewhere leaves the view short of
    // the history; what went upstream instead (the view plus the rest) stands for all of it.
    if conversation.covered() < conversation.lineage_len() {
        conversation.compressed(prepared.upstream);
    }
    let view_tokens = live.session.count(conversation.view());
    // What the engine wrote into the view (its summaries), not the gateway's own tool exchanges.
    let summaries: Vec<String> = conversation
        .unsent()
        .filter(|m| !m.is_tool_result() && m.tool_calls().is_empty())
        .map(|m| m.content_text().trim().to_string())
        .filter(|text| !text.is_empty())
        .collect();
    let reference = signer.sign(
        &live.record.key.credential,
        &Reference {
            session: live.record.key.name.clone(),
            view_version: conversation.view_version(),
        },
    );
    let mut tools: Vec<&str> = live.tools.names().iter().map(String::as_str).collect();
    tools.sort_unstable();
    let engine = FromEngine {
        summaries: &summaries,
        tools: &tools,
        reference: &reference,
    };
    let handoff = handoff(answering.kind, &engine);
    let output = match &handoff {
        Handoff::Text(text) => {
            // A client that keeps it whole brings back this very text.
            live.record.conversation.hand_out(text);
            live.session
                .count_message(&Message::assistant(text.as_str()))
        }
        Handoff::Item(_) => 0,
    };
    // The agent's meter restarts from the view; the engine is asked afresh from there.
    live.record.last_prompt_tokens = view_tokens;
    tracing::info!(
        session = %live.record.key.name,
        kind = answering.kind.as_str(),
        view_tokens,
        "answered the agent's own compaction from the engine"
    );
    turn.finished().await;
    let mut headers = turn.headers.clone();
    set_header(
        &mut headers,
        "x-ctxhost-client-compaction",
        answering.kind.as_str(),
    );
    let shape = &answering.shape;
    let own = OwnAnswer {
        id: format!("{:016x}", random_u64()),
        created: unix_now(),
        model: shape.model,
        stream: shape.stream,
        compact_route: shape.compact_route,
        counts: Counts {
            input: view_tokens,
            output,
        },
    };
    let response = W::handoff_answer(&handoff, &own);
    turn.release();
    with_session_headers(response, &headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_agents::kept::marker_line;
    use ctxhost_gateway_state::reference::PREFIX;
    use serde_json::json;

    fn signed(signer: &Signer, version: u64) -> String {
        signer.sign(
            "alice",
            &Reference {
                session: "s".into(),
                view_version: version,
            },
        )
    }

    #[test]
    fn a_summary_turn_holding_the_users_next_words_is_split_at_the_handoff() {
        let signer = Signer::new([9; 32]);
        let handoff = format!(
            "This session is being continued from a previous conversation that ran out of context.\n\nSummary:\nwork\n\n{}\n\nContinue the conversation.",
            marker_line(&signed(&signer, 4))
        );
        let mut merged = Message::user("");
        merged.set_content_json(&json!([{"type": "text", "text": handoff},
                                         {"type": "text", "text": "next words"}]));
        let mut history = vec![Message::system("sys"), merged];
        let taken = take_up(&mut history, Agent::ClaudeCode, &signer, "alice")
            .taken
            .unwrap();
        assert_eq!(
            taken.resumed,
            Resumed {
                at: 2,
                view_version: 4,
                text: None,
            }
        );
        assert_eq!(history.len(), 3);
        assert_eq!(history[2].content_text(), "next words");
        assert!(history[1].content_text().contains("Summary:"));
    }

    #[test]
    fn the_latest_own_item_is_taken_out_and_a_providers_is_left_alone() {
        let signer = Signer::new([9; 32]);
        let input = json!([
            {"type": "compaction", "encrypted_content": "gAAAA-provider"},
            {"role": "user", "content": "old"},
            {"type": "compaction", "encrypted_content": signed(&signer, 2)},
            {"role": "user", "content": "new"},
        ]);
        let mut history = ctxhost_wire::responses::to_messages(None, &input).unwrap();
        let taken = take_up(&mut history, Agent::Codex, &signer, "alice")
            .taken
            .unwrap();
        assert_eq!(taken.reference.view_version, 2);
        let back = ctxhost_wire::responses::from_messages(&history).input;
        assert!(back.to_string().contains("gAAAA-provider"));
        assert!(!back.to_string().contains("ctxhost.v1."), "{back}");
        // A reference of another credential resumes nothing, and no provider gets it.
        let mut history = ctxhost_wire::responses::to_messages(None, &input).unwrap();
        let found = take_up(&mut history, Agent::Codex, &signer, "bob");
        assert!(found.taken.is_none());
        assert_eq!(found.unverified, [Unverified::Signature]);
        let back = ctxhost_wire::responses::from_messages(&history).input;
        assert!(back.to_string().contains("gAAAA-provider"));
        assert!(!back.to_string().contains(PREFIX), "{back}");
    }
}
