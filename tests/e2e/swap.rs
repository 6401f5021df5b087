//! Swapping engines by config alone.

use ctxhost_sdk::sequence;
use ctxhost_tests::{long_session, Sandbox};
use serde_json::Value;

const SMALL_WINDOW: &str = "model:\n  name: test-model\n  context_length: 16000\n";

#[test]
fn the_same_transcript_through_compressor_and_window_by_config_alone() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    let transcript = sandbox.write_json("session.json", &Value::Array(long_session()));
    let transcript = transcript.to_str().unwrap();

    sandbox.write_config(&format!("context:\n  engine: compressor\n{SMALL_WINDOW}"));
    let compressor = sandbox.ctxhost(&["compress", transcript]);
    assert!(compressor.success(), "{}", compressor.stderr);
    assert!(
        compressor.stderr.starts_with("compressor: "),
        "{}",
        compressor.stderr
    );

    sandbox.write_config(&format!("context:\n  engine: window\n{SMALL_WINDOW}"));
    let window = sandbox.ctxhost(&["compress", transcript]);
    assert!(window.success(), "{}", window.stderr);
    assert_eq!(window.stderr_lines().len(), 1, "{}", window.stderr);
    assert!(window.stderr.starts_with("window: "), "{}", window.stderr);

    let (from_compressor, from_window) = (compressor.messages(), window.messages());
    assert_ne!(compressor.json(), window.json());
    for output in [&from_compressor, &from_window] {
        sequence::validate(output).expect("a valid chat sequence");
        assert!(output.len() < long_session().len());
        assert!(output[0].is_system());
    }
    let window_text: String = from_window
        .iter()
        .map(|m| m.content_text().into_owned())
        .collect();
    assert!(
        window_text.contains("window engine"),
        "the window engine marks what it dropped"
    );
}

#[test]
fn the_window_plugin_resolves_from_the_repository_without_copying_files() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config("context:\n  engine: window\n");
    let list = sandbox.ctxhost(&["plugins", "list", "--json"]);
    assert!(list.success(), "{}", list.stderr);
    let rows = list.json();
    let window = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "window")
        .expect("window is listed");
    assert_eq!(window["state"], "active");
    assert_eq!(window["active"], true);
    assert_eq!(window["source"], "repo plugin dir");
    let path = window["path"].as_str().unwrap();
    assert!(path.contains("target"), "found in the build output: {path}");
}
