//! Which database a `plugins.lcm.store` setting names: a `postgres://` (or `postgresql://`)
//! URL, or a path to the SQLite file. Reading it opens nothing, so settings validation stays
//! free of side effects.

use std::path::{Path, PathBuf};

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(PostgresUrl),
}

/// A PostgreSQL URL that parsed as one (not yet connected to).
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl {
    url: String,
}

impl PostgresUrl {
    /// The URL as written, password included: for connecting only.
    pub fn secret(&self) -> &str {
        &self.url
    }

    /// The URL without its password, for messages and logs.
    pub fn masked(&self) -> String {
        without_password(&self.url)
    }
}

impl std::fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.masked())
    }
}

impl Location {
    /// The store `setting` names; none: `default_file` (a relative path is taken from
    /// `data_dir`). A URL that does not parse is an error saying why (password hidden).
    pub fn from_setting(
        setting: Option<&str>,
        data_dir: &Path,
        default_file: &str,
    ) -> Result<Location, String> {
        let Some(setting) = setting.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(Location::Sqlite(data_dir.join(default_file)));
        };
        if is_postgres_url(setting) {
            return Location::postgres(setting);
        }
        if setting.contains("://") {
            return Err(format!(
                "`{}` is neither a postgres:// URL nor a file path",
                without_password(setting)
            ));
        }
        Ok(Location::Sqlite(data_dir.join(setting)))
    }

    /// A PostgreSQL URL, checked without connecting.
    pub fn postgres(url: &str) -> Result<Location, String> {
        url.parse::<postgres::Config>().map_err(|e| {
            format!(
                "`{}` is not a PostgreSQL URL: {e} (expected postgres://user:password@host:port/database)",
                without_password(url)
            )
        })?;
        Ok(Location::Postgres(PostgresUrl {
            url: url.to_string(),
        }))
    }
}

pub fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// `url` with any password replaced, fit for logs and messages.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    // The userinfo ends at the last `@` before the query (a password may hold `/`).
    let query_start = rest.find('?').unwrap_or(rest.len());
    let masked_query = mask_query_password(&rest[query_start..]);
    match rest[..query_start].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let user = userinfo.split(':').next().unwrap_or_default();
            let hidden = if userinfo.contains(':') { ":***" } else { "" };
            format!(
                "{scheme}://{user}{hidden}@{}{masked_query}",
                &rest[at + 1..query_start]
            )
        }
        None => format!("{scheme}://{}{masked_query}", &rest[..query_start]),
    }
}

/// `?password=…` in the query string hidden too.
fn mask_query_password(query: &str) -> String {
    if query.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = query[1..]
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => pair.to_string(),
        })
        .collect();
    format!("?{}", pairs.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            without_password("postgres://app:s3cr/et@db:5432/ctx?sslmode=require"),
            "postgres://app:***@db:5432/ctx?sslmode=require"
        );
        assert_eq!(
            without_password("postgres://db/ctx?password=x&sslmode=disable"),
            "postgres://db/ctx?password=***&sslmode=disable"
        );
        assert_eq!(
            without_password("postgres://app@db/ctx"),
            "postgres://app@db/ctx"
        );
    }

    #[test]
    fn a_setting_names_a_file_or_a_database() {
        let dir = Path::new("/data");
        assert_eq!(
            Location::from_setting(None, dir, "lcm.sqlite").unwrap(),
            Location::Sqlite(dir.join("lcm.sqlite"))
        );
        assert_eq!(
            Location::from_setting(Some("other.sqlite"), dir, "lcm.sqlite").unwrap(),
            Location::Sqlite(dir.join("other.sqlite"))
        );
        let Location::Postgres(url) =
            Location::from_setting(Some("postgres://u:pw@h:5/d"), dir, "lcm.sqlite").unwrap()
        else {
            panic!("a URL names PostgreSQL");
        };
        assert_eq!(url.masked(), "postgres://u:***@h:5/d");
        let error = Location::from_setting(Some("postgres://u:pw@h:x/d"), dir, "f").unwrap_err();
        assert!(!error.contains("pw"), "{error}");
        assert!(Location::from_setting(Some("mysql://h/d"), dir, "f").is_err());
    }
}
