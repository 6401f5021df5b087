//! Reading standing items out of text by their sentence forms: imperatives with never / always
//! / must / do not / only, "the goal is …", "I prefer …", "name is value" and "name: value"
//! with a value that looks specific, "we deploy to …", labels ("Safety rule: …", any all-caps
//! label), bounds ("at most 400 lines"), decisions and open questions ([`super::forms`]).

use super::forms;
use super::{Kind, Origin, Standing, TEXT_MAX};
use crate::extract::{compact, sentences};
use crate::markers::Markers;

/// Most facts read from one tool result.
const TOOL_FACTS: usize = 4;
/// How much of a tool result is read for facts: its start, where a tool states what it is
/// about (a setting, a region, a version); the rest of a long output costs the hot path and
/// rarely states one.
const TOOL_SCAN_BYTES: usize = 4 * 1024;
/// Most words of a value in `name is value` / `name: value`.
const VALUE_WORDS: usize = 8;
/// Most words of a name in `name is value` / `name: value`.
const NAME_WORDS: usize = 6;

/// Cheap test before a sentence is read closely: most sentences hold none of these.
static CUES: Markers = Markers::new(&[
    " is ",
    " are ",
    ": ",
    " — ",
    " – ",
    " - ",
    "would like",
    "'d like",
    "ideally",
    "settled",
    "figured out",
    "not sure",
    "unsure",
    "nobody ",
    "no one ",
    "haven't ",
    "have not ",
    "remains to be",
    "to be decided",
    "don't know",
    "do not know",
    "never",
    "always",
    "must",
    "do not",
    "don't",
    "prefer",
    "please use",
    "goal",
    "task",
    "objective",
    "from now on",
    "going forward",
    " changed",
    " moved ",
    "renamed",
    "switched",
    "replaced",
    "no longer",
    "instead",
    " now ",
    " set to ",
    "at most",
    "at least",
    "no more than",
    "no less than",
    "no fewer than",
    "max ",
    "min ",
    "up to ",
    " of $",
    "should never",
    "should not",
    "avoid ",
    "stop using",
    "refrain from",
    "shall ",
    "under no ",
    "sure whether",
    "sure if",
    "unclear",
    "undecided",
    "decide whether",
    "decided whether",
    "open whether",
    "open question",
    "decided",
    "decision",
    "settled on",
    "go with",
    "going with",
    "went with",
    "agreed ",
    " chose ",
    "opted for",
    "want to ",
    "want is ",
    "wanted is ",
    "need is ",
    "i like ",
    "we like ",
    "d rather ",
    "would rather ",
]);

/// How an assistant confirms what it was told, at the start of a sentence.
const CONFIRMATIONS: &[&str] = &[
    "understood",
    "noted",
    "got it",
    "acknowledged",
    "confirmed",
    "will do",
    "as you said",
    "as requested",
    "reminder",
    "remembering",
    "i'll remember",
    "i will remember",
];

/// Whether an assistant's sentence opens by confirming what it was told (and says more).
fn confirms(sentence: &str) -> bool {
    let head = sentence.as_bytes().get(..16).unwrap_or(sentence.as_bytes());
    let lower = head.to_ascii_lowercase();
    CONFIRMATIONS.iter().any(|c| {
        lower.starts_with(c.as_bytes())
            && matches!(lower.get(c.len()), Some(b',' | b':' | b' ' | b'-'))
    })
}

/// Whether a sentence starts like "we deploy to …" (read without a cue word).
fn starts_with_who(sentence: &str) -> bool {
    let head = sentence.as_bytes().get(..6).unwrap_or(sentence.as_bytes());
    let lower = head.to_ascii_lowercase();
    [&b"we "[..], b"i ", b"i'm ", b"we're ", b"the te", b"you "]
        .iter()
        .any(|who| lower.starts_with(who))
}

/// Whether a sentence opens with a rule word that the cues leave out as too common elsewhere
/// ("Only use …", "Make sure …", "Ensure …").
fn starts_like_a_rule(sentence: &str) -> bool {
    let head = sentence.as_bytes().get(..12).unwrap_or(sentence.as_bytes());
    let lower = head.to_ascii_lowercase();
    [
        &b"only "[..],
        b"please only ",
        b"make sure ",
        b"ensure ",
        b"be sure to ",
        b"try to ",
    ]
    .iter()
    .any(|start| lower.starts_with(start))
}

/// The standing items `text` states, in order. A user's (or a system's) text is read by its
/// sentences' forms; when none reads and the text is a short message of its own naming a
/// value, it is held as said ([`Kind::Note`]): what a user tells an agent binds by default,
/// the forms only say what kind of thing it is.
pub fn extract(text: &str, origin: Origin) -> Vec<Standing> {
    match origin {
        // A pasted transcript, log or document: only what it labels as binding is read.
        Origin::User if text.len() > DOCUMENT_BYTES => text
            .lines()
            .filter(|line| line.len() <= 600 && labels_a_kind(line))
            .filter_map(|line| read_sentence(line, Origin::User))
            .collect(),
        Origin::User => {
            let tidied: Vec<String> = sentences(text)
                .into_iter()
                .map(|sentence| as_sentence(tidy(sentence)))
                .collect();
            let read: Vec<Standing> = tidied
                .iter()
                .map(String::as_str)
                .filter(|sentence| {
                    sentence.len() <= 600
                        && (starts_with_who(sentence)
                            || starts_like_a_rule(sentence)
                            || CUES.any_in(sentence))
                })
                .filter_map(|sentence| {
                    read_sentence(sentence, Origin::User).or_else(|| read_clause(sentence))
                })
                .collect();
            if read.is_empty() {
                said(text).into_iter().collect()
            } else {
                read
            }
        }
        // A confirmation opens a line ("Understood: …"); most lines of most assistant turns
        // open with none, and are passed over on their first bytes.
        Origin::Assistant => text
            .lines()
            .filter(|line| confirms(line.trim_start()))
            .flat_map(sentences)
            .filter(|sentence| sentence.len() <= 600 && confirms(sentence))
            .filter_map(|sentence| {
                // Read as the user's statement it confirms is read (without its emphasis).
                let plain = without_emphasis(sentence);
                if plain.len() == sentence.len() {
                    read_sentence(sentence, Origin::User)
                } else {
                    read_sentence(&as_sentence(plain), Origin::User)
                }
            })
            .collect(),
        Origin::Tool => text[..crate::budget::floor_boundary(text, TOOL_SCAN_BYTES)]
            .lines()
            .filter(|line| line.len() <= 160 && may_name_a_value(line))
            .filter_map(|line| read_sentence(line, Origin::Tool))
            .take(TOOL_FACTS)
            .collect(),
    }
}

