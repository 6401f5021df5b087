//! Answers in the OpenAI Responses API's shape for the scripted upstream ([`crate::upstream`]):
//! a whole response, or the same response as the event sequence the API streams
//! (`response.created` ... `response.completed`, every item added, its deltas, and done).

use serde_json::{json, Value};

use crate::upstream::{Answer, Recorded};

/// A completed response with `output` (items).
pub fn response(output: &Value, usage: Option<Value>) -> Value {
    let usage = usage.unwrap_or_else(|| {
        json!({"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0},
               "output_tokens": 4, "output_tokens_details": {"reasoning_tokens": 0},
               "total_tokens": 24})
    });
    json!({
        "id": "resp_fake",
        "object": "response",
        "created_at": 1_764_000_000,
        "status": "completed",
        "model": "gpt-fake",
        "output": output,
        "parallel_tool_calls": true,
        "tool_choice": "auto",
        "tools": [],
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "usage": usage,
    })
}

fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The same response as the API streams it.
pub fn events(output: &Value, usage: Option<Value>) -> Vec<(String, Value)> {
    let done = response(output, usage);
    let mut started = done.clone();
    started["status"] = json!("in_progress");
    started["output"] = json!([]);
    started["usage"] = Value::Null;
    let mut out: Vec<Value> = vec![
        json!({"type": "response.created", "response": started}),
        json!({"type": "response.in_progress", "response": started}),
    ];
    for (index, item) in output.as_array().into_iter().flatten().enumerate() {
        let id = item["id"].clone();
        let mut empty = item.clone();
        match item["type"].as_str().unwrap_or_default() {
            "message" => {
                empty["content"] = json!([]);
                empty["status"] = json!("in_progress");
                out.push(
                    json!({"type": "response.output_item.added", "output_index": index,
                                "item": empty}),
                );
                for (part_index, part) in
                    item["content"].as_array().into_iter().flatten().enumerate()
                {
                    let text = part["text"].as_str().unwrap_or_default();
                    let at =
                        json!({"item_id": id, "output_index": index, "content_index": part_index});
                    let with = |kind: &str, fields: Value| {
                        let mut event = at.clone();
                        event["type"] = json!(kind);
                        for (k, v) in fields.as_object().unwrap() {
                            event[k] = v.clone();
                        }
                        event
                    };
                    out.push(with(
                        "response.content_part.added",
                        json!({"part": {"type": "output_text", "text": "", "annotations": []}}),
                    ));
                    for piece in pieces(text, 7) {
                        out.push(with(
                            "response.output_text.delta",
                            json!({"delta": piece, "logprobs": []}),
                        ));
                    }
                    out.push(with(
                        "response.output_text.done",
                        json!({"text": text, "logprobs": []}),
                    ));
                    out.push(with("response.content_part.done", json!({"part": part})));
                }
            }
            "function_call" => {
                empty["arguments"] = json!("");
                empty["status"] = json!("in_progress");
                out.push(
                    json!({"type": "response.output_item.added", "output_index": index,
                                "item": empty}),
                );
                let arguments = item["arguments"].as_str().unwrap_or_default();
                for piece in pieces(arguments, 5) {
                    out.push(json!({"type": "response.function_call_arguments.delta",
                                    "item_id": id, "output_index": index, "delta": piece}));
                }
                out.push(
                    json!({"type": "response.function_call_arguments.done", "item_id": id,
                                "output_index": index, "arguments": arguments}),
                );
            }
            _ => out.push(
                json!({"type": "response.output_item.added", "output_index": index,
                                 "item": item}),
            ),
        }
        out.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    }
    out.push(json!({"type": "response.completed", "response": done}));
    out.into_iter()
        .enumerate()
        .map(|(sequence, mut event)| {
            event["sequence_number"] = json!(sequence);
            (event["type"].as_str().unwrap().to_string(), event)
        })
        .collect()
}

/// Answers `output` the way the request asks: streamed or not.
pub fn reply(request: &Recorded, output: Value, usage: Option<Value>) -> Answer {
    if request.json()["stream"].as_bool().unwrap_or(false) {
        Answer::Events(events(&output, usage))
    } else {
        Answer::Json(200, response(&output, usage))
    }
}

/// An assistant message item saying `text`.
pub fn message_item(id: &str, text: &str) -> Value {
    json!({"type": "message", "id": id, "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

/// A function call item.
pub fn function_call(call_id: &str, name: &str, arguments: Value) -> Value {
    json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
           "name": name, "arguments": arguments.to_string(), "status": "completed"})
}

/// OpenAI chat messages (a recorded session) as a Responses request's `instructions` and
/// `input` items, as Codex sends them.
pub fn from_openai(messages: &[Value]) -> (Option<Value>, Vec<Value>) {
    let mut instructions = None;
    let mut input = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let text = message["content"].as_str().unwrap_or_default();
        match message["role"].as_str().unwrap_or_default() {
            "system" if index == 0 => instructions = Some(json!(text)),
            "tool" => input.push(json!({"type": "function_call_output",
                                        "call_id": message["tool_call_id"], "output": text})),
            "assistant" => input.extend(assistant_items(message, index)),
            role => input.push(json!({"type": "message", "role": role,
                                      "content": [{"type": "input_text", "text": text}]})),
        }
    }
    (instructions, input)
}

/// An OpenAI assistant message as output items: a reasoning item naming the turn, its text,
/// then its calls.
pub fn assistant_items(message: &Value, turn: usize) -> Vec<Value> {
    let mut items = vec![json!({"type": "reasoning", "id": format!("rs_{turn}"),
                                "summary": [], "encrypted_content": format!("enc-{turn}")})];
    let text = message["content"].as_str().unwrap_or_default();
    if !text.is_empty() {
        items.push(message_item(&format!("msg_{turn}"), text));
    }
    for call in message["tool_calls"].as_array().into_iter().flatten() {
        items.push(json!({"type": "function_call", "id": format!("fc_{}", call["id"].as_str().unwrap_or_default()),
                          "call_id": call["id"], "name": call["function"]["name"],
                          "arguments": call["function"]["arguments"], "status": "completed"}));
    }
    items
}
