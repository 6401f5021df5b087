//! The form calls and replies take through the stable ABI's `invoke(op, payload, messages)`:
//! the operation's [`Op::name`], its arguments as JSON (in the form the table of
//! [`operations`](crate::operations) gives each: `null` for none, one argument as it is, or an
//! object of them by name), the message list beside them without serialization, and the
//! method's return value as JSON. An engine's own operations go as
//! [`ENGINE_PREFIX`] and their name, so they never collide with the trait's.
//!
//! Plugins built earlier read and write exactly this form: it is frozen like the ABI's layout.
//! A name the other side does not know answers [`ErrorKind::Unsupported`](ctxhost_sdk::ErrorKind).

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use ctxhost_sdk::{EngineError, Message};

use crate::{EngineCall, EngineReply, Op};

/// The prefix of an engine's own operations ([`EngineCall::Invoke`]) in `invoke`'s `op`.
pub const ENGINE_PREFIX: &str = "engine.";

/// A call as `invoke` carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeCall<'a> {
    /// The operation's name.
    pub op: String,
    /// Its arguments, as JSON.
    pub payload: String,
    /// The message list, for the operations that take one (empty for the others).
    pub messages: &'a [Message],
}

/// Declares the `invoke` form of every call and reply over the table's calls (see
/// [`operations`](crate::operations)).
macro_rules! invoke_form {
    ($({
        $(#[$doc:meta])*
        $op:ident = $method:ident $({
            $($(#[$field_doc:meta])* $field:ident : $kind:ident $held:ty $(as $argument:ty)?),* $(,)?
        })?,
        $(#[$reply_doc:meta])*
        reply $(($reply:ty))?,
        invoke: $form:ident $(($bare:ident))? $(,)?
    })*) => {
        impl<'a> EngineCall<&'a [Message]> {
            /// This call in `invoke`'s form.
            pub fn to_invoke(&self) -> Result<InvokeCall<'a>, EngineError> {
                let (op, payload) = match self {
                    $(
                        EngineCall::$op $({ $($field),* })? => payload_of!(
                            $form $(($bare))?, Op::$op $($(, $field : $kind)*)?
                        ),
                    )*
                };
                Ok(InvokeCall {
                    op,
                    payload,
                    messages: self.list().copied().unwrap_or_default(),
                })
            }

            /// The call `invoke` carried; [`ErrorKind::Unsupported`](ctxhost_sdk::ErrorKind)
            /// for a name that is not one.
            pub fn from_invoke(
                op: &str,
                payload: &str,
                messages: &'a [Message],
            ) -> Result<Self, EngineError> {
                if let Some(name) = op.strip_prefix(ENGINE_PREFIX) {
                    return Ok(EngineCall::Invoke {
                        name: name.to_string(),
                        payload: parse(payload)?,
                    });
                }
                let Some(known) = Op::from_name(op) else {
                    return Err(EngineError::unsupported(op));
                };
                Ok(match known {
                    $(
                        Op::$op => call_from!(
                            $form, $op, op, payload, messages
                            $(, { $($field : $kind),* })?
                        ),
                    )*
                    // The hot paths have entry points of their own.
                    _ => return Err(EngineError::unsupported(op)),
                })
            }
        }

        impl EngineReply {
            /// This reply in `invoke`'s form: the method's return value as JSON.
            pub fn to_invoke(&self) -> Result<String, EngineError> {
                match self {
                    $(
                        reply_pattern!($op, value $(, $reply)?) => {
                            json(&reply_value!(value $(, $reply)?))
                        }
                    )*
                }
            }
        }

        fn answered(op: Op, answer: &str) -> Result<EngineReply, serde_json::Error> {
            Ok(match op {
                $(Op::$op => reply_of!($op, read(answer)? $(, $reply)?),)*
                // Never sent through `invoke` (see `from_invoke`).
                _ => {
                    return Err(serde::de::Error::custom(format!(
                        "`{}` has no reply through invoke", op
                    )))
                }
            })
        }
    };
}

/// A call's `invoke` name and payload, by its form.
macro_rules! payload_of {
    (null, $op:expr $(, $field:ident : $kind:ident)*) => {{
        $(let _ = $field;)*
        ($op.name().to_string(), json(&())?)
    }};
    (bare($bare:ident), $op:expr $(, $field:ident : $kind:ident)*) => {{
        $(let _ = $field;)*
        ($op.name().to_string(), json($bare)?)
    }};
    (object, $op:expr $(, $field:ident : $kind:ident)*) => {{
        let mut object = serde_json::Map::new();
        $(named_argument!($kind, object, $field);)*
        ($op.name().to_string(), json(&object)?)
    }};
    (engine, $op:expr, $name:ident : $name_kind:ident, $payload:ident : $payload_kind:ident) => {
        (format!("{}{}", ENGINE_PREFIX, $name), json($payload)?)
    };
}

/// Adds `$field` to an `object` payload by its name; the list travels beside the payload.
macro_rules! named_argument {
    (list, $object:ident, $field:ident) => {
        let _ = $field;
    };
    ($kind:ident, $object:ident, $field:ident) => {
        $object.insert(stringify!($field).to_string(), to_value($field)?);
    };
}

/// The call `invoke` carried (`$payload` and the list beside it, `$messages`), by its form.
macro_rules! call_from {
    (null, $op:ident, $name:ident, $payload:ident, $messages:ident $(, { $($field:ident : list),* })?) => {
        EngineCall::$op $({ $($field: $messages),* })?
    };
    (bare, $op:ident, $name:ident, $payload:ident, $messages:ident, { $($field:ident : $kind:ident),* }) => {
        EngineCall::$op { $($field: list_or!($kind, $messages, parse($payload)?)),* }
    };
    (object, $op:ident, $name:ident, $payload:ident, $messages:ident, { $($field:ident : $kind:ident),* }) => {{
        let mut object: serde_json::Map<String, Value> = parse($payload)?;
        EngineCall::$op {
            $($field: list_or!($kind, $messages, field(&mut object, stringify!($field))?)),*
        }
    }};
    // Carried by its prefix (see `from_invoke`), never by a name of its own.
    (engine, $op:ident, $name:ident, $payload:ident, $messages:ident, { $($field:ident : $kind:ident),* }) => {
        return Err(EngineError::unsupported($name))
    };
}

/// `$list` for the list field, `$other` for any other.
macro_rules! list_or {
    (list, $list:expr, $other:expr) => {
        $list
    };
    ($kind:ident, $list:expr, $other:expr) => {
        $other
    };
}

operations!(calls, invoke_form);

impl EngineReply {
    /// The reply `invoke` answered to a call of `op`.
    pub fn from_invoke(op: Op, answer: &str) -> Result<Self, EngineError> {
        answered(op, answer).map_err(|error| {
            EngineError::failed(format!("engine answered `{op}` with invalid JSON: {error}"))
        })
    }
}

/// One named argument of an `object` payload.
fn field<T: DeserializeOwned>(
    object: &mut serde_json::Map<String, Value>,
    name: &'static str,
) -> Result<T, EngineError> {
    let value = object
        .remove(name)
        .ok_or_else(|| <serde_json::Error as serde::de::Error>::missing_field(name))?;
    serde_json::from_value(value).map_err(EngineError::from)
}

fn read<T: DeserializeOwned>(answer: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(answer)
}

/// An empty payload reads as `null`.
fn parse<T: DeserializeOwned>(payload: &str) -> Result<T, EngineError> {
    let payload = if payload.is_empty() { "null" } else { payload };
    serde_json::from_str(payload).map_err(EngineError::from)
}

fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, EngineError> {
    serde_json::to_value(value).map_err(|e| EngineError::failed(e.to_string()))
}

fn json<T: Serialize + ?Sized>(value: &T) -> Result<String, EngineError> {
    serde_json::to_string(value).map_err(|e| EngineError::failed(e.to_string()))
}
