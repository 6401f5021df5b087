//! Responses API `instructions` and `input` items to the engine's message model (OpenAI chat
//! format) and back, losslessly, on the conversion Codex rollouts use
//! (`transcript::codex`): reasoning, assistant text and calls in a row are one
//! assistant message; each user, developer or system `message` and each call output is a
//! message of its own.
//!
//! Each message keeps the items it came from (`responses_items`, with any item the engine
//! model has no place for, carried with its neighbour), so a message the engine left alone
//! converts back to the very items the client sent; a message an engine changed is rebuilt
//! from what it now says, and a reasoning item goes back only with the turn it came with.

use std::borrow::Cow;
use std::collections::HashMap;

use ctxhost_sdk::{Content, Message, Stamp};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::transcript::codex::{self, Part, Rebuilt};

/// The items a message came from.
const ITEMS: &str = "responses_items";
/// The system message made of `instructions`.
const INSTRUCTIONS: &str = "responses_instructions";
/// The user message made of an `input` given as a string.
const INPUT_TEXT: &str = "responses_input_text";

/// Why a request's `input` is not Responses items: where, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {message}")]
pub struct ConvertError {
    pub location: String,
    pub message: String,
}

/// A request's `instructions` and `input` as it came, back from the engine's messages.
pub struct Converted {
    pub instructions: Option<Value>,
    pub input: Value,
}

/// [`Converted`] for a model call: the items of the messages still as they were made are
/// the request's own, borrowed, so they go upstream as they came without a copy.
pub struct Upstream<'a> {
    pub instructions: Option<Value>,
    pub input: Input<'a>,
}

/// A request's `input` on its way upstream; it serializes as the JSON it stands for.
#[derive(Debug, Clone, PartialEq)]
pub enum Input<'a> {
    Text(String),
    Items(Vec<Cow<'a, Value>>),
}

impl Input<'_> {
    /// The `input` as a JSON value.
    pub fn into_value(self) -> Value {
        match self {
            Input::Text(text) => Value::String(text),
            Input::Items(items) => Value::Array(items.into_iter().map(Cow::into_owned).collect()),
        }
    }
}

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Input::Text(text) => serializer.serialize_str(text),
            Input::Items(items) => serializer.collect_seq(items),
        }
    }
}

/// The messages [`into_messages`] made from items, by their stamps, each with its items as
/// parsed: while one is unchanged (a clone shares its stamp, a change gives a new one), it
/// still says what its items say, so it converts back to these very items, neither compared
/// with the message nor read back from its `responses_items` text ([`from_messages_made`]).
#[derive(Debug, Clone, Default)]
pub struct Made(HashMap<Stamp, Vec<Value>>);

impl Made {
    /// The items `message` was made of, while it is unchanged.
    fn items_of(&self, message: &Message) -> Option<&Vec<Value>> {
        self.0.get(&message.stamp())
    }
}

/// The engine's messages for a request's `instructions` and `input`.
pub fn to_messages(
    instructions: Option<&Value>,
    input: &Value,
) -> Result<Vec<Message>, ConvertError> {
    into_messages(instructions.cloned(), input.clone()).map(|(messages, _)| messages)
}

/// [`to_messages`] of a request's own `instructions` and `input`, taken (no item is copied),
/// and the messages it made ([`Made`]).
pub fn into_messages(
    instructions: Option<Value>,
    input: Value,
) -> Result<(Vec<Message>, Made), ConvertError> {
    let mut messages = Vec::new();
    let mut made = Made::default();
    match instructions {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => {
            let mut message = Message::system(text);
            message.set_extra_field(INSTRUCTIONS, Some(Value::Bool(true)));
            messages.push(message);
        }
        Some(_) => {
            return Err(ConvertError {
                location: "instructions".into(),
                message: "must be a string".into(),
            })
        }
    }
    match input {
        Value::String(text) => {
            let mut message = Message::user(text);
            message.set_extra_field(INPUT_TEXT, Some(Value::Bool(true)));
            messages.push(message);
        }
        Value::Array(items) => {
            if let Some(at) = items.iter().position(|item| !item.is_object()) {
                return Err(ConvertError {
                    location: format!("input[{at}]"),
                    message: "an item must be a JSON object".into(),
                });
            }
            for (mut message, items) in item_messages(items) {
                // The message keeps its items (as text, for whoever reads it) and `made` the
                // same items parsed, for the way back while it is unchanged.
                message.set_extra_field(ITEMS, Some(Value::Array(items.clone())));
                made.0.insert(message.stamp(), items);
                messages.push(message);
            }
        }
        _ => {
            return Err(ConvertError {
                location: "input".into(),
                message: "must be a string or an array of items".into(),
            })
        }
    }
    Ok((messages, made))
}

