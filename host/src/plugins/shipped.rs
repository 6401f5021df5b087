//! The engines ctxhost ships (`lcm`, `window`) and where `ctxhost plugins install --shipped`
//! takes their libraries from: beside the running ctxhost when they were built with it, else
//! built from the source tree this ctxhost was built from, when that is still there.

use std::path::{Path, PathBuf};

use super::descriptor::{executable_dir, Descriptor};
use super::install::{build_cdylibs, InstallError};

/// One engine shipped with ctxhost.
#[derive(Debug)]
pub struct ShippedEngine {
    /// The engine's name (its directory under `plugins/context_engine/`).
    pub name: &'static str,
    /// The cargo package that builds it.
    pub package: &'static str,
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
            .join(super::DESCRIPTOR_FILE)
    }
}

pub const SHIPPED: &[ShippedEngine] = &[
    ShippedEngine {
        name: "lcm",
        package: "ctxhost-engine-lcm",
        library: "ctxhost_engine_lcm",
        descriptor: include_str!("../../../plugins/context_engine/lcm/plugin.yaml"),
    },
    ShippedEngine {
        name: "window",
        package: "ctxhost-engine-window",
        library: "ctxhost_engine_window",
        descriptor: include_str!("../../../plugins/context_engine/window/plugin.yaml"),
    },
];

/// The shipped engine whose library has base name `library`.
pub fn by_library(library: &str) -> Option<&'static ShippedEngine> {
    SHIPPED.iter().find(|engine| engine.library == library)
}

/// Where a shipped engine's library came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Found beside the running ctxhost (built by the same cargo build).
    BesideBinary(PathBuf),
    /// Built just now, with cargo, in the source tree ctxhost was built from.
    Built(PathBuf),
}

/// The shipped engines' libraries, each with its engine, and where they came from.
#[derive(Debug)]
pub struct Libraries {
    pub libraries: Vec<(&'static ShippedEngine, PathBuf)>,
    pub origin: Origin,
}

/// The workspace this binary was built from (it may no longer exist).
pub fn source_tree() -> PathBuf {
    let host = Path::new(env!("CARGO_MANIFEST_DIR"));
    host.parent().unwrap_or(host).to_path_buf()
}

/// Each shipped engine with its library, and where the libraries came from. Builds them
/// (`cargo build --release`, cargo's output on the terminal) when they are not beside the
/// running ctxhost.
pub fn libraries() -> Result<Libraries, InstallError> {
    let beside = executable_dir();
    if let Some(dir) = &beside {
        let found: Vec<_> = SHIPPED
            .iter()
            .map(|engine| {
                (
                    engine,
                    dir.join(Descriptor::library_file_name(engine.library)),
                )
            })
            .collect();
        if found.iter().all(|(_, library)| library.is_file()) {
            return Ok(Libraries {
                libraries: found,
                origin: Origin::BesideBinary(dir.clone()),
            });
        }
    }
    let tree = source_tree();
    let has_sources = tree.join("Cargo.toml").is_file()
        && SHIPPED.iter().all(|engine| {
            tree.join("plugins/context_engine")
                .join(engine.name)
                .join("Cargo.toml")
                .is_file()
        });
    if !has_sources {
        return Err(InstallError::NoShippedSource {
            binary_dir: beside.unwrap_or_default(),
            source_tree: tree,
        });
    }
    let packages: Vec<&str> = SHIPPED.iter().map(|engine| engine.package).collect();
    let built = build_cdylibs(&tree.join("Cargo.toml"), &packages)?;
    let mut found = Vec::new();
    for engine in SHIPPED {
        let library = built
            .iter()
            .find(|artifact| artifact.target == engine.library)
            .map(|artifact| artifact.file.clone())
            .ok_or_else(|| InstallError::NoCdylib {
                crate_dir: tree.join("plugins/context_engine").join(engine.name),
            })?;
        found.push((engine, library));
    }
    Ok(Libraries {
        libraries: found,
        origin: Origin::Built(tree),
    })
}
