//! Bad configuration: one line with the file, the line and the key, and a non-zero exit.

use ctxhost_tests::{corpus_dir, Sandbox};

fn compress_with(config: &str) -> (Sandbox, String) {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(config);
    let transcript = corpus_dir().join("ctf__pwn__warmup.json");
    let run = sandbox.ctxhost(&["compress", transcript.to_str().unwrap()]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "nothing printed on error");
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "one line: {}", run.stderr);
    let line = sandbox.redact(lines[0]);
    (sandbox, line)
}

#[test]
fn bad_yaml_names_file_and_line() {
    let (_, line) = compress_with("context:\n  engine: compressor\nmodel: [unclosed\n");
    assert!(line.starts_with("error: config.yaml:3"), "{line}");
}

#[test]
fn out_of_range_compression_threshold_names_file_line_and_key() {
    let (_, line) = compress_with("# comment\ncompression:\n  enabled: true\n  threshold: 1.7\n");
    assert!(
        line.starts_with("error: config.yaml:4: compression.threshold:"),
        "{line}"
    );
    assert!(line.contains("1.7"), "{line}");
}

#[test]
fn out_of_range_plugin_setting_names_file_line_and_key() {
    let (_, line) =
        compress_with("context:\n  engine: window\nplugins:\n  window:\n    threshold: 1.7\n");
    assert!(
        line.starts_with("error: config.yaml:5: plugins.window.threshold:"),
        "{line}"
    );
}

#[test]
fn wrong_types_name_the_key() {
    let (_, line) = compress_with("model:\n  context_length: lots\n");
    assert_eq!(
        line,
        "error: config.yaml:2: model.context_length: invalid type: string \"lots\", expected u64"
    );
}

#[test]
fn a_malformed_transcript_is_one_line() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let path = sandbox.write(
        "broken.json",
        "[{\"role\": \"user\", \"content\": \"a\"},\n{\"role\":",
    );
    let run = sandbox.ctxhost(&["compress", path.to_str().unwrap()]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        sandbox.redact(run.stderr.trim()),
        "error: [SANDBOX]/broken.json:2:8: EOF while parsing a value: the JSON is truncated"
    );
}

#[test]
fn a_config_nested_100000_deep_is_refused_at_its_line_before_it_is_parsed() {
    // The YAML parser takes minutes of CPU on this before it gives up; the depth check first
    // refuses it in one pass.
    let deep = format!(
        "model:\n  context_length: 8000\na: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let (_, line) = compress_with(&deep);
    assert_eq!(
        line,
        "error: config.yaml:3: the YAML nests deeper than 64 levels (brackets or indentation); flatten it"
    );
}

#[test]
fn a_plugin_yaml_nested_100000_deep_is_refused_at_its_line() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: compressor\n");
    sandbox.write_descriptor(
        "deep",
        &format!("library: x\ndescription: {}\n", "{a: ".repeat(100_000)),
    );
    let list = sandbox.ctxhost(&["plugins", "list", "--json"]);
    assert!(list.success(), "{}", list.stderr);
    let rows = list.json();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == "deep")
        .unwrap_or_else(|| panic!("no row for deep: {}", list.stdout));
    let problem = row["problem"].as_str().unwrap();
    assert!(
        problem.contains("plugin.yaml:2: the YAML nests deeper than 64 levels"),
        "{problem}"
    );
}
