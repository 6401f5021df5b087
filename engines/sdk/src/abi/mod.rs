//! The frozen binary interface between the host and engine plugins: the layout both sides
//! compile against and the wire form of errors.
//!
//! It is kept small and frozen, because abi_stable refuses a plugin built against an older
//! layout: a root module with `manifest()` and `new_engine(setup, host)`, an engine object whose
//! hot paths are typed (`should_compress`, `compress`) and whose every other operation is an
//! `EngineCall` of the engine-call protocol (`ctxhost-protocol`) travelling as JSON through
//! `invoke(op, payload, messages)` (the protocol's `invoke` form), and a host
//! object the same way. A new operation is a new call of the protocol, never a layout change; an
//! op a plugin does not know answers "unsupported" and the host falls back to the default
//! behaviour.
//!
//! Each side builds its half beside it, on top of the protocol that the `invoke` entry point
//! carries: the plugin side is `ctxhost_protocol::export_engine!` (with the host's services seen
//! from the plugin); the host side (loading a library, checking it, wrapping its engine object
//! back into a [`ContextEngine`](crate::ContextEngine)) is the `ctxhost-plugin-host` crate, which
//! is why these items are public. The layout stays in this crate whoever builds on it:
//! abi_stable checks the crate each of its types comes from. Engine authors never touch it, so
//! the module is hidden from the SDK's docs: they implement
//! [`ContextEngine`](crate::ContextEngine) and write `ctxhost_protocol::export_engine!`.
//!
//! The host-side loader is not part of this crate at all, neither here nor at its root (one
//! name per block, so each block fails only for its own name):
//!
//! ```compile_fail,E0432
//! use ctxhost_sdk::abi::load_library;
//! ```
//!
//! ```compile_fail,E0432
//! use ctxhost_sdk::load_library;
//! ```
//!
//! ```compile_fail,E0432
//! use ctxhost_sdk::abi::PluginLibrary;
//! ```
//!
//! ```compile_fail,E0432
//! use ctxhost_sdk::abi::PluginEngine;
//! ```
//!
//! ```compile_fail,E0432
//! use ctxhost_sdk::abi::LoadError;
//! ```
//!
//! while the layout the loader checks is:
//!
//! ```
//! use abi_stable::library::RootModule;
//! use ctxhost_sdk::abi::EngineModuleRef;
//!
//! assert_eq!(EngineModuleRef::NAME, "ctxhost_engine");
//! ```

// `#[sabi_trait]` expands to impls of abi_stable's traits inside a const block.
#![allow(non_local_definitions)]

mod new_engine;

pub use new_engine::{NewEngine, Purpose};

use abi_stable::library::RootModule;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{RBox, RResult, RSlice, RStr, RString, RVec};
use abi_stable::{declare_root_module_statics, package_version_strings, sabi_trait, StableAbi};

use crate::error::{EngineError, ErrorKind, SettingFault};
use crate::message::Message;
use crate::services::LogLevel;

/// An [`EngineError`] crossing the boundary: its [`ErrorKind`] as a number and its message (a
/// setting error's [`SettingFault`] as JSON). Convert with `From` both ways; a kind code from a
/// newer peer reads as [`ErrorKind::Failed`].
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct AbiError {
    kind: u32,
    message: RString,
}

impl From<EngineError> for AbiError {
    fn from(error: EngineError) -> Self {
        // A setting error carries its key as data: the fault travels as JSON, like every other
        // structured value crossing the boundary.
        let message = match error.setting() {
            Some(fault) => serde_json::to_string(fault).unwrap_or_else(|_| error.message().into()),
            None => error.message().to_string(),
        };
        AbiError {
            kind: error.kind().code(),
            message: RString::from(message),
        }
    }
}

impl From<AbiError> for EngineError {
    fn from(error: AbiError) -> Self {
        let kind = ErrorKind::from_code(error.kind);
        if kind == ErrorKind::InvalidSetting {
            if let Ok(fault) = serde_json::from_str::<SettingFault>(error.message.as_str()) {
                return EngineError::invalid_setting(fault.key, fault.problem);
            }
            return EngineError::new(ErrorKind::InvalidInput, error.message.into_string());
        }
        EngineError::new(kind, error.message.into_string())
    }
}