/// Items as messages, each with the items it is made of (not yet kept in it); items that make
/// no message (unknown types, server-side calls) ride with the message before them, or the
/// first one after.
fn item_messages(items: Vec<Value>) -> Vec<(Message, Vec<Value>)> {
    let mut groups: Vec<Vec<Value>> = Vec::new();
    let mut leading: Vec<Value> = Vec::new();
    let mut open_assistant = false;
    for item in items {
        match codex::part(&item) {
            Part::Assistant if open_assistant => push_to_last(&mut groups, item),
            Part::Assistant | Part::Single => {
                open_assistant = codex::part(&item) == Part::Assistant;
                let mut group = std::mem::take(&mut leading);
                group.push(item);
                groups.push(group);
            }
            Part::Skip if groups.is_empty() => leading.push(item),
            Part::Skip => push_to_last(&mut groups, item),
        }
    }
    let mut messages: Vec<(Message, Vec<Value>)> = groups
        .into_iter()
        .filter_map(|group| {
            let refs: Vec<&Value> = group.iter().collect();
            let message = codex::items(&refs).pop()?;
            Some((message, group))
        })
        .collect();
    if messages.is_empty() && !leading.is_empty() {
        // Nothing but items the engine has no place for: one empty user turn carries them.
        messages.push((Message::user(""), leading));
    }
    messages
}

fn push_to_last(groups: &mut [Vec<Value>], item: Value) {
    if let Some(group) = groups.last_mut() {
        group.push(item);
    }
}

/// The Responses items a message was made of (with any item the message model has no place
/// for, such as a `compaction` or `compaction_trigger` item, that rode along with it); empty for a
/// message that did not come from items.
pub fn carried_items(message: &Message) -> Vec<Value> {
    message.extra_field(ITEMS).unwrap_or_default()
}

/// Whether a message carries an item of type `kind`, read without building its items (they
/// hold the conversation's texts).
pub fn carries_item_of_type(message: &Message, kind: &str) -> bool {
    /// An item, as far as its type.
    #[derive(serde::Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: Option<Value>,
    }
    match message.extra_field::<Vec<Typed>>(ITEMS) {
        Some(items) => items
            .iter()
            .any(|item| item.kind.as_ref().and_then(Value::as_str) == Some(kind)),
        // Items of another shape than this conversion writes: read whole.
        None => carried_items(message)
            .iter()
            .any(|item| item["type"] == kind),
    }
}

/// Replaces the items a message carries (`carried_items` with some taken out), so it converts
/// back to these.
pub fn set_carried_items(message: &mut Message, items: Vec<Value>) {
    message.set_extra_field(ITEMS, Some(Value::Array(items)));
}

/// One reply's `output` items as the engine's assistant message (None when they make none).
pub fn reply_message(output: &Value) -> Option<Message> {
    let items = output.as_array()?;
    let mut messages = item_messages(items.clone());
    if messages.len() != 1 || !messages[0].0.is_assistant() {
        return None;
    }
    let (mut message, items) = messages.remove(0);
    set_carried_items(&mut message, items);
    Some(message)
}

/// The items a message keeps, if it still says what they say: what they convert to is the
/// message less the fields this conversion adds.
fn intact_items(message: &Message) -> Option<Vec<Value>> {
    let mut extra = message.extra_fields();
    let Some(Value::Array(items)) = extra.shift_remove(ITEMS) else {
        return None;
    };
    for key in [INSTRUCTIONS, INPUT_TEXT] {
        extra.shift_remove(key);
    }
    let refs: Vec<&Value> = items.iter().collect();
    let converted = codex::items(&refs);
    let same = match converted.as_slice() {
        [only] => says_the_same(only, message, &extra),
        [] => message.is_user() && message.content_text().is_empty(),
        _ => false,
    };
    same.then_some(items)
}

/// Whether `message`, whose extra fields less this conversion's are `extra`, is `converted`
/// as JSON values are equal (texts compared first: they are usually the same).
fn says_the_same(converted: &Message, message: &Message, extra: &Map<String, Value>) -> bool {
    let same_content = match (converted.content(), message.content()) {
        (Content::Json(a), Content::Json(b)) => a == b || same_json(a, b),
        (a, b) => a == b,
    };
    let (calls, other_calls) = (converted.tool_calls(), message.tool_calls());
    let same_calls = calls.len() == other_calls.len()
        && calls
            .iter()
            .zip(other_calls)
            .all(|(a, b)| a == b || a.to_value() == b.to_value());
    converted.role() == message.role()
        && same_content
        && same_calls
        && converted.tool_call_id() == message.tool_call_id()
        && converted.name() == message.name()
        && converted.extra_fields() == *extra
}

