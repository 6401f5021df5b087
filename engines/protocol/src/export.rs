//! The plugin's end of the stable ABI: turns an implementation of [`ContextEngine`] into the
//! engine object and root module the host loads, serving every operation but the hot paths
//! through [`dispatch`]. Every entry point catches panics, because a panic that unwinds across
//! the boundary takes the host process down.

use std::cell::{Cell, RefCell};
use std::panic::{self, catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Once};

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RSlice, RStr, RString, RVec};
use ctxhost_sdk::abi::{
    AbiError, EngineBox, EngineModule, EngineModuleRef, EngineObject, EngineObject_TO, HostBox,
    NewEngine, Purpose,
};
use ctxhost_sdk::{
    CompressOptions, ContextEngine, EngineError, EnginePlugin, ErrorKind, HostServices, Message,
};
use serde::de::DeserializeOwned;

use crate::remote_host::RemoteHost;
use crate::{dispatch, EngineCall};

/// What [`export_engine!`](crate::export_engine) expands to; not part of the public API.
pub mod __private {
    pub use super::library_header;
    pub use super::root_module;
    pub use abi_stable::library::{
        __call_root_module_loader, CheckTypeLayout, IntoRootModuleResult, LibHeader,
        RootModuleResult,
    };
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
/// ctxhost_protocol::export_engine!(MyEngine);
/// # fn main() {}
/// ```
///
/// The crate must be built as a `cdylib` (`crate-type = ["cdylib", "rlib"]`, plus `"rlib"` to
/// link the engine into tests too), and export one engine.
#[macro_export]
macro_rules! export_engine {
    ($engine:ty) => {
        /// The abi_stable library header the host looks up (`ROOT_MODULE_LOADER_NAME`).
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #[no_mangle]
        pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::export::__private::LibHeader = {
            extern "C" fn __ctxhost_root_module() -> $crate::export::__private::RootModuleResult {
                $crate::export::__private::__call_root_module_loader(
                    $crate::export::__private::root_module::<$engine>,
                )
            }
            $crate::export::__private::library_header(__ctxhost_root_module)
        };
    };
}

#[doc(hidden)]
/// The library header of a root module `constructor` builds (what
/// [`export_engine!`](crate::export_engine) exports), with its layout checked on load.
pub const fn library_header(
    constructor: extern "C" fn() -> abi_stable::library::RootModuleResult,
) -> abi_stable::library::LibHeader {
    // SAFETY: the constructor returns the module type the header is declared with: the macro
    // passes the loader of `root_module`, which returns an `EngineModuleRef`.
    unsafe {
        abi_stable::library::LibHeader::from_constructor::<EngineModuleRef>(
            constructor,
            abi_stable::library::CheckTypeLayout::Yes,
        )
    }
}

/// The root module for engine type `E`; [`export_engine!`](crate::export_engine) exports it.
pub fn root_module<E: EnginePlugin>() -> EngineModuleRef {
    EngineModule {
        manifest: manifest_json::<E>,
        new_engine: new_engine::<E>,
    }
    .leak_into_prefix()
}

extern "C" fn manifest_json<E: EnginePlugin>() -> RString {
    let answer = guard(|| Ok(serde_json::to_string(&E::manifest())?));
    match answer {
        Ok(json) => RString::from(json),
        // An empty manifest makes the host report a bad manifest instead of crashing.
        Err(_) => RString::new(),
    }
}

extern "C" fn new_engine<E: EnginePlugin>(
    setup: RStr<'_>,
    host: HostBox,
) -> RResult<EngineBox, AbiError> {
    install_panic_hook();
    across(guard(|| {
        let request: NewEngine = serde_json::from_str(setup.as_str())?;
        let services = HostServices::new(Arc::new(RemoteHost(host)), request.setup);
        if request.purpose == Purpose::ValidateSettings {
            E::validate_settings(&services)?;
            return Ok(EngineObject_TO::from_value(SettingsChecked, TD_Opaque));
        }
        let engine = E::create(services)?;
        Ok(EngineObject_TO::from_value(
            Exported {
                engine,
                disabled_by: None,
            },
            TD_Opaque,
        ))
    }))
}

/// What a settings check returns: the constructor's signature wants an engine, and this one
/// refuses every call (the host drops it unused).
struct SettingsChecked;

impl EngineObject for SettingsChecked {
    fn should_compress(&mut self, _: u64) -> RResult<bool, AbiError> {
        RResult::RErr(EngineError::failed("built only to check settings").into())
    }

    fn compress(
        &mut self,
        _: RSlice<'_, Message>,
        _: RStr<'_>,
    ) -> RResult<RVec<Message>, AbiError> {
        RResult::RErr(EngineError::failed("built only to check settings").into())
    }

