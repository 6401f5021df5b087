//! The gateway's answer to an agent's compaction, in the shape that agent parses on its wire,
//! streamed or whole as it asked: a summary as an assistant text answer (Chat Completions,
//! Anthropic Messages, Responses), or exactly one `compaction` output item (a Responses
//! trigger, streamed as `response.created` → `response.output_item.added` →
//! `response.output_item.done` → `response.completed`; the compact route's
//! `{"object": "response.compaction", "output": [...]}`). No model was called: `usage` says what
//! the engine holds (input) and what the answer is (output).

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use ctxhost_agents::handoff::Handoff;
use serde_json::{json, Value};

use crate::record::unix_now;
use crate::store::random_u64;
use crate::wire::Api;

/// The answer's token counts: the view the engine holds, and the answer itself.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    pub input: u64,
    pub output: u64,
}

/// How the answer goes out.
pub struct Shape<'a> {
    pub api: Api,
    pub model: &'a str,
    pub stream: bool,
    /// `POST /v1/responses/compact`: always whole.
    pub compact_route: bool,
}

pub fn render(shape: &Shape<'_>, handoff: &Handoff, counts: Counts) -> Response {
    let id = format!("{:016x}", random_u64());
    if let (true, Handoff::Item(reference)) = (shape.compact_route, handoff) {
        return whole(json!({
            "id": format!("resp_ctxhost_{id}"),
            "object": "response.compaction",
            "created_at": unix_now(),
            "output": [compaction_item(reference, &id)],
            "usage": responses_usage(counts),
        }));
    }
    // Only Responses has compaction items (its trigger, its compact route); a text goes out on
    // every wire.
    match (shape.api, handoff) {
        (Api::Responses, _) => responses(shape, handoff, counts, &id),
        (Api::Chat, Handoff::Text(text) | Handoff::Item(text)) => chat(shape, text, counts, &id),
        (Api::Messages, Handoff::Text(text) | Handoff::Item(text)) => {
            messages(shape, text, counts, &id)
        }
    }
}

fn compaction_item(reference: &str, id: &str) -> Value {
    json!({"type": "compaction", "id": format!("cmp_ctxhost_{id}"), "encrypted_content": reference})
}

fn responses_usage(counts: Counts) -> Value {
    json!({
        "input_tokens": counts.input,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": counts.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counts.input + counts.output,
    })
}

fn responses(shape: &Shape<'_>, handoff: &Handoff, counts: Counts, id: &str) -> Response {
    let item = match handoff {
        Handoff::Item(reference) => compaction_item(reference, id),
        Handoff::Text(text) => json!({
            "type": "message", "id": format!("msg_ctxhost_{id}"), "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
    };
    let response = |status: &str, output: Value, usage: Value| {
        json!({
            "id": format!("resp_ctxhost_{id}"), "object": "response", "created_at": unix_now(),
            "status": status, "model": shape.model, "output": output, "usage": usage,
        })
    };
    let done = response("completed", json!([item]), responses_usage(counts));
    if !shape.stream {
        return whole(done);
    }
    let mut events = vec![json!({"type": "response.created",
        "response": response("in_progress", json!([]), Value::Null)})];
    let mut opened = item.clone();
    match handoff {
        Handoff::Item(_) => events
            .push(json!({"type": "response.output_item.added", "output_index": 0, "item": opened})),
        Handoff::Text(text) => {
            opened["status"] = json!("in_progress");
            opened["content"] = json!([]);
            let part = json!({"type": "output_text", "text": "", "annotations": []});
            let item_id = &item["id"];
            let at = |kind: &str| {
                json!({"type": kind, "item_id": item_id, "output_index": 0,
                                         "content_index": 0})
            };
            events.push(
                json!({"type": "response.output_item.added", "output_index": 0, "item": opened}),
            );
            let mut added = at("response.content_part.added");
            added["part"] = part;
            events.push(added);
            let mut delta = at("response.output_text.delta");
            delta["delta"] = json!(text);
            events.push(delta);
            let mut text_done = at("response.output_text.done");
            text_done["text"] = json!(text);
            events.push(text_done);
            let mut part_done = at("response.content_part.done");
            part_done["part"] = item["content"][0].clone();
            events.push(part_done);
        }
    }
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
    events.push(json!({"type": "response.completed", "response": done}));
    let frames = events.into_iter().enumerate().map(|(n, mut event)| {
        event["sequence_number"] = json!(n);
        let name = event["type"].as_str().unwrap_or("message").to_string();
        format!("event: {name}\ndata: {event}\n\n")
    });
    sse(frames.collect())
}

fn chat(shape: &Shape<'_>, text: &str, counts: Counts, id: &str) -> Response {
    let usage = json!({"prompt_tokens": counts.input, "completion_tokens": counts.output,
                       "total_tokens": counts.input + counts.output});
    let id = format!("chatcmpl-ctxhost-{id}");
    let created = unix_now();
    if !shape.stream {
        return whole(json!({
            "id": id, "object": "chat.completion", "created": created, "model": shape.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": usage,
        }));
    }
    let chunk = |choices: Value, usage: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": created,
               "model": shape.model, "choices": choices, "usage": usage})
    };
    let frames = [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": text},
                     "finish_reason": null}]),
            Value::Null,
        ),
        chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            Value::Null,
        ),
        chunk(json!([]), usage),
    ]
    .into_iter()
    .map(|chunk| format!("data: {chunk}\n\n"))
    .chain(std::iter::once("data: [DONE]\n\n".to_string()));
    sse(frames.collect())
}

fn messages(shape: &Shape<'_>, text: &str, counts: Counts, id: &str) -> Response {
    let id = format!("msg_ctxhost_{id}");
    let message = |content: Value, stop: Value, output: u64| {
        json!({"id": id, "type": "message", "role": "assistant", "model": shape.model,
               "content": content, "stop_reason": stop, "stop_sequence": null,
               "usage": {"input_tokens": counts.input, "output_tokens": output}})
    };
    if !shape.stream {
        return whole(message(
            json!([{"type": "text", "text": text}]),
            json!("end_turn"),
            counts.output,
        ));
    }
    let events = [
        json!({"type": "message_start", "message": message(json!([]), Value::Null, 0)}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta",
               "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               // Cumulative, as the API reports it now (clients read the input here too).
               "usage": {"input_tokens": counts.input, "output_tokens": counts.output}}),
        json!({"type": "message_stop"}),
    ];
    let frames = events.into_iter().map(|event| {
        let name = event["type"].as_str().unwrap_or("message").to_string();
        format!("event: {name}\ndata: {event}\n\n")
    });
    sse(frames.collect())
}

fn whole(body: Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn sse(frames: Vec<String>) -> Response {
    let mut response = Response::new(Body::from(frames.concat()));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
