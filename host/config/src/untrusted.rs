//! What an untrusted project's config may not choose (see [`crate::project`]): the keys it set
//! that are not used until the user trusts it, each with what kind of thing it named. The
//! binary reports them in one line; nothing else decides by the keys' names.

use std::fmt;
use std::path::{Component, Path};

use serde_json::Value;

/// Why a key an untrusted project set is not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withheld {
    /// A credential, or the endpoint a credential would be sent to (the summarizer, the
    /// gateway's upstream, key and tokens): the offline or default one is used.
    Credential,
    /// One of the user's environment variables, for an engine to read.
    Variable,
    /// Where data goes: the gateway's state, an engine's store, a URL, a path outside the
    /// project. Every conversation would be written there.
    Destination,
}

/// A key an untrusted project set that is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// Dotted, as in the file (`serve.state`, `plugins.lcm.store`).
    pub key: String,
    pub why: Withheld,
}

impl Ignored {
    pub fn new(key: impl Into<String>, why: Withheld) -> Self {
        Ignored {
            key: key.into(),
            why,
        }
    }
}

impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key)
    }
}

/// Removes from an engine's section `value` every key (at any depth) that names an
/// environment variable (ending `_env`, like `api_key_env`) or a destination (a URL, or a path
/// outside `project`), recording each one's dotted path under `at`.
pub fn screen_plugin_section(
    value: &mut Value,
    at: &str,
    project: Option<&Path>,
    ignored: &mut Vec<Ignored>,
) {
    let Value::Object(map) = value else {
        return;
    };
    map.retain(|key, value| {
        let why = if key.ends_with("_env") {
            Some(Withheld::Variable)
        } else if names_a_destination(value, project) {
            Some(Withheld::Destination)
        } else {
            None
        };
        if let Some(why) = why {
            ignored.push(Ignored::new(format!("{at}.{key}"), why));
        }
        why.is_none()
    });
    for (key, inner) in map.iter_mut() {
        screen_plugin_section(inner, &format!("{at}.{key}"), project, ignored);
    }
}

/// Whether `value` (or a string in it, for a list) is a URL or a path outside `project`.
fn names_a_destination(value: &Value, project: Option<&Path>) -> bool {
    match value {
        Value::String(text) => is_destination(text, project),
        Value::Array(items) => items.iter().any(|item| match item {
            Value::String(text) => is_destination(text, project),
            _ => false,
        }),
        _ => false,
    }
}

/// A URL (`scheme://…`), a path from the user's home (`~`), an absolute path outside
/// `project`, or a relative path climbing out of where it is taken from (`..`).
pub fn is_destination(text: &str, project: Option<&Path>) -> bool {
    let text = text.trim();
    if text.contains("://") || text.starts_with('~') {
        return true;
    }
    let path = Path::new(text);
    if path.is_absolute() {
        let inside = project.is_some_and(|project| !climbs(path) && path.starts_with(project));
        return !inside;
    }
    climbs(path)
}

fn climbs(path: &Path) -> bool {
    path.components().any(|c| c == Component::ParentDir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths_outside_the_project_are_destinations() {
        let project = Path::new("/srv/app");
        for destination in [
            "postgres://u:p@attacker/loot",
            "https://example.com/hook",
            "/tmp/loot.sqlite",
            "~/loot.sqlite",
            "../../loot.sqlite",
            "/srv/app/../loot.sqlite",
        ] {
            assert!(is_destination(destination, Some(project)), "{destination}");
        }
        for not in ["lcm.sqlite", "gpt-4o", "/srv/app/data/lcm.sqlite", "a b"] {
            assert!(!is_destination(not, Some(project)), "{not}");
        }
        assert!(is_destination("/srv/app/x", None));
    }
}
