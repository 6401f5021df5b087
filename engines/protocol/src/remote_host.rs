//! Plugin side: the host object a plugin receives at construction, seen as a [`HostBackend`] so
//! the engine's [`HostServices`](ctxhost_sdk::HostServices) work the same in a plugin as linked in.

use abi_stable::std_types::{RStr, RString};

use ctxhost_sdk::abi::{log_level_code, HostBox};
use ctxhost_sdk::{EngineError, HostBackend, LogLevel};

/// The host's services, reached across the boundary.
pub(crate) struct RemoteHost(pub(crate) HostBox);

impl HostBackend for RemoteHost {
    fn count_tokens(&self, text: &str) -> u64 {
        self.0.count_tokens(RStr::from_str(text))
    }

    fn log(&self, engine: &str, level: LogLevel, message: &str) {
        self.0.log(
            RStr::from_str(engine),
            log_level_code(level),
            RStr::from_str(message),
        );
    }

    fn call(&self, service: &str, payload: &str) -> Result<String, EngineError> {
        self.0
            .call(RStr::from_str(service), RStr::from_str(payload))
            .into_result()
            .map(RString::into_string)
            .map_err(EngineError::from)
    }
}
