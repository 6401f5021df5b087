//! Which database a `plugins.lcm.store` setting names: a `postgres://` (or `postgresql://`)
//! URL, or a path to the SQLite file. Reading it opens nothing, so settings validation stays
//! free of side effects.

use std::path::{Path, PathBuf};

use ctxhost_pg::PostgresUrl as _;
use ctxhost_redacted_url::RedactedUrl;

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(PostgresUrl),
}

/// A PostgreSQL URL that parsed as one (not yet connected to); shown without its password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresUrl(RedactedUrl);

impl PostgresUrl {
    /// The URL, for connecting (`ctxhost-pg` reads it) and for messages (its Display hides
    /// the password).
    pub fn redacted(&self) -> &RedactedUrl {
        &self.0
    }

    /// The URL without its password, for messages and logs.
    pub fn masked(&self) -> String {
        self.0.to_string()
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
                RedactedUrl::new(setting)
            ));
        }
        Ok(Location::Sqlite(data_dir.join(setting)))
    }

    /// A PostgreSQL URL, checked without connecting.
    pub fn postgres(url: &str) -> Result<Location, String> {
        let url = RedactedUrl::new(url);
        url.config().map_err(|e| {
            format!(
                "`{url}` is not a PostgreSQL URL: {e} (expected postgres://user:password@host:port/database)"
            )
        })?;
        Ok(Location::Postgres(PostgresUrl(url)))
    }
}

pub fn is_postgres_url(text: &str) -> bool {
    RedactedUrl::new(text).is_postgres()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let error = Location::from_setting(Some("postgres://h/d?password=pw&port=x"), dir, "f")
            .unwrap_err();
        assert!(!error.contains("pw"), "{error}");
        let error =
            Location::from_setting(Some("postgres://h/d?sslmode=always"), dir, "f").unwrap_err();
        assert!(error.contains("sslmode `always`"), "{error}");
        assert!(
            Location::from_setting(Some("postgres://h/d?sslmode=verify-full"), dir, "f").is_ok()
        );
        assert!(Location::from_setting(Some("mysql://h/d"), dir, "f").is_err());
    }
}
