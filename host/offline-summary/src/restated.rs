//! What an ask or a remark says again of the standing facts: a sentence that only restates a
//! standing item is not written again in the sections after them (the goal's asks, a record's
//! Asked and Constraints), where an old value would read as the last word.

use crate::handoff::normalized;
use crate::standing::Book;

/// Words a sentence of an ask may hold, beside the sentences that state standing facts, and
/// still be an aside ("oh and never push to main. seriously."): a longer one asks for more.
const ASIDE_WORDS: usize = 3;

/// A standing item's text as an ask or a constraint holds it: normalized, without the capital
/// and the stop it was given as a sentence, lower case.
fn said_part(text: &str) -> String {
    normalized(text)
        .trim_end_matches(['.', '!', '?'])
        .to_string()
}

/// What the standing facts of `book` carry, as [`states_only`] takes it.
pub(crate) fn said_now(book: &Book) -> Vec<String> {
    book.items()
        .iter()
        .map(|item| said_part(&item.text))
        .collect()
}

/// What they carry or carried before a newer value replaced it.
pub(crate) fn said_ever(book: &Book) -> Vec<String> {
    let replaced = book.superseded().iter().map(|(old, _)| old);
    book.items()
        .iter()
        .chain(replaced)
        .map(|item| said_part(&item.text))
        .collect()
}

/// Whether `ask` (an item of the Goal section, or a record's Asked or Constraints) says
/// nothing but what the standing items carry (their texts, `standing`, normalized): each of
/// its sentences states one (with any aside around it, "…, so we will have to come back to
/// it", "…, if that works for you") or is a short aside, and no word left names a value.
pub(crate) fn states_only(ask: &str, standing: &[String]) -> bool {
    let words = |text: &str| {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .count()
    };
    let stated = |text: &str| -> bool {
        let text = normalized(text);
        standing
            .iter()
            .any(|said| !said.is_empty() && text.contains(said.as_str()))
    };
    let sentences = crate::extract::sentences(ask);
    if !sentences.iter().any(|s| stated(s))
        || !sentences
            .iter()
            .all(|s| stated(s) || words(s) <= ASIDE_WORDS)
    {
        return false;
    }
    let mut rest = normalized(ask);
    for said in standing.iter().filter(|said| !said.is_empty()) {
        if let Some(at) = rest.find(said.as_str()) {
            rest.replace_range(at..at + said.len(), " ");
        }
    }
    crate::standing::note_value(&rest).is_none()
}