/// Longer than anyone types in a message: a user's text this long is a pasted transcript, log
/// or document (an agent's demonstration, a file), whose sentences were written for another
/// reader; only its labelled lines ("RULE: …", "Constraint: …") are read.
const DOCUMENT_BYTES: usize = 8 * 1024;

/// Whether `line` opens with a label that says it binds: an all-caps label that is not a log's
/// or a setting's, or a label naming a kind of standing item.
fn labels_a_kind(line: &str) -> bool {
    let line = line
        .trim_start()
        .trim_start_matches(['-', '*', '•', '>', ' ']);
    if matches!(forms::caps_label(line), Ok(Some(_))) {
        return true;
    }
    let lower = line.to_ascii_lowercase();
    label_split(&lower).is_some_and(|(label, _)| {
        label.split_whitespace().count() <= 3 && kind_of_label(label).is_some()
    })
}

/// Leads that only open a sentence the way people talk ("btw", "oh and", "fyi"): an item's
/// text goes without them. Leads that bind ("from now on", "important") or say that a value
/// changed ("update", "scratch that") stay.
const FILLER_LEADS: &[&str] = &[
    "by the way",
    "btw",
    "fyi",
    "fwiw",
    "for context",
    "oh and",
    "oh",
    "hmm",
    "well",
    "and",
    "also",
    "so",
    "ok",
    "okay",
    "wait",
    "sorry",
    "actually",
    "honestly",
    "frankly",
    "personally",
    "heads up",
    "just so you know",
    "to be clear",
];

/// Words that refer back to what a clause follows: a trailing clause holding one and no value
/// comments on the statement ("…, that's a hard limit", "…, if that works for you").
const BACK_REFERENCES: &[&str] = &["that", "that's", "this", "which"];

/// Openings of a trailing clause that limit the statement ("…, unless the CTO approves"): it
/// stays, whatever it holds.
const CONDITIONS: &[&str] = &[
    "unless", "except", "only", "until", "when", "whenever", "while", "before", "after", "as long",
    "provided", "even", "but", "or", "and not", "if",
];

/// A sentence lightly normalised for an item's text: without leads that are only the way
/// people talk, a tag question (", ok?"), or trailing clauses that only comment on it and name
/// nothing; the statement itself as written.
fn tidy(sentence: &str) -> &str {
    let mut text = sentence.trim();
    'leads: loop {
        let lower = text.to_ascii_lowercase();
        for lead in FILLER_LEADS {
            if let Some(rest) = strip_lead(&lower, lead) {
                text = &text[text.len() - rest.len()..];
                continue 'leads;
            }
        }
        break;
    }
    loop {
        let lower = text.to_ascii_lowercase();
        if let Some(tag) = TAG_QUESTIONS.iter().find(|tag| lower.ends_with(**tag)) {
            text = text[..text.len() - tag.len()].trim_end();
            continue;
        }
        let Some(at) = lower.rfind([',', ';']) else {
            break;
        };
        let clause = lower[at + 1..].trim().trim_end_matches(['.', '!']);
        let words: Vec<&str> = clause
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .filter(|word| !word.is_empty())
            .collect();
        // "…; the platform enforces it", "…, so we will come back to it", "…, whatever the
        // deadline": a remark on the statement, or an emphasis, that limits nothing.
        let remark = lower.as_bytes()[at] == b';' && words.contains(&"it")
            || ["so ", "whatever ", "no matter "]
                .iter()
                .any(|start| clause.starts_with(start));
        let comments = (remark || words.iter().any(|word| BACK_REFERENCES.contains(word)))
            && !clause.bytes().any(|b| b.is_ascii_digit())
            && note_value(clause).is_none();
        let limits = CONDITIONS
            .iter()
            .any(|start| clause.starts_with(start) && clause[start.len()..].starts_with(' '))
            && !["if that ", "if this ", "if it "]
                .iter()
                .any(|back| clause.starts_with(back));
        let head = text[..at].trim_end();
        if !comments || limits || head.split_whitespace().count() < 3 {
            break;
        }
        text = head;
    }
    without_emphasis(text)
}

/// Phrases that only stress a rule that already says never, always, must or do not ("do not
/// push to main under any circumstances"): they limit nothing and name no value.
const EMPHASES: &[&str] = &[
    "under any circumstances",
    "under any circumstance",
    "in any circumstances",
    "whatsoever",
    "at any cost",
];

/// Who a rule is said to (or a politeness before it): "you must always X", "the agent must
/// never X" are the rule "always X", "never X" under a Rule label.
pub(super) const RULE_ADDRESSEES: &[&str] =
    &["please ", "you ", "we ", "the agent ", "the assistant "];

/// Words that make a sentence a rule of its own, without an emphasis.
const RULE_WORDS: &[&str] = &["not", "never", "always", "must", "don't", "no"];

/// `sentence` without an emphasis ([`EMPHASES`]) closing it, when it is a rule without it.
fn without_emphasis(sentence: &str) -> &str {
    let body = sentence.trim_end_matches(['.', '!']).trim_end();
    let lower = body.to_ascii_lowercase();
    let Some(emphasis) = EMPHASES.iter().find(|e| lower.ends_with(**e)) else {
        return sentence;
    };
    let head = body[..body.len() - emphasis.len()].trim_end();
    let head_lower = &lower[..head.len()];
    let rule = head_lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .any(|word| RULE_WORDS.contains(&word));
    // The words before it must still be a statement.
    if !rule || head.split_whitespace().count() < 3 || head.ends_with(',') {
        return sentence;
    }
    head
}

