//! A URL that never shows its password: the one type every URL a message or a banner prints
//! goes through (an upstream, a summarizer's `base_url`, a database URL).

use std::fmt;
use std::str::FromStr;

use percent_encoding::percent_decode_str;

/// A URL (`scheme://user:password@host:port/path?params`), kept as written for connecting and
/// shown (Display, Debug) with every secret masked: the password in the userinfo and any
/// `password`, `key`, `token` or `secret` parameter. Text that is not a URL (a mistyped
/// setting, a libpq `key=value` string) shows with its `password=` values masked.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct RedactedUrl {
    raw: String,
}

/// What a masked secret shows as.
const MASK: &str = "***";

impl RedactedUrl {
    pub fn new(raw: impl Into<String>) -> Self {
        RedactedUrl { raw: raw.into() }
    }

    /// The URL as written, password included: for connecting, never for a message.
    pub fn expose(&self) -> &str {
        &self.raw
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

fn decode(text: &str) -> String {
    percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// `raw` with every password replaced by [`MASK`].
pub fn masked(raw: &str) -> String {
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

/// Whether a query parameter named `key` carries a credential (`password`, `key`, `api_key`,
/// `access_token`, `secret`, ...).
fn is_secret_param(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key == "apikey"
        || ["password", "key", "token", "secret", "sig", "signature"]
            .iter()
            .any(|word| key == *word || key.ends_with(&format!("_{word}")))
}

/// `text` with the value of each credential parameter after its first `?` masked.
fn masked_params(text: &str) -> String {
    let Some((location, query)) = text.split_once('?') else {
        return text.to_string();
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_secret_param(&decode(key)) => {
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
    fn an_http_url_shows_no_credential() {
        assert_eq!(
            shown("http://user:secret@127.0.0.1:9/v1"),
            "http://user:***@127.0.0.1:9/v1"
        );
        assert_eq!(
            shown("https://h/v1beta?key=AIzaSECRET&alt=sse"),
            "https://h/v1beta?key=***&alt=sse"
        );
        assert_eq!(
            shown("https://h/v1?api_key=s&access_token=t&x=1"),
            "https://h/v1?api_key=***&access_token=***&x=1"
        );
        assert_eq!(
            format!("{:?}", RedactedUrl::new("http://u:pw@h")),
            "RedactedUrl(\"http://u:***@h\")"
        );
        assert_eq!(
            shown("https://api.openai.com/v1"),
            "https://api.openai.com/v1"
        );
    }
}
