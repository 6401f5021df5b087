//! A plugin's engine object as the transport of a [`RemoteEngine`], so the host treats built-in
//! engines and plugins alike. The hot paths are typed calls; every other operation is an
//! [`EngineCall`] in its `invoke` form.

use abi_stable::std_types::{RSlice, RStr};
use ctxhost_protocol::{EngineCall, EngineReply, EngineTransport, RemoteEngine};
use ctxhost_sdk::abi::EngineBox;
use ctxhost_sdk::{CompressOptions, EngineError, Message};

/// An engine living in a plugin library, built by
/// [`PluginLibrary::instantiate`](crate::PluginLibrary::instantiate).
///
/// Calls run the plugin's code on the calling thread: make them off the async runtime. A panic in
/// the plugin comes back as an [`ErrorKind::Panicked`](ctxhost_sdk::ErrorKind::Panicked) error
/// and disables the engine; an abort or a crash cannot be caught in this process. An operation
/// an older plugin does not know falls back to the trait's default behaviour.
pub type PluginEngine = RemoteEngine<PluginObject>;

/// The engine object a plugin library handed the host.
pub struct PluginObject(EngineBox);

impl PluginObject {
    pub(crate) fn new(object: EngineBox) -> Self {
        PluginObject(object)
    }
}

impl EngineTransport for PluginObject {
    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.0
            .should_compress(prompt_tokens)
            .into_result()
            .map_err(EngineError::from)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        let options = serde_json::to_string(options)?;
        self.0
            .compress(RSlice::from_slice(messages), RStr::from_str(&options))
            .into_result()
            .map(|messages| messages.into_vec())
            .map_err(EngineError::from)
    }

    fn call(&mut self, call: &EngineCall<&[Message]>) -> Result<EngineReply, EngineError> {
        let sent = call.to_invoke()?;
        let answer = self
            .0
            .invoke(
                RStr::from_str(&sent.op),
                RStr::from_str(&sent.payload),
                RSlice::from_slice(sent.messages),
            )
            .into_result()
            .map_err(EngineError::from)?;
        EngineReply::from_invoke(call.op(), answer.as_str())
    }
}
