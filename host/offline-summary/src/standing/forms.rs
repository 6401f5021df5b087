//! Forms a standing item takes anywhere in a sentence, not only at its start: a bound on a
//! value ("at most 400 lines"), a decision ("we settled on Rust 1.79"), an open question
//! ("still unclear whether refunds share the queue"), a goal said as a want ("what we really
//! want is …"), and the all-caps label that marks a line as binding ("SAFETY RULE: …").
//!
//! Each reader takes the lower-cased sentence and answers byte offsets into it, which are
//! those of the sentence as written (ASCII lower-casing keeps lengths). The reader runs on
//! every sentence of a session: each form is first looked for in one pass over the sentence
//! (an automaton of its phrases), and searched phrase by phrase only when one is there.

use crate::markers::Markers;

/// Labels that open a log line, a prompt's setting or a to-do: not binding, whatever their
/// capitals.
const NOT_BINDING_LABELS: &[&str] = &[
    "error",
    "err",
    "warn",
    "warning",
    "info",
    "debug",
    "trace",
    "fatal",
    "panic",
    "hint",
    "log",
    "stdout",
    "stderr",
    "setting",
    "context",
    "background",
    "input",
    "output",
    "example",
    "usage",
    "todo",
    "fixme",
    "xxx",
    "http",
    "https",
];

/// Words that say a value changed.
const CUES: &[&str] = &[
    "renamed",
    "moved to",
    "moved from",
    "moved into",
    "moved off",
    "changed",
    "switched to",
    "switched from",
    "switched over",
    "replaced by",
    "replaced with",
    "instead",
    "no longer",
    "now",
    "update",
    "updated",
    "correction",
    "scratch that",
    "rotated",
    "migrated",
    "anymore",
    "raised to",
    "lowered to",
    "increased to",
    "decreased to",
    "reduced to",
    "bumped to",
    "switching",
];

/// Whether `text` says that a value changed ("renamed", "moved to", "now", "instead", "no
/// longer", "update: …"); "from now on" and "for now" say how long something holds, not that
/// it changed.
pub fn is_change(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    CUES.iter().any(|cue| {
        lower.match_indices(cue).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + cue.len()..].chars().next();
            let whole = !before.is_some_and(char::is_alphanumeric)
                && !after.is_some_and(char::is_alphanumeric);
            let lasting = *cue == "now"
                && ["from ", "for ", "right ", "until "]
                    .iter()
                    .any(|lead| lower[..at].ends_with(lead));
            whole && !lasting
        })
    })
}

/// Labels that say a value changed: what follows is read as it is, not as a rule.
const CHANGE_LABELS: &[&str] = &[
    "changed",
    "change",
    "change request",
    "update",
    "updated",
    "correction",
    "revised",
];

/// Whether `label` (lower case) says that what follows changed a value.
pub fn is_change_label(label: &str) -> bool {
    CHANGE_LABELS.contains(&label) || label == "scratch that"
}

/// The all-caps label opening `text` (`SAFETY RULE: …`, `IMPORTANT: …`), when it is one that
/// marks what follows as binding; `Err(())` when it opens a log line or a setting.
pub fn caps_label(text: &str) -> Result<Option<&str>, ()> {
    let Some((label, _)) = text.split_once(": ") else {
        return Ok(None);
    };
    let letters = label.bytes().filter(u8::is_ascii_uppercase).count();
    let caps = letters >= 2
        && label.split(' ').count() <= 3
        && label
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b' ' || b == b'-' || b == b'_');
    if !caps {
        return Ok(None);
    }
    let lower = label.to_ascii_lowercase();
    if NOT_BINDING_LABELS.contains(&lower.as_str()) {
        return Err(());
    }
    if CHANGE_LABELS.contains(&lower.as_str()) {
        return Ok(None);
    }
    Ok(Some(label))
}

/// Words before a number that bound it: the value after one is a limit.
const BOUNDS: &[&str] = &[
    "at most ",
    "at least ",
    "no more than ",
    "not more than ",
    "no less than ",
    "no fewer than ",
    "not exceed ",
    "never exceed ",
    "maximum of ",
    "minimum of ",
    "a max of ",
    "max ",
    "min ",
    "up to ",
    "a budget of ",
    "a limit of ",
    "a cap of ",
    "a ceiling of ",
];

