//! The engine's own tools in a turn: offered to the model beside the client's, their calls
//! answered by the gateway, and what the client never sees of them kept for the upstream
//! history.

use std::collections::HashSet;

use ctxhost_sdk::Message;
use serde_json::Value;

use crate::session::live::Live;
use crate::turn::Turn;

/// The engine's tools offered upstream (OpenAI function schemas) and their names: those the
/// client does not also define (the client's own tool of the same name wins).
pub fn engine_tools(live: &Live, client_tools: &HashSet<String>) -> (Vec<Value>, HashSet<String>) {
    let names: HashSet<String> = live
        .tools
        .names()
        .iter()
        .filter(|n| !client_tools.contains(*n))
        .cloned()
        .collect();
    let schemas = live
        .tools
        .schemas()
        .iter()
        .filter(|s| {
            s["function"]["name"]
                .as_str()
                .is_some_and(|n| names.contains(n))
        })
        .cloned()
        .collect();
    (schemas, names)
}

/// What a reply's tool calls are, split.
pub struct Calls {
    /// The engine's calls: (id, name, arguments).
    pub engine: Vec<(String, String, String)>,
    pub has_client_calls: bool,
}

pub fn split_calls(reply: &Message, engine_names: &HashSet<String>) -> Calls {
    let mut engine = Vec::new();
    let mut has_client_calls = false;
    for call in reply.tool_calls() {
        if engine_names.contains(call.name()) {
            engine.push((
                call.id().to_string(),
                call.name().to_string(),
                call.arguments().to_string(),
            ));
        } else {
            has_client_calls = true;
        }
    }
    Calls {
        engine,
        has_client_calls,
    }
}

/// What a non-streamed request does after one of its model calls.
pub enum Step {
    /// The reply is the answer, as it came.
    Answer,
    /// The reply is the answer once the engine's calls are taken out of it (the client has
    /// calls of its own to answer, or the rounds ran out); [`ToolRounds::hide`] then.
    Hide { client_calls: bool },
    /// The engine's calls were answered: call the model again.
    Again,
}

/// A non-streamed request's rounds of engine tool calls, and what the client never sees of
/// them.
pub struct ToolRounds {
    hidden: Vec<Message>,
    round: u32,
    rounds: u32,
}

impl ToolRounds {
    pub fn new(turn: &Turn) -> Self {
        ToolRounds {
            hidden: Vec::new(),
            round: 0,
            rounds: turn.gateway.settings.limits.tool_rounds.max(1),
        }
    }

    /// Takes in a model call's reply: answers the engine's calls in it (adding them and their
    /// results to `messages` when the model is to be called again) and says what comes next.
    pub async fn after(
        &mut self,
        turn: &mut Turn,
        reply: Message,
        engine_names: &HashSet<String>,
        messages: &mut Vec<Message>,
    ) -> Step {
        self.round += 1;
        let calls = split_calls(&reply, engine_names);
        if calls.engine.is_empty() {
            if !self.hidden.is_empty() {
                self.hidden.push(reply.clone());
                let hidden = std::mem::take(&mut self.hidden);
                turn.live().record.conversation.splice(&reply, hidden);
            }
            return Step::Answer;
        }
        let results = turn.answer_calls(&calls.engine).await;
        if calls.has_client_calls || self.round >= self.rounds {
            self.hidden.push(reply);
            self.hidden.extend(results);
            return Step::Hide {
                client_calls: calls.has_client_calls,
            };
        }
        messages.push(reply.clone());
        messages.extend(results.iter().cloned());
        self.hidden.push(reply);
        self.hidden.extend(results);
        Step::Again
    }

    /// The client receives `visible`: the client answers its own calls; the engine's stay with
    /// the gateway, spliced back into the upstream history when the client's answers arrive.
    pub fn hide(&mut self, turn: &mut Turn, visible: Option<Message>) {
        if let Some(visible) = visible {
            let hidden = std::mem::take(&mut self.hidden);
            turn.live().record.conversation.splice(&visible, hidden);
        }
    }
}
