//! The path of a relayed request, checked before it goes anywhere: relayed as `upstream/{path}`
//! with the gateway's key, it must stay under the upstream's base path. A dot segment (`..`,
//! `.`, percent-encoded once or more: `%2e%2e`, `%252e`) or a backslash (`\`, `%5c`, which URL
//! parsers and servers read as `/`) could take it out, so a path holding one is refused: no
//! client of a provider's API sends one.

/// Why a relayed path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelayPathError {
    #[error("it holds a dot segment (`.` or `..`, encoded or not)")]
    DotSegment,
    #[error("it holds a backslash (`\\` or `%5c`)")]
    Backslash,
}

/// A path under the upstream's base path (no leading `/`), as the client wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayPath(String);

impl RelayPath {
    /// `path` (what follows `/v1/`), if it stays under the base path however often it is
    /// decoded.
    pub fn parse(path: &str) -> Result<Self, RelayPathError> {
        let mut form = path.as_bytes().to_vec();
        loop {
            check(&form)?;
            let decoded = percent_decoded(&form);
            // Each decoding that changes anything is shorter: this ends.
            if decoded == form {
                return Ok(RelayPath(path.to_string()));
            }
            form = decoded;
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One form of the path: refused if it has a backslash, or a segment that is `.` or `..`
/// (split at `/`, which an encoded `%2f` becomes once decoded).
fn check(form: &[u8]) -> Result<(), RelayPathError> {
    if form.contains(&b'\\') {
        return Err(RelayPathError::Backslash);
    }
    let dot_segment = form
        .split(|&byte| byte == b'/')
        .any(|segment| segment == b"." || segment == b"..");
    if dot_segment {
        return Err(RelayPathError::DotSegment);
    }
    Ok(())
}

/// `form` with each `%XY` (two hex digits) decoded once; anything else kept.
fn percent_decoded(form: &[u8]) -> Vec<u8> {
    let mut decoded = Vec::with_capacity(form.len());
    let mut rest = form;
    while let Some((&byte, tail)) = rest.split_first() {
        let escaped = match tail {
            [high, low, ..] if byte == b'%' => hex(*high).zip(hex(*low)),
            _ => None,
        };
        match escaped {
            Some((high, low)) => {
                decoded.push(high << 4 | low);
                rest = &tail[2..];
            }
            None => {
                decoded.push(byte);
                rest = tail;
            }
        }
    }
    decoded
}

fn hex(digit: u8) -> Option<u8> {
    (digit as char).to_digit(16).map(|value| value as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_base_path_pass_as_written() {
        for path in [
            "embeddings",
            "files/file-1/content",
            "models/gpt-4o",
            "files/a..b",
            "files/...",
            "files/.hidden",
            "files/abc%2Fdef",
            "files/%41%42",
            "files/100%",
            "files/%zz",
            "",
        ] {
            assert_eq!(RelayPath::parse(path).unwrap().as_str(), path, "{path}");
        }
    }

    #[test]
    fn dot_segments_are_refused_however_they_are_written() {
        for path in [
            "..",
            ".",
            "../admin",
            "./admin",
            "files/..",
            "files/../../admin",
            "%2e%2e/admin",
            "%2E%2E/x",
            ".%2e/admin",
            "%2e./admin",
            "..%2fadmin",
            "..%2Fadmin",
            "files%2f..%2f..%2fadmin",
            "%252e%252e/admin",
            "%25252e%25252e%25252fadmin",
            "%2e",
        ] {
            assert_eq!(
                RelayPath::parse(path),
                Err(RelayPathError::DotSegment),
                "{path}"
            );
        }
    }

    #[test]
    fn backslashes_are_refused_encoded_or_not() {
        for path in [
            "..\\admin",
            "files\\x",
            "..%5cadmin",
            "%5C..%5Cadmin",
            "%255c",
        ] {
            assert_eq!(
                RelayPath::parse(path),
                Err(RelayPathError::Backslash),
                "{path}"
            );
        }
    }
}
