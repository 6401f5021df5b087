//! The contract checks catch each broken promise, and pass an engine that keeps them.

use ctxhost_sdk::contract::OutputViolation;
use ctxhost_sdk::sequence::SequenceError;
use ctxhost_sdk::{
    CompressOptions, ContextEngine, EngineError, HostServices, Message, TokenTracker, ToolCall,
};
use ctxhost_sdk_test::contract::{
    check_idempotent, check_output, check_unchanged_under_threshold, Check, EngineCheck,
};
use ctxhost_sdk_test::{check_engine, tokens, Violation};

/// What a test engine gets wrong.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    DropsSystemPrompt,
    DropsNewestUser,
    DropsTurnInProgress,
    InventsRole,
    OrphansAResult,
    Grows,
    AlwaysCompresses,
    AddsAMarkerEachTime,
    /// Its marker costs more than a few short turns: it grows a conversation with little to drop.
    LongMarker,
    FailsToStart,
}

/// Keeps the first two messages and the last two, with a marker between them when it drops
/// anything; or gets one thing wrong.
struct Keeper {
    tracker: TokenTracker,
    services: HostServices,
    fault: Fault,
}

fn keeper(fault: Fault) -> impl FnMut(HostServices) -> Result<Keeper, EngineError> {
    move |services: HostServices| {
        if fault == Fault::FailsToStart {
            return Err(EngineError::invalid_input("plugins.keeper.x: bad"));
        }
        Ok(Keeper {
            tracker: TokenTracker::new(services.model().context_length, 0.75),
            services,
            fault,
        })
    }
}

impl ContextEngine for Keeper {
    fn name(&self) -> &str {
        "keeper"
    }

    fn tracker(&mut self) -> Option<&mut TokenTracker> {
        Some(&mut self.tracker)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        let tokens = options
            .current_tokens
            .unwrap_or_else(|| self.services.count_messages_tokens(messages));
        let compress = options.force
            || self.tracker.over_threshold(tokens)
            || matches!(
                self.fault,
                Fault::AlwaysCompresses | Fault::AddsAMarkerEachTime
            );
        if !compress {
            return Ok(messages.to_vec());
        }
        let mut out = messages.to_vec();
        match self.fault {
            Fault::DropsSystemPrompt => {
                out.remove(0);
            }
            Fault::DropsNewestUser => {
                let newest = out.iter().rposition(Message::is_user).unwrap();
                out.remove(newest);
            }
            Fault::DropsTurnInProgress => {
                let newest = out.iter().rposition(Message::is_user).unwrap();
                out.truncate(newest + 1);
            }
            Fault::InventsRole => out.push(Message::new("narrator", "meanwhile")),
            Fault::OrphansAResult => out.push(Message::tool_result("ghost", "boo")),
            Fault::Grows => out.push(Message::assistant("and some more")),
            Fault::None
            | Fault::FailsToStart
            | Fault::AlwaysCompresses
            | Fault::AddsAMarkerEachTime
            | Fault::LongMarker => {
                // The real thing: head, marker, tail, on whole turns.
                let head = 2.min(out.len());
                let tail = ctxhost_sdk::sequence::start_of_turn(&out, out.len().saturating_sub(2));
                if tail > head + 1 {
                    let padding = if self.fault == Fault::LongMarker {
                        "~".repeat(1_200)
                    } else {
                        String::new()
                    };
                    let marker =
                        Message::user(format!("[{} messages dropped]{padding}", tail - head));
                    out.splice(head..tail, [marker]);
                }
                if self.fault == Fault::AddsAMarkerEachTime {
                    out.insert(1, Message::user("[m]"));
                }
            }
        }
        Ok(out)
    }
}

fn chat(turns: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are terse."),
        Message::user("first ask"),
    ];
    for i in 0..turns {
        messages.push(Message::assistant_tool_calls(vec![ToolCall::new(
            format!("c{i}"),
            "run",
            "{}",
        )]));
        messages.push(Message::tool_result(format!("c{i}"), "x".repeat(400)));
        messages.push(Message::user(format!("next {i}")));
    }
    messages
}

fn forced_output(fault: Fault, messages: &[Message]) -> Vec<Message> {
    let mut engine = keeper(fault)(ctxhost_sdk_test::FakeHost::new("keeper").services()).unwrap();
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    engine.compress(messages, &force).unwrap()
}

