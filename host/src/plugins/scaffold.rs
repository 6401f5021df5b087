//! `ctxhost plugins new`: writes a new engine crate that builds, passes its test and installs
//! as it is: `Cargo.toml` on `ctxhost-sdk` (with a workspace of its own), `plugin.yaml`, a
//! working engine and a test through the engine's public surface.

use std::path::{Path, PathBuf};

use super::install::{check_name, InstallError};

/// The template's files: (path in the new crate, text with `{{...}}` placeholders).
const FILES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../templates/engine/Cargo.toml.tmpl"),
    ),
    (
        "plugin.yaml",
        include_str!("../../templates/engine/plugin.yaml.tmpl"),
    ),
    (
        "README.md",
        include_str!("../../templates/engine/README.md.tmpl"),
    ),
    (
        ".gitignore",
        include_str!("../../templates/engine/gitignore.tmpl"),
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/engine/src/lib.rs.tmpl"),
    ),
    (
        "tests/engine.rs",
        include_str!("../../templates/engine/tests/engine.rs.tmpl"),
    ),
];

#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error(transparent)]
    Name(#[from] InstallError),
    #[error("{0} already exists and is not empty; choose another --path or remove it")]
    NotEmpty(PathBuf),
    #[error("cannot find the ctxhost-sdk sources at {0}; pass --sdk with the path of engines/sdk in a ctxhost checkout")]
    NoSdk(PathBuf),
    #[error("cannot write {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// The SDK this binary was built from, when its sources are still where they were.
pub fn default_sdk_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("engines")
        .join("sdk")
}

/// Writes crate `name` into `dir` and returns the files written. `dir` must not exist or be
/// empty.
pub fn scaffold(name: &str, dir: &Path, sdk: &Path) -> Result<Vec<PathBuf>, ScaffoldError> {
    check_name(name)?;
    if !sdk.join("Cargo.toml").is_file() {
        return Err(ScaffoldError::NoSdk(sdk.to_path_buf()));
    }
    let sdk = sdk.canonicalize().unwrap_or_else(|_| sdk.to_path_buf());
    if dir
        .read_dir()
        .is_ok_and(|mut entries| entries.next().is_some())
    {
        return Err(ScaffoldError::NotEmpty(dir.to_path_buf()));
    }
    let lib_name = name.replace('-', "_");
    let mut type_name = pascal_case(name);
    if !type_name.ends_with("Engine") {
        type_name.push_str("Engine");
    }
    // TOML basic strings take forward slashes on every platform.
    let sdk_path = sdk.display().to_string().replace('\\', "/");
    let mut written = Vec::new();
    for (relative, template) in FILES {
        let text = template
            .replace("{{name}}", name)
            .replace("{{lib_name}}", &lib_name)
            .replace("{{type_name}}", &type_name)
            .replace("{{sdk_path}}", &sdk_path);
        let path = dir.join(relative);
        let write = |path: &Path| -> std::io::Result<()> {
            std::fs::create_dir_all(path.parent().expect("template files have a parent"))?;
            std::fs::write(path, text)
        };
        write(&path).map_err(|error| ScaffoldError::Write {
            path: path.clone(),
            error,
        })?;
        written.push(path);
    }
    Ok(written)
}

/// `my-engine` → `MyEngine`.
fn pascal_case(name: &str) -> String {
    name.split(['-', '_'])
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            let first = chars.next().map(|c| c.to_ascii_uppercase());
            first.into_iter().chain(chars).collect::<String>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_rust_identifiers() {
        assert_eq!(pascal_case("my-engine"), "MyEngine");
        assert_eq!(pascal_case("lcm2_fast"), "Lcm2Fast");
    }

    #[test]
    fn writes_every_file_with_no_placeholder_left() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("my-engine");
        let files = scaffold("my-engine", &target, &default_sdk_path()).unwrap();
        assert_eq!(files.len(), FILES.len());
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(
                !text.contains("{{"),
                "{} keeps a placeholder",
                file.display()
            );
        }
        let lib = std::fs::read_to_string(target.join("src/lib.rs")).unwrap();
        assert!(lib.contains("export_engine!(MyEngine)"));
        assert!(matches!(
            scaffold("my-engine", &target, &default_sdk_path()),
            Err(ScaffoldError::NotEmpty(_))
        ));
        assert!(matches!(
            scaffold("compressor", &dir.path().join("x"), &default_sdk_path()),
            Err(ScaffoldError::Name(_))
        ));
    }
}
