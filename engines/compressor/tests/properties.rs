//! Properties over generated conversations, and the shared corpus.

mod common;

use common::{compressor, host, summaries, Answer};
use ctxhost_sdk::{sequence, CompressOptions, ContextEngine, Message, ToolCall};
use proptest::prelude::*;
use serde_json::json;

/// One generated turn: a user message, an assistant reply, or a tool turn with parallel calls.
#[derive(Debug, Clone)]
enum Turn {
    User(usize),
    Assistant(usize),
    Tools(Vec<usize>),
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        (1usize..400).prop_map(Turn::User),
        (1usize..400).prop_map(Turn::Assistant),
        prop::collection::vec(1usize..1200, 1..4).prop_map(Turn::Tools),
    ]
}

fn build(turns: &[Turn]) -> Vec<Message> {
    let mut messages = vec![Message::system("system prompt"), Message::user("the task")];
    for (i, turn) in turns.iter().enumerate() {
        match turn {
            Turn::User(n) => messages.push(Message::user(format!("u{i} {}", "w ".repeat(*n)))),
            Turn::Assistant(n) => {
                messages.push(Message::assistant(format!("a{i} {}", "w ".repeat(*n))))
            }
            Turn::Tools(sizes) => {
                let calls = sizes
                    .iter()
                    .enumerate()
                    .map(|(k, _)| {
                        ToolCall::new(
                            format!("t{i}_{k}"),
                            "terminal",
                            format!(r#"{{"command":"c{i}"}}"#),
                        )
                    })
                    .collect();
                messages.push(Message::assistant_tool_calls(calls));
                for (k, size) in sizes.iter().enumerate() {
                    messages.push(Message::tool_result(
                        format!("t{i}_{k}"),
                        "o ".repeat(*size),
                    ));
                }
            }
        }
    }
    messages
}

fn tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| (m.searchable_text().chars().count() as u64).div_ceil(4) + 4)
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn compression_keeps_every_rule(turns in prop::collection::vec(turn(), 0..40)) {
        let host = host(Answer::Summary("## Goal\nthe task".into()));
        let mut engine = compressor(&host, 4_000, json!({"protect_last_n": 4}));
        let input = build(&turns);
        let force = CompressOptions { force: true, ..CompressOptions::default() };
        let has_content = engine.has_content_to_compress(&input).unwrap();
        let output = engine.compress(&input, &force).unwrap();
        prop_assert!(sequence::validate(&output).is_ok(), "{:?}", sequence::validate(&output));
        prop_assert_eq!(&output[0], &input[0]);
        prop_assert_eq!(&output[1], &input[1]);
        if let Some(latest) = input.iter().rev().find(|m| m.is_user()) {
            prop_assert!(output.contains(latest), "latest user message kept");
        }
        if has_content {
            prop_assert!(tokens(&output) <= tokens(&input));
        } else {
            prop_assert_eq!(&output, &input);
        }
        // Three compressions in a row leave at most one summary.
        let twice = engine.compress(&output, &force).unwrap();
        let thrice = engine.compress(&twice, &force).unwrap();
        prop_assert!(summaries(&thrice) <= 1);
        prop_assert!(sequence::validate(&thrice).is_ok());
    }
}

#[test]
fn big_generated_sessions_shrink_and_keep_one_summary() {
    let host = host(Answer::Summary("## Goal\nthe task".into()));
    let mut engine = compressor(&host, 4_000, json!(null));
    let turns: Vec<Turn> = (0..60)
        .map(|i| match i % 3 {
            0 => Turn::User(50),
            1 => Turn::Assistant(80),
            _ => Turn::Tools(vec![300, 200]),
        })
        .collect();
    let mut context = build(&turns);
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    for _ in 0..3 {
        let before = tokens(&context);
        context = engine.compress(&context, &force).unwrap();
        assert!(tokens(&context) < before);
        assert_eq!(summaries(&context), 1);
        context.extend(build(&turns)[2..].iter().cloned());
    }
}

#[test]
fn every_corpus_transcript_shrinks_and_stays_valid() {
    let corpus = ctxhost_sdk_test::corpus::dir();
    let mut files: Vec<_> = std::fs::read_dir(&corpus)
        .expect("the corpus the checkout ships")
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 20);
    for file in files {
        let messages: Vec<Message> =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let host = host(Answer::Fail);
        let mut engine = compressor(&host, 8_000, json!(null));
        let has_content = engine.has_content_to_compress(&messages).unwrap();
        let output = engine
            .compress(&messages, &CompressOptions::default())
            .unwrap();
        let name = file.display();
        sequence::validate(&output).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(tokens(&output) <= tokens(&messages), "{name}");
        // The latest user message is always kept verbatim; when it alone fills half the window
        // there is nothing worth summarizing around it.
        let latest_user = messages.iter().rev().find(|m| m.is_user()).unwrap();
        let pinned = tokens(std::slice::from_ref(latest_user)) > 4_000;
        if has_content && tokens(&messages) > 8_000 && !pinned {
            assert!(tokens(&output) < tokens(&messages), "{name}");
        }
    }
}

/// The output contract of ctxhost-sdk-test on the corpus, forced: on each whole transcript and
/// on its opening, where a summary costs about what it would replace, the output is valid,
/// keeps what the contract protects, and is never larger than its input.
#[test]
fn forced_compressions_keep_the_output_contract_and_never_grow_on_the_corpus() {
    use ctxhost_sdk_test::contract::{check_output, opening};
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    let transcripts = ctxhost_sdk_test::corpus::transcripts();
    let mut unchanged = 0;
    for transcript in &transcripts {
        for input in [&transcript.messages[..], opening(&transcript.messages)] {
            let host = host(Answer::Summary("## Goal\nthe task".into()));
            let mut engine = compressor(&host, 8_000, json!(null));
            let output = engine.compress(input, &force).unwrap();
            check_output(input, &output)
                .unwrap_or_else(|violation| panic!("{}: {violation}", transcript.name));
            unchanged += usize::from(output == input);
        }
    }
    // Not vacuous: some compressions changed something, some had nothing to gain.
    assert!(unchanged > 0 && unchanged < transcripts.len() * 2);
}
