//! A change of value said its own way: "the smoke suite was renamed to X", "production is no
//! longer on v1; it runs v2 now", "we switched the queue backend to Y instead". The older item
//! it changes is found by what the two share (the value it replaces, or a run of the same
//! words), never by how the change is phrased, and that item takes the new value: the rule
//! "always run the smoke suite X before every merge" becomes "… the smoke suite Y …", so the
//! rule and its current value stay one item.

pub use super::forms::is_change;
use super::read::value_tokens;
use super::{Kind, Standing};

/// Function words and change words: what two statements about one thing share beyond them is
/// what they are about.
const STOP: &[&str] = &[
    "the",
    "a",
    "an",
    "and",
    "or",
    "but",
    "of",
    "to",
    "in",
    "on",
    "onto",
    "at",
    "by",
    "for",
    "with",
    "from",
    "into",
    "as",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "there",
    "here",
    "we",
    "i",
    "you",
    "he",
    "she",
    "they",
    "my",
    "our",
    "your",
    "their",
    "me",
    "us",
    "them",
    "do",
    "does",
    "did",
    "not",
    "no",
    "so",
    "then",
    "than",
    "now",
    "instead",
    "longer",
    "just",
    "same",
    "also",
    "still",
    "any",
    "every",
    "all",
    "each",
    "some",
    "will",
    "would",
    "should",
    "must",
    "can",
    "could",
    "may",
    "might",
    "shall",
    "has",
    "have",
    "had",
    "new",
    "old",
    "current",
    "please",
    "ok",
    "okay",
    "one",
    "renamed",
    "moved",
    "changed",
    "switched",
    "replaced",
    "update",
    "updated",
    "correction",
    "scratch",
    "rotated",
    "migrated",
    "anymore",
    "raised",
    "lowered",
    "increased",
    "decreased",
    "reduced",
    "bumped",
    "switching",
    "should",
    "always",
    "never",
    "don't",
    "let's",
    "which",
    "what",
    "who",
    "whether",
    "if",
    "i'd",
    "i'm",
    "we're",
    "we'd",
    "we'll",
    "it's",
    "that's",
    "rather",
    "like",
    "prefer",
    "preferred",
    "sure",
    "yet",
    "goes",
    "go",
    "going",
    "runs",
    "run",
    "use",
    "uses",
    "using",
    "make",
    "keep",
    "got",
    "get",
    "gets",
    "since",
    "request",
];

/// Links after the name of what a change changes ("the smoke suite was renamed to X").
const LINKS: &[&str] = &[
    " is now ",
    " are now ",
    " was renamed",
    " has been renamed",
    " renamed to ",
    " was changed to ",
    " has changed to ",
    " changed to ",
    " was moved to ",
    " moved to ",
    " is no longer ",
    " is ",
    " are ",
];

/// The word that names what a change changes: the last word of its name before the link
/// ("my preferred reviewer is now X" → "reviewer").
fn named(text: &str) -> Option<String> {
    let lower = statement(text).to_ascii_lowercase();
    let (at, _) = LINKS
        .iter()
        .filter_map(|link| lower.find(link).map(|at| (at, *link)))
        .min()?;
    let name = &lower[..at];
    if name.split_whitespace().count() > 6 {
        return None;
    }
    content_words(name).pop()
}

/// `text` without a short label opening it ("Change request: …", "Constraint — …"): the words
/// that say what the statement is about.
fn statement(text: &str) -> &str {
    match label(text) {
        Some((_, rest)) => statement(rest),
        None => text,
    }
}

/// A short label opening `text` and what follows it: a few words of letters before `: `,
/// ` — ` or ` – `, with something after.
fn label(text: &str) -> Option<(&str, &str)> {
    [": ", " — ", " – "].iter().find_map(|separator| {
        let (label, rest) = text.split_once(separator)?;
        let short = label.split_whitespace().count() <= 4
            && label
                .chars()
                .all(|c| c.is_alphabetic() || c == ' ' || c == '-');
        (short && !rest.trim().is_empty()).then_some((label, rest))
    })
}

/// The words of `text` that say what it is about, in order: no function word, no value.
fn content_words(text: &str) -> Vec<String> {
    let values = value_tokens(text);
    statement(text)
        .split_whitespace()
        .map(|word| word.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|word| !word.is_empty() && !values.contains(word))
        .map(str::to_lowercase)
        .filter(|word| word.len() >= 2 && !STOP.contains(&word.as_str()))
        .collect()
}

/// The words that say what an older item `text` is about: a label that names its subject
/// ("ALERT THRESHOLD: 80 % CPU") before the statement's own words; a label naming a kind, a
/// change or how it is meant ("Rule:", "Correction:", "Note:") says nothing of the subject. A
/// change's own label is never read so: two changes announced alike are not about one thing.
fn subject_words(text: &str) -> Vec<String> {
    let mut words = match label(text) {
        Some((label, _)) => {
            let lower = label.trim().to_ascii_lowercase();
            let says_kind = super::read::kind_of_label(&lower).is_some()
                || super::forms::is_change_label(&lower)
                || super::read::is_lead(&lower);
            if says_kind {
                Vec::new()
            } else {
                content_words(label)
            }
        }
        None => Vec::new(),
    };
    words.extend(content_words(text));
    words
}

