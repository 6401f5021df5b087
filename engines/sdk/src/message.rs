//! The message model: OpenAI chat-format messages that survive every round trip.
//!
//! A [`Message`] keeps the fields engines reason about (role, content, tool calls, tool call id,
//! name) typed, and everything else verbatim as JSON text, so unknown fields and multimodal
//! content parts come back out exactly as they went in. The type is `#[repr(C)]` and part of the
//! stable ABI: message lists cross the plugin boundary without being serialized.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use abi_stable::std_types::{ROption, RString, RVec};
use abi_stable::StableAbi;
use serde::de::{DeserializeOwned, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The roles of the OpenAI chat format. Other roles are kept as written.
pub mod role {
    /// The system prompt: the instructions that frame the conversation. Engines keep it.
    pub const SYSTEM: &str = "system";
    /// A turn from the user (or the agent's harness speaking for them).
    pub const USER: &str = "user";
    /// A turn from the model: text, tool calls, or both.
    pub const ASSISTANT: &str = "assistant";
    /// A tool's result, answering one tool call by its id.
    pub const TOOL: &str = "tool";
}

/// The `content` field of a message, as it was written.
#[repr(u8)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// The message had no `content` key.
    Absent,
    /// `"content": null` (an assistant turn that only calls tools).
    Null,
    /// Plain text.
    Text(RString),
    /// Any other JSON value, usually an array of content parts (text, images, audio), kept
    /// verbatim as JSON text.
    Json(RString),
}

/// One entry of an assistant message's `tool_calls`.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    id: ROption<RString>,
    name: ROption<RString>,
    arguments: ROption<RString>,
    /// The call object minus `id`, `function.name` and `function.arguments`, as JSON text. An
    /// emptied `function` object stays as `{}` so the original key order can be rebuilt.
    extra: RString,
}

/// One OpenAI chat-format message. Read and write it with serde (or
/// [`from_value`](Self::from_value) / [`to_value`](Self::to_value)): what comes out is what went
/// in, field order, unknown fields and content parts included. Cloning copies its text.
#[repr(C)]
#[derive(StableAbi, Clone, Eq)]
pub struct Message {
    role: RString,
    content: Content,
    tool_calls: ROption<RVec<ToolCall>>,
    tool_call_id: ROption<RString>,
    name: ROption<RString>,
    /// Every other field, as the text of a JSON object; empty when there are none.
    extra: RString,
    /// Which content this is ([`Stamp`]).
    stamp: Stamp,
}

/// Which exact content a message holds: a clone shares its original's stamp, and a message
/// that is built, read or changed gets a new one. Messages with the same stamp are equal, so a
/// list that was handed on or cloned is compared without reading its text (the host does this
/// for every engine call that crosses to a plugin's process).
///
/// Stamps are counted from a random start in each process (and in each plugin library), so
/// two of them meet only with a probability of about one in 2^64 per message. Within one
/// process they are ordered as they were given out (until the count wraps around).
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp(u64);

impl Stamp {
    /// A stamp no other message in any process holds.
    fn fresh() -> Stamp {
        use std::hash::{BuildHasher, Hasher};
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::OnceLock;
        static START: OnceLock<u64> = OnceLock::new();
        static COUNT: AtomicU64 = AtomicU64::new(0);
        // `RandomState` is keyed from the OS's randomness once per process.
        let start = *START.get_or_init(|| {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u32(std::process::id());
            hasher.finish()
        });
        Stamp(start.wrapping_add(COUNT.fetch_add(1, Ordering::Relaxed)))
    }
}

impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        self.stamp == other.stamp
            || (self.role == other.role
                && self.content == other.content
                && self.tool_calls == other.tool_calls
                && self.tool_call_id == other.tool_call_id
                && self.name == other.name
                && self.extra == other.extra)
    }
}

impl fmt::Debug for Message {
    // Without the stamp: two equal messages print the same.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("role", &self.role)
            .field("content", &self.content)
            .field("tool_calls", &self.tool_calls)
            .field("tool_call_id", &self.tool_call_id)
            .field("name", &self.name)
            .field("extra", &self.extra)
            .finish()
    }
}