#[test]
fn a_well_behaved_engine_passes_every_check_on_the_corpus() {
    let report = check_engine("keeper", keeper(Fault::None)).unwrap();
    assert_eq!(
        report.conversations,
        ctxhost_sdk_test::corpus::transcripts().len()
    );
    assert!(report.shrunk > 0, "{report:?}");
    assert!(report.tokens_after < report.tokens_before, "{report:?}");
}

#[test]
fn each_broken_promise_is_named() {
    let input = chat(6);
    let output = |fault| forced_output(fault, &input);
    assert_eq!(check_output(&input, &output(Fault::None)), Ok(()));
    assert!(matches!(
        check_output(&input, &output(Fault::DropsSystemPrompt)),
        Err(Violation::Output(OutputViolation::SystemPromptLost { found })) if found == "a user message: \"first ask\""
    ));
    assert_eq!(
        check_output(&input, &output(Fault::DropsNewestUser)),
        Err(Violation::Output(OutputViolation::NewestUserLost {
            index: input.len() - 1
        }))
    );
    assert_eq!(
        check_output(&input, &output(Fault::InventsRole)),
        Err(Violation::Output(OutputViolation::UnknownRole {
            index: input.len(),
            role: "narrator".into()
        }))
    );
    assert!(matches!(
        check_output(&input, &output(Fault::OrphansAResult)),
        Err(Violation::Output(OutputViolation::InvalidSequence(
            SequenceError::OrphanResult { .. }
        )))
    ));
    let before = tokens::count_messages(&input);
    assert_eq!(
        check_output(&input, &output(Fault::Grows)),
        Err(Violation::Output(OutputViolation::Larger {
            before,
            after: before + tokens::count_text("and some more") + 4
        }))
    );
    assert_eq!(
        check_output(&input, &[]),
        Err(Violation::Output(OutputViolation::Empty {
            input_len: input.len()
        }))
    );
    assert_eq!(check_output(&[], &[]), Ok(()));
    // A role the input used itself is kept as written.
    let mut odd = input.clone();
    odd.push(Message::new("developer", "note"));
    assert_eq!(check_output(&odd, &odd), Ok(()));
}

#[test]
fn the_turn_in_progress_ends_the_output_unchanged() {
    // Mid-turn: the model called a tool and waits for its two results.
    let mut input = chat(6);
    input.push(Message::assistant_tool_calls(vec![
        ToolCall::new("last-a", "run", "{}"),
        ToolCall::new("last-b", "run", "{}"),
    ]));
    input.push(Message::tool_result("last-a", "a".repeat(400)));
    input.push(Message::tool_result("last-b", "b".repeat(400)));
    // Head, newest user message, newest round: the middle gone.
    let kept = [&input[..2], &input[input.len() - 4..]].concat();
    assert_eq!(check_output(&input, &kept), Ok(()));
    assert_eq!(
        check_output(&input, &forced_output(Fault::DropsTurnInProgress, &input)),
        Err(Violation::Output(OutputViolation::TurnInProgressLost {
            start: input.len() - 3,
            end: input.len()
        }))
    );
    // A result the model has not seen, rewritten, is lost as well.
    let mut rewritten = kept.clone();
    let last = rewritten.len() - 1;
    rewritten[last] = Message::tool_result("last-b", "[cleared]");
    assert!(matches!(
        check_output(&input, &rewritten),
        Err(Violation::Output(
            OutputViolation::TurnInProgressLost { .. }
        ))
    ));
    // Earlier rounds of a long turn the model has already seen are the engine's to compress.
    let mut one_turn = vec![Message::system("You are terse."), Message::user("only ask")];
    for i in 0..6 {
        one_turn.push(Message::assistant_tool_calls(vec![ToolCall::new(
            format!("t{i}"),
            "run",
            "{}",
        )]));
        one_turn.push(Message::tool_result(format!("t{i}"), "x".repeat(400)));
    }
    let compressed = forced_output(Fault::None, &one_turn);
    assert!(compressed.len() < one_turn.len());
    assert_eq!(check_output(&one_turn, &compressed), Ok(()));
}

