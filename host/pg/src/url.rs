//! A connection URL that never shows its password.

use percent_encoding::percent_decode_str;

use crate::ssl::{SslMode, UnknownSslMode};

use ctxhost_redacted_url::RedactedUrl;

/// A URL the driver cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("not a postgres:// or postgresql:// URL")]
    NotPostgres,
    #[error(transparent)]
    SslMode(#[from] UnknownSslMode),
    /// The driver's reason (it names the option, never its value).
    #[error("not a PostgreSQL URL: {0}")]
    Invalid(String),
}

/// What a [`RedactedUrl`] says as a PostgreSQL connection URL
/// (`postgres://user:password@host:port/database?params`).
pub trait PostgresUrl {
    /// Whether it names PostgreSQL (`postgres://` or `postgresql://`).
    fn is_postgres(&self) -> bool;

    /// The TLS mode its `sslmode` asks for (the last one given; `prefer` when none is).
    fn ssl_mode(&self) -> Result<SslMode, UrlError>;

    /// The driver's configuration: all the URL says, `sslmode` read as libpq reads it (the
    /// driver itself knows only three modes). Connect with [`crate::connector`] for
    /// [`ssl_mode`](Self::ssl_mode).
    fn config(&self) -> Result<tokio_postgres::Config, UrlError>;
}

impl PostgresUrl for RedactedUrl {
    fn is_postgres(&self) -> bool {
        let raw = self.expose();
        raw.starts_with("postgres://") || raw.starts_with("postgresql://")
    }

    fn ssl_mode(&self) -> Result<SslMode, UrlError> {
        let mut mode = SslMode::default();
        for (key, value) in params(self.expose()) {
            if decode(key) == "sslmode" {
                mode = decode(value).parse()?;
            }
        }
        Ok(mode)
    }

    fn config(&self) -> Result<tokio_postgres::Config, UrlError> {
        if !self.is_postgres() {
            return Err(UrlError::NotPostgres);
        }
        let mode = self.ssl_mode()?;
        let mut config: tokio_postgres::Config = without_sslmode(self.expose())
            .parse()
            .map_err(|e: tokio_postgres::Error| UrlError::Invalid(crate::describe(&e)))?;
        config.ssl_mode(mode.driver_mode());
        Ok(config)
    }
}

/// Where the query string starts, as the driver reads a URL: its userinfo runs to the first
/// `@`, and the parameters start at the next `?`.
fn query_start(raw: &str) -> Option<usize> {
    let after_scheme = raw.find("://").map_or(0, |i| i + 3);
    let host_start = raw[after_scheme..]
        .find('@')
        .map_or(after_scheme, |at| after_scheme + at + 1);
    raw[host_start..].find('?').map(|q| host_start + q + 1)
}

/// The `key=value` parameters of a URL's query, still percent-encoded.
fn params(raw: &str) -> impl Iterator<Item = (&str, &str)> {
    let query = query_start(raw).map_or("", |start| &raw[start..]);
    query.split('&').filter_map(|pair| pair.split_once('='))
}

fn decode(text: &str) -> String {
    percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// `raw` without its `sslmode` parameters.
fn without_sslmode(raw: &str) -> String {
    let Some(start) = query_start(raw) else {
        return raw.to_string();
    };
    let kept: Vec<&str> = raw[start..]
        .split('&')
        .filter(|pair| {
            let key = pair.split_once('=').map_or(*pair, |(key, _)| key);
            decode(key) != "sslmode"
        })
        .collect();
    let base = &raw[..start - 1];
    if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_masked_too() {
        let url = RedactedUrl::new("postgres://u:hunter2@h/d?password=hunter3");
        let debug = format!("{url:?}");
        assert!(!debug.contains("hunter"), "{debug}");
        assert!(
            debug.contains("postgres://u:***@h/d?password=***"),
            "{debug}"
        );
        assert_eq!(url.expose(), "postgres://u:hunter2@h/d?password=hunter3");
    }

    #[test]
    fn sslmode_is_read_as_libpq_reads_it() {
        let mode = |raw: &str| RedactedUrl::new(raw).ssl_mode();
        assert_eq!(mode("postgres://h/d"), Ok(SslMode::Prefer));
        assert_eq!(
            mode("postgres://h/d?sslmode=verify-full"),
            Ok(SslMode::VerifyFull)
        );
        assert_eq!(
            mode("postgres://h/d?sslmode=disable&sslmode=verify-ca"),
            Ok(SslMode::VerifyCa),
            "the last one counts"
        );
        assert_eq!(mode("postgres://u:p?sslmode=x@h/d"), Ok(SslMode::Prefer));
        assert!(mode("postgres://h/d?sslmode=sometimes").is_err());
    }

    #[test]
    fn the_driver_gets_the_url_with_its_mode_applied() {
        use tokio_postgres::config::SslMode as Driver;
        let config =
            RedactedUrl::new("postgres://u:pw@h:6543/d?sslmode=verify-full&application_name=x")
                .config()
                .unwrap();
        assert_eq!(config.get_ssl_mode(), Driver::Require);
        assert_eq!(config.get_ports(), [6543]);
        assert_eq!(config.get_password(), Some(&b"pw"[..]));
        assert_eq!(config.get_application_name(), Some("x"));
        let config = RedactedUrl::new("postgres://h/d?sslmode=disable")
            .config()
            .unwrap();
        assert_eq!(config.get_ssl_mode(), Driver::Disable);
        assert_eq!(config.get_dbname(), Some("d"));
        assert_eq!(
            RedactedUrl::new("host=h password=x").config().unwrap_err(),
            UrlError::NotPostgres
        );
        let error = RedactedUrl::new("postgres://u:hunter2@h:port/d")
            .config()
            .unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
        assert!(error.to_string().contains("port"), "{error}");
    }
}
