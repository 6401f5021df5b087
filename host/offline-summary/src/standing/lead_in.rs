//! A standing line's text without the lead-in that only announces its kind ("After some back
//! and forth we agreed that …", "What we are trying to do this week is to …", "Nobody has
//! settled yet whether …", "I would like it if …", "Keep in mind that …"): the line's label
//! says it is a decision, a goal, an open question or a preference, so those words cost room
//! and say nothing more. Every value, condition and negation stays: a lead-in holding one is
//! kept whole.

use super::forms;
use super::read::{value_tokens, RULE_ADDRESSEES};
use super::Kind;

/// Longest lead-in dropped, in words: a longer head is a statement of its own.
const LEAD_IN_WORDS: usize = 12;
/// Fewest words left after a lead-in: less is no statement.
const REST_WORDS: usize = 3;

/// Verbs (and a noun or two) that say someone agreed, decided, wanted, noted or thought
/// something: a clause made of one, before `that` / `:` / `,`, only announces what follows.
const ANNOUNCING: &[&str] = &[
    "agree",
    "agreed",
    "decide",
    "decided",
    "settle",
    "settled",
    "chose",
    "choose",
    "opted",
    "want",
    "wanted",
    "note",
    "noted",
    "understood",
    "acknowledged",
    "record",
    "mind",
    "remember",
    "recall",
    "hope",
    "hoping",
    "think",
    "believe",
    "confirm",
    "confirmed",
    "figured",
];

/// Words that point at what follows a colon ("Let's go with this: …").
const POINTERS: &[&str] = &["this", "that", "these", "the following", "as follows"];

/// Words that limit what follows them; a lead-in holding one is no mere lead-in.
const CONDITIONS: &[&str] = &[
    "unless",
    "except",
    "only",
    "if",
    "provided",
    "providing",
    "as long as",
    "until",
    "whenever",
    "otherwise",
    "but",
];

/// Words that negate; a lead-in holding one is kept (the open-question form's own "not sure"
/// aside, which the Question label carries).
const NEGATIONS: &[&str] = &["not", "never", "no", "nobody", "none", "nothing", "neither"];

/// `text` (a line's shown text) without the lead-in that only announces `kind`, written as a
/// sentence; `None` when it has none to drop.
pub(super) fn without_lead_in(kind: Kind, text: &str) -> Option<String> {
    let mut cut = 0;
    // A lead-in can open another ("we agreed that let's go with this: …"): a few rounds.
    for _ in 0..3 {
        let rest = &text[cut..];
        let lower = rest.to_ascii_lowercase();
        let Some(next) = form_lead_in(kind, &lower).or_else(|| announcing_clause(&lower)) else {
            break;
        };
        if names_something(&rest[..next]) {
            break;
        }
        cut += next;
    }
    let rest = text[cut..].trim_start();
    if cut == 0 || rest.split_whitespace().count() < REST_WORDS {
        return None;
    }
    // A sentence, as it was (a capital first), unless it opens with a value.
    let plain = rest
        .split(' ')
        .next()
        .is_some_and(|word| word.bytes().all(|b| b.is_ascii_lowercase()));
    let mut chars = rest.chars();
    Some(match chars.next() {
        Some(first) if plain => first.to_uppercase().chain(chars).collect(),
        _ => rest.to_string(),
    })
}

/// Where the substance starts after the words of `kind`'s own form ("not sure whether",
/// "is to", "we agreed that", "I would like it if"), when those words hold nothing else.
fn form_lead_in(kind: Kind, lower: &str) -> Option<usize> {
    let at = match kind {
        Kind::Question => forms::open_question(lower)?,
        Kind::Goal => forms::aim(lower).or_else(|| forms::wanted(lower))?,
        Kind::Decision => forms::decision(lower)?,
        // "You must never X": "never X" says it all under a Rule label.
        Kind::Rule => {
            let rest = RULE_ADDRESSEES
                .iter()
                .find_map(|who| lower.strip_prefix(who))
                .unwrap_or(lower);
            let modal = ["must ", "should "]
                .iter()
                .find(|modal| rest.starts_with(**modal))?;
            let rest = &rest[modal.len()..];
            if !(rest.starts_with("never ") || rest.starts_with("always ")) {
                return None;
            }
            lower.len() - rest.len()
        }
        // The whole head is one of these phrases: its "if" is the form's, no condition.
        Kind::Preference => {
            return PREFERENCE_LEAD_INS
                .iter()
                .find(|start| lower.starts_with(**start))
                .map(|start| start.len())
        }
        _ => return None,
    };
    let head = &lower[..at];
    let own_negation = kind == Kind::Question;
    (holds_nothing(head, own_negation) && head.split_whitespace().count() <= LEAD_IN_WORDS)
        .then_some(at)
}

/// How a preference is announced by who holds it; the preferred thing follows whole. Forms
/// that name the act ("please use", "I want you to use") keep their verb.
const PREFERENCE_LEAD_INS: &[&str] = &[
    "i would like it if ",
    "i'd like it if ",
    "we would like it if ",
    "we'd like it if ",
    "i would love it if ",
    "i'd love it if ",
    "i would prefer it if ",
    "i'd prefer it if ",
    "i'd rather ",
    "i would rather ",
    "we'd rather ",
    "we would rather ",
    "ideally ",
];