    fn invoke(
        &mut self,
        op: RStr<'_>,
        _: RStr<'_>,
        _: RSlice<'_, Message>,
    ) -> RResult<RString, AbiError> {
        RResult::RErr(EngineError::unsupported(op.as_str()).into())
    }
}

/// An engine behind the boundary. After a panic its state cannot be trusted, so it refuses
/// every later call with the reason.
struct Exported<E> {
    engine: E,
    disabled_by: Option<String>,
}

impl<E: ContextEngine> Exported<E> {
    fn run<T>(
        &mut self,
        op: &str,
        body: impl FnOnce(&mut E) -> Result<T, EngineError>,
    ) -> RResult<T, AbiError> {
        if let Some(reason) = &self.disabled_by {
            return RResult::RErr(
                EngineError::failed(format!(
                    "the engine is disabled after it panicked: {reason}"
                ))
                .into(),
            );
        }
        let engine = &mut self.engine;
        let answer = guard(|| body(engine));
        if let Err(error) = &answer {
            if error.kind() == ErrorKind::Panicked {
                self.disabled_by = Some(format!("in {op}: {}", error.message()));
            }
        }
        across(answer)
    }
}

impl<E: ContextEngine> EngineObject for Exported<E> {
    fn should_compress(&mut self, prompt_tokens: u64) -> RResult<bool, AbiError> {
        self.run("should_compress", |engine| {
            engine.should_compress(prompt_tokens)
        })
    }

    fn compress(
        &mut self,
        messages: RSlice<'_, Message>,
        options: RStr<'_>,
    ) -> RResult<RVec<Message>, AbiError> {
        self.run("compress", |engine| {
            let options: CompressOptions = parse(options.as_str())?;
            engine
                .compress(messages.as_slice(), &options)
                .map(RVec::from)
        })
    }

    fn invoke(
        &mut self,
        op: RStr<'_>,
        payload: RStr<'_>,
        messages: RSlice<'_, Message>,
    ) -> RResult<RString, AbiError> {
        let op = op.as_str();
        self.run(op, |engine| {
            let call = EngineCall::from_invoke(op, payload.as_str(), messages.as_slice())?;
            dispatch(engine, call)?.to_invoke().map(RString::from)
        })
    }
}

fn parse<T: DeserializeOwned>(payload: &str) -> Result<T, EngineError> {
    let payload = if payload.is_empty() { "null" } else { payload };
    serde_json::from_str(payload).map_err(EngineError::from)
}

thread_local! {
    static INSIDE_ENTRY_POINT: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// An answer as it crosses the boundary.
fn across<T>(answer: Result<T, EngineError>) -> RResult<T, AbiError> {
    answer.map_err(AbiError::from).into()
}

/// Runs `body`, turning a panic into an error that carries the panic message and location.
fn guard<T>(body: impl FnOnce() -> Result<T, EngineError>) -> Result<T, EngineError> {
    let was_inside = INSIDE_ENTRY_POINT.with(|inside| inside.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(body));
    INSIDE_ENTRY_POINT.with(|inside| inside.set(was_inside));
    match outcome {
        Ok(answer) => answer,
        Err(payload) => {
            let recorded = LAST_PANIC.with(|last| last.borrow_mut().take());
            let message = recorded.unwrap_or_else(|| panic_payload_text(payload.as_ref()));
            // Never dropped: its `Drop` is the plugin's code, and a panic there, outside any
            // `catch_unwind`, would abort the host. A payload is small; leaking it is the cost.
            std::mem::forget(payload);
            Err(EngineError::new(ErrorKind::Panicked, message))
        }
    }
}

/// A panic inside an entry point is reported to the host as an error, so the plugin's own copy
/// of the default hook must not also print it to stderr. Panics elsewhere keep the old hook.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if INSIDE_ENTRY_POINT.with(Cell::get) {
                let mut text = panic_payload_text(info.payload());
                if let Some(location) = info.location() {
                    text.push_str(&format!(" (at {}:{})", location.file(), location.line()));
                }
                LAST_PANIC.with(|last| *last.borrow_mut() = Some(text));
            } else {
                previous(info);
            }
        }));
    });
}

fn panic_payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with a non-text payload".to_string()
    }
}

#[cfg(test)]
mod tests {
    /// `export_engine!` hard-codes the exported symbol's name; it must be abi_stable's.
    #[test]
    fn exported_symbol_name_matches_abi_stable() {
        assert_eq!(
            abi_stable::library::ROOT_MODULE_LOADER_NAME,
            "_1as_0lib_1header_0root_bmodule_bloader"
        );
    }
}