impl ToolCall {
    /// A function call in the standard shape: `{"id", "type": "function", "function": {...}}`.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: ROption::RSome(RString::from(id.into())),
            name: ROption::RSome(RString::from(name.into())),
            arguments: ROption::RSome(RString::from(arguments.into())),
            extra: RString::from(r#"{"type":"function","function":{}}"#),
        }
    }

    /// The call id that the matching `tool` message answers ("" when the call had none).
    pub fn id(&self) -> &str {
        opt_str(&self.id)
    }

    /// The function name ("" when the call had none).
    pub fn name(&self) -> &str {
        opt_str(&self.name)
    }

    /// The JSON-encoded arguments string ("" when absent or not a string).
    pub fn arguments(&self) -> &str {
        opt_str(&self.arguments)
    }

    /// Replaces the arguments string (for engines that shorten huge arguments).
    pub fn set_arguments(&mut self, arguments: impl Into<String>) {
        self.arguments = ROption::RSome(RString::from(arguments.into()));
    }

    /// This call as JSON, every field in its order, as its message's `tool_calls` writes it.
    pub fn to_value(&self) -> Value {
        self.to_json()
    }

    fn from_json(mut object: Map<String, Value>) -> Self {
        let id = take_string(&mut object, "id");
        let (mut name, mut arguments) = (None, None);
        if let Some(Value::Object(function)) = object.get_mut("function") {
            name = take_string(function, "name");
            arguments = take_string(function, "arguments");
        }
        ToolCall {
            id: id.map(RString::from).into(),
            name: name.map(RString::from).into(),
            arguments: arguments.map(RString::from).into(),
            extra: RString::from(Value::Object(object).to_string()),
        }
    }

    fn to_json(&self) -> Value {
        let mut out = Map::new();
        if let ROption::RSome(id) = &self.id {
            out.insert("id".into(), Value::String(id.to_string()));
        }
        for (key, value) in parse_object(&self.extra) {
            if key == "function" {
                let Value::Object(rest) = value else {
                    out.insert(key, value);
                    continue;
                };
                let mut function = Map::new();
                if let ROption::RSome(name) = &self.name {
                    function.insert("name".into(), Value::String(name.to_string()));
                }
                if let ROption::RSome(arguments) = &self.arguments {
                    function.insert("arguments".into(), Value::String(arguments.to_string()));
                }
                function.extend(rest);
                out.insert(key, Value::Object(function));
            } else {
                out.insert(key, value);
            }
        }
        Value::Object(out)
    }
}

impl Message {
    /// A message with a role and plain-text content.
    pub fn new(role: impl Into<String>, text: impl Into<String>) -> Self {
        Message {
            role: RString::from(role.into()),
            content: Content::Text(RString::from(text.into())),
            tool_calls: ROption::RNone,
            tool_call_id: ROption::RNone,
            name: ROption::RNone,
            extra: RString::new(),
            stamp: Stamp::fresh(),
        }
    }

