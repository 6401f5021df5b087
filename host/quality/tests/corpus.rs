//! The corpus this repository ships, found from inside the checkout (or where
//! `$CTXHOST_CORPUS` says), read through the typed API.

use std::path::Path;

use ctxhost_quality::corpus::{Corpus, CorpusError};
use ctxhost_sdk::sequence;

fn corpus() -> Corpus {
    Corpus::locate(None, Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn every_transcript_loads_as_a_valid_conversation() {
    let transcripts = corpus().transcripts().unwrap();
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
    assert_eq!(corpus().transcript(&first.name).unwrap(), first.messages);
    let bare = first.name.strip_suffix(".json").unwrap();
    assert_eq!(corpus().transcript(bare).unwrap(), first.messages);
}

#[test]
fn the_long_session_is_every_transcript_behind_one_system_prompt() {
    let transcripts = corpus().transcripts().unwrap();
    let session = corpus().long_session().unwrap();
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
    let error = corpus().transcript("no-such-transcript").unwrap_err();
    let CorpusError::NoSuchTranscript { name, names, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(name, "no-such-transcript");
    assert_eq!(names.len(), corpus().transcripts().unwrap().len());
    let message = error.to_string();
    assert!(
        message.starts_with("no transcript named no-such-transcript in the corpus at "),
        "{message}"
    );
    assert!(message.contains(&names[0]), "{message}");
}
