//! One token view and the provider's features: `count_tokens` (and Responses' `input_tokens`)
//! answers for what the gateway sends upstream for a history (the session's view plus the new messages), counted by the
//! provider when it has the route and by the gateway when it has not, and `passthrough` relays
//! it as it came; the client's `anthropic-beta` values reach the provider untouched, and the
//! config's betas are added for the models that take them, with the window they give.

use ctxhost_tests::anthropic_upstream::{from_openai, reply};
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::responses_upstream;
use ctxhost_tests::upstream::{Answer, FakeUpstream, Recorded};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

const MODEL: &str = "claude-meter";
const KEY: &str = "sk-meter";

/// The two APIs with a token counting route.
#[derive(Debug, Clone, Copy)]
enum Api {
    Messages,
    Responses,
}

impl Api {
    fn path(self) -> &'static str {
        match self {
            Api::Messages => "messages",
            Api::Responses => "responses",
        }
    }

    fn count_path(self) -> &'static str {
        match self {
            Api::Messages => "messages/count_tokens",
            Api::Responses => "responses/input_tokens",
        }
    }

    /// The prompt and turn fields of a body.
    fn fields(self) -> (&'static str, &'static str) {
        match self {
            Api::Messages => ("system", "messages"),
            Api::Responses => ("instructions", "input"),
        }
    }

    /// The client's body for the first `upto` messages of the long session.
    fn history(self, upto: usize) -> Value {
        let (prompt, turns) = match self {
            Api::Messages => from_openai(&long_session()[..upto]),
            Api::Responses => responses_upstream::from_openai(&long_session()[..upto]),
        };
        let (prompt_key, turns_key) = self.fields();
        json!({"model": MODEL, prompt_key: prompt, turns_key: turns})
    }

    /// The model calls the provider received (not counts).
    fn calls(self, upstream: &FakeUpstream) -> Vec<Recorded> {
        upstream
            .received()
            .into_iter()
            .filter(|r| r.path.starts_with(&format!("/v1/{}", self.path())))
            .filter(|r| !r.path.contains(self.count_path()))
            .collect()
    }

    /// The last count the provider was asked for.
    fn last_count(self, upstream: &FakeUpstream) -> Recorded {
        upstream
            .received()
            .into_iter()
            .rfind(|r| r.path.contains(self.count_path()))
            .expect("the provider was asked to count")
    }
}

/// The text a provider counts in a block, an item or a content value.
fn text_of(content: &Value, out: &mut String) {
    match content {
        Value::String(text) => out.push_str(text),
        Value::Array(blocks) => blocks.iter().for_each(|b| text_of(b, out)),
        Value::Object(block) => {
            for key in ["text", "thinking", "name", "arguments"] {
                if let Some(Value::String(text)) = block.get(key) {
                    out.push_str(text);
                    out.push('\n');
                }
            }
            if let Some(input) = block.get("input") {
                out.push_str(&input.to_string());
            }
            for key in ["content", "output"] {
                if let Some(content) = block.get(key) {
                    text_of(content, out);
                }
            }
        }
        _ => {}
    }
}

/// What the test provider counts for a body: its system prompt, every turn's text (tool
/// inputs as JSON) and its tool definitions in o200k_base tokens, and four tokens a turn.
fn provider_count(body: &Value) -> u64 {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let (prompt, turns) = if body.get("input").is_some() {
        (&body["instructions"], &body["input"])
    } else {
        (&body["system"], &body["messages"])
    };
    let mut text = String::new();
    text_of(prompt, &mut text);
    let turns = turns.as_array().cloned().unwrap_or_default();
    for turn in &turns {
        text_of(turn, &mut text);
        text.push('\n');
    }
    if let Some(tools) = body.get("tools") {
        text.push_str(&tools.to_string());
    }
    bpe.encode_ordinary(&text).len() as u64 + 4 * turns.len() as u64
}

