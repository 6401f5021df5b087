//! Engine plugins on disk: where the host looks, what it finds there, whether the user trusts
//! it, and loading it.

mod descriptor;
mod discover;
pub mod inspect;
pub mod install;
pub mod scaffold;
pub mod shipped;
pub mod trust;

pub use descriptor::{
    executable_dir, Descriptor, LibraryLocation, MissingLibrary, CONTEXT_ENGINE_KIND,
    DESCRIPTOR_FILE,
};
pub use discover::{discover, Candidate, PluginRoot, RootKind};
pub use inspect::{inspect, Inspection, Problem, ProblemKind};
