//! `ctxhost compress --target-tokens N` and `--budget 20%`: a size whatever the model's window,
//! met by both engines on a corpus session, and a bad size said in one line.

use ctxhost_sdk::budget::summary_room_past_head;
use ctxhost_sdk::Message;
use ctxhost_tests::{corpus_dir, read_json, Sandbox};
use ctxhost_tokens::TokenCounter;

/// A long corpus session: its protected head and newest turn are a small part of it.
const SESSION: &str =
    "gpt4__swe-bench-dev-easy_first_only__default__install-1__pydicom__pydicom-1458.json";

/// The messages an output kept verbatim from the input: its common start (the head, the
/// newest user message when that is in it) and its common end (the turn in progress).
fn verbatim<'a>(input: &[Message], output: &'a [Message]) -> Vec<&'a Message> {
    let start = input.iter().zip(output).take_while(|(a, b)| a == b).count();
    let end = input
        .iter()
        .rev()
        .zip(output.iter().rev())
        .take_while(|(a, b)| a == b)
        .count()
        .min(output.len() - start);
    output[..start]
        .iter()
        .chain(&output[output.len() - end..])
        .collect()
}

/// The token counts of `compress`'s summary line: before, after and the target.
fn sizes(stderr: &str) -> (u64, u64, u64) {
    let line = stderr
        .lines()
        .find(|line| line.contains(" tokens ("))
        .unwrap_or_else(|| panic!("no summary line in {stderr}"));
    let (counts, rest) = line
        .split_once(" tokens (")
        .expect("the summary line counts tokens");
    let counts = counts.rsplit(", ").next().expect("messages, then tokens");
    let (before, after) = counts.split_once(" → ").expect("before → after");
    let target = rest
        .split_once("target ")
        .and_then(|(_, t)| t.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no target in {line}"));
    let number = |text: &str| text.trim().parse::<u64>().expect(text);
    (number(before), number(after), number(target))
}

#[test]
fn compress_meets_a_target_or_a_share_with_both_engines_on_a_corpus_session() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    // A window far larger than the session: the size asked for is all that makes it small.
    sandbox.write_config("model:\n  name: test-model\n  context_length: 200000\n");
    let session = corpus_dir().join(SESSION);
    let input: Vec<Message> = serde_json::from_value(read_json(&session)).unwrap();
    let session = session.to_str().unwrap();
    let counter = TokenCounter::new("o200k_base");
    for engine in ["compressor", "lcm"] {
        for size in [
            ["--budget", "20%"],
            ["--budget", "5%"],
            ["--target-tokens", "900"],
        ] {
            // A session of its own for each size: lcm uses a stored summary of the same
            // messages again, whatever size it was written for.
            let name = format!("{engine}-{}", size[1].trim_end_matches('%'));
            let run = sandbox.ctxhost(&[
                "compress",
                session,
                "--engine",
                engine,
                "--session",
                &name,
                size[0],
                size[1],
            ]);
            assert!(run.success(), "{engine} {size:?}: {}", run.stderr);
            let (before, after, target) = sizes(&run.stderr);
            if size[1].ends_with('%') {
                let percent: u64 = size[1].trim_end_matches('%').parse().unwrap();
                assert_eq!(target, before * percent / 100, "{}", run.stderr);
            } else {
                assert_eq!(target, 900);
            }
            let messages = run.messages();
            assert_eq!(after, counter.count_messages(&messages));
            // Within the size, or, when what the engine must keep verbatim fills it, within
            // that and room for the standing facts; the size is measured past the protected
            // head (the system prompt and the task) when the head alone exceeds it
            // (`summary_room_past_head`).
            let kept: Vec<Message> = verbatim(&input, &messages).into_iter().cloned().collect();
            let kept = counter.count_messages(&kept);
            let task = input
                .iter()
                .position(Message::is_user)
                .map_or(0, |at| at + 1);
            let head = counter.count_messages(&input[..task]);
            let bound = kept + summary_room_past_head(target, head, kept.saturating_sub(head));
            assert!(
                after <= bound,
                "{engine} {size:?}: {after} > {bound} (size {target}, verbatim {kept}): {}",
                run.stderr
            );
            assert!(
                run.stderr.starts_with(&format!("{engine}: ")),
                "{}",
                run.stderr
            );
            assert!(messages[0].is_system(), "{engine}: the head stays");
            ctxhost_sdk::sequence::validate(&messages).expect("a valid chat sequence");
        }
    }
}

#[test]
fn compress_says_in_one_line_what_is_wrong_with_a_size() {
    let sandbox = Sandbox::new();
    let session = corpus_dir().join(SESSION);
    let session = session.to_str().unwrap();
    for (args, says) in [
        (vec!["--target-tokens", "0"], "at least 1"),
        (vec!["--target-tokens", "many"], "at least 1"),
        (vec!["--budget", "0%"], "above 0, at most 100"),
        (vec!["--budget", "120%"], "above 0, at most 100"),
        (
            vec!["--target-tokens", "900", "--budget", "20%"],
            "cannot be used with",
        ),
    ] {
        let mut command = vec!["compress", session];
        command.extend(&args);
        let run = sandbox.ctxhost(&command);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        let first = run.stderr_lines()[0];
        assert!(
            first.starts_with("error: ") && first.contains(says),
            "{args:?}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{args:?}: nothing is written");
    }
}
