//! The host's services, exported to a plugin as the [`HostObject`] it receives at construction.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr, RString};
use ctxhost_sdk::abi::{log_level_from_code, AbiError, HostBox, HostObject, HostObject_TO};
use ctxhost_sdk::{EngineError, ErrorKind, HostBackend};

/// Serves a plugin from the host's backend. A panic in the host's own code must not unwind into
/// the plugin (that aborts the process), so each call is caught here.
struct ExportedBackend(Arc<dyn HostBackend>);

impl HostObject for ExportedBackend {
    fn count_tokens(&self, text: RStr<'_>) -> u64 {
        catch_unwind(AssertUnwindSafe(|| self.0.count_tokens(text.as_str()))).unwrap_or(0)
    }

    fn log(&self, engine: RStr<'_>, level: u8, message: RStr<'_>) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            self.0.log(
                engine.as_str(),
                log_level_from_code(level),
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

/// The host object handed to a plugin's `new_engine`.
pub(crate) fn export_backend(backend: Arc<dyn HostBackend>) -> HostBox {
    HostObject_TO::from_value(ExportedBackend(backend), TD_Opaque)
}