    /// A system prompt.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(role::SYSTEM, text)
    }

    /// A user turn with plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(role::USER, text)
    }

    /// An assistant turn with plain text and no tool calls.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(role::ASSISTANT, text)
    }

    /// An assistant turn that calls tools (`content: null`).
    pub fn assistant_tool_calls(calls: Vec<ToolCall>) -> Self {
        let mut message = Self::new(role::ASSISTANT, "");
        message.content = Content::Null;
        message.tool_calls = ROption::RSome(RVec::from(calls));
        message
    }

    /// A tool result answering the call with `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        let mut message = Self::new(role::TOOL, text);
        message.tool_call_id = ROption::RSome(RString::from(tool_call_id.into()));
        message
    }

    /// The role as written (see [`role`] for the known ones).
    pub fn role(&self) -> &str {
        &self.role
    }

    /// Whether this is the system prompt.
    pub fn is_system(&self) -> bool {
        self.role() == role::SYSTEM
    }

    /// Whether this is a user turn.
    pub fn is_user(&self) -> bool {
        self.role() == role::USER
    }

    /// Whether this is an assistant turn.
    pub fn is_assistant(&self) -> bool {
        self.role() == role::ASSISTANT
    }

    /// Whether this is a tool result (`role: tool`).
    pub fn is_tool_result(&self) -> bool {
        self.role() == role::TOOL
    }

    /// The content as written.
    pub fn content(&self) -> &Content {
        &self.content
    }

    /// The content when it is plain text.
    pub fn text(&self) -> Option<&str> {
        match &self.content {
            Content::Text(text) => Some(text),
            _ => None,
        }
    }

    /// All readable text of the content: plain text as is, or the `text` of every content part.
    pub fn content_text(&self) -> Cow<'_, str> {
        match &self.content {
            Content::Text(text) => Cow::Borrowed(text.as_str()),
            Content::Json(json) => Cow::Owned(parts_text(json)),
            Content::Absent | Content::Null => Cow::Borrowed(""),
        }
    }

    /// Replaces the content with plain text.
    pub fn set_text(&mut self, text: impl Into<String>) {
        self.content = Content::Text(RString::from(text.into()));
        self.stamp = Stamp::fresh();
    }

    /// Replaces the content with any JSON value (a string becomes plain text).
    pub fn set_content_json(&mut self, value: &Value) {
        self.content = content_from_value(value.clone());
        self.stamp = Stamp::fresh();
    }

    /// The tool calls of an assistant message (empty for other messages).
    pub fn tool_calls(&self) -> &[ToolCall] {
        match &self.tool_calls {
            ROption::RSome(calls) => calls.as_slice(),
            ROption::RNone => &[],
        }
    }

    /// The tool calls, to edit in place (e.g. shorten their arguments); empty for other
    /// messages. Keep each call's id: its result answers it by id.
    pub fn tool_calls_mut(&mut self) -> &mut [ToolCall] {
        // Whatever the caller does with them, this is another message from now on.
        self.stamp = Stamp::fresh();
        match &mut self.tool_calls {
            ROption::RSome(calls) => calls.as_mut_slice(),
            ROption::RNone => &mut [],
        }
    }

    /// The id of the call a `tool` message answers.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.tool_call_id
            .as_ref()
            .map(RString::as_str)
            .into_option()
    }

    /// The optional `name` field (a tool name or a participant name).
    pub fn name(&self) -> Option<&str> {
        self.name.as_ref().map(RString::as_str).into_option()
    }

    /// The fields this model does not know, in their original order.
    pub fn extra_fields(&self) -> Map<String, Value> {
        parse_object(&self.extra)
    }

    /// One of the fields this model does not know, read as a `T` without building the others
    /// (a message can carry large ones); `None` when it is absent or is no `T`.
    pub fn extra_field<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        if self.extra.is_empty() {
            return None;
        }
        let mut reader = serde_json::Deserializer::from_str(&self.extra);
        reader
            .deserialize_map(OneField {
                key,
                read: PhantomData,
            })
            .ok()
            .flatten()
    }

    /// A field kept among the unknown ones that would shadow a core one (`role`, `content`,
    /// `tool_calls`, `tool_call_id`, `name`) when the message is written out.
    pub(crate) fn shadowing_field(&self) -> Option<String> {
        if self.extra.is_empty() {
            return None;
        }
        const CORE: [&str; 5] = ["role", "content", "tool_calls", "tool_call_id", "name"];
        parse_object(&self.extra)
            .keys()
            .find(|key| CORE.contains(&key.as_str()))
            .cloned()
    }

    /// Whether every text the message holds is valid UTF-8. Strings built by this crate always
    /// are; a plugin built with `unsafe` code or another toolchain could hand back any bytes,
    /// so the host checks the bytes themselves before using them as text.
    pub(crate) fn is_valid_utf8(&self) -> bool {
        fn valid(text: &RString) -> bool {
            std::str::from_utf8(text.as_str().as_bytes()).is_ok()
        }
        let optional = |text: &ROption<RString>| match text {
            ROption::RSome(text) => valid(text),
            ROption::RNone => true,
        };
        let content = match &self.content {
            Content::Text(text) | Content::Json(text) => valid(text),
            Content::Absent | Content::Null => true,
        };
        let calls = match &self.tool_calls {
            ROption::RSome(calls) => calls.iter().all(|call| {
                optional(&call.id)
                    && optional(&call.name)
                    && optional(&call.arguments)
                    && valid(&call.extra)
            }),
            ROption::RNone => true,
        };
        valid(&self.role)
            && content
            && calls
            && optional(&self.tool_call_id)
            && optional(&self.name)
            && valid(&self.extra)
    }

    /// Sets (or with `None`, removes) a field this model does not know, such as `reasoning`.
    pub fn set_extra_field(&mut self, key: &str, value: Option<Value>) {
        let mut extra = self.extra_fields();
        match value {
            Some(value) => {
                extra.insert(key.to_string(), value);
            }
            None => {
                extra.shift_remove(key);
            }
        }
        self.extra = if extra.is_empty() {
            RString::new()
        } else {
            RString::from(Value::Object(extra).to_string())
        };
        self.stamp = Stamp::fresh();
    }

    /// This message's [`Stamp`].
    pub fn stamp(&self) -> Stamp {
        self.stamp
    }

    /// Takes `other`'s stamp when the two are equal (and says whether they are), so that the
    /// next comparison of the two needs no reading of their text.
    pub fn share_stamp(&mut self, other: &Message) -> bool {
        let equal = *self == *other;
        if equal {
            self.stamp = other.stamp;
        }
        equal
    }

    /// The text a tokenizer or a search should see: the content text plus, for tool calls, each
    /// function name and its arguments.
    pub fn searchable_text(&self) -> Cow<'_, str> {
        let calls = self.tool_calls();
        if calls.is_empty() {
            return self.content_text();
        }
        let mut text = self.content_text().into_owned();
        for call in calls {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(call.name());
            text.push(' ');
            text.push_str(call.arguments());
        }
        Cow::Owned(text)
    }

    /// This message as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a message always serializes")
    }

    /// Builds a message from a JSON value; fails when it is not an object with a string `role`.
    pub fn from_value(value: Value) -> Result<Self, MessageError> {
        let Value::Object(object) = value else {
            return Err(MessageError::NotAnObject);
        };
        Self::from_object(object)
    }

    fn from_object(mut object: Map<String, Value>) -> Result<Self, MessageError> {
        let role = object.shift_remove("role");
        let content = object.shift_remove("content");
        Self::from_parts(role, content, object)
    }

    /// A message from its `role` and `content` values and its other fields.
    fn from_parts(
        role: Option<Value>,
        content: Option<Value>,
        mut object: Map<String, Value>,
    ) -> Result<Self, MessageError> {
        let role = match role {
            Some(Value::String(role)) => role,
            Some(_) => return Err(MessageError::RoleNotAString),
            None => return Err(MessageError::MissingRole),
        };
        let content = match content {
            None => Content::Absent,
            Some(value) => content_from_value(value),
        };
        let tool_calls = match object.get("tool_calls") {
            Some(Value::Array(calls)) if calls.iter().all(Value::is_object) => {
                let Some(Value::Array(calls)) = object.shift_remove("tool_calls") else {
                    unreachable!("checked just above");
                };
                let calls = calls
                    .into_iter()
                    .map(|call| match call {
                        Value::Object(call) => ToolCall::from_json(call),
                        _ => unreachable!("checked just above"),
                    })
                    .collect::<Vec<_>>();
                ROption::RSome(RVec::from(calls))
            }
            _ => ROption::RNone,
        };
        let tool_call_id = take_string(&mut object, "tool_call_id");
        let name = take_string(&mut object, "name");
        let extra = if object.is_empty() {
            RString::new()
        } else {
            RString::from(Value::Object(object).to_string())
        };
        Ok(Message {
            role: RString::from(role),
            content,
            tool_calls,
            tool_call_id: tool_call_id.map(RString::from).into(),
            name: name.map(RString::from).into(),
            extra,
            stamp: Stamp::fresh(),
        })
    }
}

