//! OpenAI Responses (`POST /v1/responses`) in its stateless form: the client's `instructions`
//! and `input` items converted into the engine's message model
//! ([`ctxhost_wire::responses`]) and back for each model call, the engine's own tools
//! offered as flat function tools and their `function_call` items hidden from the client,
//! streamed answers rewritten event by event ([`stream`]). A request that relies on the
//! provider's stored state (`previous_response_id`) is not the gateway's to manage: it goes on
//! as it came.

mod own_answer;
mod stream;

use std::collections::HashSet;

use axum::response::Response;
use bytes::Bytes;
use ctxhost_agents::handoff::Handoff;
use ctxhost_agents::Agent;
use ctxhost_sdk::{Message, Usage};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::count::Counting;
use super::own_answer::OwnAnswer;
use super::provider_context::ProviderContext;
use super::{
    bad_request, budget, client_tool_names, is_engine_tool, model, object, offer_tools,
    prompt_cache_key, streamed, Incoming, Parsed, Wire,
};
use crate::error::GatewayError;
use ctxhost_config::serve::ServeSettings;
use ctxhost_wire::responses as convert;
pub use stream::ResponsesStream;

/// OpenAI Responses.
pub struct Responses;

impl Counting for Responses {
    const COUNT_PATH: &'static str = "responses/input_tokens";

    fn counted(tokens: u64) -> Value {
        json!({ "object": "response.input_tokens", "input_tokens": tokens })
    }

    fn tools(request: &ResponsesRequest) -> Option<&Value> {
        request.body.get("tools")
    }
}

/// A Responses request's own fields.
pub struct ResponsesRequest {
    /// The body as sent; `instructions` and `input` are replaced per model call.
    body: Map<String, Value>,
    /// The history's messages as made from `input`: those still unchanged go back as the
    /// items they came from, unread.
    made: convert::Made,
}

impl Wire for Responses {
    type Request = ResponsesRequest;
    type Stream = ResponsesStream;
    const PATH: &'static str = "responses";
    const AGENTS: &'static [Agent] = &[Agent::Codex];
    /// The compact route is the agent's compaction (`pipeline::handle_compact`).
    const ENDPOINTS: &'static [&'static str] = &[Self::PATH, Self::COUNT_PATH, "responses/compact"];

    fn client_setup(origin: &str) -> String {
        // Codex takes no base-URL variable: a model provider of its own, at the top of its
        // config.toml (a dotted key, so it holds above any [table] there).
        format!(
            "Codex (Responses), at the top of ~/.codex/config.toml: model_provider = \"ctxhost\" \
             and model_providers.ctxhost = {{ name = \"ctxhost\", base_url = \"{origin}/v1\", \
             env_key = \"OPENAI_API_KEY\", wire_api = \"responses\" }}"
        )
    }

    fn parse(bytes: Bytes, _: &ServeSettings) -> Result<Incoming<ResponsesRequest>, GatewayError> {
        let mut body = object(&bytes)?;
        if relies_on_stored_state(&body) {
            return Ok(Incoming::Unmanaged(bytes));
        }
        drop(bytes);
        // Taken in place (left null), so the body keeps its key order when they are put back.
        let input = body
            .get_mut("input")
            .map(Value::take)
            .unwrap_or(Value::Null);
        if input.is_null() {
            return Err(bad_request("`input` must be a string or an array of items"));
        }
        let instructions = body.get_mut("instructions").map(Value::take);
        let (history, made) =
            convert::into_messages(instructions, input).map_err(|e| bad_request(e.to_string()))?;
        if history.is_empty() {
            return Err(bad_request("`input` must not be empty"));
        }
        Ok(Incoming::Turn(Parsed {
            history,
            model: model(&body)?,
            stream: streamed(&body),
            output_budget: budget(&body, &["max_output_tokens"]),
            client_tools: client_tool_names(&body, &["name"]),
            request: ResponsesRequest { body, made },
        }))
    }

    fn text_answer(text: &str, answer: &OwnAnswer<'_>) -> Response {
        own_answer::render(&Handoff::Text(text.to_string()), answer)
    }

    /// Its compaction item (a trigger, the compact route) as Responses has them.
    fn handoff_answer(handoff: &Handoff, answer: &OwnAnswer<'_>) -> Response {
        own_answer::render(handoff, answer)
    }

    fn fields(request: &ResponsesRequest) -> &Map<String, Value> {
        &request.body
    }

    fn provider_context(request: &ResponsesRequest) -> ProviderContext {
        ProviderContext::of_responses(&request.body)
    }

    /// `prompt_cache_key`, unless the client set its own (its cache options go as they came).
    fn route_prompt_cache(request: &mut ResponsesRequest, key: String) {
        prompt_cache_key(&mut request.body, key);
    }

    /// The client's fields, `instructions` and `input` from `messages`, and the engine's tools
    /// as flat function tools after the client's.
    fn upstream_body(
        request: &ResponsesRequest,
        messages: &[Message],
        engine_tools: &[Value],
    ) -> Bytes {
        let converted = convert::from_messages_made(messages, &request.made);
        // The body less its items (taken out at parse), so this copy is small.
        let mut body = request.body.clone();
        match converted.instructions {
            Some(instructions) => {
                body.insert("instructions".into(), instructions);
            }
            None => {
                body.shift_remove("instructions");
            }
        }
        offer_tools(&mut body, engine_tools.iter().map(function_tool));
        let with_input = WithInput {
            body: &body,
            input: &converted.input,
        };
        Bytes::from(serde_json::to_vec(&with_input).unwrap_or_default())
    }

    fn reply(answer: &Value) -> Option<Message> {
        convert::reply_message(&answer["output"])
    }

    /// `input_tokens` is the whole prompt, cached tokens part of it.
    fn usage(value: &Value) -> Option<Usage> {
        let input = value.get("input_tokens")?.as_u64()?;
        let output = value["output_tokens"].as_u64().unwrap_or(0);
        Some(Usage {
            prompt_tokens: input,
            completion_tokens: output,
            total_tokens: value["total_tokens"].as_u64().unwrap_or(input + output),
            cache_read_tokens: value["input_tokens_details"]["cached_tokens"].as_u64(),
            reasoning_tokens: value["output_tokens_details"]["reasoning_tokens"].as_u64(),
            ..Usage::default()
        })
    }

    fn hide_engine_calls(
        answer: &mut Value,
        engine_names: &HashSet<String>,
        _client_calls: bool,
    ) -> Option<Message> {
        let visible = visible_items(&answer["output"], engine_names);
        let message = convert::reply_message(&visible);
        answer["output"] = visible;
        message
    }

    fn stream(_: &ResponsesRequest) -> ResponsesStream {
        ResponsesStream::default()
    }
}