/// `text` written as a sentence someone stated: a capital first, a stop last (as it was,
/// when it had them), so a reader tells it from a `name: value` line a tool printed.
fn as_sentence(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    let mut chars = text.chars();
    if let Some(first) = chars.next() {
        out.push(first.to_ascii_uppercase());
        out.push_str(chars.as_str());
    }
    if !out.ends_with(['.', '!', '?', ':', ';', ')', '`', '"', '\'']) && !out.is_empty() {
        out.push('.');
    }
    out
}

/// Longest text held as said: a line or two someone typed, not a pasted document.
const SAID_MAX: usize = 320;

/// Words that make a message a request for work now, not something that holds from now on.
const REQUESTS: &[&str] = &[
    "please",
    "can you",
    "could you",
    "would you",
    "will you",
    "let me know",
];

/// Verbs that open a request for a piece of work now ("Refactor the parser module 4: rename
/// helper_4 …"): the task of the moment, which the summary's goal and progress carry, not
/// something that holds from now on. Verbs that also open standing instructions ("use",
/// "keep", "make sure", "change request") are not among them.
const WORK_VERBS: &[&str] = &[
    "add",
    "build",
    "check",
    "clean",
    "commit",
    "compile",
    "create",
    "debug",
    "delete",
    "edit",
    "explain",
    "find",
    "fix",
    "generate",
    "implement",
    "install",
    "investigate",
    "list",
    "look",
    "merge",
    "modify",
    "open",
    "push",
    "read",
    "refactor",
    "remove",
    "rename",
    "restart",
    "review",
    "revert",
    "show",
    "stop",
    "try",
    "write",
];

/// Words of a report of what went wrong (a pasted error, a log line), not a statement.
const TROUBLE: &[&str] = &[
    "error",
    "exception",
    "traceback",
    "failed",
    "failure",
    "panic",
    "warning",
];

/// `text` as a note held as said: a short message of its own (a line or two of prose), that
/// asks nothing (no question, no request for work now), reports no trouble, holds no code, and names a value
/// ([`note_value`]).
fn said(text: &str) -> Option<Standing> {
    let text = as_sentence(tidy(text.trim()));
    let text = text.as_str();
    let lines = text.lines().filter(|line| !line.trim().is_empty()).count();
    if text.len() > SAID_MAX || lines > 2 || !text.starts_with(char::is_alphabetic) {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let asks = lower.trim_end().ends_with('?')
        && !TAG_QUESTIONS
            .iter()
            .any(|tag| lower.trim_end().ends_with(tag));
    let requests = REQUESTS.iter().any(|word| contains_word(&lower, word))
        || WORK_VERBS.iter().any(|verb| {
            lower
                .strip_prefix(verb)
                .is_some_and(|rest| rest.starts_with(' '))
        });
    let trouble = TROUBLE.iter().any(|word| lower.contains(word));
    let code = text.contains("```")
        || text.contains(" = ")
        || text
            .lines()
            .any(|line| line.trim_end().ends_with([';', '{', '}']));
    if asks || requests || trouble || code {
        return None;
    }
    let value = note_value(text)?;
    let text = compact(text, TEXT_MAX);
    Some(Standing {
        kind: Kind::Note,
        subject: normalize_subject(&without_values(text.trim_end_matches(['.', '!']))),
        value,
        text,
    })
}

/// Whether `text` holds `word` (one or more words) with no letter right before or after it.
fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphabetic) && !after.is_some_and(char::is_alphabetic)
    })
}

/// The first value a note names: a word no one could guess (three characters or more with a
/// digit in them, a path, an amount), as written.
pub fn note_value(text: &str) -> Option<String> {
    value_tokens(text).first().map(|word| word.to_string())
}

/// Every value `text` names (a word no one could guess: three characters or more with a digit
/// in them, a path, an amount), as written, in order.
pub(super) fn value_tokens(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .map(|word| word.trim_matches(|c: char| !(c.is_alphanumeric() || "/$€£¥%".contains(c))))
        .filter(|word| {
            let digits = word.bytes().filter(u8::is_ascii_digit).count();
            let path = word.matches('/').count() >= 2
                || word.contains('/') && word.contains(|c: char| c.is_ascii_digit() || c == '.');
            let money = word.starts_with(['$', '€', '£', '¥']) && digits > 0;
            (digits > 0 && word.len() >= 3) || path || money
        })
        .collect()
}

/// "The vault code was rotated, never reveal the new one X-1": a rule, a goal or a preference
/// stated in a later clause of a sentence that states nothing as a whole. Only those forms are
/// read there: a bare `name is value` inside a clause is too often prose.
fn read_clause(sentence: &str) -> Option<Standing> {
    let lower = sentence.to_ascii_lowercase();
    // "The team learned that you must always X": a rule said inside what someone says; its
    // text is the rule.
    let embedded = lower
        .match_indices(" that ")
        .map(|(at, _)| &sentence[at + " that ".len()..])
        .filter(|clause| {
            let clause = clause.to_ascii_lowercase();
            let clause = ["you ", "we ", "everyone ", "nobody "]
                .iter()
                .find_map(|who| clause.strip_prefix(who))
                .unwrap_or(&clause);
            RULE_STARTS.iter().any(|start| clause.starts_with(start))
        })
        .find_map(|clause| {
            let clause = tidy(clause);
            read_sentence(clause, Origin::User)
        });
    if embedded.is_some() {
        return embedded;
    }
    lower
        .match_indices([',', ';'])
        .map(|(at, _)| at + 1)
        .filter_map(|at| {
            let clause = lower[at..].trim_start();
            // "…, and the codename is Heron": a clause of its own; so is the new value after
            // "we no longer deploy to X; we deploy to Y".
            let after_change = lower.contains("no longer ") || lower.contains("instead");
            let opens = RULE_STARTS
                .iter()
                .chain(PREFERENCE_STARTS)
                .chain(&["and the ", "and our ", "and my "])
                .any(|start| clause.starts_with(start))
                || after_change && starts_with_who(clause);
            opens.then(|| &sentence[sentence.len() - clause.len()..])
        })
        .find_map(|clause| read_sentence(clause, Origin::User))
        .map(|item| Standing {
            text: compact(sentence.trim(), TEXT_MAX),
            ..item
        })
}

