//! The repository's README against the code: its first screen, its length, the facts it states,
//! its links, and every shell command it shows.
//!
//! Each ```sh block of README.md is cut into commands (a trailing `\` continues a line, ` #`
//! starts a comment) and bash splits each into words (`printf '%s\0'`), so quoting is read as a
//! shell reads it. Then, by what the command starts with:
//! - `cargo run --release -- ARGS` is **run** as `ctxhost ARGS` with the binary this suite built
//!   (the same sources in the suite's profile: the suite builds no second, release, copy), in a
//!   copy of the checkout (its `config.yaml`, `examples/`, and its `plugins/` linked), so what it
//!   writes (`session.svg`, lcm's store) stays out of the checkout. These run in README order in
//!   one copy: the lcm example's search finds what the replay before it kept.
//! - `ctxhost serve --upstream URL` is **started** with the suite's scripted upstream in place of
//!   the provider (no network, no key) on a free port; its ready line must be the one the
//!   README's comment shows, `/healthz` must answer, and URL must carry its version segment.
//! - Any other `ctxhost ...` is **run** as written, outside any checkout, in a fresh
//!   `CTXHOST_HOME` (the `~/.ctxhost` it writes), in README order.
//! - `export NAME=VALUE` is **run** by bash; a base URL must point at the gateway's default
//!   address (`serve.listen` of the shipped `config.yaml`).
//! - `cargo test --workspace` is only **parsed**: it is the suite running this test.
//! - `cargo install --locked --path DIR` is only **parsed** (a full release build: minutes on a
//!   two-core machine); DIR must be the package of the `ctxhost` binary, and `Cargo.lock`, which
//!   `--locked` builds with, must exist.
//! - `codex ...` is only **parsed**: the agent CLIs are not installed for this suite.
//! - `pip install ctxhost` is only **parsed**: the Python package's own tests (host/python/tests,
//!   run by `.ci/run` against the wheel built from this checkout) cover what it installs.
//!
//! Every command is also checked by `bash -n`. A command that fits none of these fails the test:
//! a new command in the README needs a way to run here.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::{workspace_root, Sandbox};
use serde_json::json;

const WORD_LIMIT: usize = 2500;
const FIRST_SCREEN: usize = 40;

fn readme() -> String {
    std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md")
}

/// The fenced blocks of `text` in `language`, each as its lines.
fn blocks(text: &str, language: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in text.lines() {
        match &mut current {
            Some(lines) if line.trim_start() == "```" => {
                found.push(std::mem::take(lines));
                current = None;
            }
            Some(lines) => lines.push(line.to_string()),
            None if line.trim_start() == format!("```{language}") => current = Some(Vec::new()),
            None => {}
        }
    }
    assert!(current.is_none(), "an unclosed ```{language} block");
    found
}

/// The commands of one block: continuation lines joined, comments and blank lines dropped.
fn commands(block: &[String]) -> Vec<String> {
    let mut commands = Vec::new();
    let mut pending = String::new();
    for line in block {
        let line = strip_comment(line);
        if let Some(continued) = line.trim_end().strip_suffix('\\') {
            pending.push_str(continued);
            continue;
        }
        pending.push_str(&line);
        let command = std::mem::take(&mut pending).trim().to_string();
        if !command.is_empty() {
            commands.push(command);
        }
    }
    assert!(pending.trim().is_empty(), "a block ends inside a command");
    commands
}

/// `line` without a comment: from a `#` that starts a word outside quotes.
fn strip_comment(line: &str) -> String {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if previous.is_whitespace() => return line[..at].to_string(),
            _ => {}
        }
        previous = c;
    }
    line.to_string()
}

/// The comment of the line holding `command`'s first words, if any.
fn comment_of(block_text: &str, command: &str) -> Option<String> {
    let head: String = command.chars().take(30).collect();
    let line = block_text.lines().find(|l| l.contains(&head))?;
    let code = strip_comment(line);
    let rest = line[code.len()..].trim();
    rest.strip_prefix('#').map(|c| c.trim().to_string())
}