/// The engine object a plugin hands the host: a [`ContextEngine`](crate::ContextEngine) behind
/// the boundary. The plugin side catches every panic and answers it as an
/// [`ErrorKind::Panicked`] error.
#[sabi_trait]
pub trait EngineObject: Send {
    /// [`ContextEngine::should_compress`](crate::ContextEngine::should_compress), typed: it runs
    /// on every turn.
    fn should_compress(&mut self, prompt_tokens: u64) -> RResult<bool, AbiError>;

    /// [`ContextEngine::compress`](crate::ContextEngine::compress), with the messages passed
    /// without serialization. `options` is [`CompressOptions`](crate::CompressOptions) as JSON.
    fn compress(
        &mut self,
        messages: RSlice<'_, Message>,
        options: RStr<'_>,
    ) -> RResult<RVec<Message>, AbiError>;

    /// Every other operation, an `EngineCall` of the protocol (`ctxhost-protocol`) in its
    /// `invoke` form: `op` names it, `payload` is its JSON argument,
    /// `messages` the message list for the operations that take one. Answers JSON, or
    /// [`ErrorKind::Unsupported`] for an op the plugin does not know.
    #[sabi(last_prefix_field)]
    fn invoke(
        &mut self,
        op: RStr<'_>,
        payload: RStr<'_>,
        messages: RSlice<'_, Message>,
    ) -> RResult<RString, AbiError>;
}

/// The host object a plugin receives at construction: the host's
/// [`HostBackend`](crate::HostBackend) behind the boundary. The host side catches its own panics.
#[sabi_trait]
pub trait HostObject: Send + Sync {
    /// [`HostBackend::count_tokens`](crate::HostBackend::count_tokens).
    fn count_tokens(&self, text: RStr<'_>) -> u64;

    /// [`HostBackend::log`](crate::HostBackend::log); `level` is a [`LogLevel`] as a byte
    /// (0 debug, 1 info, 2 warn, 3 error), read back with [`log_level_from_code`].
    fn log(&self, engine: RStr<'_>, level: u8, message: RStr<'_>);

    /// Services by name with JSON payloads (`summarize`, ...).
    #[sabi(last_prefix_field)]
    fn call(&self, service: RStr<'_>, payload: RStr<'_>) -> RResult<RString, AbiError>;
}

/// An owned [`EngineObject`], as `new_engine` returns it.
pub type EngineBox = EngineObject_TO<'static, RBox<()>>;
/// An owned [`HostObject`], as `new_engine` receives it.
pub type HostBox = HostObject_TO<'static, RBox<()>>;

/// The [`LogLevel`] a [`HostObject::log`] byte stands for; an unknown code reads as
/// [`LogLevel::Error`].
pub fn log_level_from_code(code: u8) -> LogLevel {
    LogLevel::from_code(code)
}

/// The byte [`HostObject::log`] carries for `level`.
pub fn log_level_code(level: LogLevel) -> u8 {
    level.code()
}

/// The root module every engine plugin exports; `ctxhost_protocol::export_engine!` builds it.
/// The host reaches it through [`EngineModuleRef`], after abi_stable has checked its layout.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = EngineModuleRef)))]
#[sabi(missing_field(panic))]
pub struct EngineModule {
    /// The plugin's [`Manifest`](crate::Manifest) as JSON.
    pub manifest: extern "C" fn() -> RString,
    /// Builds an engine. `setup` is [`EngineSetup`](crate::EngineSetup) as JSON.
    #[sabi(last_prefix_field)]
    pub new_engine: extern "C" fn(setup: RStr<'_>, host: HostBox) -> RResult<EngineBox, AbiError>,
}

// The names abi_stable checks, and the SDK's version: a plugin built against another
// `ctxhost-sdk` major (another minor while 0.x) is refused before its layout is compared.
impl RootModule for EngineModuleRef {
    declare_root_module_statics! {EngineModuleRef}
    const BASE_NAME: &'static str = "ctxhost_engine";
    const NAME: &'static str = "ctxhost_engine";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}
