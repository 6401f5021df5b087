//! `ctxhost plugins new`: writes a new engine crate that builds, passes its tests and installs
//! as it is. Its engine and tests are the example engine's (`plugins/context_engine/window`),
//! renamed; the crate around them (`Cargo.toml` on `ctxhost-sdk`, with `ctxhost-sdk-test` and
//! `ctxhost-quality` for its tests and a workspace of its own, `plugin.yaml`, README) comes from
//! `templates/engine/` in this crate.

use std::path::{Path, PathBuf};

use crate::install::{check_name, InstallError};

/// Where a file of the new crate comes from.
enum Source {
    /// A template with `{{name}}`, `{{lib_name}}`, `{{sdk_path}}`, `{{sdk_test_path}}` and
    /// `{{quality_path}}` placeholders.
    Template(&'static str),
    /// A file of the example engine, renamed by [`rename_example`].
    Example(&'static str),
}

/// The new crate's files: (path in the crate, source).
const FILES: &[(&str, Source)] = &[
    (
        "Cargo.toml",
        Source::Template(include_str!("../templates/engine/Cargo.toml.tmpl")),
    ),
    (
        "plugin.yaml",
        Source::Template(include_str!("../templates/engine/plugin.yaml.tmpl")),
    ),
    (
        "README.md",
        Source::Template(include_str!("../templates/engine/README.md.tmpl")),
    ),
    (
        ".gitignore",
        Source::Template(include_str!("../templates/engine/gitignore.tmpl")),
    ),
    (
        "src/lib.rs",
        Source::Example(include_str!(
            "../../../plugins/context_engine/window/src/lib.rs"
        )),
    ),
    (
        "src/engine.rs",
        Source::Example(include_str!(
            "../../../plugins/context_engine/window/src/engine.rs"
        )),
    ),
    (
        "src/settings.rs",
        Source::Example(include_str!(
            "../../../plugins/context_engine/window/src/settings.rs"
        )),
    ),
    (
        "src/window.rs",
        Source::Example(include_str!(
            "../../../plugins/context_engine/window/src/window.rs"
        )),
    ),
    (
        "src/notes.rs",
        Source::Example(include_str!(
            "../../../plugins/context_engine/window/src/notes.rs"
        )),
    ),
    (
        "tests/engine.rs",
        Source::Example(include_str!(
            "../../../plugins/context_engine/window/tests/engine.rs"
        )),
    ),
    (
        "tests/quality.rs",
        Source::Example(include_str!(
            "../../../plugins/context_engine/window/tests/quality.rs"
        )),
    ),
    (
        "tests/common/mod.rs",
        Source::Example(include_str!(
            "../../../plugins/context_engine/window/tests/common/mod.rs"
        )),
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
    #[error("cannot find the ctxhost-sdk-test sources (the new crate's tests use them) at {0}; pass --sdk-test with the path of engines/sdk-test in a ctxhost checkout")]
    NoSdkTest(PathBuf),
    #[error("cannot find the ctxhost-quality sources (the new crate's quality test uses them) at {0}; pass --sdk-test with the path of engines/sdk-test in a ctxhost checkout, whose host/quality it is")]
    NoQuality(PathBuf),
    #[error("cannot write {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// The SDK this binary was built from, when its sources are still where they were.
pub fn default_sdk_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join("engines")
        .join("sdk")
}

/// The test-support crate beside an SDK: `<sdk>/../sdk-test`, where a ctxhost checkout has it.
pub fn default_sdk_test_path(sdk: &Path) -> PathBuf {
    sdk.join("..").join("sdk-test")
}

/// The quality harness of the checkout holding a test-support crate: `<sdk-test>/../../host/quality`.
fn quality_path(sdk_test: &Path) -> PathBuf {
    sdk_test.join("..").join("..").join("host").join("quality")
}

/// Writes crate `name` into `dir` and returns the files written. `dir` must not exist or be
/// empty. The crate depends on the SDK at `sdk` and, for its tests, on the test-support crate
/// at `sdk_test` and the quality harness of the same checkout ([`quality_path`]).
pub fn scaffold(
    name: &str,
    dir: &Path,
    sdk: &Path,
    sdk_test: &Path,
) -> Result<Vec<PathBuf>, ScaffoldError> {
    check_name(name)?;
    if !sdk.join("Cargo.toml").is_file() {
        return Err(ScaffoldError::NoSdk(sdk.to_path_buf()));
    }
    if !sdk_test.join("Cargo.toml").is_file() {
        return Err(ScaffoldError::NoSdkTest(sdk_test.to_path_buf()));
    }
    let quality = quality_path(sdk_test);
    if !quality.join("Cargo.toml").is_file() {
        return Err(ScaffoldError::NoQuality(quality));
    }
    let quality = quality.canonicalize().unwrap_or(quality);
    let sdk = sdk.canonicalize().unwrap_or_else(|_| sdk.to_path_buf());
    let sdk_test = sdk_test
        .canonicalize()
        .unwrap_or_else(|_| sdk_test.to_path_buf());
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
    let sdk_test_path = sdk_test.display().to_string().replace('\\', "/");
    let quality_path = quality.display().to_string().replace('\\', "/");
    let mut written = Vec::new();
    for (relative, source) in FILES {
        let text = match source {
            Source::Template(template) => template
                .replace("{{name}}", name)
                .replace("{{lib_name}}", &lib_name)
                .replace("{{sdk_path}}", &sdk_path)
                .replace("{{sdk_test_path}}", &sdk_test_path)
                .replace("{{quality_path}}", &quality_path),
            Source::Example(text) => rename_example(text, name, &lib_name, &type_name),
        };
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

/// The example engine's text with its names replaced by the new engine's: crate and type names,
/// the engine name users write in config, its config section and the marker it leaves in
/// conversations. "window" as the model's context window stays.
fn rename_example(text: &str, name: &str, lib_name: &str, type_name: &str) -> String {
    text.replace(
        "The example third-party context engine, and the template to copy for a new one (see\n//! `README.md`).",
        "A ctxhost context engine, made from ctxhost's example engine (see\n//! `README.md`).",
    )
    .replace("ctxhost_engine_window", lib_name)
        .replace("ctxhost-engine-window", name)
        .replace("WindowEngine", type_name)
        .replace("\"window\"", &format!("\"{name}\""))
        .replace("plugins.window", &format!("plugins.{name}"))
        .replace("window engine", name)
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

    fn sdk_test() -> PathBuf {
        default_sdk_test_path(&default_sdk_path())
    }

    #[test]
    fn writes_every_file_with_no_placeholder_left() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("my-engine");
        let files = scaffold("my-engine", &target, &default_sdk_path(), &sdk_test()).unwrap();
        assert_eq!(files.len(), FILES.len());
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for placeholder in [
                "{{name}}",
                "{{lib_name}}",
                "{{sdk_path}}",
                "{{sdk_test_path}}",
                "{{quality_path}}",
            ] {
                assert!(
                    !text.contains(placeholder),
                    "{} keeps {placeholder}",
                    file.display()
                );
            }
            assert!(!text.contains("WindowEngine"), "{}", file.display());
        }
        let lib = std::fs::read_to_string(target.join("src/lib.rs")).unwrap();
        assert!(lib.contains("export_engine!(MyEngine)"), "{lib}");
        let engine = std::fs::read_to_string(target.join("src/engine.rs")).unwrap();
        assert!(engine.contains("const NAME: &str = \"my-engine\";"));
        assert!(!engine.contains("WindowEngine"));
        // The tests run on the test-support crate, found beside the SDK.
        let manifest = std::fs::read_to_string(target.join("Cargo.toml")).unwrap();
        let sdk_test = sdk_test().canonicalize().unwrap();
        let line = format!("ctxhost-sdk-test = {{ path = \"{}\" }}", sdk_test.display());
        assert!(manifest.contains(&line), "{manifest}");
        // And on the quality harness of the same checkout.
        let quality = quality_path(&sdk_test).canonicalize().unwrap();
        assert!(quality.ends_with("host/quality"), "{}", quality.display());
        let line = format!("ctxhost-quality = {{ path = \"{}\" }}", quality.display());
        assert!(manifest.contains(&line), "{manifest}");
        let common = std::fs::read_to_string(target.join("tests/common/mod.rs")).unwrap();
        assert!(
            common.contains("FakeHost::builder(\"my-engine\")"),
            "{common}"
        );
        assert!(matches!(
            scaffold("my-engine", &target, &default_sdk_path(), &sdk_test),
            Err(ScaffoldError::NotEmpty(_))
        ));
        assert!(matches!(
            scaffold(
                "compressor",
                &dir.path().join("x"),
                &default_sdk_path(),
                &sdk_test
            ),
            Err(ScaffoldError::Name(_))
        ));
    }

    #[test]
    fn a_missing_test_support_crate_is_named_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("my-engine");
        let nowhere = dir.path().join("sdk-test");
        let error = scaffold("my-engine", &target, &default_sdk_path(), &nowhere).unwrap_err();
        assert!(matches!(&error, ScaffoldError::NoSdkTest(path) if path == &nowhere));
        let message = error.to_string();
        assert!(message.contains("pass --sdk-test"), "{message}");
        assert!(!target.exists());
    }
}