/// A body written with `input` in its place (or last, when it has none): the items kept from
/// the request go out from where they are, with no copy made of them.
struct WithInput<'a> {
    body: &'a Map<String, Value>,
    input: &'a convert::Input<'a>,
}

impl Serialize for WithInput<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let has_input = self.body.contains_key("input");
        let len = self.body.len() + usize::from(!has_input);
        let mut map = serializer.serialize_map(Some(len))?;
        for (key, value) in self.body {
            if key == "input" {
                map.serialize_entry(key, self.input)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        if !has_input {
            map.serialize_entry("input", self.input)?;
        }
        map.end()
    }
}

/// Whether the request continues a conversation the provider stored.
fn relies_on_stored_state(body: &Map<String, Value>) -> bool {
    body.get("previous_response_id")
        .is_some_and(|id| !id.is_null())
}

/// An engine tool's Chat Completions schema as a Responses function tool (flat).
fn function_tool(schema: &Value) -> Value {
    let function = &schema["function"];
    let mut tool = json!({"type": "function", "name": function["name"]});
    if let Some(description) = function.get("description") {
        tool["description"] = description.clone();
    }
    tool["parameters"] = match function.get("parameters") {
        Some(parameters) if parameters.is_object() => parameters.clone(),
        _ => json!({"type": "object", "properties": {}}),
    };
    tool
}

/// Whether an output item is one of the engine's calls: never shown to the client.
fn is_engine_call(item: &Value, engine_names: &HashSet<String>) -> bool {
    item["type"] == "function_call" && is_engine_tool(&item["name"], engine_names)
}

/// `output` without the engine's calls: what the client receives.
fn visible_items(output: &Value, engine_names: &HashSet<String>) -> Value {
    let items = output.as_array().cloned().unwrap_or_default();
    Value::Array(
        items
            .into_iter()
            .filter(|item| !is_engine_call(item, engine_names))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(body: &str) -> Parsed<ResponsesRequest> {
        let bytes = Bytes::from(body.to_string());
        match Responses::parse(bytes, &ServeSettings::default()) {
            Ok(Incoming::Turn(parsed)) => parsed,
            _ => panic!("not a managed turn: {body}"),
        }
    }

    #[test]
    fn an_unchanged_history_goes_upstream_byte_for_byte() {
        let input = r#"[{"content":"list the files","role":"user","type":"message"},{"type":"reasoning","summary":[],"id":"rs_1","encrypted_content":"enc"},{"name":"exec_command","type":"function_call","call_id":"c1","arguments":"{\"cmd\": \"ls\"}"},{"zz":[],"type":"function_call_output","output":"a.txt","call_id":"c1"}]"#;
        let body = format!(
            r#"{{"model":"m","instructions":"sys","input":{input},"stream":false,"tools":[]}}"#
        );
        let parsed = parsed(&body);
        let upstream = Responses::upstream_body(&parsed.request, &parsed.history, &[]);
        assert_eq!(std::str::from_utf8(&upstream).unwrap(), body);
        // An engine tool is offered after the client's, the rest as it came.
        let tool = json!({"type": "function", "function": {"name": "recall", "parameters": {}}});
        let upstream = Responses::upstream_body(
            &parsed.request,
            &parsed.history,
            std::slice::from_ref(&tool),
        );
        let sent: Value = serde_json::from_slice(&upstream).unwrap();
        assert_eq!(sent["tools"][0]["name"], "recall");
        assert!(std::str::from_utf8(&upstream)
            .unwrap()
            .starts_with(&format!(
                r#"{{"model":"m","instructions":"sys","input":{input},"#
            )));
    }

    #[test]
    fn a_changed_history_goes_upstream_as_it_now_says() {
        let body = r#"{"model":"m","input":[{"type":"message","role":"user","content":"hi"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"long"}]}"#;
        let mut parsed = parsed(body);
        parsed.history[2].set_text("[cleared]");
        parsed.history.insert(0, Message::system("sys"));
        let upstream = Responses::upstream_body(&parsed.request, &parsed.history, &[]);
        let sent: Value = serde_json::from_slice(&upstream).unwrap();
        let converted = convert::from_messages(&parsed.history);
        assert_eq!(sent["input"], converted.input);
        // The system message added first is an item of its own, ahead of the client's.
        assert_eq!(sent["input"][3]["output"], "[cleared]");
        assert_eq!(sent["model"], "m");
        assert!(sent.get("instructions").is_none());
    }
}