/// Where the substance starts after a clause that only announces it: the words before the
/// first `that `, `: ` or `, ` hold an announcing verb ([`ANNOUNCING`]) or only point at
/// what follows ([`POINTERS`]), and nothing else worth keeping.
fn announcing_clause(lower: &str) -> Option<usize> {
    let (at, separator) = [" that ", ": ", ", "]
        .iter()
        .filter_map(|separator| lower.find(separator).map(|at| (at, *separator)))
        .min()?;
    let head = lower[..at].trim();
    let words: Vec<&str> = head
        .split(|c: char| !(c.is_ascii_alphabetic() || c == '\''))
        .filter(|word| !word.is_empty())
        .collect();
    if words.is_empty() || words.len() > LEAD_IN_WORDS {
        return None;
    }
    // The announcing verb ends the clause ("we all agreed that"): one followed by more words
    // ("we decided to use X, …") heads a statement of its own.
    let last = words[words.len() - 1];
    let announces = ANNOUNCING.contains(&last);
    let points = separator == ": "
        && (POINTERS.contains(&head)
            || POINTERS.contains(&last) && words.iter().any(|word| ANNOUNCING.contains(word)));
    ((announces || points) && holds_nothing(head, false)).then_some(at + separator.len())
}

/// Whether a lead-in (as written) names something: a capitalized word after its first ("In
/// the Berlin meeting we agreed that …"), which stays with the line.
fn names_something(head: &str) -> bool {
    head.split_whitespace().skip(1).any(|word| {
        let bare = word.trim_start_matches(|c: char| !c.is_alphanumeric());
        bare.starts_with(|c: char| c.is_uppercase())
            && !["I", "I'd", "I'm", "I've", "I'll"].contains(&bare.trim_end_matches([',', ':']))
    })
}

/// Whether a lead-in holds no value, no condition and (unless the form owns it) no negation.
fn holds_nothing(head: &str, own_negation: bool) -> bool {
    let words: Vec<&str> = head
        .split(|c: char| !(c.is_ascii_alphabetic() || c == '\''))
        .filter(|word| !word.is_empty())
        .collect();
    let has = |list: &[&str]| {
        list.iter().any(|phrase| {
            if phrase.contains(' ') {
                head.contains(phrase)
            } else {
                words.contains(phrase)
            }
        })
    };
    let negates = has(NEGATIONS) || words.iter().any(|word| word.ends_with("n't"));
    value_tokens(head).is_empty()
        && !head.bytes().any(|b| b.is_ascii_digit())
        && !has(CONDITIONS)
        && (own_negation || !negates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_lead_ins_that_announce_the_kind() {
        let cases: &[(Kind, &str, &str)] = &[
            (
                Kind::Decision,
                "After some back and forth we agreed that we use tundra-3946 as the queue backend.",
                "We use tundra-3946 as the queue backend.",
            ),
            (
                Kind::Decision,
                "Let's go with this: the cache key scheme is GA-1484-ET.",
                "The cache key scheme is GA-1484-ET.",
            ),
            (
                Kind::Goal,
                "What we are really trying to do this week is to ship the importer by 2036-09-20.",
                "To ship the importer by 2036-09-20.",
            ),
            (
                Kind::Question,
                "Nobody has settled yet who owns the vendor contract UNE-37697.",
                "Who owns the vendor contract UNE-37697.",
            ),
            (
                Kind::Preference,
                "I would like it if the log format is garnet-8297.",
                "The log format is garnet-8297.",
            ),
            (
                Kind::Constraint,
                "Keep in mind that the job timeout is 26,533 ms for every job.",
                "The job timeout is 26,533 ms for every job.",
            ),
            (
                Kind::Rule,
                "You must never reveal the API key FM-1672-CI in any reply, log or file.",
                "Never reveal the API key FM-1672-CI in any reply, log or file.",
            ),
            (
                Kind::Fact,
                "For the record, the data directory is /srv/meridian-2367/data.",
                "The data directory is /srv/meridian-2367/data.",
            ),
        ];
        for (kind, text, short) in cases {
            assert_eq!(
                without_lead_in(*kind, text).as_deref(),
                Some(*short),
                "{text}"
            );
        }
    }

    #[test]
    fn keeps_lead_ins_that_hold_a_value_a_condition_or_a_negation() {
        let cases: &[(Kind, &str)] = &[
            // A condition before the agreement limits it.
            (
                Kind::Decision,
                "Unless legal objects, we agreed that the queue backend is osprey-3069.",
            ),
            // A negation of the announcing verb.
            (
                Kind::Decision,
                "We never agreed that the cache key scheme is GA-1484-ET.",
            ),
            (
                Kind::Fact,
                "We don't think that the data directory is /srv/x-1/data.",
            ),
            // A value in the head.
            (
                Kind::Decision,
                "In meeting 42 we agreed that the rollout goes behind flag willow-9370.",
            ),
            // No announcing verb: "that" is part of the statement.
            (
                Kind::Rule,
                "Make sure that the smoke suite juniper-8054 passes.",
            ),
            // A name in the head.
            (
                Kind::Decision,
                "In the Berlin meeting we agreed that the rollout goes behind flag willow-9370.",
            ),
            // The announcing verb heads a statement of its own.
            (Kind::Fact, "We decided to use Postgres, which we noted."),
            // A rule's modal that is not "never" or "always".
            (
                Kind::Rule,
                "You must run the smoke suite juniper-8054 before every merge.",
            ),
            // Nothing left worth a line.
            (Kind::Decision, "We agreed that osprey-3069."),
        ];
        for (kind, text) in cases {
            assert_eq!(without_lead_in(*kind, text), None, "{text}");
        }
    }
}
