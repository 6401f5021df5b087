//! The engine's side of the protocol: a call becomes the method it names.

use ctxhost_sdk::{ContextEngine, EngineError, Message};

use crate::{EngineCall, EngineReply};

/// Declares [`dispatch`] over the table's calls (see [`operations`](crate::operations)).
macro_rules! dispatch_fn {
    ($({
        $(#[$doc:meta])*
        $op:ident = $method:ident $({
            $($(#[$field_doc:meta])* $field:ident : $kind:ident $held:ty $(as $argument:ty)?),* $(,)?
        })?,
        $(#[$reply_doc:meta])*
        reply $(($reply:ty))?,
        invoke: $form:ident $(($bare:ident))? $(,)?
    })*) => {
        /// Runs `call` on `engine` and answers with the reply of the same operation. Every
        /// transport serves calls through this one function: the ABI's `invoke` in a plugin,
        /// and an isolated engine's process.
        pub fn dispatch(
            engine: &mut dyn ContextEngine,
            call: EngineCall<&[Message]>,
        ) -> Result<EngineReply, EngineError> {
            Ok(match call {
                $(
                    EngineCall::$op $({ $($field),* })? => reply_of!(
                        $op,
                        engine.$method($($(lend!($kind $held $(as $argument)? ; $field)),*)?)?
                        $(, $reply)?
                    ),
                )*
            })
        }
    };
}

operations!(calls, dispatch_fn);
