//! The caller's side of the protocol: an engine that runs elsewhere, seen as a
//! [`ContextEngine`] like any other.

use ctxhost_sdk::{CompressOptions, ContextEngine, EngineError, Message};

use crate::{dispatch, EngineCall, EngineReply, Op};

/// How a [`RemoteEngine`] reaches its engine: the two typed hot paths, and every other
/// operation as an [`EngineCall`] answered by [`dispatch`] on the other side.
pub trait EngineTransport: Send {
    /// [`ContextEngine::should_compress`], typed: it runs on every turn.
    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError>;

    /// [`ContextEngine::compress`], typed: it carries the whole conversation, each way.
    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError>;

    /// Any other operation; the reply is the one the other side's [`dispatch`] gave.
    fn call(&mut self, call: &EngineCall<&[Message]>) -> Result<EngineReply, EngineError>;
}

/// An engine reached through a transport: each [`ContextEngine`] method is one call. An
/// operation the other side does not know ([`ErrorKind::Unsupported`]: a plugin built before
/// the operation existed) does what the trait does by default, when that default is not itself
/// an error.
///
/// [`ErrorKind::Unsupported`]: ctxhost_sdk::ErrorKind::Unsupported
pub struct RemoteEngine<T> {
    name: String,
    transport: T,
}

impl<T: EngineTransport> RemoteEngine<T> {
    /// The engine `name`, reached through `transport`.
    pub fn new(name: impl Into<String>, transport: T) -> Self {
        RemoteEngine {
            name: name.into(),
            transport,
        }
    }

    /// The transport, for what is particular to it.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Sends `call`; see the type's docs for an operation the other side does not know.
    pub fn call(&mut self, call: EngineCall<&[Message]>) -> Result<EngineReply, EngineError> {
        match self.transport.call(&call) {
            Err(error) if error.is_unsupported() => {
                dispatch(&mut TraitDefaults, call).map_err(|_| error)
            }
            other => other,
        }
    }

    fn mismatch(&self, asked: Op, reply: &EngineReply) -> EngineError {
        EngineError::failed(format!(
            "engine '{}' answered {asked} with the reply to {}",
            self.name,
            reply.op()
        ))
    }
}

/// Declares the [`RemoteEngine`]'s method of each of the table's calls (see
/// [`operations`](crate::operations)): the call made of its arguments, sent, and the value
/// taken out of the reply of the same operation.
macro_rules! remote_methods {
    ($({
        $(#[$doc:meta])*
        $op:ident = $method:ident $({
            $($(#[$field_doc:meta])* $field:ident : $kind:ident $held:ty $(as $argument:ty)?),* $(,)?
        })?,
        $(#[$reply_doc:meta])*
        reply $(($reply:ty))?,
        invoke: $form:ident $(($bare:ident))? $(,)?
    })*) => {
        $(
            fn $method(
                &mut self,
                $($($field: argument_type!($kind $held $(as $argument)?)),*)?
            ) -> Result<reply_type!($($reply)?), EngineError> {
                let call = EngineCall::$op $({
                    $($field: hold!($kind $held $(as $argument)? ; $field),)*
                })?;
                let asked = call.op();
                match self.call(call)? {
                    reply_pattern!($op, value $(, $reply)?) => {
                        Ok(reply_value!(value $(, $reply)?))
                    }
                    other => Err(self.mismatch(asked, &other)),
                }
            }
        )*
    };
}

impl<T: EngineTransport> ContextEngine for RemoteEngine<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.transport.should_compress(prompt_tokens)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        self.transport.compress(messages, options)
    }

    operations!(calls, remote_methods);
}

/// The trait's defaults, for an operation the other side does not know. It keeps no tracker, so
/// the defaults that need one answer "unsupported", like the other side did, and so does its
/// one required method.
struct TraitDefaults;

impl ContextEngine for TraitDefaults {
    fn name(&self) -> &str {
        "defaults"
    }

    fn compress(
        &mut self,
        _: &[Message],
        _: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        Err(EngineError::unsupported("compress"))
    }
}
