//! # ctxhost-plugins
//!
//! Engine plugins on disk: where the host looks ([`discover`]), what it finds there
//! ([`Descriptor`], [`inspect`]), whether the user trusts it ([`trust`]), installing one
//! ([`install`], [`shipped`]) and writing a new one ([`scaffold`]). Running a plugin is the
//! host's (ctxhost-core resolves engines, ctxhost-isolation runs them in child processes).

mod descriptor;
mod discover;
pub mod inspect;
pub mod install;
pub mod libraries;
pub mod scaffold;
pub mod shipped;
pub mod trust;

pub use descriptor::{
    Descriptor, LibraryLocation, MissingLibrary, CONTEXT_ENGINE_KIND, DESCRIPTOR_FILE,
};
pub use discover::{discover, Candidate, PluginRoot, RootKind};
pub use inspect::{inspect, refused, Inspection, Loader, Problem, ProblemKind, ReadManifest};

/// Whether `name` can be an engine's name: it becomes a directory under `$CTXHOST_HOME` and a
/// config key, so only lowercase letters, digits, `-` and `_`, starting with a letter or digit,
/// at most 64 bytes (never `..` or a path).
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
}
