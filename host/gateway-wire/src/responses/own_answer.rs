//! The gateway's own answers on Responses: a text as an assistant `message` item, or the
//! handoff to a provider-owned compaction as exactly one `compaction` output item (a trigger,
//! streamed as `response.created` → `response.output_item.added` →
//! `response.output_item.done` → `response.completed`; the compact route's
//! `{"object": "response.compaction", "output": [...]}`).

use axum::response::Response;
use ctxhost_agents::handoff::Handoff;
use serde_json::{json, Value};

use crate::own_answer::{streamed_answer, whole_answer, Counts, OwnAnswer};

pub(super) fn render(handoff: &Handoff, answer: &OwnAnswer<'_>) -> Response {
    let (id, counts) = (answer.id.as_str(), answer.counts);
    if let (true, Handoff::Item(reference)) = (answer.compact_route, handoff) {
        return whole_answer(json!({
            "id": format!("resp_ctxhost_{id}"),
            "object": "response.compaction",
            "created_at": answer.created,
            "output": [compaction_item(reference, id)],
            "usage": usage_of(counts),
        }));
    }
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
            "id": format!("resp_ctxhost_{id}"), "object": "response", "created_at": answer.created,
            "status": status, "model": answer.model, "output": output, "usage": usage,
        })
    };
    let done = response("completed", json!([item]), usage_of(counts));
    if !answer.stream {
        return whole_answer(done);
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
    streamed_answer(frames.collect())
}

fn compaction_item(reference: &str, id: &str) -> Value {
    json!({"type": "compaction", "id": format!("cmp_ctxhost_{id}"), "encrypted_content": reference})
}

fn usage_of(counts: Counts) -> Value {
    json!({
        "input_tokens": counts.input,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": counts.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counts.input + counts.output,
    })
}