fn same_json(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The request's `instructions` and `input` for the engine's messages.
pub fn from_messages(messages: &[Message]) -> Converted {
    let made = Made::default();
    let upstream = from_messages_made(messages, &made);
    Converted {
        instructions: upstream.instructions,
        input: upstream.input.into_value(),
    }
}

/// [`from_messages`], where the messages in `made` that are still unchanged go back as the
/// items they were made of, without comparing what those say with what the message says.
pub fn from_messages_made<'a>(messages: &[Message], made: &'a Made) -> Upstream<'a> {
    let mut instructions = None;
    let mut input: Vec<Cow<'a, Value>> = Vec::new();
    let mut kinds: HashMap<String, String> = HashMap::new();
    let is_instructions =
        |m: &Message| m.is_system() && m.extra_fields().contains_key(INSTRUCTIONS);
    let turns: Vec<&Message> = messages.iter().filter(|m| !is_instructions(m)).collect();
    if let Some(first) = messages.first().filter(|m| is_instructions(m)) {
        instructions = Some(Value::String(first.content_text().into_owned()));
    }
    // An input sent as a string goes back as one while it is the whole conversation.
    if let [only] = turns.as_slice() {
        if only.extra_fields().contains_key(INPUT_TEXT) && only.is_user() && only.text().is_some() {
            return Upstream {
                instructions,
                input: Input::Text(only.content_text().into_owned()),
            };
        }
    }
    for (at, message) in messages.iter().enumerate() {
        if at == 0 && instructions.is_some() {
            continue;
        }
        let items: Vec<Cow<'a, Value>> = match made.items_of(message) {
            Some(kept) => kept.iter().map(Cow::Borrowed).collect(),
            None => intact_items(message)
                .unwrap_or_else(|| rebuild(message, &mut kinds))
                .into_iter()
                .map(Cow::Owned)
                .collect(),
        };
        for item in &items {
            if let (Some(id), Some(kind)) = (item["call_id"].as_str(), item["type"].as_str()) {
                if kind.ends_with("_call") {
                    kinds.insert(id.to_string(), kind.to_string());
                }
            }
        }
        input.extend(items);
    }
    Upstream {
        instructions,
        input: Input::Items(input),
    }
}

