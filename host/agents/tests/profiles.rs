//! Each agent's profile against the requests that agent sends, kept as fixtures beside this
//! file (`fixtures/*.json`: the wire, the headers, the body, and what the profile must tell of
//! it): which agent its headers tell, which compaction it is (if any), and what is left for the
//! engine once the agent's prompt is taken out. The fixtures are shaped after the requests the
//! real agents sent a scripted provider (Claude Code 2.1.197, Codex CLI 0.169.0, Hermes Agent
//! 0.19.0), with their prompts shortened.

use std::path::Path;

use ctxhost_agents::compaction::Request;
use ctxhost_agents::Agent;
use ctxhost_sdk::Message;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

/// The agents that speak each wire, as the gateway's adapters list them.
fn speakers(wire: &str) -> &'static [Agent] {
    match wire {
        "messages" => &[Agent::ClaudeCode],
        "responses" => &[Agent::Codex],
        "chat" => &[Agent::Hermes],
        other => panic!("unknown wire {other}"),
    }
}

/// The body's conversation as the engine's messages, and the rest of its fields.
fn take_apart(wire: &str, body: &Value) -> (Vec<Message>, Map<String, Value>) {
    let mut fields = body.as_object().cloned().unwrap();
    let history = match wire {
        "messages" => {
            let system = fields.remove("system");
            let turns = fields.remove("messages").unwrap();
            ctxhost_wire::anthropic::to_messages(system, turns.as_array().unwrap().clone()).unwrap()
        }
        "responses" => {
            let instructions = fields.remove("instructions");
            let input = fields.remove("input").unwrap();
            ctxhost_wire::responses::to_messages(instructions.as_ref(), &input).unwrap()
        }
        _ => fields
            .remove("messages")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|m| Message::from_value(m.clone()).unwrap())
            .collect(),
    };
    (history, fields)
}

fn headers_of(fixture: &Value) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in fixture["headers"].as_object().unwrap() {
        headers.insert(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value.as_str().unwrap()).unwrap(),
        );
    }
    headers
}

#[test]
fn each_recorded_request_is_told_as_its_agent_sends_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 9, "the fixtures are there: {paths:?}");
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let fixture: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let wire = fixture["wire"].as_str().unwrap();
        let expect = &fixture["expect"];
        let headers = headers_of(&fixture);
        let (mut history, fields) = take_apart(wire, &fixture["body"]);
        let agent = Agent::of_headers(speakers(wire), &headers, &fields);
        assert_eq!(agent.as_str(), expect["agent"], "{name}");
        let recognised = agent.compaction(&Request {
            headers: &headers,
            fields: &fields,
            history: &history,
            compact_route: false,
        });
        assert_eq!(
            recognised.map(|r| r.kind.as_str()),
            expect["compaction"].as_str(),
            "{name}"
        );
        let Some(recognised) = recognised else {
            continue;
        };
        assert_eq!(
            recognised.kind.agent() == agent,
            agent != Agent::Unknown,
            "{name}"
        );
        recognised.take_prompt(&mut history);
        assert_eq!(
            history.len() as u64,
            expect["left"].as_u64().unwrap(),
            "{name}"
        );
        let last = history.last().map(|m| m.content_text().into_owned());
        assert_eq!(last.as_deref(), expect["last_text"].as_str(), "{name}");
    }
}
