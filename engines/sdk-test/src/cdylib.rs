//! Finding the engine's own cdylib from its tests, to load it the way the host does.

use std::path::PathBuf;

/// The cdylib `lib_name` (e.g. `ctxhost_engine_window`) that cargo built for this test run:
/// beside the test binary (in `deps/`) or one level up, where `cargo build` puts it. Cargo
/// builds a crate's cdylib with its tests, so a missing one is a panic saying what to build,
/// never a skipped test.
pub fn built_library(lib_name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let name = format!(
        "{}{lib_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let deps = exe.parent().expect("the test binary's directory");
    let candidates = [deps.join(&name), deps.join("..").join(&name)];
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "the cdylib {name} is not where cargo builds it ({} or {}); build the crate \
                 with `crate-type = [\"cdylib\", \"rlib\"]` and run its tests with cargo",
                candidates[0].display(),
                candidates[1].display()
            )
        })
}