/// Whether a line of output may read `name: value` or `name is value`: its leading run of
/// letters and spaces ends at a `:` or `=`, or holds a linking word. Most output lines fail on
/// their first bytes, so tool outputs cost little to read.
fn may_name_a_value(line: &str) -> bool {
    let line = line.trim_start();
    let run = line
        .bytes()
        .take(48)
        .take_while(|b| b.is_ascii_alphabetic() || matches!(b, b' ' | b'-' | b'\''))
        .count();
    if run == 0 || run == line.len() {
        return false;
    }
    let name = &line[..run];
    line.as_bytes()[run] == b':'
        || name.split(' ').skip(1).any(|word| {
            ["is", "are", "to"]
                .iter()
                .any(|w| word.eq_ignore_ascii_case(w))
        })
}

/// Leading words that say a sentence holds from now on, mark it as worth remembering or as a
/// change, or are only the way someone talks; each is followed by `,`, `:`, `-` or a space.
/// Longer ones first where one starts another.
const LEADS: &[&str] = &[
    "from now on",
    "going forward",
    "henceforth",
    "please remember that",
    "remember that",
    "remember",
    "reminder",
    "keep in mind that",
    "keep in mind",
    "note that",
    "note",
    "important",
    "critical",
    "fyi",
    "fwiw",
    "for context",
    "hmm",
    "well",
    "btw",
    "by the way",
    "oh and",
    "oh",
    "one more thing",
    "quick thing",
    "try to",
    "heads up",
    "for the record",
    "just so you know",
    "to be clear",
    "personally",
    "honestly",
    "frankly",
    "since then",
    "in the end",
    "eventually",
    "as of today",
    "as of now",
    "also",
    "and",
    "ok",
    "okay",
    "actually",
    "update",
    "updated",
    "change request",
    "changed",
    "correction",
    "scratch that",
    "never mind",
    "instead",
    "wait",
    "sorry",
    "so",
    "but",
    "noted",
    "understood",
    "got it",
    "acknowledged",
    "confirmed",
    "will do",
    "as you said",
    "as requested",
];

/// Leads that make what follows binding even when it reads as no other form.
const BINDING_LEADS: &[&str] = &[
    "from now on",
    "going forward",
    "henceforth",
    "remember",
    "reminder",
    "important",
    "critical",
];

/// Whether `label` (lower case) is only a lead ("note", "fyi", "important"): it says how a
/// statement is meant, not what it is about.
pub(super) fn is_lead(label: &str) -> bool {
    LEADS.contains(&label)
}

/// `body` after one lead and the punctuation that follows it.
fn strip_lead<'a>(body: &'a str, lead: &str) -> Option<&'a str> {
    let rest = body.strip_prefix(lead)?;
    let next = rest.bytes().next()?;
    if !matches!(next, b',' | b':' | b' ' | b'-') {
        return None;
    }
    let rest = rest.trim_start_matches([',', ':', ' ', '-']);
    (!rest.is_empty()).then_some(rest)
}

/// Tag questions that make a statement sound like a question and ask nothing.
const TAG_QUESTIONS: &[&str] = &[
    ", ok?",
    ", okay?",
    ", right?",
    ", alright?",
    ", yes?",
    ", ok?",
];

/// Openings of a rule. "Must never X" and "must always X" are "never X" and "always X": one
/// rule, whoever states it which way.
const RULE_STARTS: &[&str] = &[
    "must never ",
    "must always ",
    "never ",
    "don't ever ",
    "do not ever ",
    "only ",
    "make sure ",
    "ensure ",
    "be sure to ",
    "always ",
    "do not ",
    "don't ",
    "must ",
    "must not ",
    "should never ",
    "under no circumstances ",
    // Prohibitions said as advice: "avoid X", "stop using X", "refrain from X".
    "avoid ",
    "stop using ",
    "refrain from ",
];

const PREFERENCE_STARTS: &[&str] = &[
    "i prefer ",
    "i now prefer ",
    "i still prefer ",
    "we now prefer ",
    "i'd prefer ",
    "i would prefer ",
    "we prefer ",
    "the user prefers ",
    "user prefers ",
    "the user would prefer ",
    "my preference is ",
    "our preference is ",
    "the user's preference is ",
    "please use ",
    "please prefer ",
    "i'd like you to use ",
    "i want you to use ",
    "i'd rather ",
    "i would rather ",
    "we'd rather ",
    "we would rather ",
    "i like ",
    "we like ",
    "i love ",
    "i would like it if ",
    "i'd like it if ",
    "i would love it if ",
    "i'd love it if ",
    "i would prefer it if ",
    "i'd prefer it if ",
    "we would like it if ",
    "we'd like it if ",
    "ideally ",
];

/// Openings that say what finishes the work.
const DONE_WHEN: &[&str] = &[
    "we are done when ",
    "we're done when ",
    "i'm done when ",
    "the work is done when ",
    "the task is done when ",
    "it is done when ",
    "done when ",
];

const GOAL_NAMES: &[&str] = &[
    "goal",
    "main goal",
    "end goal",
    "overall goal",
    "task",
    "main task",
    "objective",
    "mission",
    "aim",
];

/// Names whose value is a hard limit.
const LIMIT_WORDS: &[&str] = &[
    "budget",
    "cap",
    "limit",
    "max",
    "maximum",
    "minimum",
    "min",
    "quota",
    "ceiling",
    "spend",
    "constraint",
    "timeout",
    "threshold",
];

/// A short label opening `body` and where what it labels starts: `Label: …`, `Label — …`,
/// `Label – …`, or `Label - …` when the label names a kind (a dash alone is often prose).
pub(super) fn label_split(body: &str) -> Option<(&str, usize)> {
    [": ", " — ", " – ", " - "]
        .iter()
        .filter_map(|separator| {
            let at = body.find(separator)?;
            let label = &body[..at];
            let dash = *separator == " - ";
            (!dash || kind_of_label(label).is_some()).then_some((at, label, at + separator.len()))
        })
        .min()
        .map(|(_, label, inner)| (label, inner))
}