/// Why a JSON value is not a chat message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// The value is an array, a string or another non-object.
    #[error("a message must be a JSON object")]
    NotAnObject,
    /// The object has no `role` key.
    #[error("the message has no \"role\"")]
    MissingRole,
    /// The `role` is present but not a string.
    #[error("the message's \"role\" is not a string")]
    RoleNotAString,
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("role", self.role.as_str())?;
        match &self.content {
            Content::Absent => {}
            Content::Null => map.serialize_entry("content", &Value::Null)?,
            Content::Text(text) => map.serialize_entry("content", text.as_str())?,
            Content::Json(json) => map.serialize_entry("content", &raw_json(json))?,
        }
        if let ROption::RSome(calls) = &self.tool_calls {
            let calls: Vec<Value> = calls.iter().map(ToolCall::to_json).collect();
            map.serialize_entry("tool_calls", &calls)?;
        }
        if let ROption::RSome(id) = &self.tool_call_id {
            map.serialize_entry("tool_call_id", id.as_str())?;
        }
        if let ROption::RSome(name) = &self.name {
            map.serialize_entry("name", name.as_str())?;
        }
        if !self.extra.is_empty() {
            for (key, value) in parse_object(&self.extra) {
                map.serialize_entry(&key, &value)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MessageVisitor)
    }
}