/// `command` split into words by bash itself.
fn words(command: &str) -> Vec<String> {
    let syntax = Command::new("bash")
        .args(["-n", "-c", command])
        .output()
        .expect("bash runs");
    assert!(
        syntax.status.success(),
        "README command is not valid shell: {command}\n{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    let split = Command::new("bash")
        .args(["-c", &format!("printf '%s\\0' {command}")])
        .output()
        .expect("bash runs");
    assert!(split.status.success(), "{command}");
    String::from_utf8(split.stdout)
        .unwrap()
        .split('\0')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The gateway's default address, from the shipped config.
fn default_gateway() -> String {
    let config = std::fs::read_to_string(workspace_root().join("config.yaml")).unwrap();
    let listen = config
        .lines()
        .find_map(|l| l.trim().strip_prefix("listen:"))
        .expect("the shipped config.yaml names serve.listen")
        .trim();
    format!("http://{listen}")
}

/// A copy of the checkout for `cargo run` commands: config, examples, plugins.
fn checkout_copy() -> Sandbox {
    let copy = Sandbox::new();
    let root = workspace_root();
    std::fs::copy(root.join("config.yaml"), copy.config_path()).unwrap();
    std::fs::create_dir_all(copy.path().join("examples")).unwrap();
    std::fs::copy(
        root.join("examples/session.json"),
        copy.path().join("examples/session.json"),
    )
    .unwrap();
    copy.link_repo_plugins();
    copy
}

#[test]
fn every_shell_command_of_the_readme_runs_as_written() {
    let text = readme();
    let checkout = checkout_copy();
    let outside = Sandbox::new();
    let gateway = default_gateway();
    let mut seen = Vec::new();
    for block in blocks(&text, "sh") {
        let block_text = block.join("\n");
        for command in commands(&block) {
            let argv = words(&command);
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            match argv.as_slice() {
                ["cargo", "run", "--release", "--", args @ ..] => {
                    run_in_checkout(&checkout, args, &command)
                }
                ["ctxhost", "serve", "--upstream", url] => {
                    serve(url, comment_of(&block_text, &command), &gateway)
                }
                ["ctxhost", args @ ..] => {
                    let run = outside.ctxhost(args);
                    assert!(run.success(), "{command}: {}", run.stderr);
                }
                ["export", assignment] => export(assignment, &gateway, &command),
                ["cargo", "test", "--workspace"] => {}
                ["cargo", "install", "--locked", "--path", dir] => installable(dir),
                ["codex", ..] => {}
                ["pip", "install", "ctxhost"] => python_package(),
                _ => panic!("README command with no way to run it in this test: {command}"),
            }
            seen.push(argv.join(" "));
        }
    }
    // The commands the issue names are there: the two of the first screen, the install, the
    // gateway, the lcm example with --keep.
    for wanted in [
        "cargo run --release -- run examples/session.json --compare window --plot session.svg",
        "cargo test --workspace",
        "cargo install --locked --path host/ctxhost",
        "ctxhost serve --upstream",
        "--engine lcm --compare compressor --context-length 32000 --keep",
        "ctxhost plugins install --shipped",
    ] {
        assert!(
            seen.iter().any(|c| c.contains(wanted)),
            "no README command with {wanted:?}: {seen:#?}"
        );
    }
}

/// `cargo run --release -- ARGS` as `ctxhost ARGS` in the checkout's copy.
fn run_in_checkout(checkout: &Sandbox, args: &[&str], command: &str) {
    let run = checkout.ctxhost(args);
    assert!(run.success(), "{command}: {}\n{}", run.stdout, run.stderr);
    if let Some(at) = args.iter().position(|a| *a == "--plot") {
        let plot = checkout.path().join(args[at + 1]);
        let svg = std::fs::read_to_string(&plot).expect("the plot was written");
        assert!(svg.contains("<svg"), "{command}: an SVG");
        // It says where it wrote, in full (a relative path depends on where it ran).
        let wrote = format!("wrote the plot to {}", plot.display());
        assert!(run.stderr.contains(&wrote), "{command}: {}", run.stderr);
    }
    if args.contains(&"--keep") && args.contains(&"lcm") {
        // Where the README says the lcm example writes (`~/.ctxhost` is CTXHOST_HOME here).
        let store = checkout.home().join("data/lcm/lcm.sqlite");
        assert!(store.is_file(), "{command}: no {}", store.display());
        assert!(readme().contains("it writes `~/.ctxhost/data/lcm/lcm.sqlite`"));
    }
    if args.first() == Some(&"tools") && args.contains(&"lcm_grep") {
        // The search finds what the replay before it kept.
        assert!(
            run.stdout.contains("marshmallow"),
            "{command}: {}",
            run.stdout
        );
    }
}

/// `ctxhost serve --upstream URL`, with the scripted upstream in place of URL.
fn serve(url: &str, comment: Option<String>, gateway: &str) {
    assert!(
        url.trim_end_matches('/').ends_with("/v1"),
        "the README's upstream {url} lacks its version segment"
    );
    let upstream = FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "hi"}), None)
    });
    let sandbox = Sandbox::new();
    let process = sandbox.serve(&upstream.base_url(), &[]);
    if let Some(comment) = comment {
        let shown = comment
            .strip_prefix("prints: ")
            .unwrap_or_else(|| panic!("the serve command's comment: {comment}"));
        assert_eq!(shown, format!("ctxhost serve: listening on {gateway}"));
        let port = process.url.rsplit(':').next().unwrap();
        let expected = shown.replace(gateway.rsplit(':').next().unwrap(), port);
        assert_eq!(process.ready_line, expected);
    }
    let (status, health) = process.get_json("/healthz", None);
    assert_eq!(status, 200, "{health}");
}