/// Whether a stated label says no more than a line labelled `kind` does: it names that
/// kind; or it marks what follows as binding (a rule, a limit, a requirement, acceptance
/// criteria) on a rule or a limit; or as background to know (the environment, context) on
/// a fact.
pub(super) fn label_says(label: &str, kind: Kind) -> bool {
    let named = kind_of_label(label);
    if named == Some(kind) {
        return true;
    }
    let binding = |kind| matches!(kind, Kind::Rule | Kind::Constraint);
    let last = label.split_whitespace().next_back().unwrap_or_default();
    match kind {
        Kind::Rule | Kind::Constraint => {
            named.is_some_and(binding) || matches!(last, "criteria" | "criterion")
        }
        Kind::Fact => matches!(
            last,
            "environment" | "context" | "background" | "info" | "information" | "fyi"
        ),
        _ => false,
    }
}

/// The kind a label names: `Safety rule: …`, `Hard constraint: …`, `Preference: …`.
pub(super) fn kind_of_label(label: &str) -> Option<Kind> {
    let last = label.split_whitespace().next_back()?;
    Some(match last.trim_end_matches('s') {
        "rule" | "policy" | "policie" | "requirement" | "prohibition" | "restriction" => Kind::Rule,
        "constraint" | "limit" => Kind::Constraint,
        "fact" => Kind::Fact,
        "goal" | "objective" | "task" | "aim" | "mission" => Kind::Goal,
        "preference" | "pref" => Kind::Preference,
        "decision" | "decided" | "resolution" => Kind::Decision,
        "question" | "tbd" | "unresolved" | "open" => Kind::Question,
        _ => return None,
    })
}

/// What a decision or a preference is about: what its choice is for (`Postgres 16 for the job
/// queue` → `job queue`), or the choice without its values.
pub(super) fn choice_subject(value: &str) -> String {
    let value = value.to_ascii_lowercase();
    for link in [" for ", " as "] {
        if let Some(at) = value.find(link) {
            return value[at + link.len()..].to_string();
        }
    }
    without_values(&value)
}

/// A subject without the specific values in it (`not exceed $500` → `not exceed`), so that a
/// rule or preference restated with another value replaces the older one.
pub(super) fn without_values(text: &str) -> String {
    let kept: Vec<&str> = text
        .split_whitespace()
        .filter(|word| !looks_specific(word) || word.chars().all(char::is_alphabetic))
        .collect();
    if kept.is_empty() {
        text.to_string()
    } else {
        kept.join(" ")
    }
}

/// Words that are never the name in `name is value`.
const NOT_NAMES: &[&str] = &[
    // Tool documentation and installer, archive and build output.
    "docstring",
    "signature",
    "arguments",
    "setting",
    "installing",
    "getting",
    "requirement",
    "collecting",
    "downloading",
    "building",
    "preparing",
    "successfully",
    "archive",
    "inflating",
    "extracting",
    "creating",
    "strings",
    "traceback",
    "exception",
    "you",
    "we",
    "i",
    "it",
    "this",
    "that",
    "there",
    "here",
    "he",
    "she",
    "they",
    "which",
    "what",
    "who",
    "error",
    "warning",
    "note",
    "help",
    "info",
    "debug",
    "trace",
    "fatal",
    "panic",
    "caused by",
    "hint",
    "warn",
    "err",
    "log",
    "see",
    "at",
    "in",
    "file",
    "line",
    "test",
    "http",
    "https",
    "step",
    "usage",
    "example",
    "result",
    "output",
    "input",
    "thread",
    "stack",
    "location",
];

const ARTICLES: &[&str] = &[
    "the",
    "a",
    "an",
    "our",
    "my",
    "your",
    "their",
    "its",
    "this",
    "that",
    "current",
    "new",
    "now",
    "total",
    "overall",
    "user's",
    "project's",
    "team's",
];