/// Reads a message's object with `role` and `content` (most messages hold nothing else)
/// straight into their places, and only the other fields into a map.
struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a chat message (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let (mut role, mut content) = (None, None);
        let mut rest = Map::new();
        // As in a JSON object read whole, the last of two equal keys wins.
        while let Some(key) = map.next_key::<FieldName>()? {
            match key {
                FieldName::Role => role = Some(map.next_value()?),
                FieldName::Content => content = Some(map.next_value()?),
                FieldName::Other(key) => {
                    rest.insert(key, map.next_value()?);
                }
            }
        }
        Message::from_parts(role, content, rest).map_err(A::Error::custom)
    }
}

/// Reads one field of an object as a `T` (the last of two equal keys, as a whole read would),
/// skipping the others without building them.
struct OneField<'k, T> {
    key: &'k str,
    read: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> Visitor<'de> for OneField<'_, T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == self.key {
                found = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A key of a message's object.
enum FieldName {
    Role,
    Content,
    Other(String),
}

impl<'de> Deserialize<'de> for FieldName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl Visitor<'_> for NameVisitor {
            type Value = FieldName;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<FieldName, E> {
                Ok(match name {
                    "role" => FieldName::Role,
                    "content" => FieldName::Content,
                    other => FieldName::Other(other.to_string()),
                })
            }

            fn visit_string<E: serde::de::Error>(self, name: String) -> Result<FieldName, E> {
                Ok(match name.as_str() {
                    "role" => FieldName::Role,
                    "content" => FieldName::Content,
                    _ => FieldName::Other(name),
                })
            }
        }
        deserializer.deserialize_str(NameVisitor)
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&serde_json::to_string(self).map_err(|_| fmt::Error)?)
    }
}

fn opt_str(value: &ROption<RString>) -> &str {
    match value {
        ROption::RSome(text) => text.as_str(),
        ROption::RNone => "",
    }
}

fn take_string(object: &mut Map<String, Value>, key: &str) -> Option<String> {
    match object.get(key) {
        Some(Value::String(_)) => match object.shift_remove(key) {
            Some(Value::String(text)) => Some(text),
            _ => unreachable!("checked just above"),
        },
        _ => None,
    }
}

/// The text moves into the content (no copy: a JSON transcript's texts are most of it).
fn content_from_value(value: Value) -> Content {
    match value {
        Value::Null => Content::Null,
        Value::String(text) => Content::Text(RString::from(text)),
        other => Content::Json(RString::from(other.to_string())),
    }
}

/// Stored JSON text is always produced by serde_json from a value, so it parses back.
fn parse_object(text: &str) -> Map<String, Value> {
    if text.is_empty() {
        return Map::new();
    }
    serde_json::from_str(text).unwrap_or_default()
}

fn raw_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