/// `export NAME=VALUE`, run by bash; a base URL points at the gateway.
fn export(assignment: &str, gateway: &str, command: &str) {
    let (name, value) = assignment.split_once('=').expect("NAME=VALUE");
    let out = Command::new("bash")
        .args(["-c", &format!("{command}\nprintenv {name}")])
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{command}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), value);
    if name.ends_with("_BASE_URL") {
        assert!(value.starts_with(gateway), "{command}: not {gateway}");
    }
}

/// `cargo install --locked --path DIR`: DIR builds the `ctxhost` binary, and the lockfile exists.
fn installable(dir: &str) {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
    assert!(manifest.contains("[[bin]]\nname = \"ctxhost\""), "{dir}");
    assert!(
        root.join("Cargo.lock").is_file(),
        "--locked needs Cargo.lock"
    );
}

/// `pip install ctxhost`: the package it names is the one `host/python` builds.
fn python_package() {
    let pyproject =
        std::fs::read_to_string(workspace_root().join("host/python/pyproject.toml")).unwrap();
    assert!(pyproject.contains("\nname = \"ctxhost\"\n"), "{pyproject}");
    assert!(
        pyproject.contains("build-backend = \"maturin\""),
        "{pyproject}"
    );
}

#[test]
fn the_first_screen_says_what_ctxhost_is_and_holds_the_recipes_and_the_two_commands() {
    let text = readme();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "# ctxhost");
    assert!(
        lines[2].starts_with("ctxhost keeps an LLM agent's conversation"),
        "{}",
        lines[2]
    );
    let screen = lines[..FIRST_SCREEN].join("\n");
    let gateway = default_gateway();
    for wanted in [
        "cargo run --release -- run examples/session.json",
        "cargo test --workspace",
        "ctxhost serve --upstream",
        // Each agent: where to point it, what to do with its own compaction, what its meter
        // shows.
        "**Claude Code**",
        "ANTHROPIC_BASE_URL",
        "auto-compact on",
        "**Codex**",
        "wire_api = \"responses\"",
        "**Hermes Agent**",
        "compression.enabled: false",
    ] {
        assert!(
            screen.contains(wanted),
            "not in the first {FIRST_SCREEN} lines: {wanted}"
        );
    }
    assert_eq!(screen.matches("meter").count(), 3, "each agent's meter");
    assert!(
        screen.matches(&gateway).count() >= 3,
        "each agent's base URL"
    );
    // The two commands stay the ones `.ci/run` checks: it runs `cargo test --workspace` in two
    // stages, every test but the slow stage's filters, then the end-to-end tests they name (and
    // checks that the filters name those tests only).
    let ci = std::fs::read_to_string(workspace_root().join(".ci/run")).unwrap();
    assert!(
        ci.contains("\ncargo test --workspace -- \"${skip[@]}\"\n"),
        "{ci}"
    );
    assert!(
        ci.contains("\ncargo test --workspace --test e2e -- \"${slow[@]}\"\n"),
        "{ci}"
    );
}

#[test]
fn the_readme_reads_in_five_minutes() {
    let words = readme().split_whitespace().count();
    assert!(words < WORD_LIMIT, "README.md has {words} words");
}

#[test]
fn every_readme_link_in_the_repository_leads_somewhere() {
    let root = workspace_root();
    for readme in readmes(&root) {
        let text = std::fs::read_to_string(&readme).unwrap();
        for target in text
            .split("](")
            .skip(1)
            .filter_map(|rest| rest.split(')').next())
        {
            if target.starts_with("http") || target.starts_with('#') {
                continue;
            }
            let path = target.split('#').next().unwrap();
            let linked = readme.parent().unwrap().join(path);
            assert!(
                linked.exists(),
                "{}: a link to {target}, which is not there",
                readme.display()
            );
        }
    }
}

/// README.md files of the repository outside `target/`.
fn readmes(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() && name != "target" && !name.to_string_lossy().starts_with('.') {
                dirs.push(path);
            } else if name == "README.md" {
                found.push(path);
            }
        }
    }
    assert!(found.len() > 5, "{found:?}");
    found
}

