//! The table of operations: every [`ContextEngine`](ctxhost_sdk::ContextEngine) operation
//! declared once. [`Op`](crate::Op), [`EngineCall`](crate::EngineCall),
//! [`EngineReply`](crate::EngineReply), [`dispatch`](crate::dispatch), the
//! [`RemoteEngine`](crate::RemoteEngine)'s forwarding and the [`invoke`](crate::invoke) form
//! are each written once, over this table, by a macro of the file that holds them.
//!
//! `operations!(consumer)` hands the whole table, in the trait's order, to `consumer!`;
//! `operations!(calls, consumer)` hands it only the entries an [`EngineCall`](crate::EngineCall)
//! carries (every one but the two hot paths, which are typed transport methods of their own).
//!
//! An entry (`call { ... }`) reads:
//!
//! - `Variant = method`, then the call's fields in the method's order when it takes any
//!   (`{ ... }`; none: a unit call). Each field is one of the method's arguments: its kind,
//!   then the type the call holds. `list L` is the message list (the method takes
//!   `&[Message]`; a call holds at most one); `borrowed T` the method takes as `&T`, or as
//!   what follows `as` (`borrowed String as &str`, `borrowed Box<T> as &T`); `copied T` it
//!   takes as a `T`.
//! - `reply` (the method returns `()`) or `reply(T)`.
//! - `invoke:` how the call's arguments travel through the ABI's `invoke` (its payload): `null`
//!   (none but the list), `bare(field)` (that one field as it is), `object` (every field but
//!   the list, by name), or `engine` (an engine's own operation: `engine.<name>`, the payload
//!   as it is).
//!
//! Types are written with their crate (`ctxhost_sdk::Usage`), so an entry needs no import in
//! the files that expand it.
//!
//! Adding an operation is the trait method (with its default, for an optional one), one entry
//! here, and the host's call of it. The names are frozen ([`Op::name`](crate::Op::name)):
//! append entries, never rename one, so plugins built earlier keep answering.

/// The table; see the module's docs.
macro_rules! operations {
    (calls, $consumer:ident) => {
        operations! { keep_calls_for, $consumer }
    };
    ($consumer:ident $(, $before:tt)*) => {
        $consumer! {
            $($before)*
            call {
                /// The usage the provider reported for the last model call.
                UpdateFromResponse = update_from_response {
                    /// As reported.
                    usage: borrowed ctxhost_sdk::Usage,
                },
                /// Done.
                reply,
                invoke: bare(usage),
            }
            hot {
                ShouldCompress = should_compress
            }
            call {
                /// A cheap check before a call, from local estimates.
                ShouldCompressPreflight = should_compress_preflight {
                    /// The context about to be sent.
                    messages: list L,
                },
                /// Whether to compress now.
                reply(bool),
                invoke: null,
            }
            hot {
                Compress = compress
            }
            call {
                /// Whether anything could be compacted.
                HasContentToCompress = has_content_to_compress {
                    /// The context.
                    messages: list L,
                },
                /// Whether anything could be compacted.
                reply(bool),
                invoke: null,
            }
            call {
                /// A session begins.
                OnSessionStart = on_session_start {
                    /// Which, and for which model.
                    session: borrowed ctxhost_sdk::SessionStart,
                },
                /// Done.
                reply,
                invoke: bare(session),
            }
            call {
                /// A session ends.
                OnSessionEnd = on_session_end {
                    /// The session that ended.
                    session_id: borrowed String as &str,
                    /// Its context as it stands.
                    messages: list L,
                },
                /// Done.
                reply,
                invoke: object,
            }
            call {
                /// `/new` or `/reset`.
                OnSessionReset = on_session_reset,
                /// Done.
                reply,
                invoke: null,
            }
            call {
                /// The engine's tools.
                ToolSchemas = tool_schemas,
                /// The tools' JSON schemas (OpenAI function format).
                reply(Vec<serde_json::Value>),
                invoke: null,
            }
            call {
                /// Runs one of the engine's tools.
                HandleToolCall = handle_tool_call {
                    /// The tool's name, as in its schema.
                    name: borrowed String as &str,
                    /// The call's arguments, parsed.
                    args: borrowed serde_json::Value,
                },
                /// The text the agent gets back.
                reply(String),
                invoke: object,
            }
            call {
                /// Where the engine stands.
                Status = status,
                /// Where the engine stands.
                reply(ctxhost_sdk::EngineStatus),
                invoke: null,
            }
            call {
                /// The model changed.
                UpdateModel = update_model {
                    /// The model's name.
                    model: borrowed String as &str,
                    /// Its context window, in tokens.
                    context_length: copied u64,
                },
                /// Done.
                reply,
                invoke: object,
            }
            call {
                /// What the last compression did.
                LastCompression = last_compression,
                /// The last compression's report, if any.
                reply(Option<ctxhost_sdk::CompressionReport>),
                invoke: null,
            }
            call {
                /// The sessions the engine keeps state for.
                Sessions = sessions,
                /// The sessions the engine keeps state for.
                reply(Vec<ctxhost_sdk::SessionInfo>),
                invoke: null,
            }
            call {
                /// One session's state.
                Session = session {
                    /// The session asked about.
                    session_id: borrowed String as &str,
                },
                /// One session's state, if the engine holds any.
                reply(Option<ctxhost_sdk::SessionInfo>),
                invoke: object,
            }
            call {
                /// Forgets one session.
                DeleteSession = delete_session {
                    /// The session to forget.
                    session_id: borrowed String as &str,
                },
                /// Whether there was anything to delete.
                reply(bool),
                invoke: object,
            }
            call {
                /// What to send for one request.
                SelectContext = select_context {
                    /// The messages about to be sent.
                    messages: list L,
                    /// The newest message and the budget (boxed: a call stays small).
                    request: borrowed Box<ctxhost_sdk::SelectRequest> as &ctxhost_sdk::SelectRequest,
                },
                /// The messages to send, and what in them was recalled.
                reply(ctxhost_sdk::ContextSelection),
                invoke: bare(request),
            }
            call {
                /// One of the engine's own operations.
                Invoke = invoke {
                    /// The operation's name, the engine's.
                    name: borrowed String as &str,
                    /// Its argument.
                    payload: borrowed serde_json::Value,
                },
                /// The engine's own operation's answer.
                reply(serde_json::Value),
                invoke: engine,
            }
            call {
                /// Messages that are the engine's own output from an earlier life of the
                /// session.
                RecognizeWritten = recognize_written {
                    /// Those messages.
                    messages: list L,
                },
                /// Done.
                reply,
                invoke: null,
            }
        }
    };
}

