//! Plugin side: turns an implementation of [`ContextEngine`] into the engine object and root
//! module the host loads. Every entry point catches panics, because a panic that unwinds across
//! the boundary takes the host process down.

use std::cell::{Cell, RefCell};
use std::panic::{self, catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Once};

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RSlice, RStr, RString, RVec};
use serde::de::DeserializeOwned;

use super::remote_host::RemoteHost;
use super::{
    AbiError, EngineBox, EngineModule, EngineModuleRef, EngineObject, EngineObject_TO, HostBox,
    NewEngine, Purpose,
};
use crate::engine::{CompressOptions, ContextEngine};
use crate::error::{EngineError, ErrorKind};
use crate::message::Message;
use crate::plugin::EnginePlugin;
use crate::protocol::{dispatch, EngineCall};
use crate::services::HostServices;

/// The root module for engine type `E`; `export_engine!` exports it.
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
        RResult::ROk(json) => RString::from(json),
        // An empty manifest makes the host report a bad manifest instead of crashing.
        RResult::RErr(_) => RString::new(),
    }
}

extern "C" fn new_engine<E: EnginePlugin>(
    setup: RStr<'_>,
    host: HostBox,
) -> RResult<EngineBox, AbiError> {
    install_panic_hook();
    guard(|| {
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
    })
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
        if let RResult::RErr(error) = &answer {
            if error.kind == ErrorKind::Panicked.code() {
                self.disabled_by = Some(format!("in {op}: {}", error.message));
            }
        }
        answer
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

/// Runs `body`, turning a panic into an error that carries the panic message and location.
fn guard<T>(body: impl FnOnce() -> Result<T, EngineError>) -> RResult<T, AbiError> {
    let was_inside = INSIDE_ENTRY_POINT.with(|inside| inside.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(body));
    INSIDE_ENTRY_POINT.with(|inside| inside.set(was_inside));
    match outcome {
        Ok(Ok(value)) => RResult::ROk(value),
        Ok(Err(error)) => RResult::RErr(error.into()),
        Err(payload) => {
            let recorded = LAST_PANIC.with(|last| last.borrow_mut().take());
            let message = recorded.unwrap_or_else(|| panic_payload_text(payload.as_ref()));
            // Never dropped: its `Drop` is the plugin's code, and a panic there, outside any
            // `catch_unwind`, would abort the host. A payload is small; leaking it is the cost.
            std::mem::forget(payload);
            RResult::RErr(EngineError::new(ErrorKind::Panicked, message).into())
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