fn parts_text(json: &str) -> String {
    let value = raw_json(json);
    let mut text = String::new();
    let mut push = |part: &str| {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(part);
    };
    match &value {
        Value::Array(parts) => {
            for part in parts {
                match part {
                    Value::String(s) => push(s),
                    Value::Object(fields) => {
                        if let Some(Value::String(s)) = fields.get("text") {
                            push(s);
                        }
                    }
                    _ => {}
                }
            }
        }
        Value::Object(fields) => {
            if let Some(Value::String(s)) = fields.get("text") {
                push(s);
            }
        }
        _ => {}
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(value: Value) {
        let message: Message = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap(), value);
    }

    #[test]
    fn one_extra_field_reads_as_the_whole_would() {
        let message: Message = serde_json::from_value(json!({"role": "user", "content": "hi",
            "meta": {"big": [1, 2, 3]}, "kind": "a", "kind": "b", "count": 7}))
        .unwrap();
        assert_eq!(message.extra_field::<String>("kind").as_deref(), Some("b"));
        assert_eq!(
            message.extra_field::<Value>("meta"),
            message.extra_fields().get("meta").cloned()
        );
        assert_eq!(message.extra_field::<String>("count"), None);
        assert_eq!(message.extra_field::<Value>("absent"), None);
        assert_eq!(Message::user("hi").extra_field::<Value>("meta"), None);
        let call = &serde_json::from_value::<Message>(json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}, "x": 1}]}))
        .unwrap()
        .tool_calls()[0]
        .clone();
        assert_eq!(
            call.to_value(),
            json!({"id": "c1", "type": "function",
            "function": {"name": "f", "arguments": "{}"}, "x": 1})
        );
    }

    #[test]
    fn plain_messages_round_trip() {
        round_trip(json!({"role": "system", "content": "be brief"}));
        round_trip(json!({"role": "user", "content": "hi", "name": "ada"}));
        round_trip(json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}));
    }

    #[test]
    fn unknown_fields_and_parts_round_trip() {
        round_trip(json!({
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}}
            ],
            "x_vendor": {"nested": [1, 2.5, null]},
            "cache_control": {"type": "ephemeral"}
        }));
        round_trip(
            json!({"role": "assistant", "content": null, "reasoning": "hmm", "refusal": null}),
        );
    }

    #[test]
    fn tool_calls_round_trip_with_odd_shapes() {
        round_trip(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"type": "function", "function": {"name": "cat", "arguments": {"path": "x"}, "strict": true}, "index": 1},
                {"id": "c", "function": "not-an-object"},
                {"id": "d"}
            ]
        }));
        round_trip(json!({"role": "assistant", "content": "", "tool_calls": []}));
        round_trip(json!({"role": "assistant", "tool_calls": "weird"}));
        round_trip(json!({"role": "tool", "tool_call_id": 7, "content": "x"}));
    }

    #[test]
    fn accessors_read_the_typed_fields() {
        let message: Message = serde_json::from_value(json!({
            "role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "tool_calls": [{"id": "1", "type": "function", "function": {"name": "run", "arguments": "{\"x\":1}"}}]
        }))
        .unwrap();
        assert_eq!(message.content_text(), "a\nb");
        assert_eq!(message.tool_calls()[0].id(), "1");
        assert_eq!(message.tool_calls()[0].name(), "run");
        assert_eq!(message.searchable_text(), "a\nb\nrun {\"x\":1}");
    }

    #[test]
    fn built_messages_serialize_in_the_standard_shape() {
        let call = Message::assistant_tool_calls(vec![ToolCall::new("c1", "ls", "{}")]);
        assert_eq!(
            call.to_value(),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ]})
        );
        let mut message = Message::user("x");
        message.set_extra_field("reasoning", Some(json!("r")));
        assert_eq!(
            message.to_value(),
            json!({"role": "user", "content": "x", "reasoning": "r"})
        );
        message.set_extra_field("reasoning", None);
        assert_eq!(message.to_value(), json!({"role": "user", "content": "x"}));
    }

    #[test]
    fn non_messages_are_rejected() {
        assert_eq!(
            Message::from_value(json!([1])),
            Err(MessageError::NotAnObject)
        );
        assert_eq!(
            Message::from_value(json!({"content": "x"})),
            Err(MessageError::MissingRole)
        );
        assert_eq!(
            Message::from_value(json!({"role": 3})),
            Err(MessageError::RoleNotAString)
        );
    }

    #[test]
    fn a_clone_shares_its_stamp_and_every_other_message_gets_its_own() {
        let message = Message::user("hi");
        let clone = message.clone();
        assert_eq!(clone.stamp(), message.stamp());
        let built_again = Message::user("hi");
        let read_again: Message = serde_json::from_value(message.to_value()).unwrap();
        for other in [&built_again, &read_again] {
            assert_ne!(other.stamp(), message.stamp());
            // Equal all the same: the stamp is not part of what a message says.
            assert_eq!(*other, message);
            assert_eq!(format!("{other:?}"), format!("{message:?}"));
        }
    }

    #[test]
    fn every_change_gives_a_new_stamp() {
        let call = ToolCall::new("c1", "grep", "{}");
        let original = Message::assistant_tool_calls(vec![call]);
        let changes: [fn(&mut Message); 5] = [
            |m| m.set_text("same"),
            |m| m.set_content_json(&json!(null)),
            |m| m.set_extra_field("reasoning", Some(json!("..."))),
            |m| m.tool_calls_mut()[0].set_arguments("{\"x\":1}"),
            // Borrowed to change, even if nothing is changed in the end.
            |m| {
                let _ = m.tool_calls_mut();
            },
        ];
        for change in changes {
            let mut changed = original.clone();
            change(&mut changed);
            assert_ne!(changed.stamp(), original.stamp());
        }
        // The same length, other text: told apart by the text once the stamps differ.
        let mut edited = Message::user("abc");
        let before = edited.clone();
        edited.set_text("xyz");
        assert_ne!(edited, before);
    }

    #[test]
    fn a_stamp_is_shared_only_between_equal_messages() {
        let message = Message::user("hi");
        let mut equal = Message::user("hi");
        let mut other = Message::user("ho");
        assert!(equal.share_stamp(&message));
        assert_eq!(equal.stamp(), message.stamp());
        assert!(!other.share_stamp(&message));
        assert_ne!(other.stamp(), message.stamp());
    }
}
