//! The corpus, from its default place: the one this crate ships.

use ctxhost_sdk::sequence;
use ctxhost_sdk_test::corpus;

#[test]
fn every_transcript_loads_as_a_valid_conversation() {
    let transcripts = corpus::transcripts();
    assert!(transcripts.len() >= 10, "{} transcripts", transcripts.len());
    let names: Vec<&str> = transcripts.iter().map(|t| t.name.as_str()).collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted by name");
    for transcript in &transcripts {
        assert!(transcript.name.ends_with(".json"));
        assert!(transcript.messages[0].is_system(), "{}", transcript.name);
        sequence::validate(&transcript.messages)
            .unwrap_or_else(|e| panic!("{}: {e}", transcript.name));
    }
    let first = &transcripts[0];
    assert_eq!(corpus::transcript(&first.name), first.messages);
    let bare = first.name.strip_suffix(".json").unwrap();
    assert_eq!(corpus::transcript(bare), first.messages);
}

#[test]
fn the_long_session_is_every_transcript_behind_one_system_prompt() {
    let transcripts = corpus::transcripts();
    let session = corpus::long_session();
    let expected: usize = transcripts
        .iter()
        .map(|t| t.messages.len() - 1)
        .sum::<usize>()
        + 1;
    assert_eq!(session.len(), expected);
    assert_eq!(session[0], transcripts[0].messages[0]);
    assert_eq!(session.iter().filter(|m| m.is_system()).count(), 1);
    assert_eq!(session.last(), transcripts.last().unwrap().messages.last());
    sequence::validate(&session).unwrap();
}

#[test]
fn an_unknown_transcript_name_lists_the_ones_there_are() {
    let panic = std::panic::catch_unwind(|| corpus::transcript("no-such-transcript"))
        .expect_err("an unknown name panics");
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(
        message.starts_with("no transcript named no-such-transcript in the corpus at "),
        "{message}"
    );
    assert!(
        message.contains(&corpus::transcripts()[0].name),
        "{message}"
    );
}
