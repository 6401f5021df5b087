//! Engine plugins on disk: where the host looks, what it finds there, and loading them.

mod descriptor;
mod discover;

pub use descriptor::{Descriptor, CONTEXT_ENGINE_KIND, DESCRIPTOR_FILE};
pub use discover::{discover, Candidate, PluginRoot, RootKind};
