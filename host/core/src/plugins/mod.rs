//! Engine plugins on disk: where the host looks, what it finds there, whether the user trusts
//! it, and loading it.

mod descriptor;
mod discover;
pub mod inspect;
pub mod install;
pub mod libraries;
pub mod scaffold;
pub mod shipped;
pub mod trust;

pub use descriptor::{
    executable_dir, Descriptor, LibraryLocation, MissingLibrary, CONTEXT_ENGINE_KIND,
    DESCRIPTOR_FILE,
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
