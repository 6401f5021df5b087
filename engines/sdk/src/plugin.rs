//! What makes an engine a plugin: a manifest, a constructor, and one `export_engine!` line.

use crate::engine::ContextEngine;
use crate::error::EngineError;
use crate::manifest::Manifest;
use crate::services::HostServices;

/// An engine that can be built by the host from a plugin library.
pub trait EnginePlugin: ContextEngine + Sized + 'static {
    /// The plugin's self-description. `name` is what users put in `context.engine`.
    fn manifest() -> Manifest;

    /// Builds the engine. `services` carries the engine's config section, data directory and
    /// model; keep it to count tokens, summarize and log later.
    fn create(services: HostServices) -> Result<Self, EngineError>;

    /// Checks the engine's settings (`services.config()`) without side effects: no store opened,
    /// no directory created, no network. The host calls it before writing a setting
    /// (`ctxhost config set plugins.<name>.<key> ...`). Report a wrong setting with
    /// [`EngineError::invalid_setting`]; [`HostServices::config_as`] already does for settings
    /// that do not read. The default accepts everything.
    fn validate_settings(services: &HostServices) -> Result<(), EngineError> {
        let _ = services;
        Ok(())
    }
}

/// Exports an [`EnginePlugin`] as the root module of a cdylib, with every entry point guarded
/// against panics. Use it once, at the root of the plugin crate:
///
/// ```
/// # use ctxhost_sdk::*;
/// # struct MyEngine;
/// # impl ContextEngine for MyEngine {
/// #     fn name(&self) -> &str { "mine" }
/// #     fn should_compress(&mut self, _: u64) -> Result<bool, EngineError> { Ok(false) }
/// #     fn compress(&mut self, m: &[Message], _: &CompressOptions) -> Result<Vec<Message>, EngineError> {
/// #         Ok(m.to_vec())
/// #     }
/// #     fn status(&mut self) -> Result<EngineStatus, EngineError> { Ok(EngineStatus::default()) }
/// # }
/// # impl EnginePlugin for MyEngine {
/// #     fn manifest() -> Manifest { Manifest::new("mine", "0.1.0", "Mine.") }
/// #     fn create(_: HostServices) -> Result<Self, EngineError> { Ok(MyEngine) }
/// # }
/// ctxhost_sdk::export_engine!(MyEngine);
/// # fn main() {}
/// ```
///
/// The crate must be built as a `cdylib` (`crate-type = ["cdylib"]`, plus `"rlib"` to link the
/// engine into tests too), and export one engine.
#[macro_export]
macro_rules! export_engine {
    ($engine:ty) => {
        /// The abi_stable library header the host looks up (`ROOT_MODULE_LOADER_NAME`).
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #[no_mangle]
        pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::abi::__private::LibHeader = {
            extern "C" fn __ctxhost_root_module() -> $crate::abi::__private::RootModuleResult {
                $crate::abi::__private::__call_root_module_loader(
                    $crate::abi::__private::root_module::<$engine>,
                )
            }
            // SAFETY: the constructor returns the module type it is declared with.
            unsafe {
                $crate::abi::__private::LibHeader::from_constructor::<$crate::abi::EngineModuleRef>(
                    __ctxhost_root_module,
                    $crate::abi::__private::CheckTypeLayout::Yes,
                )
            }
        };
    };
}
