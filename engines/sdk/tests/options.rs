//! `CompressOptions` crosses to plugins as JSON: a field added later (`target_tokens`) reads
//! as absent from a host that does not send it, and is left out when unset, so plugins and
//! hosts of either age keep reading each other's options.

use ctxhost_sdk::CompressOptions;

#[test]
fn target_tokens_is_optional_on_the_wire() {
    let old: CompressOptions = serde_json::from_str(r#"{"force":true}"#).unwrap();
    assert_eq!(old.target_tokens, None);
    assert!(old.force);
    let unset = serde_json::to_value(CompressOptions::default()).unwrap();
    assert!(unset.get("target_tokens").is_none(), "{unset}");
    let sized = CompressOptions {
        target_tokens: Some(1_500),
        ..CompressOptions::default()
    };
    let json = serde_json::to_string(&sized).unwrap();
    assert!(json.contains(r#""target_tokens":1500"#), "{json}");
    let back: CompressOptions = serde_json::from_str(&json).unwrap();
    assert_eq!(back, sized);
}