/// A provider that reports the input tokens it counted, and answers counts with the same
/// counter when `counts` (else it has no such route).
fn provider(counts: bool) -> FakeUpstream {
    FakeUpstream::start(move |request| {
        let body = request.json();
        let tokens = provider_count(&body);
        let responses = request.path.starts_with("/v1/responses");
        if request.path.contains("count_tokens") || request.path.contains("input_tokens") {
            return match (counts, responses) {
                (true, false) => Answer::Json(200, json!({"input_tokens": tokens})),
                (true, true) => Answer::Json(
                    200,
                    json!({"object": "response.input_tokens", "input_tokens": tokens}),
                ),
                (false, _) => Answer::Json(404, json!({"error": {"message": "Not Found"}})),
            };
        }
        if responses {
            let usage = json!({"input_tokens": tokens, "output_tokens": 2,
                               "total_tokens": tokens + 2});
            return responses_upstream::reply(
                request,
                json!([responses_upstream::message_item("msg_1", "Noted.")]),
                Some(usage),
            );
        }
        let usage = json!({"input_tokens": tokens, "output_tokens": 2});
        reply(
            request,
            json!([{"type": "text", "text": "Noted."}]),
            Some(usage),
        )
    })
}

fn post(gateway: &GatewayProcess, path: &str, session: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/{path}", gateway.base_url()))
        .bearer_auth(KEY)
        .header("anthropic-version", "2023-06-01")
        .header("x-ctxhost-session", session)
        .json(body)
        .send()
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().unwrap())
}

/// Replays the long session's turns until the engine has compressed and the session has gone
/// on a few turns past it; the last turn's history.
fn compressed_session(gateway: &GatewayProcess, api: Api, session: &str) -> Value {
    let session_messages = long_session();
    let mut after = 0;
    let mut last = Value::Null;
    for upto in (1..session_messages.len()).filter(|i| session_messages[*i]["role"] == "assistant")
    {
        let mut body = api.history(upto);
        let budget = match api {
            Api::Messages => "max_tokens",
            Api::Responses => "max_output_tokens",
        };
        body[budget] = json!(1024);
        let (status, answer) = post(gateway, api.path(), session, &body);
        assert_eq!(status, 200, "{answer}");
        last = api.history(upto);
        let state = gateway.session(session, Some(KEY));
        let applied = state["compressions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["error"].is_null() && c["deferred"] != true);
        after += usize::from(applied);
        if after == 3 {
            return last;
        }
    }
    panic!("the session never compressed: {last}");
}

fn assert_close(counted: u64, reference: u64, what: &str) {
    let off = counted.abs_diff(reference) as f64 / reference as f64;
    assert!(
        off <= 0.02,
        "{what}: counted {counted}, the provider received {reference} ({:.1}% off)",
        off * 100.0
    );
}

#[test]
fn counts_answer_for_the_view_the_upstream_receives() {
    for (api, counts) in [
        (Api::Messages, true),
        (Api::Messages, false),
        (Api::Responses, true),
        (Api::Responses, false),
    ] {
        let case = format!("{api:?}, provider route: {counts}");
        let upstream = provider(counts);
        let sandbox = Sandbox::new();
        sandbox.write_config(&format!(
            "serve:\n  models:\n    {MODEL}: 16000\n  compaction:\n    background: false\n  cache:\n    \
             breakpoints: off\n"
        ));
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let last = compressed_session(&gateway, api, "metered");
        let sent = api.calls(&upstream).last().unwrap().json();
        let received = provider_count(&sent);
        let whole = provider_count(&last);
        // Far enough apart that a count of the whole history fails the 2% check.
        assert!(
            whole > received * 11 / 10,
            "{case}: the view is smaller: {whole} vs {received}"
        );
        let before = gateway.session("metered", Some(KEY));

        let (status, answer) = post(&gateway, api.count_path(), "metered", &last);
        assert_eq!(status, 200, "{case}: {answer}");
        let counted = answer["input_tokens"].as_u64().unwrap();
        assert_close(counted, received, &case);
        if counts {
            // The provider was asked about the very turns it received for that history.
            let asked = api.last_count(&upstream).json();
            let (prompt, turns) = api.fields();
            assert_eq!(asked[turns], sent[turns], "{case}");
            assert_eq!(asked[prompt], sent[prompt], "{case}");
        } else if let Api::Responses = api {
            assert_eq!(answer["object"], "response.input_tokens");
        }
        // Only read: the session is where it was.
        let after = gateway.session("metered", Some(KEY));
        for key in ["requests", "revision", "messages_seen", "view_messages"] {
            assert_eq!(before[key], after[key], "{case}: {key}");
        }

        // A history no session knows is counted whole, and no session is made for it.
        let (status, answer) = post(&gateway, api.count_path(), "unknown", &last);
        assert_eq!(status, 200, "{case}: {answer}");
        assert_close(answer["input_tokens"].as_u64().unwrap(), whole, &case);
        let (status, _) = gateway.get_json("/ctxhost/sessions/unknown", Some(KEY));
        assert_eq!(status, 404, "{case}");
        // And the session's next turn continues its lineage.
        let (_, turns) = api.fields();
        let mut next = last.clone();
        let list = next[turns].as_array_mut().unwrap();
        match api {
            Api::Messages => {
                list.push(json!({"role": "assistant", "content": "Noted."}));
                list.push(json!({"role": "user", "content": "Go on."}));
            }
            Api::Responses => {
                list.push(responses_upstream::message_item("msg_1", "Noted."));
                list.push(json!({"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": "Go on."}]}));
            }
        }
        let (status, _) = post(&gateway, api.path(), "metered", &next);
        assert_eq!(status, 200, "{case}");
        let state = gateway.session("metered", Some(KEY));
        assert_eq!(state["stats"]["new_lineages"], 0, "{case}: {state}");
    }
}

