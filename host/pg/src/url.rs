//! A connection URL that never shows its password.

use std::fmt;
use std::str::FromStr;

use percent_encoding::percent_decode_str;

use crate::ssl::{SslMode, UnknownSslMode};

/// A PostgreSQL connection URL (`postgres://user:password@host:port/database?params`), kept as
/// written for connecting and shown (Display, Debug) with every password masked: the one in
/// the userinfo and any `password=` parameter. Text that is not a URL (a mistyped setting, a
/// libpq `key=value` string) shows with its `password=` values masked.
#[derive(Clone, PartialEq, Eq)]
pub struct RedactedUrl {
    raw: String,
}

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

/// What a masked password shows as.
const MASK: &str = "***";

impl RedactedUrl {
    pub fn new(raw: impl Into<String>) -> Self {
        RedactedUrl { raw: raw.into() }
    }

    /// The URL as written, password included: for connecting, never for a message.
    pub fn expose(&self) -> &str {
        &self.raw
    }

    /// Whether it names PostgreSQL (`postgres://` or `postgresql://`).
    pub fn is_postgres(&self) -> bool {
        self.raw.starts_with("postgres://") || self.raw.starts_with("postgresql://")
    }

    /// The TLS mode its `sslmode` asks for (the last one given; `prefer` when none is).
    pub fn ssl_mode(&self) -> Result<SslMode, UrlError> {
        let mut mode = SslMode::default();
        for (key, value) in params(&self.raw) {
            if decode(key) == "sslmode" {
                mode = decode(value).parse()?;
            }
        }
        Ok(mode)
    }

    /// The driver's configuration: all the URL says, `sslmode` read as libpq reads it (the
    /// driver itself knows only three modes). Connect with [`crate::connector`] for
    /// [`ssl_mode`](Self::ssl_mode).
    pub fn config(&self) -> Result<tokio_postgres::Config, UrlError> {
        if !self.is_postgres() {
            return Err(UrlError::NotPostgres);
        }
        let mode = self.ssl_mode()?;
        let mut config: tokio_postgres::Config = without_sslmode(&self.raw)
            .parse()
            .map_err(|e: tokio_postgres::Error| UrlError::Invalid(crate::describe(&e)))?;
        config.ssl_mode(mode.driver_mode());
        Ok(config)
    }
}

impl FromStr for RedactedUrl {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(RedactedUrl::new(text))
    }
}

impl fmt::Display for RedactedUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&masked(&self.raw))
    }
}

impl fmt::Debug for RedactedUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RedactedUrl")
            .field(&masked(&self.raw))
            .finish()
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

/// `raw` with every password replaced by [`MASK`].
fn masked(raw: &str) -> String {
    match raw.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", masked_url(rest)),
        None => masked_conninfo(raw),
    }
}

/// A URL after its `scheme://`.
fn masked_url(rest: &str) -> String {
    // The driver ends the userinfo at the first `@`; the mask goes to the last `@`, so a
    // password holding unencoded `@`, `/` or `?` stays hidden whole (an `@` in the query hides
    // more than it must: a message that says less, never a secret).
    let Some(last) = rest.rfind('@') else {
        return masked_params(rest);
    };
    let (userinfo, after) = (&rest[..last], &rest[last + 1..]);
    let shown_userinfo = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:{MASK}"),
        None => masked_params(userinfo),
    };
    format!("{shown_userinfo}@{}", masked_params(after))
}

/// `text` with the value of each `password` parameter after its first `?` masked.
fn masked_params(text: &str) -> String {
    let Some((location, query)) = text.split_once('?') else {
        return text.to_string();
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if decode(key).eq_ignore_ascii_case("password") => {
                format!("{key}={MASK}")
            }
            _ => pair.to_string(),
        })
        .collect();
    format!("{location}?{}", pairs.join("&"))
}

