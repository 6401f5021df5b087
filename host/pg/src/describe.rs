//! A driver error in words.

/// `error` in one line, down to its cause: the server's own message and SQLSTATE when it sent
/// one (the driver's Display alone says "db error"), else the chain of causes ("error
/// connecting to server: Connection refused", a TLS failure, a timeout).
///
/// The synchronous `postgres` crate's error is this same type.
pub fn describe(error: &tokio_postgres::Error) -> String {
    let text = match error.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                let cause_text = cause.to_string();
                // Some causes repeat their own source's words; say each once.
                if !text.ends_with(&cause_text) {
                    text = format!("{text}: {cause_text}");
                }
                source = cause.source();
            }
            text
        }
    };
    one_line(&text)
}

/// Line breaks (a server's multi-line message) folded into spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn messages_fold_into_one_line() {
        assert_eq!(one_line("a\n  b\r\nc"), "a b c");
    }
}