/// How strongly a change is about an older item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tie {
    /// One word in common, between items of one kind.
    Word,
    /// Two words in a row in common ("smoke suite", "queue backend").
    Phrase,
    /// The change names the older item's value ("no longer on v9.73.97").
    Value,
}

/// The older item among `items` that `change` changes, when it is a change and one is about the
/// same thing and holds a value to replace; the closest tie wins, then the latest.
pub fn target(items: &[Standing], change: &Standing) -> Option<usize> {
    if !is_change(&change.text) {
        return None;
    }
    let new_values = value_tokens(&change.text);
    let words = content_words(&change.text);
    let name = named(&change.text);
    let pairs: Vec<(&str, &str)> = words
        .windows(2)
        .map(|pair| (pair[0].as_str(), pair[1].as_str()))
        .collect();
    items
        .iter()
        .enumerate()
        .filter_map(|(at, known)| {
            let old_values = value_tokens(&known.text);
            if old_values.is_empty() {
                return None;
            }
            // "No longer on v1; it runs v2", "Kafka, not v1 anymore": a value it names is the
            // one it replaces, when it gives another or says the old one is gone.
            let names_old = old_values.iter().any(|value| new_values.contains(value))
                && (new_values.iter().any(|value| !old_values.contains(value))
                    || says_gone(&change.text));
            let tie = if names_old {
                Tie::Value
            } else {
                let known_words = subject_words(&known.text);
                // "the queue for events" and "the events queue" name one thing.
                let shared_pair = known_words.windows(2).any(|pair| {
                    let (a, b) = (pair[0].as_str(), pair[1].as_str());
                    pairs.contains(&(a, b)) || pairs.contains(&(b, a))
                });
                // One word in common is enough when it names what the change changes and
                // the two are of one kind (or one is a note, which has none).
                let kinds = known.kind == change.kind
                    || known.kind == Kind::Note
                    || change.kind == Kind::Note;
                let shared_name = name.as_ref().is_some_and(|name| known_words.contains(name));
                if shared_pair {
                    Tie::Phrase
                } else if shared_name && kinds && substitution(known, change).is_some() {
                    Tie::Word
                } else {
                    return None;
                }
            };
            Some((tie, at))
        })
        .max()
        .map(|(_, at)| at)
}

/// Whether a change says a value is gone ("no longer", "instead of", "anymore").
fn says_gone(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    [
        "no longer",
        "instead of",
        "rather than",
        "anymore",
        "any more",
        "not ",
    ]
    .iter()
    .any(|cue| lower.contains(cue))
}

/// The value `change` replaces in `known` and the one it gives, when each is one word.
fn substitution<'a>(known: &'a Standing, change: &'a Standing) -> Option<(&'a str, &'a str)> {
    let old_values = value_tokens(&known.text);
    let new_values = value_tokens(&change.text);
    let mut given = new_values
        .iter()
        .filter(|value| !old_values.contains(value));
    let mut replaced = old_values
        .iter()
        .filter(|value| !new_values.contains(value));
    // "No longer on v1; it runs v2 now": the value named in both is the one replaced.
    let named: Vec<&&str> = old_values
        .iter()
        .filter(|value| new_values.contains(value))
        .collect();
    let new = given.next()?;
    if given.next().is_some() {
        return None;
    }
    let old = match (replaced.next(), replaced.next(), named.as_slice()) {
        (Some(old), None, _) => old,
        (None, _, [old]) => old,
        _ => return None,
    };
    Some((old, new))
}

/// What `known` becomes once `change` changes it: its own words with the new value in place of
/// the old one (and the two values), when the change gives one value for one; otherwise the
/// change as said.
pub fn applied(known: &Standing, change: Standing) -> (Standing, Option<(String, String)>) {
    let Some((old, new)) = substitution(known, &change) else {
        return (change, None);
    };
    let item = Standing {
        kind: known.kind,
        subject: replace_token(&known.subject, &old.to_lowercase(), &new.to_lowercase()),
        value: if known.value.contains(old) {
            replace_token(&known.value, old, new)
        } else {
            new.to_string()
        },
        text: replace_token(&known.text, old, new),
    };
    (item, Some((old.to_string(), new.to_string())))
}

/// `text` with every standalone `old` replaced by `new`.
fn replace_token(text: &str, old: &str, new: &str) -> String {
    let mut out = String::with_capacity(text.len() + new.len());
    let mut rest = 0;
    for (at, _) in text.match_indices(old) {
        let end = at + old.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        let standalone =
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric);
        if at < rest || !standalone {
            continue;
        }
        out.push_str(&text[rest..at]);
        out.push_str(new);
        rest = end;
    }
    out.push_str(&text[rest..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_told_from_statements_that_last() {
        for text in [
            "The bucket was renamed to logs-7.",
            "We deploy to eu-west-1 now.",
            "Use NATS instead.",
            "We no longer ship on Fridays.",
            "Correction: the port is 8443.",
        ] {
            assert!(is_change(text), "{text}");
        }
        for text in [
            "From now on, answer in French.",
            "Keep the old endpoint for now.",
            "The snowplow is green.",
            "We deploy to us-west-2.",
        ] {
            assert!(!is_change(text), "{text}");
        }
    }

    #[test]
    fn a_value_is_replaced_in_the_words_that_gave_it() {
        assert_eq!(
            replace_token("ship v1.2 not v1.20 (v1.2)", "v1.2", "v2"),
            "ship v2 not v1.20 (v2)"
        );
    }
}