/// Bounds read only after `must` / `should` / `keep` / `stay`: on their own they are prose.
const MODAL_BOUNDS: &[&str] = &[
    "in under ",
    "under ",
    "below ",
    "above ",
    "over ",
    "within ",
    "less than ",
    "fewer than ",
    "more than ",
];

/// Words that make a bound binding rather than descriptive.
const MODALS: &[&str] = &[
    "must ",
    "should ",
    "shall ",
    "keep ",
    "stay ",
    "needs to ",
    "has to ",
];

/// `… at most 400 lines`: where the bound starts and where its value starts, when the value
/// starts with a number or an amount.
pub fn bound(body: &str) -> Option<(usize, usize)> {
    static ANY: Markers = Markers::either(BOUNDS, MODAL_BOUNDS);
    if !ANY.any_in(body) {
        return None;
    }
    let modal = MODALS.iter().any(|m| body.contains(m));
    let bounds = BOUNDS.iter().chain(if modal { MODAL_BOUNDS } else { &[] });
    bounds
        .filter_map(|bound| {
            body.match_indices(bound)
                .filter(|(at, _)| *at == 0 || body.as_bytes()[at - 1] == b' ')
                .map(|(at, _)| (at, at + bound.len()))
                .find(|(_, value)| {
                    body[*value..]
                        .bytes()
                        .next()
                        .is_some_and(|b| b.is_ascii_digit() || b"$#".contains(&b))
                        || body[*value..].starts_with(['€', '£', '¥'])
                })
        })
        .min()
}

/// Phrases that say something was chosen; the choice follows.
const DECIDED: &[&str] = &[
    "let's go with ",
    "lets go with ",
    "we'll go with ",
    "we will go with ",
    "we are going with ",
    "we're going with ",
    "we went with ",
    "we decided to ",
    "we decided on ",
    "we've decided to ",
    "we have decided to ",
    "i decided to ",
    "i've decided to ",
    "we settled on ",
    "we've settled on ",
    "we agreed to ",
    "we agreed on ",
    "we chose ",
    "we opted for ",
    "the decision is to ",
    "the decision is ",
    // "After some back and forth we agreed that …": what was agreed follows.
    "agreed that ",
    "decided that ",
    "settled that ",
];

/// Where the choice a sentence decides starts.
pub fn decision(body: &str) -> Option<usize> {
    static ANY: Markers = Markers::new(DECIDED);
    if !ANY.any_in(body) {
        return None;
    }
    DECIDED
        .iter()
        .filter_map(|phrase| {
            body.match_indices(phrase)
                .find(|(at, _)| *at == 0 || body.as_bytes()[at - 1] == b' ')
                .map(|(at, _)| at + phrase.len())
        })
        .min()
}

/// Phrases that leave a question open; what is open follows (from `whether` / `if` on).
const OPEN: &[&str] = &[
    "not sure whether ",
    "not sure if ",
    "unsure whether ",
    "unsure if ",
    "unclear whether ",
    "unclear if ",
    "undecided whether ",
    "undecided on ",
    "not decided whether ",
    "haven't decided whether ",
    "have not decided whether ",
    "yet to decide whether ",
    "still open whether ",
    "an open question whether ",
    "open question is whether ",
];

/// Words that say something is not known or not settled yet; an open question follows when a
/// question word does ("nobody has settled yet who owns X", "still not sure which region").
const UNSETTLED: &[&str] = &[
    "not sure ",
    "unsure ",
    "unclear ",
    "undecided ",
    "not decided ",
    "not settled ",
    "not yet settled ",
    "not yet decided ",
    "nobody has settled ",
    "no one has settled ",
    "nobody has decided ",
    "no one has decided ",
    "nobody knows ",
    "no one knows ",
    "haven't decided ",
    "haven't settled ",
    "haven't figured out ",
    "have not figured out ",
    "not figured out ",
    "nobody has figured out ",
    "no one has figured out ",
    "don't know ",
    "do not know ",
    "don't know yet ",
    "remains to be seen ",
    "to be decided ",
    "still open ",
];

/// Question words an open question starts with.
const QUESTION_WORDS: &[&str] = &[
    "whether ", "if ", "who ", "what ", "which ", "when ", "where ", "how ", "why ",
];

