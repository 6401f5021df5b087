//! # ctxhost-plugin-host
//!
//! The host side of the engine plugin ABI: [`load_library`] opens a plugin's cdylib and checks
//! its interface version, layout and manifest; [`PluginLibrary::instantiate`] builds an engine
//! from it, serving the host's [`HostBackend`](ctxhost_sdk::HostBackend) to the plugin; the
//! [`PluginEngine`] it returns is a [`ContextEngine`](ctxhost_sdk::ContextEngine) like any
//! built-in engine (the protocol's remote engine, over the plugin's engine object). A library that does not load says why in one line ([`LoadError`]).
//!
//! Engine authors never depend on this crate: they write against `ctxhost-sdk`, and
//! `ctxhost-protocol`'s `export_engine!` builds the plugin side of the same interface.

#![warn(missing_docs)]

mod backend;
mod engine;
mod library;
mod load_error;

pub use engine::{PluginEngine, PluginObject};
pub use library::{load_library, PluginLibrary};
pub use load_error::{LoadError, LoadErrorKind};
