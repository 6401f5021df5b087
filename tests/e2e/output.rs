//! Where commands write: closed pipes, `--out -`, FIFOs, the user's umask, and concurrent
//! config writers.

use std::io::Read;
use std::process::{Command, Stdio};

use ctxhost_sdk::Message;
use ctxhost_tests::{binary, workspace_root, Sandbox};

fn example() -> String {
    workspace_root()
        .join("examples/session.json")
        .to_string_lossy()
        .into_owned()
}

/// Runs `script` in `sh` inside the sandbox, `$CTXHOST` being the binary.
fn shell(sandbox: &Sandbox, script: &str) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(sandbox.path())
        .env("CTXHOST", binary())
        .env("CTXHOST_HOME", sandbox.home())
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("sh runs")
}

#[cfg(unix)]
#[test]
fn writing_to_a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;

    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins().write_config("");
    let example = example();
    for command in [
        vec!["plugins", "list"],
        vec!["config", "get", "context.engine", "--json"],
        vec!["tokens", &example, "--top", "50"],
        vec!["compress", &example],
        vec!["run", &example],
    ] {
        // A pipe whose reader is gone before the command starts: its first write fails, every
        // time (what `ctxhost ... | head -c1` does once head has its byte).
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = Command::new(binary())
            .current_dir(sandbox.path())
            .env("CTXHOST_HOME", sandbox.home())
            .args(&command)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{command:?}: {stderr}");
        assert!(stderr.is_empty(), "{command:?}: nothing to say: {stderr}");
        // Ended by SIGPIPE, as `cat` would be.
        assert_eq!(output.status.signal(), Some(SIGPIPE), "{command:?}");
    }
}

/// SIGPIPE's number on every Unix ctxhost runs on.
const SIGPIPE: i32 = 13;

#[test]
fn out_dash_prints_the_final_context_and_the_report_goes_to_stderr() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  context_length: 32000\n");
    let run = sandbox.ctxhost(&["run", &example(), "--out", "-"]);
    assert!(run.success(), "{}", run.stderr);
    let messages: Vec<Message> =
        serde_json::from_str(&run.stdout).expect("stdout is JSON messages");
    ctxhost_sdk::sequence::validate(&messages).unwrap();
    assert!(messages.len() < 468, "the final context was compressed");
    assert!(run.stderr.contains("final context"), "{}", run.stderr);

    let both = sandbox.ctxhost(&["run", &example(), "--out", "-", "--plot", "-"]);
    assert_eq!(both.code, Some(1));
    assert!(both.stderr.contains("standard output"), "{}", both.stderr);
}

#[cfg(unix)]
#[test]
fn a_fifo_is_written_into_and_stays_a_fifo() {
    use std::os::unix::fs::FileTypeExt;

    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let fifo = sandbox.path().join("context.fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let mut child = Command::new(binary())
        .current_dir(sandbox.path())
        .env("CTXHOST_HOME", sandbox.home())
        .args(["run", &example(), "--out", fifo.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Opening the read end blocks until the writer opens it: no sleep, no deadline.
    let mut text = String::new();
    std::fs::File::open(&fifo)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    let messages: Vec<Message> = serde_json::from_str(&text).expect("JSON through the FIFO");
    assert!(!messages.is_empty());
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

#[cfg(unix)]
#[test]
fn new_output_files_get_the_users_umask() {
    use std::os::unix::fs::PermissionsExt;

    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let output = shell(
        &sandbox,
        &format!(
            "umask 022; \"$CTXHOST\" run '{}' --plot plot.svg --out out.json >/dev/null; echo $?",
            example()
        ),
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "0");
    for file in ["plot.svg", "out.json"] {
        let mode = std::fs::metadata(sandbox.path().join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "{file}");
    }
    // An existing file keeps its mode.
    let out = sandbox.path().join("out.json");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o600)).unwrap();
    shell(
        &sandbox,
        &format!("\"$CTXHOST\" run '{}' --out out.json >/dev/null", example()),
    );
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn twenty_concurrent_config_sets_all_land() {
    let sandbox = Sandbox::new();
    sandbox.write_config("# my settings\nmodel:\n  context_length: 128000 # the window\n");
    // Twenty writers at once, each setting its keys one after another, so that writes overlap
    // many times over (one write each rarely overlaps: starting a process takes longer).
    const ROUNDS: usize = 8;
    let children: Vec<_> = (0..20)
        .map(|i| {
            Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "for j in $(seq 0 {}); do \"$CTXHOST\" config set --force extra.key{i}_$j $j || exit 1; done",
                    ROUNDS - 1
                ))
                .current_dir(sandbox.path())
                .env("CTXHOST", binary())
                .env("CTXHOST_HOME", sandbox.home())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let text = sandbox.config_text();
    for i in 0..20 {
        for j in 0..ROUNDS {
            assert!(
                text.contains(&format!("key{i}_{j}: {j}")),
                "key{i}_{j} lost:\n{text}"
            );
        }
    }
    assert!(text.contains("# my settings") && text.contains("# the window"));
    // No temporary copy is left beside the config.
    let strays: Vec<_> = std::fs::read_dir(sandbox.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("ctxhost-tmp"))
        .collect();
    assert!(strays.is_empty(), "{strays:?}");
}

#[test]
fn a_stray_temporary_copy_from_a_killed_write_is_cleared() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  name: a\n");
    let stray = sandbox.path().join(".config.yaml.ctxhost-tmp-abc123");
    std::fs::write(&stray, "half a write").unwrap();
    let run = sandbox.ctxhost(&["config", "set", "model.name", "b"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(!stray.exists());
}

#[test]
fn config_keys_and_engines_get_a_did_you_mean() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins().write_config("");
    let run = sandbox.ctxhost(&["config", "set", "modle.name", "x"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("did you mean 'model.name'?"),
        "{}",
        run.stderr
    );
    assert_eq!(sandbox.config_text(), "");
    let run = sandbox.ctxhost(&["config", "get", "compression.treshold"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("did you mean 'compression.threshold'?"),
        "{}",
        run.stderr
    );
    // `config set context.engine` refuses what `plugins use` refuses, in the same words.
    let set = sandbox.ctxhost(&["config", "set", "context.engine", "windwo"]);
    let used = sandbox.ctxhost(&["plugins", "use", "windwo"]);
    assert_eq!(set.code, Some(1));
    assert_eq!(used.code, Some(1));
    assert_eq!(set.stderr, used.stderr);
    assert!(
        set.stderr.contains("did you mean 'window'?"),
        "{}",
        set.stderr
    );
    assert_eq!(sandbox.config_text(), "");
    let set = sandbox.ctxhost(&["config", "set", "context.engine", "window"]);
    assert!(set.success(), "{}", set.stderr);
    assert!(sandbox.config_text().contains("engine: window"));
}
