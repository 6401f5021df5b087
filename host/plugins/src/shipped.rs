//! The engines ctxhost ships (`lcm`, `window`): their packages, libraries and descriptors, and
//! the source tree this ctxhost was built from.

use std::path::{Path, PathBuf};

/// One engine shipped with ctxhost.
#[derive(Debug)]
pub struct ShippedEngine {
    /// The engine's name (its directory under `plugins/context_engine/`).
    pub name: &'static str,
    /// The cargo package that builds it.
    pub package: &'static str,
    /// That package's directory in the source tree (an engine split into several crates keeps
    /// its cdylib in one of them, beside its `plugin.yaml`).
    pub crate_dir: &'static str,
    /// The library's base name, as its `plugin.yaml` gives it.
    pub library: &'static str,
    /// Its `plugin.yaml`, embedded so that the descriptor always matches this build, even where
    /// the source tree is gone (a binary and its libraries copied elsewhere).
    pub descriptor: &'static str,
}

impl ShippedEngine {
    /// Where its `plugin.yaml` lives in the source tree; names the embedded copy in messages.
    pub fn descriptor_path(&self) -> PathBuf {
        source_tree()
            .join("plugins/context_engine")
            .join(self.name)
            .join(crate::DESCRIPTOR_FILE)
    }
}

pub const SHIPPED: &[ShippedEngine] = &[
    ShippedEngine {
        name: "lcm",
        package: "ctxhost-engine-lcm",
        crate_dir: "plugins/context_engine/lcm/engine",
        library: "ctxhost_engine_lcm",
        descriptor: include_str!("../../../plugins/context_engine/lcm/plugin.yaml"),
    },
    ShippedEngine {
        name: "window",
        package: "ctxhost-engine-window",
        crate_dir: "plugins/context_engine/window",
        library: "ctxhost_engine_window",
        descriptor: include_str!("../../../plugins/context_engine/window/plugin.yaml"),
    },
];

/// The shipped engine whose library has base name `library`.
pub fn by_library(library: &str) -> Option<&'static ShippedEngine> {
    SHIPPED.iter().find(|engine| engine.library == library)
}

/// The workspace this binary was built from (it may no longer exist).
pub fn source_tree() -> PathBuf {
    // This crate is `host/plugins` in the workspace.
    let plugins = Path::new(env!("CARGO_MANIFEST_DIR"));
    plugins.ancestors().nth(2).unwrap_or(plugins).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_crate_dir_holds_the_package_that_builds_the_engine() {
        for engine in SHIPPED {
            let manifest = source_tree().join(engine.crate_dir).join("Cargo.toml");
            let text = std::fs::read_to_string(&manifest)
                .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
            assert!(
                text.contains(&format!("name = \"{}\"", engine.package)),
                "{} does not build {}",
                manifest.display(),
                engine.package
            );
            assert!(engine.descriptor_path().is_file(), "{}", engine.name);
        }
    }
}