#[test]
fn count_tokens_passthrough_relays_the_clients_request() {
    let upstream = provider(true);
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "serve:\n  count_tokens: passthrough\n  models:\n    {MODEL}: 16000\n  compaction:\n    \
         background: false\n"
    ));
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let last = compressed_session(&gateway, Api::Messages, "relayed");
    let (status, answer) = post(&gateway, "messages/count_tokens", "relayed", &last);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["input_tokens"], provider_count(&last));
    let asked = Api::Messages.last_count(&upstream);
    assert_eq!(asked.json(), last, "the client's request, as it came");
}

#[test]
fn betas_pass_through_and_configured_ones_widen_the_window() {
    let upstream = provider(true);
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "serve:\n  models:\n    claude-opus-4-1: 500000\n  anthropic:\n    betas:\n      - beta: \
         context-1m-2025-08-07\n        models: [\"claude-sonnet-4*\", \"claude-opus-4*\"]\n",
    );
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client_betas = "interleaved-thinking-2025-05-14, fine-grained-tool-streaming-2025-05-14,\
                        context-management-2025-06-27";
    // (model, the betas the provider receives, the session's window)
    let million = "context-1m-2025-08-07";
    for (model, betas, window) in [
        ("claude-haiku-4-5", client_betas.to_string(), 200_000),
        (
            "claude-sonnet-4-5",
            format!("{client_betas},{million}"),
            1_000_000,
        ),
        // serve.models says otherwise.
        (
            "claude-opus-4-1",
            format!("{client_betas},{million}"),
            500_000,
        ),
    ] {
        let response = reqwest::blocking::Client::new()
            .post(format!("{}/messages?beta=true", gateway.base_url()))
            .bearer_auth(KEY)
            .header("anthropic-beta", client_betas)
            .header("x-ctxhost-session", model)
            .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
        let received = upstream.messages_requests().last().unwrap().clone();
        assert_eq!(received.header("anthropic-beta"), Some(betas.as_str()));
        let state = gateway.session(model, Some(KEY));
        assert_eq!(state["context_length"], window, "{model}");
    }
    // count_tokens carries them too.
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/messages/count_tokens", gateway.base_url()))
        .bearer_auth(KEY)
        .header("anthropic-beta", client_betas)
        .json(
            &json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    let asked = Api::Messages.last_count(&upstream);
    assert_eq!(
        asked.header("anthropic-beta"),
        Some(format!("{client_betas},{million}").as_str())
    );
    // A body no turn would take is the provider's to count (or refuse), as it came.
    let odd = json!({"model": "claude-sonnet-4-5", "messages": [],
                     "tools": [{"name": "t", "input_schema": {"type": "object"}}]});
    let (status, _) = post(&gateway, "messages/count_tokens", "odd", &odd);
    assert_eq!(status, 200);
    assert_eq!(Api::Messages.last_count(&upstream).json(), odd);
}