/// Text that is not a URL, read as libpq's `key=value` form: each `password` value (bare, or
/// quoted with `'`) masked.
fn masked_conninfo(raw: &str) -> String {
    let lower = raw.to_ascii_lowercase();
    let mut out = String::with_capacity(raw.len());
    let mut at = 0;
    while let Some(found) = lower[at..].find("password") {
        let key_start = at + found;
        let key_end = key_start + "password".len();
        let starts_word = raw[..key_start]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        let after_key = raw[key_end..].trim_start();
        if !starts_word || !after_key.starts_with('=') {
            out.push_str(&raw[at..key_end]);
            at = key_end;
            continue;
        }
        let value = after_key[1..].trim_start();
        let value_start = raw.len() - value.len();
        let value_len = if let Some(quoted) = value.strip_prefix('\'') {
            // A quoted value ends at the first `'` not escaped by a backslash.
            let mut escaped = false;
            let close = quoted.char_indices().find(|&(_, c)| {
                let closes = c == '\'' && !escaped;
                escaped = c == '\\' && !escaped;
                closes
            });
            close.map_or(value.len(), |(i, _)| i + 2)
        } else {
            value.find(char::is_whitespace).unwrap_or(value.len())
        };
        out.push_str(&raw[at..value_start]);
        out.push_str(MASK);
        at = value_start + value_len;
    }
    out.push_str(&raw[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(raw: &str) -> String {
        RedactedUrl::new(raw).to_string()
    }

    #[test]
    fn the_userinfo_password_is_masked() {
        assert_eq!(
            shown("postgres://app:s3cr/et@db:5432/ctx?sslmode=require"),
            "postgres://app:***@db:5432/ctx?sslmode=require"
        );
        assert_eq!(
            shown("postgresql://app:pw@db/ctx"),
            "postgresql://app:***@db/ctx"
        );
        assert_eq!(shown("postgres://app:@db/ctx"), "postgres://app:***@db/ctx");
        assert_eq!(shown("postgres://app@db/ctx"), "postgres://app@db/ctx");
        assert_eq!(shown("postgres://db/ctx"), "postgres://db/ctx");
        assert_eq!(shown("postgres://"), "postgres://");
    }

    #[test]
    fn reserved_characters_in_a_password_stay_hidden() {
        // The driver reads up to the first `@`; the mask goes to the last one before the query.
        assert_eq!(
            shown("postgres://app:a@b?c/d@db:5432/ctx?x=1"),
            "postgres://app:***@db:5432/ctx?x=1"
        );
        assert_eq!(
            shown("postgres://app:se?cret@db/ctx"),
            "postgres://app:***@db/ctx"
        );
        assert_eq!(
            shown("postgres://app:p%40ss%3Aword@db/ctx"),
            "postgres://app:***@db/ctx"
        );
        // An `@` in the query: more is hidden, never a password.
        assert_eq!(
            shown("postgres://app@db/ctx?password=pw&application_name=me@box"),
            "postgres://app@db/ctx?password=***&application_name=me@box"
        );
        assert_eq!(
            shown("postgres://app:pw@db/ctx?application_name=me@box"),
            "postgres://app:***@box"
        );
    }

    #[test]
    fn a_password_parameter_is_masked() {
        assert_eq!(
            shown("postgres://db/ctx?password=x&sslmode=disable"),
            "postgres://db/ctx?password=***&sslmode=disable"
        );
        assert_eq!(
            shown("postgres://u:a@db/ctx?sslmode=disable&Password=b&pass%77ord=c"),
            "postgres://u:***@db/ctx?sslmode=disable&Password=***&pass%77ord=***"
        );
        assert_eq!(
            shown("postgres://db/ctx?password="),
            "postgres://db/ctx?password=***"
        );
    }

    #[test]
    fn text_that_is_not_a_url_shows_no_password() {
        assert_eq!(
            shown("host=db password=hunter2 dbname=ctx"),
            "host=db password=*** dbname=ctx"
        );
        assert_eq!(
            shown("host=db password = 'a \\' b' user=u"),
            "host=db password = *** user=u"
        );
        assert_eq!(shown("mysql://u:pw@h/d"), "mysql://u:***@h/d");
        assert_eq!(shown("passwords=none"), "passwords=none");
    }

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
