//! A whole (non-streamed) answer: the model called until it answers without the engine's
//! tools (or the rounds run out), the engine's calls hidden from the client, the usage of
//! every call summed.

use axum::response::Response;

use super::tools::{Step, ToolRounds};
use super::usage::UsageTotal;
use super::{parse_answer, ModelCall};
use crate::error::GatewayError;
use crate::turn::{json_answer, Called, Turn};
use crate::wire::Wire;
use ctxhost_sdk::Message;

pub(super) async fn complete<W: Wire>(
    mut turn: Turn,
    call: ModelCall<W>,
    mut messages: Vec<Message>,
) -> Result<Response, GatewayError> {
    let engine_names = &call.engine_names;
    let mut tools = ToolRounds::new(&turn);
    let mut usage = UsageTotal::default();
    let (mut answer, relayed) = loop {
        let sent = call.send(&mut turn, &messages).await;
        let (response, relayed) = match turn.take_call(sent).await? {
            Called::Success(response, relayed) => (response, relayed),
            Called::Relayed(response) => return Ok(response),
        };
        let bytes = turn.read_answer(response).await?;
        let mut answer = parse_answer(&bytes)?;
        usage.add(&answer["usage"]);
        let reply = W::reply(&answer);
        turn.called(&messages, reply.as_ref(), W::usage(&answer["usage"]))
            .await;
        let Some(reply) = reply else {
            break (answer, relayed);
        };
        match tools
            .after(&mut turn, reply, engine_names, &mut messages)
            .await
        {
            Step::Answer => break (answer, relayed),
            Step::Again => continue,
            Step::Hide { client_calls } => {
                let visible = W::hide_engine_calls(&mut answer, engine_names, client_calls);
                tools.hide(&mut turn, visible);
                break (answer, relayed);
            }
        }
    };
    if let Some(total) = usage.summed() {
        answer["usage"] = total;
    }
    turn.finished().await;
    let response = json_answer(relayed, &turn.headers, &answer);
    turn.release();
    Ok(response)
}