/// `body` as a provider that applies Anthropic's `clear_tool_uses` edit sees it: the results of
/// all but the last three tool uses cleared.
fn after_edits(body: &Value) -> Value {
    let mut body = body.clone();
    let clears = body["context_management"]["edits"]
        .as_array()
        .is_some_and(|edits| {
            edits
                .iter()
                .any(|e| e["type"] == "clear_tool_uses_20250919")
        });
    if !clears {
        return body;
    }
    let mut results: Vec<&mut Value> = body["messages"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .filter_map(|m| m["content"].as_array_mut())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .collect();
    let cleared = results.len().saturating_sub(3);
    for block in results.iter_mut().take(cleared) {
        block["content"] = json!("[cleared]");
    }
    body
}

/// Replays the long session's turns on `api` while the whole history fits well under the
/// 16,000-token window, each with `extra` fields; the number of the first turn after which the
/// session had compressed, if any.
fn first_compression(
    gateway: &GatewayProcess,
    api: Api,
    session: &str,
    extra: &Value,
) -> Option<usize> {
    let messages = long_session();
    let turns = (1..messages.len()).filter(|i| messages[*i]["role"] == "assistant");
    for (turn, upto) in turns.enumerate() {
        let mut body = api.history(upto);
        if provider_count(&body) > 14_000 {
            return None;
        }
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        let response = reqwest::blocking::Client::new()
            .post(format!("{}/{}", gateway.base_url(), api.path()))
            .bearer_auth(KEY)
            .header("anthropic-beta", "context-management-2025-06-27")
            .header("x-ctxhost-session", session)
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "{session}");
        let state = gateway.session(session, Some(KEY));
        if !state["compressions"].as_array().unwrap().is_empty() {
            return Some(turn);
        }
    }
    None
}

#[test]
fn the_engine_leaves_what_the_provider_clears_or_compacts_to_it() {
    // The provider reports what remains after its own edits.
    let upstream = FakeUpstream::start(|request| {
        let tokens = provider_count(&after_edits(&request.json()));
        if request.path.starts_with("/v1/responses") {
            let usage = json!({"input_tokens": tokens, "output_tokens": 2,
                               "total_tokens": tokens + 2});
            return responses_upstream::reply(
                request,
                json!([responses_upstream::message_item("msg_1", "Noted.")]),
                Some(usage),
            );
        }
        let usage = json!({"input_tokens": tokens, "output_tokens": 2});
        reply(
            request,
            json!([{"type": "text", "text": "Noted."}]),
            Some(usage),
        )
    });
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "serve:\n  models:\n    {MODEL}: 16000\n  cache:\n    breakpoints: off\n"
    ));
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let plain = first_compression(&gateway, Api::Messages, "plain", &json!({}));
    let plain = plain.expect("without edits the engine compresses under the window");
    let clears = json!({"context_management": {"edits": [
        {"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 3}}]}});
    let edited = first_compression(&gateway, Api::Messages, "edited", &clears);
    assert!(
        edited.is_none_or(|turn| turn > plain),
        "the engine judged the edited history on what the provider cleared: {edited:?} vs {plain}"
    );
    let sent = Api::Messages.calls(&upstream).last().unwrap().clone();
    assert_eq!(
        sent.json()["context_management"],
        clears["context_management"]
    );
    assert_eq!(
        sent.header("anthropic-beta"),
        Some("context-management-2025-06-27")
    );

    // The provider compacts on its own: the engine leaves the history to it.
    let compaction = json!({"context_management": [
        {"type": "compaction", "compact_threshold": 4000}]});
    let compacted = first_compression(&gateway, Api::Responses, "compacted", &compaction);
    assert_eq!(compacted, None);
    let sent = Api::Responses.calls(&upstream).last().unwrap().json();
    assert_eq!(sent["context_management"], compaction["context_management"]);
    // And with the same turns, but no compaction asked of the provider, the engine compresses.
    let engine = first_compression(&gateway, Api::Responses, "engine", &json!({}));
    assert!(engine.is_some());
}
