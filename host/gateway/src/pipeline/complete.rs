//! A whole (non-streamed) answer: each model call's answer read whole and handed to the
//! [`Rounds`]; the answer that ends the turn goes to the client with the engine's calls taken
//! out and the usage of every call summed.

use axum::response::Response;

use super::rounds::Rounds;
use super::{parse_answer, ModelCall};
use crate::turn::{json_answer, Called, Turn};
use ctxhost_gateway_wire::error::GatewayError;
use ctxhost_gateway_wire::Wire;
use ctxhost_sdk::Message;

pub(super) async fn complete<W: Wire>(
    mut turn: Turn,
    call: ModelCall<W>,
    messages: Vec<Message>,
) -> Result<Response, GatewayError> {
    let mut rounds = Rounds::new(&turn, call, messages);
    let (mut answer, relayed, end) = loop {
        let sent = rounds.send(&mut turn).await;
        let (response, relayed) = match turn.take_call(sent).await? {
            Called::Success(response, relayed) => (response, relayed),
            Called::Relayed(response) => return Ok(response),
        };
        let bytes = turn.read_answer(response).await?;
        let answer = parse_answer(&bytes)?;
        let reply = W::reply(&answer);
        if let Some(end) = rounds.after(&mut turn, reply, &answer["usage"], true).await {
            break (answer, relayed, end);
        }
    };
    // The client sees the last answer alone: the engine's calls out of it.
    let visible = if end.engine_calls {
        W::hide_engine_calls(&mut answer, rounds.engine_names(), end.client_calls)
    } else {
        end.reply
    };
    rounds.splice(&mut turn, end.engine_calls, || visible);
    if let Some(total) = rounds.summed_usage() {
        answer["usage"] = total;
    }
    turn.finished().await;
    let response = json_answer(relayed, &turn.headers, &answer);
    turn.release();
    Ok(response)
}