/// Hands `$consumer!` the table's call entries only, each as its `{ ... }`.
macro_rules! keep_calls_for {
    ($consumer:ident $($entries:tt)*) => {
        keep_calls_for! { @kept $consumer [] $($entries)* }
    };
    (@kept $consumer:ident [$($kept:tt)*]) => {
        $consumer! { $($kept)* }
    };
    (@kept $consumer:ident [$($kept:tt)*] hot $entry:tt $($rest:tt)*) => {
        keep_calls_for! { @kept $consumer [$($kept)*] $($rest)* }
    };
    (@kept $consumer:ident [$($kept:tt)*] call $entry:tt $($rest:tt)*) => {
        keep_calls_for! { @kept $consumer [$($kept)* $entry] $($rest)* }
    };
}

/// The type the trait method takes for a field of this kind.
macro_rules! argument_type {
    (list $held:ty) => {
        &[ctxhost_sdk::Message]
    };
    (borrowed $held:ty) => {
        &$held
    };
    (borrowed $held:ty as $argument:ty) => {
        $argument
    };
    (copied $held:ty) => {
        $held
    };
}

/// A method's argument, as the call holds it.
macro_rules! hold {
    (list $held:ty ; $argument:ident) => {
        $argument
    };
    (borrowed $held:ty ; $argument:ident) => {
        ::std::clone::Clone::clone($argument)
    };
    (borrowed $held:ty as $borrowed:ty ; $argument:ident) => {
        <$held>::from(::std::borrow::ToOwned::to_owned($argument))
    };
    (copied $held:ty ; $argument:ident) => {
        $argument
    };
}

/// A call's field, as the method takes it.
macro_rules! lend {
    (list $held:ty ; $field:ident) => {
        $field
    };
    (borrowed $held:ty $(as $borrowed:ty)? ; $field:ident) => {
        &$field
    };
    (copied $held:ty ; $field:ident) => {
        $field
    };
}

/// The type a method returns (inside its `Result`).
macro_rules! reply_type {
    () => {
        ()
    };
    ($reply:ty) => {
        $reply
    };
}

/// The pattern of `$op`'s reply, binding what it holds to `$value`.
macro_rules! reply_pattern {
    ($op:ident, $value:ident) => {
        $crate::EngineReply::$op
    };
    ($op:ident, $value:ident, $reply:ty) => {
        $crate::EngineReply::$op($value)
    };
}

/// What the reply [`reply_pattern!`] bound holds: `()` for a reply that holds nothing.
macro_rules! reply_value {
    ($value:ident) => {
        ()
    };
    ($value:ident, $reply:ty) => {
        $value
    };
}

/// `$op`'s reply to what the method returned (`$returned`).
macro_rules! reply_of {
    ($op:ident, $returned:expr) => {{
        let () = $returned;
        $crate::EngineReply::$op
    }};
    ($op:ident, $returned:expr, $reply:ty) => {
        $crate::EngineReply::$op($returned)
    };
}