/// The standing item one sentence or line states, if any.
pub(super) fn read_sentence(sentence: &str, origin: Origin) -> Option<Standing> {
    let text = compact(
        sentence
            .trim()
            .trim_start_matches(['-', '*', '•', '>', ' ']),
        TEXT_MAX,
    );
    if text.is_empty() {
        return None;
    }
    // `ERROR: …`, `WARN: …`, `SETTING: …` open a log line or a setting, whoever wrote them;
    // any other all-caps label marks what follows as binding.
    let caps_label = forms::caps_label(&text).ok()?.is_some();
    // Byte offsets of `lower` are those of `text` (ASCII lower-casing keeps lengths).
    let lower = text.to_ascii_lowercase();
    let mut body = lower.as_str();
    let mut binding = caps_label;
    let mut standing_from_now = false;
    if origin == Origin::User {
        'leads: loop {
            for lead in LEADS {
                if let Some(rest) = strip_lead(body, lead) {
                    standing_from_now |= lead.starts_with("from now") || lead.starts_with("going");
                    binding |= BINDING_LEADS.contains(lead);
                    body = rest;
                    continue 'leads;
                }
            }
            break;
        }
    }
    let start = lower.len() - body.len();
    let original = &text[start..];
    // A question asks; only one that says it is left open is kept ("Open question: …").
    let asks = body.ends_with('?') && !TAG_QUESTIONS.iter().any(|tag| body.ends_with(tag));
    if origin == Origin::User {
        // "Noted for later: the budget is $500": the standing sentence after a short label.
        if let Some((label, inner_at)) = label_split(body) {
            let short = label.split_whitespace().count() <= 6
                && label.bytes().all(|b| b.is_ascii_alphabetic() || b == b' ');
            if short {
                let inner = &original[inner_at..];
                let named_kind = kind_of_label(label);
                if let Some(item) = read_sentence(inner, origin) {
                    // "Decision — the cache key is X": the label says what kind a plain value
                    // is; an imperative stays a rule whatever its label.
                    let plain = matches!(item.kind, Kind::Fact | Kind::Note);
                    return Some(Standing {
                        kind: named_kind.filter(|_| plain).unwrap_or(item.kind),
                        text: text.clone(),
                        ..item
                    });
                }
                // A label naming the kind: "Hard constraint: stay under 2 GB".
                let kind = named_kind.or(caps_label.then_some(Kind::Rule));
                if let Some(kind) = kind {
                    let value = trim_value(inner);
                    let subject = match kind {
                        Kind::Goal => "goal".to_string(),
                        Kind::Decision => choice_subject(value),
                        _ => without_values(value),
                    };
                    let subject = normalize_subject(&subject);
                    if !value.is_empty() && !subject.is_empty() {
                        return Some(Standing {
                            kind,
                            subject,
                            value: value.to_string(),
                            text: text.clone(),
                        });
                    }
                }
            }
        }
    }
    let item = |kind: Kind, subject: String, value: &str| {
        let subject = normalize_subject(&subject);
        (!subject.is_empty()).then(|| Standing {
            kind,
            subject,
            value: trim_value(value).to_string(),
            text: text.clone(),
        })
    };
    // What follows `at` in the sentence as written, up to its first clause break.
    let value_at = |at: usize| -> &str {
        let value = &text[at..];
        value.split(", ").next().unwrap_or(value)
    };
    if origin == Origin::User {
        // "It is still unclear whether refunds share the queue": left open on purpose.
        if let Some(at) = forms::open_question(body) {
            let offset = start + at;
            let value = trim_value(value_at(offset));
            return item(Kind::Question, without_values(value), value);
        }
        if asks {
            return None;
        }
        // Rules: an imperative with never / always / must / do not / only.
        let imperative = RULE_ADDRESSEES
            .iter()
            .find_map(|who| body.strip_prefix(who))
            .unwrap_or(body);
        if let Some(rest) = RULE_STARTS.iter().find_map(|s| imperative.strip_prefix(s)) {
            let offset = lower.len() - rest.len();
            // What the rule is about: never X and always X are one subject, the newer wins.
            let value = trim_value(&text[offset..]);
            return item(Kind::Rule, without_values(value), value);
        }
        // Goals: "the goal is …", "our task: …".
        let named = strip_articles(body);
        for name in GOAL_NAMES {
            if let Some(rest) = named.strip_prefix(name) {
                if let Some(value) = rest
                    .strip_prefix(" is ")
                    .or_else(|| rest.strip_prefix(": "))
                {
                    let offset = lower.len() - value.len();
                    return item(Kind::Goal, "goal".to_string(), &text[offset..]);
                }
            }
        }
        // "The goal changed, the service goes onto X instead": the newer goal.
        for name in GOAL_NAMES {
            if let Some(rest) = named.strip_prefix(name) {
                if let Some(value) = [" changed, ", " changed: ", " changed to ", " is now "]
                    .iter()
                    .find_map(|link| rest.strip_prefix(link))
                {
                    let offset = lower.len() - value.len();
                    return item(Kind::Goal, "goal".to_string(), &text[offset..]);
                }
            }
        }
        // "What we really want is …", "I want to …".
        if let Some(at) = forms::wanted(body) {
            return item(Kind::Goal, "goal".to_string(), &text[start + at..]);
        }
        // "What we are really trying to do this week is to X": what the work is for, about
        // what it does.
        if let Some(at) = forms::aim(body) {
            let value = trim_value(&text[start + at..]);
            return item(
                Kind::Goal,
                without_values(&value.to_ascii_lowercase()),
                value,
            );
        }
        // "We are done when the acceptance check X passes": what finishes the work.
        if let Some(rest) = DONE_WHEN.iter().find_map(|s| body.strip_prefix(s)) {
            let offset = lower.len() - rest.len();
            return item(Kind::Goal, "done when".to_string(), &text[offset..]);
        }
        // Preferences: "I prefer …", "please use …", "the reporter prefers …".
        let preferred = PREFERENCE_STARTS
            .iter()
            .find_map(|s| body.strip_prefix(s))
            .or_else(|| {
                let (who, rest) = body.split_once(" prefers ")?;
                (who.split(' ').count() <= 3
                    && who.bytes().all(|b| b.is_ascii_alphabetic() || b == b' '))
                .then_some(rest)
            });
        if let Some(rest) = preferred {
            let offset = lower.len() - rest.len();
            let value = trim_value(&text[offset..]);
            let chosen = ["you use ", "to use ", "we use ", "use "]
                .iter()
                .find_map(|verb| rest.strip_prefix(verb))
                .unwrap_or(rest);
            // "I'd like it if the log format is X": about the log format, as "the log format
            // is X" alone would be.
            let named = named_value(chosen).map(|(name, _)| strip_articles(name));
            let subject = match (named, chosen.find(" for ")) {
                (Some(name), _) => name.to_string(),
                (None, Some(at)) => chosen[at + 5..].to_string(),
                (None, None) => {
                    let chosen = trim_value(chosen);
                    [
                        ",",
                        ";",
                        " over ",
                        " instead of ",
                        " than ",
                        " rather than ",
                    ]
                    .iter()
                    .fold(chosen, |head, cut| head.split(cut).next().unwrap_or(head));
                    // Without its values, so the same choice with another value replaces it.
                    without_values(chosen)
                }
            };
            return item(Kind::Preference, subject, value);
        }
        // "We settled on Rust 1.79 as the minimum toolchain", "let's go with Postgres".
        if let Some(at) = forms::decision(body) {
            let value = trim_value(value_at(start + at));
            // "We agreed that the cache key scheme is X": about the cache key scheme, as the
            // statement alone would be.
            // "Let's go with this: the cache key scheme is X": what the colon points at.
            let lower_value = value.to_ascii_lowercase();
            let stated = ["this: ", "that: ", "the following: "]
                .iter()
                .find_map(|pointer| lower_value.strip_prefix(pointer))
                .unwrap_or(&lower_value);
            let subject = match named_value(stated) {
                Some((name, _)) => strip_articles(name).to_string(),
                None => choice_subject(value),
            };
            return item(Kind::Decision, subject, value);
        }
    }
    // "name is value", "name: value", "name changed to value".
    if let Some((name, value)) = named_value(body)
        .filter(|(name, _)| !(origin == Origin::Tool && reports_an_event(strip_articles(name))))
    {
        let offset = lower.len() - value.len();
        let value = &text[offset..];
        // "The branch moved to X, and pushes to it are forbidden": the value is the first
        // clause of a long rest.
        // "The job timeout is 26 ms for every job; the platform enforces it": so is the
        // first of clauses parted by a semicolon.
        let value = value.split("; ").next().unwrap_or(value);
        let value = if value.split_whitespace().count() > VALUE_WORDS {
            value.split(", ").next().unwrap_or(value)
        } else {
            value
        };
        // "The user's preferred editor is Helix": a preference, whatever its value.
        let preferred = ["prefer", "favorite", "favourite"]
            .iter()
            .any(|word| name.contains(word));
        if origin == Origin::User && preferred && value.split_whitespace().count() <= VALUE_WORDS {
            let name = strip_articles(name);
            return item(Kind::Preference, name.to_string(), value);
        }
        // "The point of all this is to move billing onto cluster X": what the work is for,
        // about what it does (the name says nothing of it).
        if origin == Origin::User && value.len() > 3 && value[..3].eq_ignore_ascii_case("to ") {
            let value = trim_value(value);
            return item(
                Kind::Goal,
                without_values(&value.to_ascii_lowercase()),
                value,
            );
        }
        let specific = looks_specific(value) || origin == Origin::User && is_a_name(value);
        if specific && value.split_whitespace().count() <= VALUE_WORDS {
            let name = strip_articles(name);
            let words: Vec<&str> = name.split_whitespace().collect();
            let kind = if words.iter().any(|w| LIMIT_WORDS.contains(w)) {
                Kind::Constraint
            } else {
                Kind::Fact
            };
            return item(kind, name.to_string(), value);
        }
    }
    if origin == Origin::User {
        // "The batch size must stay at or below 500 rows": a limit on a named thing.
        if let Some((name, value)) = must_limit(body) {
            let offset = lower.len() - value.len();
            let value = &text[offset..];
            if looks_specific(value) && value.split_whitespace().count() <= VALUE_WORDS {
                return item(Kind::Constraint, strip_articles(name).to_string(), value);
            }
        }
        // "Keep every PR to at most 400 lines", "max 3 retries": a bound on a number.
        if let Some((at, value)) = forms::bound(body) {
            let value = trim_value(value_at(start + value));
            let before = without_values(strip_articles(&body[..at]));
            let subject = if before.trim().is_empty() {
                without_values(value)
            } else {
                before
            };
            return item(Kind::Constraint, subject, value);
        }
        // "The API key must never be logged": a rule on a named thing.
        if let Some((name, rest)) = modal_rule(body) {
            let offset = lower.len() - rest.len();
            let value = trim_value(&text[offset..]);
            let subject = format!("{} {}", strip_articles(name), without_values(value));
            return item(Kind::Rule, subject, value);
        }
        // "we deploy to us-west-2", "I'm working in eu-central-1".
        if let Some((verb, value)) = verb_place(body) {
            let offset = lower.len() - value.len();
            let value = &text[offset..];
            if looks_specific(value) && value.split_whitespace().count() <= VALUE_WORDS {
                return item(Kind::Fact, verb, value);
            }
        }
        if standing_from_now || binding {
            let value = trim_value(original);
            return item(Kind::Rule, without_values(value), value);
        }
    }
    None
}

