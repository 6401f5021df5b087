//! Engines that cannot hurt the host: a plugin engine runs in a child process (the `ctxhost`
//! binary in a hidden mode, loading the cdylib) and the host talks to it over pipes with the
//! same operations as the ABI ([`protocol`]). A crash, an abort, an exit, a hang past its
//! deadline or an allocation past its memory limit becomes an engine error naming the plugin
//! and the cause ([`parent::ProcessEngine`]); the child ([`child`]) is started again on the
//! next call.

pub mod child;
pub mod lists;
pub mod parent;
pub mod protocol;
mod replies;
pub mod wait;

pub use ctxhost_config::plugin_host::{engine_only, HostPluginSettings, Isolation, HOST_KEYS};