/// The example session's size as the READMEs state it is what `ctxhost tokens` counts.
#[test]
fn the_example_session_is_the_size_the_readmes_say() {
    let sandbox = checkout_copy();
    let run = sandbox.ctxhost(&["tokens", "examples/session.json", "--json"]);
    assert!(run.success(), "{}", run.stderr);
    let counted = run.json();
    let messages = counted["messages"].as_u64().unwrap();
    let tokens = counted["tokens"].as_u64().unwrap();
    assert_eq!(counted["encoding"], "o200k_base");
    let tokens = thousands(tokens);
    let root = workspace_root();
    let readme = readme().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains(&format!(
            "{messages} messages, {tokens} tokens in `o200k_base`"
        )),
        "README.md: {messages} messages, {tokens} tokens"
    );
    let examples = std::fs::read_to_string(root.join("examples/README.md")).unwrap();
    let examples = examples.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        examples.contains(&format!(
            "{messages} OpenAI chat messages, {tokens} tokens in `o200k_base`"
        )),
        "examples/README.md: {messages} messages, {tokens} tokens"
    );
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What the README's first command writes is not something to commit.
#[test]
fn plots_are_ignored_by_git() {
    for plot in ["session.svg", "examples/compare.svg"] {
        let check = Command::new("git")
            .current_dir(workspace_root())
            .args(["check-ignore", "--quiet", "--no-index", plot])
            .status()
            .expect("git runs");
        assert!(check.success(), "{plot} is not ignored by git (.gitignore)");
    }
}

#[test]
fn commands_are_cut_and_split_as_a_shell_would() {
    let block: Vec<String> = [
        "a --x 1 \\",
        "  --y '{\"k\": \"v # not a comment\"}'   # a comment",
        "",
        "b#c d   # e",
    ]
    .map(String::from)
    .to_vec();
    let cut = commands(&block);
    assert_eq!(
        cut,
        ["a --x 1   --y '{\"k\": \"v # not a comment\"}'", "b#c d"]
    );
    assert_eq!(
        words(&cut[0]),
        ["a", "--x", "1", "--y", "{\"k\": \"v # not a comment\"}"]
    );
}

/// Every settings table of a README is `ctxhost config keys --markdown PREFIX...` for the
/// prefixes its marker line names, so the tables are the declarations in ctxhost-config, and
/// together they table every declared key once.
#[test]
fn every_settings_table_is_what_the_declarations_say() {
    const MARKER: &str = "<!-- ctxhost config keys --markdown";
    let root = workspace_root();
    let sandbox = Sandbox::new();
    let mut tabled: Vec<String> = Vec::new();
    for path in readmes(&root) {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let Some(rest) = line.strip_prefix(MARKER) else {
                continue;
            };
            let prefixes = rest.trim().trim_end_matches("-->").split_whitespace();
            let args: Vec<&str> = ["config", "keys", "--markdown"]
                .into_iter()
                .chain(prefixes)
                .collect();
            let run = sandbox.ctxhost(&args);
            assert!(run.success(), "{}", run.stderr);
            let table: String = lines[at + 1..]
                .iter()
                .take_while(|line| line.starts_with('|'))
                .map(|line| format!("{line}\n"))
                .collect();
            assert!(
                table == run.stdout,
                "{}:{}: this settings table is not what the declarations say; replace it with \
                 the output of `ctxhost {}`\n--- expected (the declarations)\n{}--- actual (the \
                 README)\n{table}",
                path.strip_prefix(&root).unwrap().display(),
                at + 2,
                args.join(" "),
                run.stdout
            );
            tabled.extend(table.lines().skip(2).map(str::to_string));
        }
    }
    let all = sandbox.ctxhost(&["config", "keys", "--markdown"]);
    let mut every: Vec<String> = all.stdout.lines().skip(2).map(str::to_string).collect();
    tabled.sort();
    every.sort();
    assert_eq!(
        tabled, every,
        "the READMEs' settings tables hold every declared key once"
    );
}

/// One prerequisites section, near the top, naming the Rust version `Cargo.toml` requires, what
/// the suite needs besides, and the build times; and where each command keeps its state.
#[test]
fn the_prerequisites_are_in_one_place_and_name_the_rust_version_cargo_toml_requires() {
    let text = readme();
    let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"');
    let start = text
        .find("\n## Prerequisites\n")
        .expect("a prerequisites section");
    assert!(
        text[..start].lines().count() < 60,
        "the prerequisites are near the top"
    );
    let section = &text[start..];
    let section = &section[..section[1..]
        .find("\n## ")
        .map_or(section.len(), |end| end + 1)];
    for wanted in [
        format!("**Rust {version}** or later"),
        "**Python 3** with `venv`".to_string(),
        "**PostgreSQL's server programs**".to_string(),
        "**Node.js 18+ with\n  npm**".to_string(),
        "release build about 5.5 minutes".to_string(),
        "`~/.ctxhost/data/gateway/sessions.sqlite`".to_string(),
        "`~/.ctxhost/plugins/context_engine/<name>/`".to_string(),
    ] {
        assert!(
            section.contains(&wanted),
            "not in the prerequisites: {wanted}"
        );
    }
    // Said once: no other place of the README lists them.
    assert_eq!(text.matches("PostgreSQL's server programs").count(), 1);
}
