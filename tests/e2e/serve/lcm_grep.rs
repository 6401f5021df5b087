//! `lcm_grep` behind the gateway finds what was said in a session that never compressed.

use ctxhost_tests::upstream::{tool_call, FakeUpstream};
use ctxhost_tests::wire::Wire;
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

const MARKER: &str = "FRESH-MARKER-4417";

#[test]
fn lcm_grep_finds_words_in_messages_never_compressed() {
    let upstream = FakeUpstream::start(|request| {
        let messages = Wire::Chat.sent_messages(request);
        let last = messages.last().unwrap();
        let message = if last["role"] == "tool" {
            // The answer names the pattern it searched for: only its matches count.
            let answer: Value =
                serde_json::from_str(last["content"].as_str().unwrap_or_default()).unwrap();
            let found = answer["matches"].to_string().contains(MARKER);
            json!({"role": "assistant", "content": format!("marker found: {found}")})
        } else {
            json!({"role": "assistant", "content": null, "tool_calls": [tool_call(
                "call_grep",
                "lcm_grep",
                json!({"pattern": MARKER, "scope": "messages"}),
            )]})
        };
        Wire::Chat.reply(request, &message, None)
    });
    let sandbox = Sandbox::new();
    sandbox
        .link_repo_plugins()
        .write_config("context:\n  engine: lcm\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let messages = [
        json!({"role": "user", "content": format!("The codeword is {MARKER}. Keep it.")}),
        json!({"role": "assistant", "content": "Kept."}),
        json!({"role": "user", "content": "Search your memory for the codeword."}),
    ];
    let body = Wire::Chat.body(&messages, &[], false);
    let response = Wire::Chat.send(&gateway, Some("sk-grep"), Some("fresh"), &body);
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-engine"], "lcm");
    assert!(response.headers().get("x-ctxhost-compressed").is_none());
    let answer = Wire::Chat.read(&response.text().unwrap(), false);
    assert_eq!(answer.message["content"], "marker found: true");
}
