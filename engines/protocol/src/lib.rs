//! # ctxhost-protocol
//!
//! The engine-call protocol: every [`ContextEngine`] operation as data, defined once.
//!
//! An engine that runs somewhere else (in a plugin library behind the stable ABI, or in a child
//! process) is reached the same way. The caller holds a [`RemoteEngine`]: a [`ContextEngine`]
//! that turns each method into an [`EngineCall`] and sends it over an [`EngineTransport`]. The
//! engine's side runs [`dispatch`], which turns the call back into the method and its answer
//! into the [`EngineReply`] of the same operation. The two hot paths,
//! [`should_compress`](ctxhost_sdk::ContextEngine::should_compress) and
//! [`compress`](ctxhost_sdk::ContextEngine::compress), are typed transport methods of their own: they run on
//! every turn and carry the whole conversation.
//!
//! Every operation is declared once, in the table of [`operations`]: its name, its arguments,
//! its reply and how it travels through the ABI's `invoke`. [`Op`], [`EngineCall`],
//! [`EngineReply`], [`dispatch`], the [`RemoteEngine`]'s methods and the [`invoke`] form are
//! written over that table, so adding an operation is the trait method (with its default),
//! one entry in the table, and the host's call of it. Transports never list operations.
//!
//! [`Op::name`] is each operation's stable name, the one the ABI's `invoke` carries ([`invoke`]
//! form): add names, never rename one, so plugins built earlier keep answering.
//!
//! The plugin's end of the stable ABI is here too, because it serves `invoke` through
//! [`dispatch`]: [`export_engine!`] turns an engine into the root module a host loads. The
//! layout both ends compile against stays in the SDK (`ctxhost_sdk::abi`): abi_stable checks
//! the crate each of its types comes from, so it never moves. A plugin crate depends on
//! `ctxhost-sdk` for the contract and on this crate for the one `export_engine!` line.
//!
//! [`ContextEngine`]: ctxhost_sdk::ContextEngine

// First: the table and its helpers are macros, seen by the modules declared after it.
#[macro_use]
pub mod operations;
mod dispatch;
#[doc(hidden)]
pub mod export;
pub mod invoke;
mod remote;
mod remote_host;

use std::convert::Infallible;
use std::fmt;

use serde::{Deserialize, Serialize};

pub use dispatch::dispatch;
pub use remote::{EngineTransport, RemoteEngine};

/// Declares [`Op`] over the whole table (see [`operations`]).
macro_rules! op_enum {
    ($($kind:ident { $(#[$doc:meta])* $op:ident = $method:ident $($rest:tt)* })*) => {
        /// Every operation of [`ContextEngine`](ctxhost_sdk::ContextEngine), by name: the hot
        /// paths included, so a host can label any call it makes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Op {
            $(
                #[doc = concat!(
                    "[`ContextEngine::", stringify!($method), "`](ctxhost_sdk::ContextEngine::",
                    stringify!($method), ")", hot_path_note!($kind), "."
                )]
                $op,
            )*
        }

        impl Op {
            /// Every operation, in the trait's order.
            pub const ALL: [Op; [$(Op::$op),*].len()] = [$(Op::$op),*];

            /// The operation's stable name: the trait method's.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Op::$op => stringify!($method),)*
                }
            }

            /// Whether the operation is a typed hot path of every transport rather than an
            /// [`EngineCall`].
            pub const fn is_hot_path(self) -> bool {
                match self {
                    $(Op::$op => is_hot_path!($kind),)*
                }
            }
        }
    };
}

macro_rules! hot_path_note {
    (hot) => {
        " (a hot path)"
    };
    (call) => {
        ""
    };
}

macro_rules! is_hot_path {
    (hot) => {
        true
    };
    (call) => {
        false
    };
}

operations!(op_enum);

impl Op {
    /// The operation named `name`, if any.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Declares [`EngineCall`] and [`EngineReply`] over the table's calls (see [`operations`]).
macro_rules! call_and_reply_enums {
    ($({
        $(#[$doc:meta])*
        $op:ident = $method:ident $({
            $($(#[$field_doc:meta])* $field:ident : $kind:ident $held:ty $(as $argument:ty)?),* $(,)?
        })?,
        $(#[$reply_doc:meta])*
        reply $(($reply:ty))?,
        invoke: $form:ident $(($bare:ident))? $(,)?
    })*) => {
        /// One operation other than the hot paths, with its arguments. `L` is how the call
        /// holds a message list: `&[Message]` where it is made and served, and whatever a
        /// transport sends instead (a change to the list the other side holds, say). A call
        /// holds at most one list.
        ///
        /// Serialized, the tag (`op`) is the operation's [`Op::name`].
        ///
        /// [`Message`]: ctxhost_sdk::Message
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "op", content = "args", rename_all = "snake_case")]
        pub enum EngineCall<L> {
            $(
                $(#[$doc])*
                $op $({
                    $(
                        $(#[$field_doc])*
                        $field: $held,
                    )*
                })?,
            )*
        }

        impl<L> EngineCall<L> {
            /// Which operation this is.
            pub fn op(&self) -> Op {
                match self {
                    $(EngineCall::$op { .. } => Op::$op,)*
                }
            }

            /// The message list the call holds, if it holds one.
            pub fn list(&self) -> Option<&L> {
                match self {
                    $(
                        EngineCall::$op $({ $($field),* })? => {
                            [$($(list_of!($kind ; $field),)*)? None].into_iter().flatten().next()
                        }
                    )*
                }
            }

            /// The same call with its message list (if any) turned into another form by `f`,
            /// which runs at most once; its error is the result's.
            pub fn try_map_list<M, E>(
                self,
                f: impl FnOnce(L) -> Result<M, E>,
            ) -> Result<EngineCall<M>, E> {
                Ok(match self {
                    $(
                        EngineCall::$op $({ $($field),* })? => EngineCall::$op $({
                            $($field: map_list_field!($kind ; $field, f),)*
                        })?,
                    )*
                })
            }
        }

        /// What an [`EngineCall`] answers: the variant of the same operation, holding the
        /// method's return value.
        ///
        /// Serialized, the tag (`op`) is the operation's [`Op::name`].
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "op", content = "value", rename_all = "snake_case")]
        pub enum EngineReply {
            $(
                $(#[$reply_doc])*
                $op $(($reply))?,
            )*
        }

        impl EngineReply {
            /// Which operation this answers.
            pub fn op(&self) -> Op {
                match self {
                    $(EngineReply::$op { .. } => Op::$op,)*
                }
            }
        }
    };
}

/// `Some` of a list field, `None` of any other.
macro_rules! list_of {
    (list ; $field:ident) => {
        Some($field)
    };
    ($kind:ident ; $field:ident) => {{
        let _ = $field;
        None
    }};
}

/// A field of the call [`EngineCall::try_map_list`] makes: the list mapped, any other as it was.
macro_rules! map_list_field {
    (list ; $field:ident, $f:ident) => {
        $f($field)?
    };
    ($kind:ident ; $field:ident, $f:ident) => {
        $field
    };
}

operations!(calls, call_and_reply_enums);

impl<L> EngineCall<L> {
    /// [`try_map_list`](Self::try_map_list) with a conversion that cannot fail.
    pub fn map_list<M>(self, f: impl FnOnce(L) -> M) -> EngineCall<M> {
        match self.try_map_list(|list| Ok::<M, Infallible>(f(list))) {
            Ok(call) => call,
            Err(never) => match never {},
        }
    }
}