/// A changed or new message as items, its original items (if any) telling each call's type;
/// a reasoning item an engine rewrote is left out (a provider accepts only its own).
fn rebuild(message: &Message, kinds: &mut HashMap<String, String>) -> Vec<Value> {
    let originals = match message.extra_fields().get(ITEMS) {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    let refs: Vec<&Value> = originals.iter().collect();
    let original_messages = codex::items(&refs);
    codex::message_items(message, &refs, &original_messages, kinds)
        .into_iter()
        .filter_map(|rebuilt| match rebuilt {
            Rebuilt::Line(item) => Some(item),
            Rebuilt::Item(item) if item["type"] == "reasoning" => None,
            Rebuilt::Item(item) => Some(item),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input() -> Value {
        json!([
            {"role": "user", "content": "list the files"},
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be terse"},
             {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "exec_command",
             "arguments": "{\"cmd\":\"ls\"}", "status": "completed"},
            {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
            {"type": "message", "role": "assistant", "id": "msg_1",
             "content": [{"type": "output_text", "text": "done", "annotations": []}]},
        ])
    }

    #[test]
    fn items_go_back_as_they_came() {
        let messages = to_messages(Some(&json!("sys")), &input()).unwrap();
        let roles: Vec<&str> = messages.iter().map(Message::role).collect();
        assert_eq!(
            roles,
            [
                "system",
                "user",
                "developer",
                "assistant",
                "tool",
                "tool",
                "assistant"
            ]
        );
        assert_eq!(messages[3].tool_calls().len(), 2);
        let back = from_messages(&messages);
        assert_eq!(back.instructions, Some(json!("sys")));
        assert_eq!(back.input, input());
    }

    #[test]
    fn messages_made_here_go_back_as_their_items_until_changed() {
        let (mut messages, made) = into_messages(Some(json!("sys")), input()).unwrap();
        assert_eq!(
            messages,
            to_messages(Some(&json!("sys")), &input()).unwrap()
        );
        let back = from_messages_made(&messages, &made);
        assert_eq!(back.instructions, Some(json!("sys")));
        assert_eq!(back.input.into_value(), input());
        // A clone is the same message.
        assert_eq!(
            from_messages_made(&messages.clone(), &made)
                .input
                .into_value(),
            input()
        );
        // A changed one is rebuilt, as it is without knowing where it came from.
        messages[4].set_text("[cleared]");
        let back = from_messages_made(&messages, &made).input.into_value();
        assert_eq!(back, from_messages(&messages).input);
        assert_ne!(back, input());
        // Messages made by another conversion are compared with their items.
        let (others, _) = into_messages(None, input()).unwrap();
        assert_eq!(
            from_messages_made(&others, &made).input.into_value(),
            input()
        );
    }

    #[test]
    fn an_unchanged_message_goes_back_as_its_items_byte_for_byte() {
        // Key orders and fields the message model would not write this way.
        let sent = r#"[{"content":"list the files","role":"user","type":"message"},{"type":"reasoning","summary":[],"id":"rs_1","encrypted_content":"enc","x":1.5},{"name":"exec_command","type":"function_call","call_id":"c1","arguments":"{\"cmd\": \"ls\"}"},{"zz":[],"type":"function_call_output","output":"a.txt","call_id":"c1"}]"#;
        let (mut messages, made) =
            into_messages(None, serde_json::from_str(sent).unwrap()).unwrap();
        let back = from_messages_made(&messages, &made).input;
        assert_eq!(serde_json::to_string(&back).unwrap(), sent);
        // The request's own items, not copies of them.
        let Input::Items(items) = &back else {
            panic!("{back:?}")
        };
        assert!(items.iter().all(|item| matches!(item, Cow::Borrowed(_))));
        // `made` holds what the message keeps, until the message changes.
        assert_eq!(
            made.items_of(&messages[1]),
            Some(&carried_items(&messages[1]))
        );
        messages[1].set_text("changed");
        assert_eq!(made.items_of(&messages[1]), None);
        let back = serde_json::to_string(&from_messages_made(&messages, &made).input).unwrap();
        assert!(
            back.starts_with(r#"[{"content":"list the files","role":"user","type":"message"},"#)
        );
        assert_ne!(back, sent);
    }

    #[test]
    fn a_string_input_stays_a_string() {
        let messages = to_messages(None, &json!("hello")).unwrap();
        let back = from_messages(&messages);
        assert_eq!((back.instructions, back.input), (None, json!("hello")));
    }

    #[test]
    fn a_changed_turn_is_rebuilt_and_a_replaced_one_takes_its_reasoning_along() {
        let mut messages = to_messages(None, &input()).unwrap();
        messages[2].set_text("[summarized]");
        messages[3].set_text("[cleared]");
        let back = from_messages(&messages).input;
        let items = back.as_array().unwrap();
        // The output the engine cleared is rebuilt with its call's type...
        assert!(
            items.contains(&json!({"type": "function_call_output", "call_id": "c1",
                                       "output": "[cleared]"}))
        );
        // ... and the custom call keeps its own type.
        assert!(items
            .iter()
            .any(|i| i["type"] == "custom_tool_call" && i["call_id"] == "c2"));
        // A turn replaced by a summary leaves no reasoning behind.
        messages.splice(2..5, [Message::user("summary")]);
        let back = from_messages(&messages).input;
        assert!(!back.to_string().contains("rs_1"), "{back}");
    }

    #[test]
    fn an_item_type_is_found_without_reading_the_items_whole() {
        let mut input = input();
        input.as_array_mut().unwrap().insert(
            2,
            json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"}),
        );
        let messages = to_messages(None, &input).unwrap();
        let carrying: Vec<bool> = messages
            .iter()
            .map(|m| carries_item_of_type(m, "compaction"))
            .collect();
        let read_whole: Vec<bool> = messages
            .iter()
            .map(|m| carried_items(m).iter().any(|i| i["type"] == "compaction"))
            .collect();
        assert_eq!(carrying, read_whole);
        assert_eq!(carrying.iter().filter(|c| **c).count(), 1);
        assert!(!carries_item_of_type(&Message::user("hi"), "compaction"));
    }

    #[test]
    fn input_that_is_not_items_is_located() {
        let error = to_messages(None, &json!([{"role": "user", "content": "hi"}, 7])).unwrap_err();
        assert_eq!(error.to_string(), "input[1]: an item must be a JSON object");
        assert!(to_messages(None, &json!(42)).is_err());
    }
}
