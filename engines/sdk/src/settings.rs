//! Reading an engine's settings: a config section into the engine's serde type, with its
//! defaults, and every error naming the key at fault as data.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::EngineError;

/// An engine's settings: a serde type (`#[serde(default)]` gives the defaults, and
/// `deny_unknown_fields` turns a typo into an error) plus the checks serde cannot make.
/// [`HostServices::settings`](crate::HostServices::settings) reads them from the engine's
/// section.
pub trait EngineSettings: DeserializeOwned {
    /// Checks what serde cannot (ranges, one key against another). Report a wrong value with
    /// [`EngineError::invalid_setting`] naming its key. Accepts everything by default.
    fn validate(&self) -> Result<(), EngineError> {
        Ok(())
    }

    /// Reads `section` (see [`read_section`]), then [`validate`](Self::validate)s it.
    fn from_section(section: &Value) -> Result<Self, EngineError> {
        let settings: Self = read_section(section)?;
        settings.validate()?;
        Ok(settings)
    }
}

/// A config section read into `T`; a missing section (`null`) reads as `{}` so
/// `#[serde(default)]` settings work.
///
/// A section that does not read is an [`ErrorKind::InvalidSetting`] error naming the key at
/// fault as data (its dotted path inside the section, e.g. `deadline_ms`), which the host
/// turns into `config.yaml:<line>: plugins.<engine>.<key>: <problem>`.
///
/// [`ErrorKind::InvalidSetting`]: crate::ErrorKind::InvalidSetting
pub fn read_section<T: DeserializeOwned>(section: &Value) -> Result<T, EngineError> {
    let value = match section {
        Value::Null => Value::Object(Default::default()),
        other => other.clone(),
    };
    serde_path_to_error::deserialize::<_, T>(value).map_err(|error| {
        let key = setting_path(error.path());
        let problem = error.into_inner().to_string();
        EngineError::invalid_setting(key, problem)
    })
}

/// The dotted key of a serde path (`summary.max_tokens`, `rules.2`); empty for the root.
fn setting_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let parts: Vec<String> = path
        .iter()
        .filter_map(|segment| match segment {
            Segment::Map { key } => Some(key.clone()),
            Segment::Seq { index } => Some(index.to_string()),
            Segment::Enum { variant } => Some(variant.clone()),
            Segment::Unknown => None,
        })
        .collect();
    parts.join(".")
}
