//! The engine's tool rounds of one turn, the one state machine whole and streamed answers
//! share: each model call's reply split into the engine's calls and the rest, the engine's
//! answered and the model called again until it answers without them (or the rounds run out),
//! what the client never sees kept and spliced back into the upstream history in place of what
//! it saw, and every call's usage summed.

use std::collections::HashSet;

use ctxhost_sdk::Message;
use serde_json::Value;

use super::tools::split_calls;
use super::usage::UsageTotal;
use super::ModelCall;
use crate::turn::Turn;
use ctxhost_gateway_wire::error::GatewayError;
use ctxhost_gateway_wire::Wire;

/// One turn's model calls and the engine's rounds between them.
pub(super) struct Rounds<W: Wire> {
    call: ModelCall<W>,
    /// What the next model call sends: the view plus what is new, then every round's engine
    /// calls and their results.
    messages: Vec<Message>,
    /// What the client does not see: every round's reply and the engine's results.
    hidden: Vec<Message>,
    round: u32,
    limit: u32,
    usage: UsageTotal,
}

/// The reply that ends the turn.
pub(super) struct Answer {
    pub reply: Option<Message>,
    /// It holds calls of the engine's (answered, and taken out of what the client sees).
    pub engine_calls: bool,
    /// It holds calls of the client's own.
    pub client_calls: bool,
}

impl Answer {
    /// The reply's calls were the engine's only: the turn ends with it, whatever the model's
    /// stop reason said.
    pub fn engine_only(&self) -> bool {
        self.engine_calls && !self.client_calls
    }
}

impl<W: Wire> Rounds<W> {
    pub fn new(turn: &Turn, call: ModelCall<W>, messages: Vec<Message>) -> Self {
        Rounds {
            call,
            messages,
            hidden: Vec::new(),
            round: 0,
            limit: turn.gateway.settings.limits.tool_rounds.max(1),
            usage: UsageTotal::default(),
        }
    }

    pub fn request(&self) -> &W::Request {
        &self.call.request
    }

    pub fn engine_names(&self) -> &HashSet<String> {
        &self.call.engine_names
    }

    /// Calls the model with the messages as they stand.
    pub async fn send(&self, turn: &mut Turn) -> Result<reqwest::Response, GatewayError> {
        self.call.send(turn, &self.messages).await
    }

    /// Takes in one model call's reply and its usage (in the API's form); `complete`: the
    /// reply ended normally, so its engine calls may be answered. Records the call, answers
    /// the engine's calls and says what comes next: the answer that ends the turn, or `None`
    /// when the engine's calls were answered and the model is to be called again
    /// ([`Rounds::send`]).
    pub async fn after(
        &mut self,
        turn: &mut Turn,
        reply: Option<Message>,
        usage: &Value,
        complete: bool,
    ) -> Option<Answer> {
        self.round += 1;
        self.usage.add(usage);
        turn.called(&self.messages, reply.as_ref(), W::usage(usage))
            .await;
        let reply = reply.filter(|_| complete);
        let Some(message) = &reply else {
            return Some(Answer {
                reply,
                engine_calls: false,
                client_calls: false,
            });
        };
        let calls = split_calls(message, self.engine_names());
        self.hidden.push(message.clone());
        let answer = Answer {
            engine_calls: !calls.engine.is_empty(),
            client_calls: calls.has_client_calls,
            reply,
        };
        if !answer.engine_calls {
            return Some(answer);
        }
        let results = turn.answer_calls(&calls.engine).await;
        self.hidden.extend(results.iter().cloned());
        if answer.client_calls || self.round >= self.limit {
            return Some(answer);
        }
        self.messages.extend(answer.reply);
        self.messages.extend(results);
        None
    }

    /// The turn is answered and the client saw `visible` (asked only when needed): when
    /// anything was kept from it (`hid`: the last reply's engine parts), the upstream history
    /// holds what was hidden in its place once the client sends it back.
    pub fn splice(
        &mut self,
        turn: &mut Turn,
        hid: bool,
        visible: impl FnOnce() -> Option<Message>,
    ) {
        if self.hidden.len() > 1 || hid {
            if let Some(visible) = visible() {
                let hidden = std::mem::take(&mut self.hidden);
                turn.live().record.conversation.splice(&visible, hidden);
            }
        }
    }

    /// Every call's usage, as the streamed answer's closing frames report it.
    pub fn usage(&self) -> Option<Value> {
        self.usage.value()
    }

    /// Every call's usage summed, once more than one call reported (a whole answer's single
    /// call's usage stands in it as it came).
    pub fn summed_usage(&self) -> Option<Value> {
        self.usage.summed()
    }
}
