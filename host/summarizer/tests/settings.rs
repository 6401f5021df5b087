//! `auxiliary.compression` settings: defaults, validation, and what `build` makes of them.

mod support;

use ctxhost_config::summarizer::{Provider, SettingsError, SummarizerSettings};
use ctxhost_summarizer::build;
use serde_json::json;

fn invalid(settings: SummarizerSettings) -> String {
    settings.validate().unwrap_err().to_string()
}

fn remote(provider: Provider) -> SummarizerSettings {
    SummarizerSettings {
        provider,
        model: Some("m".into()),
        ..Default::default()
    }
}

#[test]
fn errors_name_the_key() {
    assert_eq!(
        invalid(remote(Provider::Custom)),
        "auxiliary.compression.base_url: required when provider is custom (e.g. http://127.0.0.1:8080/v1)"
    );
    assert!(invalid(SummarizerSettings {
        model: None,
        ..remote(Provider::Openai)
    })
    .starts_with("auxiliary.compression.model: required when provider is openai"));
    assert!(invalid(SummarizerSettings {
        timeout: 0.0,
        ..Default::default()
    })
    .starts_with("auxiliary.compression.timeout: must be a positive number of seconds"));
    assert!(invalid(SummarizerSettings {
        timeout: f64::NAN,
        ..Default::default()
    })
    .starts_with("auxiliary.compression.timeout:"));
    assert!(invalid(SummarizerSettings {
        max_retries: 99,
        ..Default::default()
    })
    .starts_with("auxiliary.compression.max_retries: must be at most 10"));
    assert!(invalid(SummarizerSettings {
        context_length: Some(10),
        ..Default::default()
    })
    .starts_with("auxiliary.compression.context_length: must be at least 1024"));
    assert!(invalid(SummarizerSettings {
        base_url: Some("ftp://example.com".into()),
        ..remote(Provider::Custom)
    })
    .starts_with("auxiliary.compression.base_url: must be an http:// or https:// URL"));
    assert!(invalid(SummarizerSettings {
        base_url: Some("not a url".into()),
        ..remote(Provider::Custom)
    })
    .starts_with("auxiliary.compression.base_url:"));
    assert!(invalid(SummarizerSettings {
        api_key_env: Some("MY KEY".into()),
        ..remote(Provider::Openai)
    })
    .starts_with("auxiliary.compression.api_key_env: must be an environment variable name"));
    assert!(invalid(SummarizerSettings {
        api_key_env: Some("sk-proj-abcdefghijklmnop".into()),
        ..remote(Provider::Openai)
    })
    .contains("looks like an API key"));
}

#[test]
fn settings_error_reports_its_key() {
    let error = remote(Provider::Custom).validate().unwrap_err();
    assert_eq!(error.key(), "auxiliary.compression.base_url");
    assert!(matches!(error, SettingsError::Invalid { .. }));
}

#[test]
fn yaml_shaped_values_deserialize_with_defaults() {
    let settings: SummarizerSettings =
        serde_json::from_value(json!({"provider": "openrouter", "model": "x/y"})).unwrap();
    assert_eq!(settings.provider, Provider::Openrouter);
    assert_eq!(settings.timeout, 60.0);
    assert_eq!(settings.max_retries, 3);
    assert_eq!(settings.context_length, None);
    settings.validate().unwrap();
    let empty: SummarizerSettings = serde_json::from_value(json!({})).unwrap();
    assert_eq!(empty, SummarizerSettings::default());
    assert!(serde_json::from_value::<SummarizerSettings>(json!({"api_key": "sk-x"})).is_err());
    assert!(serde_json::from_value::<SummarizerSettings>(json!({"provider": "auto"})).is_err());
}

#[test]
fn from_value_names_the_key() {
    assert_eq!(
        SummarizerSettings::from_value(&serde_json::Value::Null).unwrap(),
        SummarizerSettings::default()
    );
    let settings = SummarizerSettings::from_value(&json!({
        "provider": "custom",
        "model": "llama3",
        "base_url": "http://127.0.0.1:8080/v1",
        "timeout": 30,
        "max_retries": 0,
        "context_length": 8192
    }))
    .unwrap();
    assert_eq!(settings.timeout, 30.0);
    assert_eq!(settings.context_length, Some(8192));
    assert_eq!(settings.cooldown(), std::time::Duration::from_secs(60));
    let resting = SummarizerSettings::from_value(&json!({"cooldown_seconds": 5})).unwrap();
    assert_eq!(resting.cooldown(), std::time::Duration::from_secs(5));

    let error = |value| {
        SummarizerSettings::from_value(&value)
            .unwrap_err()
            .to_string()
    };
    assert!(error(json!({"api_key": "sk-x"}))
        .starts_with("auxiliary.compression.api_key: API keys are never stored in config"));
    assert!(error(json!({"modle": "x"}))
        .starts_with("auxiliary.compression.modle: unknown key (expected one of: provider,"));
    assert!(error(json!({"provider": "auto"})).starts_with(
        "auxiliary.compression.provider: must be one of offline, custom, openai, openrouter, anthropic"
    ));
    assert!(error(json!({"timeout": "fast"}))
        .starts_with("auxiliary.compression.timeout: must be a number of seconds"));
    assert!(error(json!({"cooldown_seconds": -1}))
        .starts_with("auxiliary.compression.cooldown_seconds: must be a whole number of seconds"));
    assert!(error(json!({"provider": "custom", "model": "m"}))
        .starts_with("auxiliary.compression.base_url: required when provider is custom"));
    assert!(
        error(json!("offline")).starts_with("auxiliary.compression: must be a mapping of settings")
    );
}

#[test]
fn build_checks_settings_and_describes_the_summarizer() {
    let rt = support::runtime();
    let offline = build(&SummarizerSettings::default(), rt.handle().clone()).unwrap();
    assert_eq!(offline.describe(), "offline");
    let openai = build(
        &SummarizerSettings {
            model: Some("gpt-4o-mini".into()),
            ..remote(Provider::Openai)
        },
        rt.handle().clone(),
    )
    .unwrap();
    assert_eq!(openai.describe(), "openai:gpt-4o-mini");
    let error = build(&remote(Provider::Custom), rt.handle().clone())
        .err()
        .unwrap();
    assert_eq!(error.key(), "auxiliary.compression.base_url");
}
