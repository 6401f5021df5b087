//! Where `ctxhost plugins install --shipped` takes the shipped engines' libraries from: beside
//! the running ctxhost when they were built with it, else from the release build already in the
//! source tree this ctxhost was built from when it is up to date, else built there, when that
//! tree is still there.

use std::path::{Path, PathBuf};

use super::{build_cdylibs, checkout_build, InstallError};
use crate::descriptor::Descriptor;
use crate::shipped::{source_tree, ShippedEngine, SHIPPED};
use ctxhost_config::home::executable_dir;

/// Where a shipped engine's library came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Found beside the running ctxhost (built by the same cargo build).
    BesideBinary(PathBuf),
    /// Already built in the release output directory of the source tree ctxhost was built
    /// from, and newer than every source it was built from.
    CheckoutBuild(PathBuf),
    /// Built just now, with cargo, in the source tree ctxhost was built from.
    Built(PathBuf),
}

/// The shipped engines' libraries, each with its engine, and where they came from.
#[derive(Debug)]
pub struct Libraries {
    pub libraries: Vec<(&'static ShippedEngine, PathBuf)>,
    pub origin: Origin,
}

/// Each shipped engine with its library, and where the libraries came from. Builds them
/// (`cargo build --release`, cargo's output on the terminal) when they are not beside the
/// running ctxhost.
pub fn libraries() -> Result<Libraries, InstallError> {
    libraries_from(executable_dir().as_deref(), &source_tree())
}

/// [`libraries`], from the directory of the running ctxhost and the source tree it was built
/// from.
fn libraries_from(beside: Option<&Path>, tree: &Path) -> Result<Libraries, InstallError> {
    if let Some(dir) = beside {
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
                origin: Origin::BesideBinary(dir.to_path_buf()),
            });
        }
    }
    let has_sources = tree.join("Cargo.toml").is_file()
        && SHIPPED
            .iter()
            .all(|engine| tree.join(engine.crate_dir).join("Cargo.toml").is_file());
    if !has_sources {
        return Err(InstallError::NoShippedSource {
            binary_dir: beside.map(Path::to_path_buf).unwrap_or_default(),
            source_tree: tree.to_path_buf(),
        });
    }
    if let Some(found) = up_to_date_in_checkout(tree) {
        return Ok(found);
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
                crate_dir: tree.join(engine.crate_dir),
            })?;
        found.push((engine, library));
    }
    Ok(Libraries {
        libraries: found,
        origin: Origin::Built(tree.to_path_buf()),
    })
}

/// The shipped engines' libraries in the release output of the checkout `tree`, when every one
/// is there and up to date ([`checkout_build`]).
fn up_to_date_in_checkout(tree: &Path) -> Option<Libraries> {
    let dir = checkout_build::release_dir(tree);
    let mut manifests = vec![tree.join("Cargo.toml"), tree.join("Cargo.lock")];
    manifests.extend(
        SHIPPED
            .iter()
            .map(|engine| tree.join(engine.crate_dir).join("Cargo.toml")),
    );
    let libraries = SHIPPED
        .iter()
        .map(|engine| {
            let dep_info = format!("{}{}.d", std::env::consts::DLL_PREFIX, engine.library);
            let library = checkout_build::up_to_date(
                &dir,
                &Descriptor::library_file_name(engine.library),
                &dep_info,
                &tree.join(engine.crate_dir),
                &manifests,
            )?;
            Some((engine, library))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Libraries {
        libraries,
        origin: Origin::CheckoutBuild(dir),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_libraries_beside_the_binary_come_first() {
        let beside = tempfile::tempdir().unwrap();
        for engine in SHIPPED {
            let file = Descriptor::library_file_name(engine.library);
            std::fs::write(beside.path().join(file), "a library").unwrap();
        }
        let found = libraries_from(Some(beside.path()), &source_tree()).unwrap();
        assert_eq!(
            found.origin,
            Origin::BesideBinary(beside.path().to_path_buf())
        );
        let names: Vec<&str> = found.libraries.iter().map(|(e, _)| e.name).collect();
        assert_eq!(names, ["lcm", "window"]);
    }

    #[test]
    fn without_libraries_or_sources_it_says_what_to_do() {
        let beside = tempfile::tempdir().unwrap();
        // Only one of the two: not enough to install from here.
        let file = Descriptor::library_file_name(SHIPPED[0].library);
        std::fs::write(beside.path().join(file), "a library").unwrap();
        let gone = beside.path().join("checkout-removed");
        let error = libraries_from(Some(beside.path()), &gone).unwrap_err();
        assert!(
            matches!(error, InstallError::NoShippedSource { .. }),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains(&beside.path().display().to_string()),
            "{message}"
        );
        assert!(message.contains("checkout-removed, gone"), "{message}");
        assert!(
            message.contains("`target/release/ctxhost plugins install --shipped`"),
            "{message}"
        );
    }
}
