//! The engine's own tools in a turn: offered to the model beside the client's, and told apart
//! from the client's in a reply (the [`super::rounds`] answer them).

use std::collections::HashSet;

use ctxhost_sdk::Message;
use serde_json::Value;

use crate::session::live::Live;

/// The engine's tools offered upstream (OpenAI function schemas) and their names: those the
/// client does not also define (the client's own tool of the same name wins).
pub fn engine_tools(live: &Live, client_tools: &HashSet<String>) -> (Vec<Value>, HashSet<String>) {
    let names: HashSet<String> = live
        .tools
        .names()
        .iter()
        .filter(|n| !client_tools.contains(*n))
        .cloned()
        .collect();
    let schemas = live
        .tools
        .schemas()
        .iter()
        .filter(|s| {
            s["function"]["name"]
                .as_str()
                .is_some_and(|n| names.contains(n))
        })
        .cloned()
        .collect();
    (schemas, names)
}

/// What a reply's tool calls are, split.
pub struct Calls {
    /// The engine's calls: (id, name, arguments).
    pub engine: Vec<(String, String, String)>,
    pub has_client_calls: bool,
}

pub fn split_calls(reply: &Message, engine_names: &HashSet<String>) -> Calls {
    let mut engine = Vec::new();
    let mut has_client_calls = false;
    for call in reply.tool_calls() {
        if engine_names.contains(call.name()) {
            engine.push((
                call.id().to_string(),
                call.name().to_string(),
                call.arguments().to_string(),
            ));
        } else {
            has_client_calls = true;
        }
    }
    Calls {
        engine,
        has_client_calls,
    }
}
