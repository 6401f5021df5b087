//! Golden tests of every wire's [`ClientStream`]: upstream streams recorded in
//! `fixtures/streams/<wire>/<case>.sse` (one model call after another, parted by a
//! `: next round` comment line) fed through the wire's rewriter as a streamed answer feeds it,
//! and what the client receives, what each round produced and what stands for it in the
//! history compared with their snapshots. `lcm_grep` is the engine's tool, `read_file` the
//! client's.

use std::collections::HashSet;
use std::convert::Infallible;

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::pipeline::tools::split_calls;
use crate::pipeline::usage::UsageTotal;
use ctxhost_config::serve::ServeSettings;
use ctxhost_gateway_wire::anthropic::Messages;
use ctxhost_gateway_wire::chat::Chat;
use ctxhost_gateway_wire::responses::Responses;
use ctxhost_gateway_wire::{ClientStream, Incoming, StreamEvent, Wire};

/// Text alone; a call of the client's tool it sees; a call of the engine's answered in a round
/// it never sees; usage as the provider reports it.
const CASES: &[&str] = &["plain", "client_tool", "engine_round", "usage"];

#[tokio::test]
async fn chat_streams_rewrite_as_recorded() {
    let request = json!({"model": "gpt-test", "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "Capital of France?"}]});
    replay::<Chat>("chat", &request).await;
}

#[tokio::test]
async fn messages_streams_rewrite_as_recorded() {
    let request = json!({"model": "claude-test", "stream": true, "max_tokens": 100,
        "messages": [{"role": "user", "content": "Capital of France?"}]});
    replay::<Messages>("messages", &request).await;
}

#[tokio::test]
async fn responses_streams_rewrite_as_recorded() {
    let request = json!({"model": "gpt-test", "stream": true, "input": "Capital of France?"});
    replay::<Responses>("responses", &request).await;
}

async fn replay<W: Wire>(wire: &str, request: &Value) {
    let engine_names: HashSet<String> = HashSet::from(["lcm_grep".to_string()]);
    for case in CASES {
        let path = format!(
            "{}/fixtures/streams/{wire}/{case}.sse",
            env!("CARGO_MANIFEST_DIR")
        );
        let recorded = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let body = Bytes::from(request.to_string());
        let Ok(Incoming::Turn(parsed)) = W::parse(body, &ServeSettings::default()) else {
            panic!("{wire}: the request is a turn");
        };
        let mut out = W::stream(&parsed.request);
        let mut usage = UsageTotal::default();
        let mut engine_only = false;
        let mut shown = String::new();
        for (number, round) in recorded.split(": next round\n\n").enumerate() {
            shown.push_str(&format!("=== round {}: the client's frames\n", number + 1));
            let chunk = Ok::<_, Infallible>(Bytes::from(round.to_string()));
            let mut events = futures_util::stream::iter([chunk]).eventsource();
            let mut done = false;
            while let Some(event) = events.next().await {
                let event = event.expect("a well-formed event");
                match out.event(&event, &engine_names, number == 0) {
                    StreamEvent::Frame(frame) => shown.push_str(&String::from_utf8_lossy(&frame)),
                    StreamEvent::Held => {}
                    StreamEvent::Failed(frame) => panic!("{path}: failed with {frame:?}"),
                    StreamEvent::Done => {
                        done = true;
                        break;
                    }
                }
            }
            assert!(done, "{path}: round {} never ended", number + 1);
            let reply = out.end_round(&engine_names);
            usage.add(&reply.usage);
            engine_only = reply.reply.as_ref().is_some_and(|reply| {
                let calls = split_calls(reply, &engine_names);
                !calls.engine.is_empty() && !calls.has_client_calls
            });
            let produced = json!({
                "reply": reply.reply.as_ref().map(|m| m.to_value()),
                "usage": reply.usage,
                "complete": reply.complete,
                "hid": reply.hid,
            });
            shown.push_str(&format!("=== round {}: what it produced\n", number + 1));
            shown.push_str(&format!("{produced:#}\n"));
        }
        shown.push_str("=== the closing frames\n");
        for frame in out.finish(engine_only, usage.value()) {
            shown.push_str(&String::from_utf8_lossy(&frame));
        }
        let visible = json!(out.visible().map(|m| m.to_value()));
        shown.push_str(&format!(
            "=== what the client saw, as the history holds it\n{visible:#}\n"
        ));
        insta::assert_snapshot!(format!("{wire}__{case}"), shown);
    }
}