/// `name must …`, `name shall …`, `name should never …`: the name and what it must do.
fn modal_rule(body: &str) -> Option<(&str, &str)> {
    const MODALS: &[&str] = &[
        " must ",
        " shall ",
        " should never ",
        " should not ",
        " may never ",
    ];
    let (at, modal) = MODALS
        .iter()
        .filter_map(|m| body.find(m).map(|at| (at, *m)))
        .min()?;
    let name = &body[..at];
    let words = name.split_whitespace().count();
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || b" '-".contains(&b));
    if words == 0 || words > NAME_WORDS || !plain || NOT_NAMES.contains(&strip_articles(name)) {
        return None;
    }
    Some((name, &body[at + modal.len()..]))
}

/// Whether a value is a name someone gave a thing: a few words, each capitalized ("Heron",
/// "Quarry Ledger").
fn is_a_name(value: &str) -> bool {
    let value = trim_value(value);
    let words = value.split_whitespace().count();
    (1..=3).contains(&words)
        && value.split_whitespace().all(|word| {
            word.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit())
                && word
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '-' || c == '.')
        })
}

/// `name is value` (also `are`, `is now`, `was changed to`, `changed to`, `moved to`,
/// `=`) or `name: value`, with a short alphabetic name.
fn named_value(body: &str) -> Option<(&str, &str)> {
    const LINKS: &[&str] = &[
        " has been changed to ",
        " was changed to ",
        " has changed to ",
        " changed to ",
        " was renamed to ",
        " was renamed ",
        " was moved to ",
        " moved to ",
        " is now ",
        " are now ",
        " is set to ",
        " = ",
        " is ",
        " are ",
        ": ",
    ];
    if body.is_empty() {
        return None;
    }
    // The name is a few words of letters: the link starts within the leading run of such
    // bytes (or right after it, for `:` and `=`), so only that much is searched.
    let run = body
        .bytes()
        .take(80)
        .take_while(|b| b.is_ascii_alphabetic() || matches!(b, b' ' | b'-' | b'\''))
        .count();
    // Every link starts with a space or a colon: the first such place where one starts, the
    // longest link there (`is now` before `is`).
    let (at, link) = body.as_bytes()[..=run.min(body.len() - 1)]
        .iter()
        .enumerate()
        .filter(|(_, b)| matches!(b, b' ' | b':'))
        .find_map(|(at, _)| {
            LINKS
                .iter()
                .filter(|link| body[at..].starts_with(**link))
                .max_by_key(|link| link.len())
                .map(|link| (at, *link))
        })?;
    let name = body[..at].trim();
    let value = body[at + link.len()..].trim_start();
    let words = name.split_whitespace().count();
    if words == 0 || words > NAME_WORDS || value.is_empty() {
        return None;
    }
    let bare = strip_articles(name);
    let first = bare.split(' ').next().unwrap_or(bare);
    // `ValueError: …`, `DeprecationWarning: …` are errors, not facts.
    let error = ["error", "exception", "warning"]
        .iter()
        .any(|end| bare.ends_with(end));
    if bare.is_empty() || NOT_NAMES.contains(&bare) || NOT_NAMES.contains(&first) || error {
        return None;
    }
    // Markup is not a value, nor a record of several `key=value` pairs.
    if value.contains('<') && value.contains('>') || value.matches('=').count() >= 2 {
        return None;
    }
    // `Looks like an issue here: URL`, `Do this by running: cmd`: a sentence pointing at
    // what follows the colon, not a name for it.
    let pointing = link == ": "
        && bare
            .split(' ')
            .any(|word| ["this", "that", "here", "there", "it", "these", "those"].contains(&word));
    if pointing {
        return None;
    }
    // `Plans shifted since then: the billing service goes onto cluster X instead`: what
    // follows the colon states a change of its own, so the words before it announce the
    // change and name nothing (read as a name, every change so announced would be one
    // subject, each replacing the last).
    if link == ": " && forms::is_change(value) {
        return None;
    }
    Some((name, value))
}