/// Where what a sentence leaves open starts (its `whether …`, `who …`).
pub fn open_question(body: &str) -> Option<usize> {
    static ANY: Markers = Markers::either(OPEN, UNSETTLED);
    if !ANY.any_in(body) {
        return None;
    }
    let unsettled = UNSETTLED
        .iter()
        .filter_map(|phrase| {
            let at = body.find(phrase)?;
            let mut rest = at + phrase.len();
            // "… settled yet who", "not sure on whether": a few words may come between.
            for _ in 0..2 {
                let word = QUESTION_WORDS
                    .iter()
                    .find(|w| body[rest..].starts_with(**w));
                if word.is_some() {
                    return Some(rest);
                }
                let skip = ["yet ", "still ", "on ", "about ", "exactly ", "really "]
                    .iter()
                    .find(|w| body[rest..].starts_with(**w))?;
                rest += skip.len();
            }
            QUESTION_WORDS
                .iter()
                .any(|w| body[rest..].starts_with(*w))
                .then_some(rest)
        })
        .min();
    OPEN.iter()
        .filter_map(|phrase| {
            body.find(phrase).map(|at| {
                let end = at + phrase.len();
                // `whether …` / `if …` stays with the question: it reads as one.
                ["whether ", "if "]
                    .iter()
                    .find(|word| phrase.ends_with(**word))
                    .map_or(end, |word| end - word.len())
            })
        })
        .chain(unsettled)
        .min()
}

/// Words that say the part of a sentence before its `is to …` names what the work is for.
const AIMS: &[&str] = &[
    "trying",
    "want",
    "wanted",
    "need",
    "needed",
    "aim",
    "aiming",
    "point",
    "purpose",
    "plan",
    "planning",
    "hope",
    "hoping",
    "intend",
    "goal",
    "objective",
    "mission",
    "idea",
];

/// `… is to …` after words that say what the work is for ("what we are really trying to do
/// this week is to X", "the whole point is to X"): where the goal (`to X`) starts.
pub fn aim(body: &str) -> Option<usize> {
    let at = body.find(" is to ")?;
    let head = &body[..at];
    let words = head.split_whitespace().count();
    let aims = head
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|word| AIMS.contains(&word));
    (aims && words <= 12).then_some(at + " is ".len())
}

/// `what we (really) want is …`, `i want to …`, `we want to …`: where the goal starts.
pub fn wanted(body: &str) -> Option<usize> {
    for start in ["i want to ", "we want to ", "we'd like to ", "i'd like to "] {
        if body.starts_with(start) {
            return Some(start.len());
        }
    }
    let rest = body.strip_prefix("what ")?;
    let (head, _) = rest.split_once(" is ")?;
    let mut words = head.split(' ');
    let who = words.next()?;
    let want = words.next_back()?;
    let between_ok = words.all(|w| {
        [
            "really",
            "ultimately",
            "actually",
            "truly",
            "all",
            "most",
            "eventually",
        ]
        .contains(&w)
    });
    let ok = ["i", "we", "the user", "the team"].contains(&who)
        && ["want", "need", "wanted", "needed"].contains(&want)
        && between_ok;
    ok.then(|| "what ".len() + head.len() + " is ".len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_found_where_they_are() {
        assert_eq!(caps_label("SAFETY RULE: never x"), Ok(Some("SAFETY RULE")));
        assert_eq!(caps_label("WARN: retry"), Err(()));
        assert_eq!(caps_label("Note: x"), Ok(None));
        let body = "keep every pr to at most 400 changed lines";
        assert_eq!(
            bound(body).map(|(_, v)| &body[v..]),
            Some("400 changed lines")
        );
        assert_eq!(bound("it took under 3 minutes"), None);
        let body = "the job must finish in under 15 minutes";
        assert_eq!(bound(body).map(|(_, v)| &body[v..]), Some("15 minutes"));
        let body = "after some debate we settled on rust 1.79";
        assert_eq!(decision(body).map(|at| &body[at..]), Some("rust 1.79"));
        let body = "it is still unclear whether refunds queue";
        assert_eq!(
            open_question(body).map(|at| &body[at..]),
            Some("whether refunds queue")
        );
        let body = "what i really want is to ship it";
        assert_eq!(wanted(body).map(|at| &body[at..]), Some("to ship it"));
        assert_eq!(wanted("what it is is fine"), None);
    }
}
