//! `plugins.<name>.{isolation, timeout, check_timeout, memory_limit_mb, processes, max_reply_mb}`: the keys of an
//! engine's section that are the host's (where and how the engine runs), not the engine's.

use serde::{Deserialize, Serialize};

use crate::settings::PLUGIN_HOST_SETTINGS;
use serde_json::Value;

/// Where a plugin engine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// In a child process: a crash or a hang cannot take the host down. The default for
    /// plugins installed under `$CTXHOST_HOME`.
    Process,
    /// In the host's own process: the fast path, for engines you build yourself (the default
    /// for a project's plugins, such as this repository's).
    InProcess,
}

/// `plugins.<name>.{isolation, timeout, check_timeout, memory_limit_mb, processes, max_reply_mb}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostPluginSettings {
    /// Overrides the default (process for installed plugins, in-process for project ones).
    pub isolation: Option<Isolation>,
    /// Seconds one call may take before an isolated engine's process is killed.
    pub timeout: f64,
    /// Seconds a per-turn check (`should_compress`, `should_compress_preflight`,
    /// `update_from_response`) may take, in place of `timeout` (a smaller `timeout` caps it):
    /// they run on every turn, so one that hangs must not hold each turn for minutes.
    pub check_timeout: f64,
    /// The isolated engine's address-space limit, in MiB (0: none), for each of its processes.
    pub memory_limit_mb: u64,
    /// How many processes an isolated engine runs in (1..=[`MAX_PROCESSES`](crate::settings::MAX_PROCESSES)); each serves many
    /// sessions, and a session stays on the one it was given (the least loaded).
    pub processes: usize,
    /// The largest answer an isolated engine's process may send for one call, in MiB: the
    /// host reads no more of it (a bigger one fails its call), whatever the process's own
    /// memory limit lets it write.
    pub max_reply_mb: u64,
}

impl Default for HostPluginSettings {
    fn default() -> Self {
        HostPluginSettings {
            isolation: None,
            timeout: 300.0,
            check_timeout: 10.0,
            memory_limit_mb: 8192,
            processes: 1,
            max_reply_mb: 64,
        }
    }
}

impl HostPluginSettings {
    /// Reads the host's keys out of an engine's section; the error names the key.
    pub fn from_section(section: &Value) -> Result<Self, (String, String)> {
        let mut host = serde_json::Map::new();
        if let Value::Object(section) = section {
            for setting in PLUGIN_HOST_SETTINGS {
                if let Some(value) = section.get(setting.key) {
                    host.insert(setting.key.to_string(), value.clone());
                }
            }
        }
        let settings: HostPluginSettings = serde_path_to_error::deserialize(Value::Object(host))
            .map_err(|error| (error.path().to_string(), error.into_inner().to_string()))?;
        let tree = serde_json::to_value(&settings).expect("the settings serialize");
        if let Some(problem) = crate::settings::first_problem(PLUGIN_HOST_SETTINGS, "", &tree) {
            return Err(problem);
        }
        Ok(settings)
    }
}

/// An engine's section without the host's keys: what the engine itself validates.
pub fn engine_only(section: Value) -> Value {
    match section {
        Value::Object(mut map) => {
            for setting in PLUGIN_HOST_SETTINGS {
                map.remove(setting.key);
            }
            Value::Object(map)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::{same, yaml};
    use crate::settings::MAX_PROCESSES;
    use serde_json::{json, Value};

    #[test]
    fn the_checks_deadline_is_its_own_key_and_must_be_positive() {
        let settings = HostPluginSettings::from_section(&json!({"check_timeout": 0.5})).unwrap();
        assert_eq!(settings.check_timeout, 0.5);
        assert_eq!(settings.timeout, HostPluginSettings::default().timeout);
        assert!(HostPluginSettings::default().check_timeout < settings.timeout);
        for bad in [json!(0), json!(-1), json!("soon")] {
            let (key, _) =
                HostPluginSettings::from_section(&json!({"check_timeout": bad})).unwrap_err();
            assert_eq!(key, "check_timeout", "{bad}");
        }
        assert_eq!(
            engine_only(json!({"check_timeout": 1, "mode": "x"})),
            json!({"mode": "x"})
        );
    }

    #[test]
    fn processes_default_to_one_and_are_bounded() {
        assert_eq!(HostPluginSettings::default().processes, 1);
        let settings = HostPluginSettings::from_section(&json!({"processes": 4})).unwrap();
        assert_eq!(settings.processes, 4);
        for bad in [json!(0), json!(MAX_PROCESSES + 1), json!(-2), json!("all")] {
            let (key, _) =
                HostPluginSettings::from_section(&json!({"processes": bad})).unwrap_err();
            assert_eq!(key, "processes", "{bad}");
        }
        assert_eq!(
            engine_only(json!({"processes": 2, "mode": "x"})),
            json!({"mode": "x"})
        );
    }

    #[test]
    fn the_plugin_host_keys_are_declared_with_their_defaults() {
        let defaults = serde_json::to_value(HostPluginSettings::default()).unwrap();
        let mut section = serde_json::Map::new();
        for setting in PLUGIN_HOST_SETTINGS {
            let read = &defaults[setting.key];
            match setting.default.value() {
                Some(value) => assert!(same(read, &yaml(value)), "{}", setting.key),
                None => assert!(read.is_null(), "{}", setting.key),
            }
            section.insert(setting.key.to_string(), yaml(setting.example));
        }
        let settings = HostPluginSettings::from_section(&Value::Object(section.clone())).unwrap();
        let read = serde_json::to_value(settings).unwrap();
        assert!(same(&read, &Value::Object(section)), "{read}");
    }
}
