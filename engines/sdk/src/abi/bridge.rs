//! Host services across the boundary, both ways: the host wraps its backend into a
//! [`HostBox`]; the plugin wraps the box it receives back into a [`HostBackend`].

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr, RString};

use super::{AbiError, HostBox, HostObject, HostObject_TO};
use crate::error::{EngineError, ErrorKind};
use crate::services::{HostBackend, LogLevel};

/// Host side: serves a plugin from the host's backend. A panic in the host's own code must not
/// unwind into the plugin (that aborts the process), so each call is caught here.
struct HostBridge(Arc<dyn HostBackend>);

impl HostObject for HostBridge {
    fn count_tokens(&self, text: RStr<'_>) -> u64 {
        catch_unwind(AssertUnwindSafe(|| self.0.count_tokens(text.as_str()))).unwrap_or(0)
    }

    fn log(&self, engine: RStr<'_>, level: u8, message: RStr<'_>) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            self.0.log(
                engine.as_str(),
                LogLevel::from_code(level),
                message.as_str(),
            )
        }));
    }

    fn call(&self, service: RStr<'_>, payload: RStr<'_>) -> RResult<RString, AbiError> {
        match catch_unwind(AssertUnwindSafe(|| {
            self.0.call(service.as_str(), payload.as_str())
        })) {
            Ok(Ok(answer)) => RResult::ROk(RString::from(answer)),
            Ok(Err(error)) => RResult::RErr(error.into()),
            Err(_) => RResult::RErr(
                EngineError::new(
                    ErrorKind::Failed,
                    format!("host service `{service}` panicked"),
                )
                .into(),
            ),
        }
    }
}

pub(crate) fn host_box(backend: Arc<dyn HostBackend>) -> HostBox {
    HostObject_TO::from_value(HostBridge(backend), TD_Opaque)
}

/// Plugin side: the host's services as a [`HostBackend`].
pub(crate) struct RemoteHost(pub(crate) HostBox);

impl HostBackend for RemoteHost {
    fn count_tokens(&self, text: &str) -> u64 {
        self.0.count_tokens(RStr::from_str(text))
    }

    fn log(&self, engine: &str, level: LogLevel, message: &str) {
        self.0.log(
            RStr::from_str(engine),
            level.code(),
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
