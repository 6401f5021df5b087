//! Why a library could not be loaded as an engine plugin, in one line for users and in full for
//! `--verbose`.

use std::path::Path;

use abi_stable::library::LibraryError;

/// Why a library could not be loaded as an engine plugin. [`summary`](Self::summary) is the one
/// line to show; [`detail`](Self::detail) the loader's full text (for `--verbose`).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{summary}")]
pub struct LoadError {
    kind: LoadErrorKind,
    summary: String,
    detail: String,
}

/// The families of load failure, for callers that react differently to each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadErrorKind {
    /// The file is missing or is not a loadable shared library.
    Open,
    /// A shared library without the engine entry point.
    NotAPlugin,
    /// Built against another version or layout of the interface.
    Incompatible,
    /// The plugin's manifest could not be read.
    BadManifest,
    /// The plugin's root module failed to initialize.
    InitFailed,
}

impl LoadError {
    /// Which family of failure this is.
    pub fn kind(&self) -> LoadErrorKind {
        self.kind
    }

    /// One line saying what is wrong and, where there is one, what to do.
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// The full text behind the summary, for `--verbose`: the loader's report (a layout report
    /// runs to thousands of lines) or the manifest that did not read; empty when there is none.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    pub(crate) fn new(kind: LoadErrorKind, summary: String, detail: String) -> Self {
        LoadError {
            kind,
            summary,
            detail,
        }
    }

    pub(crate) fn from_library_error(path: &Path, error: LibraryError) -> Self {
        let detail = error.to_string();
        let (kind, summary) = match &error {
            LibraryError::OpenError { err, .. } => (
                LoadErrorKind::Open,
                if path.exists() {
                    format!("not a loadable shared library ({})", first_line(&err.to_string()))
                } else {
                    "the library file does not exist".to_string()
                },
            ),
            LibraryError::GetSymbolError { .. } => (
                LoadErrorKind::NotAPlugin,
                "a shared library, but not a ctxhost engine (no abi_stable root module)".to_string(),
            ),
            LibraryError::IncompatibleVersionNumber {
                expected_version,
                actual_version,
                ..
            } => (
                LoadErrorKind::Incompatible,
                format!(
                    "built against interface {actual_version}, this host speaks {expected_version}: rebuild the plugin against ctxhost-sdk {expected_version}"
                ),
            ),
            LibraryError::AbiInstability(_)
            | LibraryError::InvalidAbiHeader(_)
            | LibraryError::InvalidCAbi { .. } => (
                LoadErrorKind::Incompatible,
                format!(
                    "incompatible ABI layout ({}): rebuild the plugin against this host's ctxhost-sdk",
                    layout_cause(&detail)
                ),
            ),
            LibraryError::RootModule { .. } => (
                LoadErrorKind::InitFailed,
                format!("the plugin failed to initialize: {}", first_line(&detail)),
            ),
            _ => (LoadErrorKind::Incompatible, first_line(&detail).to_string()),
        };
        LoadError::new(kind, summary, detail)
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(text)
        .trim()
}

/// abi_stable's layout errors run to thousands of lines; the cause is in the trailing `Error:`
/// lines, sometimes followed by `Expected:` / `Found:` values. Keep those, on one line.
fn layout_cause(detail: &str) -> String {
    let lines: Vec<&str> = detail.lines().map(str::trim).collect();
    let Some(last) = lines.iter().rposition(|line| line.starts_with("Error:")) else {
        return first_line(detail).to_string();
    };
    let mut cause = lines[last].trim_start_matches("Error:").trim().to_string();
    let mut rest = lines[last + 1..].iter().filter(|line| !line.is_empty());
    while let Some(label) = rest.next() {
        if let ("Expected:" | "Found:", Some(value)) = (*label, rest.clone().next()) {
            cause.push_str(&format!(
                "; {} {value}",
                label.trim_end_matches(':').to_lowercase()
            ));
            rest.next();
        }
    }
    const MAX: usize = 200;
    match cause.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &cause[..cut]),
        None => cause,
    }
}

#[cfg(test)]
mod tests {
    use super::layout_cause;

    #[test]
    fn layout_cause_keeps_the_trailing_error_and_its_values() {
        let detail = "Compared <this>:\n    lots\nError:first\n  more\n\nError:mismatched package\nExpected:\n    ctxhost-sdk\nFound:\n    other\n";
        assert_eq!(
            layout_cause(detail),
            "mismatched package; expected ctxhost-sdk; found other"
        );
        assert_eq!(layout_cause("just one line"), "just one line");
    }
}
