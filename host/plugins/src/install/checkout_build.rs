//! A shipped engine's library that cargo already built in the checkout ctxhost came from (its
//! `target/release`, left there by the README's first command or `cargo build --release`).
//! `plugins install --shipped` from an installed ctxhost takes it when it is up to date instead
//! of building the engines again.
//!
//! Up to date means what cargo's own dep-info says: the file `<library>.d` cargo writes beside
//! the library lists every source file it was built from; none of them (nor the manifests and
//! the lockfile, which it does not list) may be newer than the library, and one of them must be
//! in the engine's crate of this checkout (a target directory copied from elsewhere names
//! another checkout's files).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The release output directory of the checkout `tree`: `$CARGO_TARGET_DIR/release` when that
/// is set (relative to the checkout, as cargo reads it), else `tree/target/release`.
pub fn release_dir(tree: &Path) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(|dir| tree.join(dir))
        .unwrap_or_else(|| tree.join("target"));
    target.join("release")
}

/// `library` (a file in `dir`, named `file_name`, whose dep-info is `dep_info_name`) when it is
/// up to date by the rules above: built from `crate_dir`, and newer than everything it was
/// built from and than `manifests`.
pub fn up_to_date(
    dir: &Path,
    file_name: &str,
    dep_info_name: &str,
    crate_dir: &Path,
    manifests: &[PathBuf],
) -> Option<PathBuf> {
    let library = dir.join(file_name);
    let built = modified(&library)?;
    let text = std::fs::read_to_string(dir.join(dep_info_name)).ok()?;
    let sources: Vec<PathBuf> = text.lines().flat_map(sources_of).collect();
    if !sources.iter().any(|source| source.starts_with(crate_dir)) {
        return None;
    }
    let newest = sources.iter().chain(manifests).try_fold(
        SystemTime::UNIX_EPOCH,
        |newest, file| -> Option<SystemTime> {
            // A file gone since the build: the build is not of the checkout as it is.
            Some(newest.max(modified(file)?))
        },
    )?;
    (newest <= built).then_some(library)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The prerequisites of one make-style dep-info line (`target: a.rs b\ c.rs`): paths separated
/// by spaces, a space inside a path escaped with a backslash.
fn sources_of(line: &str) -> Vec<PathBuf> {
    let Some((_, rest)) = line.split_once(": ") else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    let mut current = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next) => current.push(next),
                None => current.push('\\'),
            },
            ' ' => {
                if !current.is_empty() {
                    paths.push(PathBuf::from(std::mem::take(&mut current)));
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        paths.push(PathBuf::from(current));
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::time::Duration;

    struct Checkout {
        dir: tempfile::TempDir,
    }

    impl Checkout {
        /// A checkout with one crate (`engine/`, two sources) and its library built after them.
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            std::fs::create_dir_all(root.join("engine/src dir")).unwrap();
            std::fs::create_dir_all(root.join("target/release")).unwrap();
            for file in ["Cargo.toml", "Cargo.lock", "engine/Cargo.toml"] {
                std::fs::write(root.join(file), "").unwrap();
            }
            std::fs::write(root.join("engine/src dir/lib.rs"), "").unwrap();
            std::fs::write(root.join("engine/src dir/more.rs"), "").unwrap();
            let escaped = |p: &str| root.join(p).display().to_string().replace(' ', "\\ ");
            let deps = format!(
                "{} {}",
                escaped("engine/src dir/lib.rs"),
                escaped("engine/src dir/more.rs")
            );
            let info = format!(
                "{lib}.rlib: {deps}\n\n{lib}.so: {deps}\n",
                lib = root.join("target/release/libengine").display()
            );
            std::fs::write(root.join("target/release/libengine.d"), info).unwrap();
            std::fs::write(root.join("target/release/libengine.so"), "built").unwrap();
            let checkout = Checkout { dir };
            // Sources an hour older than the library, whatever the file system's clock grain.
            let hour_ago = SystemTime::now() - Duration::from_secs(3600);
            for file in [
                "Cargo.toml",
                "Cargo.lock",
                "engine/Cargo.toml",
                "engine/src dir/lib.rs",
                "engine/src dir/more.rs",
            ] {
                checkout.touch(file, hour_ago);
            }
            checkout
        }

        fn root(&self) -> &Path {
            self.dir.path()
        }

        fn touch(&self, file: &str, when: SystemTime) {
            File::options()
                .write(true)
                .open(self.root().join(file))
                .unwrap()
                .set_modified(when)
                .unwrap();
        }

        fn found(&self) -> Option<PathBuf> {
            let root = self.root();
            let manifests = [
                root.join("Cargo.toml"),
                root.join("Cargo.lock"),
                root.join("engine/Cargo.toml"),
            ];
            up_to_date(
                &root.join("target/release"),
                "libengine.so",
                "libengine.d",
                &root.join("engine"),
                &manifests,
            )
        }
    }

    #[test]
    fn a_library_newer_than_its_sources_is_taken() {
        let checkout = Checkout::new();
        assert_eq!(
            checkout.found(),
            Some(checkout.root().join("target/release/libengine.so"))
        );
    }

    #[test]
    fn a_source_or_manifest_edited_since_the_build_makes_it_stale() {
        let later = SystemTime::now() + Duration::from_secs(3600);
        for file in ["engine/src dir/more.rs", "Cargo.lock", "engine/Cargo.toml"] {
            let checkout = Checkout::new();
            checkout.touch(file, later);
            assert_eq!(checkout.found(), None, "{file} is newer than the library");
        }
    }

    #[test]
    fn a_missing_source_dep_info_or_library_means_no_build_to_reuse() {
        for file in [
            "engine/src dir/lib.rs",
            "target/release/libengine.d",
            "target/release/libengine.so",
        ] {
            let checkout = Checkout::new();
            std::fs::remove_file(checkout.root().join(file)).unwrap();
            assert_eq!(checkout.found(), None, "without {file}");
        }
    }

    #[test]
    fn a_build_of_another_checkout_is_not_taken() {
        let checkout = Checkout::new();
        let other = tempfile::tempdir().unwrap();
        let root = checkout.root();
        let up_to_date_elsewhere = up_to_date(
            &root.join("target/release"),
            "libengine.so",
            "libengine.d",
            &other.path().join("engine"),
            &[],
        );
        assert_eq!(up_to_date_elsewhere, None);
    }

    #[test]
    fn dep_info_paths_keep_their_escaped_spaces() {
        assert_eq!(
            sources_of("out.so: /a/b\\ c.rs /d.rs"),
            [PathBuf::from("/a/b c.rs"), PathBuf::from("/d.rs")]
        );
        assert!(sources_of("no prerequisites here").is_empty());
    }
}