#[test]
fn unchanged_under_the_threshold_is_checked_where_the_engine_says_it_is_under() {
    let input = chat(3);
    let tokens = tokens::count_messages(&input);
    let host = ctxhost_sdk_test::FakeHost::builder("keeper")
        .context_length(tokens * 4)
        .build();
    let mut good = keeper(Fault::None)(host.services()).unwrap();
    assert_eq!(check_unchanged_under_threshold(&mut good, &input), Ok(()));
    let mut eager = keeper(Fault::AlwaysCompresses)(host.services()).unwrap();
    assert_eq!(
        check_unchanged_under_threshold(&mut eager, &input),
        Err(Violation::ChangedUnderThreshold {
            tokens,
            first_difference: 2
        })
    );
    let small = ctxhost_sdk_test::FakeHost::builder("keeper")
        .context_length(tokens)
        .build();
    let mut full = keeper(Fault::None)(small.services()).unwrap();
    assert_eq!(
        check_unchanged_under_threshold(&mut full, &input),
        Err(Violation::NotUnderThreshold {
            tokens,
            context_length: tokens
        })
    );
}

#[test]
fn idempotence_compresses_the_output_again() {
    let input = chat(6);
    let host = ctxhost_sdk_test::FakeHost::new("keeper");
    let mut good = keeper(Fault::None)(host.services()).unwrap();
    let output = forced_output(Fault::None, &input);
    assert_eq!(check_idempotent(&mut good, &output), Ok(()));
    let mut stacking = keeper(Fault::AddsAMarkerEachTime)(host.services()).unwrap();
    let output = forced_output(Fault::AddsAMarkerEachTime, &input);
    assert!(matches!(
        check_idempotent(&mut stacking, &output),
        Err(Violation::NotIdempotent {
            first_difference: 2,
            ..
        })
    ));
}

#[test]
fn the_engine_check_reports_which_conversation_and_check_failed() {
    let failure = EngineCheck::new("keeper", keeper(Fault::Grows))
        .conversation("six turns", chat(6))
        .run()
        .unwrap_err();
    assert_eq!(failure.conversation, "six turns");
    assert_eq!(failure.check, Check::ForcedOutput);
    assert!(matches!(
        failure.violation,
        Violation::Output(OutputViolation::Larger { .. })
    ));
    assert!(
        failure
            .to_string()
            .starts_with("six turns: forced compression: the output is larger than the input: "),
        "{failure}"
    );

    let failure = EngineCheck::new("keeper", keeper(Fault::AddsAMarkerEachTime))
        .conversation("six turns", chat(6))
        .run()
        .unwrap_err();
    assert_eq!(failure.check, Check::Idempotent);

    // Shrinks the whole conversation, grows its opening (where there is little to drop).
    let failure = EngineCheck::new("keeper", keeper(Fault::LongMarker))
        .conversation("six turns", chat(6))
        .run()
        .unwrap_err();
    assert_eq!(failure.check, Check::ForcedOpening);
    assert!(matches!(
        failure.violation,
        Violation::Output(OutputViolation::Larger { .. })
    ));
    assert!(
        failure.to_string().starts_with(
            "six turns: forced compression of the opening: the output is larger than the input: "
        ),
        "{failure}"
    );

    let failure = EngineCheck::new("keeper", keeper(Fault::AlwaysCompresses))
        .conversation("three turns", chat(3))
        .run()
        .unwrap_err();
    assert_eq!(failure.check, Check::UnchangedUnderThreshold);

    let failure = check_engine("keeper", keeper(Fault::FailsToStart)).unwrap_err();
    assert_eq!(
        failure.violation,
        Violation::Engine {
            operation: "create",
            error: EngineError::invalid_input("plugins.keeper.x: bad")
        }
    );
    assert!(
        failure
            .to_string()
            .ends_with("create failed: plugins.keeper.x: bad"),
        "{failure}"
    );
}

#[test]
fn the_engine_check_passes_its_config_and_window_to_the_engine() {
    let mut seen = Vec::new();
    let report = EngineCheck::new("keeper", |services: HostServices| {
        seen.push((services.config().clone(), services.model().context_length));
        keeper(Fault::None)(services)
    })
    .config(serde_json::json!({"k": 1}))
    .context_length(500)
    .conversation("chat", chat(6))
    .run()
    .unwrap();
    assert_eq!(report.conversations, 1);
    assert_eq!(report.shrunk, 1);
    let roomy = (tokens::count_messages(&chat(6)) * 4).max(1_000);
    assert_eq!(
        seen,
        [
            (serde_json::json!({"k": 1}), 500),
            (serde_json::json!({"k": 1}), 500),
            (serde_json::json!({"k": 1}), roomy)
        ]
    );
}