/// Whether a name of a `name: value` line a tool printed opens with a verb telling what it did
/// (`Created wheel for x: …`, `Stored in directory: …`): a
/// log of an event, not a setting.
fn reports_an_event(name: &str) -> bool {
    let first = name.split(' ').next().unwrap_or(name);
    first.len() > 4 && (first.ends_with("ed") || first.ends_with("ing"))
}

/// `name must stay at or below value`, `name must not exceed value`: the name and the value.
fn must_limit(body: &str) -> Option<(&str, &str)> {
    const BOUNDS: &[&str] = &[
        "stay at or below ",
        "stay at or above ",
        "stay below ",
        "stay under ",
        "stay above ",
        "stay within ",
        "not exceed ",
        "never exceed ",
        "be at most ",
        "be at least ",
        "be under ",
        "be below ",
        "be no more than ",
        "be no less than ",
    ];
    let (name, rest) = body.split_once(" must ")?;
    let words = name.split_whitespace().count();
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || b" '-".contains(&b));
    if words == 0 || words > NAME_WORDS || !plain {
        return None;
    }
    let value = BOUNDS.iter().find_map(|bound| rest.strip_prefix(bound))?;
    Some((name, value))
}

/// `we|I … verb to|in|on|at value`: the verb (without -ing/-s/-ed) and preposition, and the
/// value.
fn verb_place(body: &str) -> Option<(String, &str)> {
    const WHO: &[&str] = &["we ", "i ", "i'm ", "we're ", "the team ", "you "];
    const MODALS: &[&str] = &[
        "now ",
        "will ",
        "are ",
        "am ",
        "currently ",
        "always ",
        "usually ",
        "should ",
        "only ",
        "all ",
    ];
    const PLACES: &[&str] = &[" to ", " in ", " on ", " at ", " from ", " into ", " via "];
    let mut rest = WHO.iter().find_map(|who| body.strip_prefix(who))?;
    while let Some(next) = MODALS.iter().find_map(|m| rest.strip_prefix(m)) {
        rest = next;
    }
    let (verb, after) = rest.split_once(' ')?;
    if !verb.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let after_space = &rest[verb.len()..];
    let place = PLACES.iter().find(|p| after_space.starts_with(**p))?;
    let value = &after[place.len() - 1..];
    let stem = verb
        .strip_suffix("ing")
        .or_else(|| verb.strip_suffix("ed"))
        .or_else(|| verb.strip_suffix('s'))
        .filter(|stem| stem.len() >= 3)
        .unwrap_or(verb);
    Some((format!("{stem} {}", place.trim()), value))
}

/// Whether a value is something that could not be guessed: a number, money, a date, an
/// identifier, a region, a quoted or code span, a name with capitals.
pub fn looks_specific(value: &str) -> bool {
    let value = trim_value(value);
    if value.is_empty() {
        return false;
    }
    let mut chars = value.chars();
    let first = chars.next();
    value
        .bytes()
        .any(|b| b.is_ascii_digit() || b"$%@#/_`\"'<>=".contains(&b))
        || value.contains(['€', '£', '¥'])
        || chars.any(char::is_uppercase) && first.is_some()
        || value.split_whitespace().any(|word| {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric());
            word.contains(['-', '.', ':']) && word.len() >= 3
        })
}

/// `value` without trailing punctuation and a trailing clause after `;`.
fn trim_value(value: &str) -> &str {
    let value = value.split("; ").next().unwrap_or(value);
    let mut value = value
        .trim()
        .trim_end_matches(['.', ',', ';', '!', '?', ')', '"'])
        .trim();
    // "eu-west-1 now", "spaces instead": the value is what comes before.
    for tail in [" from now on", " going forward", " now", " instead"] {
        if let Some(head) = value
            .len()
            .checked_sub(tail.len())
            .filter(|at| value.is_char_boundary(*at))
            .filter(|at| value[*at..].eq_ignore_ascii_case(tail))
            .map(|at| &value[..at])
        {
            value = head.trim_end_matches(',').trim_end();
        }
    }
    value
}

fn strip_articles(mut name: &str) -> &str {
    loop {
        let Some((first, rest)) = name.split_once(' ') else {
            return name;
        };
        if !ARTICLES.contains(&first) {
            return name;
        }
        name = rest.trim_start();
    }
}

/// A subject compared with others: lower case, words of letters and digits, no articles.
pub fn normalize_subject(text: &str) -> String {
    let lower = text.to_lowercase();
    lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .map(|w| w.trim_matches(['\'', '-']))
        .filter(|w| !w.is_empty() && !ARTICLES.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}
