//! Standing facts: the rules, constraints, facts, goals and preferences a session states once
//! and expects to hold from then on ("never reveal the vault code", "the budget is $500", "we
//! deploy to us-west-2", "the user prefers tabs", "the goal is …").
//!
//! They are read from the sentences of system and user turns (and from `name: value` / `name is
//! value` lines of tool results) by their sentence forms, carried verbatim from each summary
//! into the next, and a newer value for the same subject replaces the older one. A summary's
//! section lists one item a line, `Kind (subject): verbatim text`, which is read back here.

use crate::extract::{compact, sentences};
use crate::markers::Markers;

/// Longest verbatim text an item keeps.
pub const TEXT_MAX: usize = 240;
/// Most items a summary carries; beyond it the oldest facts go first, rules last.
pub const MAX_ITEMS: usize = 30;
/// Most facts read from one tool result.
const TOOL_FACTS: usize = 4;
/// How much of a tool result is read for facts: its start, where a tool states what it is
/// about (a setting, a region, a version); the rest of a long output costs the hot path and
/// rarely states one.
const TOOL_SCAN_BYTES: usize = 4 * 1024;
/// Most words of a value in `name is value` / `name: value`.
const VALUE_WORDS: usize = 8;
/// Most words of a name in `name is value` / `name: value`.
const NAME_WORDS: usize = 5;

/// What kind of standing item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// An instruction that always holds: never / always / must / do not.
    Rule,
    /// A hard limit: a budget, a cap, a maximum.
    Constraint,
    /// A specific value the session relies on: a date, a region, an identifier.
    Fact,
    /// What the session is for.
    Goal,
    /// How the user likes things done.
    Preference,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Rule,
        Kind::Constraint,
        Kind::Fact,
        Kind::Goal,
        Kind::Preference,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Kind::Rule => "Rule",
            Kind::Constraint => "Constraint",
            Kind::Fact => "Fact",
            Kind::Goal => "Goal",
            Kind::Preference => "Preference",
        }
    }

    pub fn from_label(label: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|kind| kind.label().eq_ignore_ascii_case(label.trim()))
    }

    /// Which items go first when the section must shrink (higher: kept longer).
    fn keep_rank(self) -> u8 {
        match self {
            Kind::Fact => 0,
            Kind::Preference => 1,
            Kind::Goal => 2,
            Kind::Constraint => 3,
            Kind::Rule => 4,
        }
    }
}

/// One standing item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub kind: Kind,
    /// What it is about, normalized (lower case, no articles): items with the same subject
    /// supersede each other.
    pub subject: String,
    /// The value it gives the subject, as written.
    pub value: String,
    /// The sentence or line it was read from, whitespace collapsed.
    pub text: String,
}

impl Standing {
    /// The item as a line of a summary's section (without a list marker).
    pub fn line(&self) -> String {
        // The subject is written only when reading the text back would not give it.
        let read = read_sentence(&self.text, Origin::User).filter(|item| item.kind == self.kind);
        if read.is_some_and(|item| item.subject == self.subject) {
            format!("{}: {}", self.kind.label(), self.text)
        } else {
            format!("{} ({}): {}", self.kind.label(), self.subject, self.text)
        }
    }

    /// Reads a line [`Self::line`] wrote (list markers and emphasis tolerated).
    pub fn parse_line(line: &str) -> Option<Standing> {
        let line = line.trim().trim_start_matches(['-', '*', '•', ' ']);
        let (head, text) = line.split_once(':')?;
        let head = head.replace("**", "");
        let (label, subject) = match head.split_once('(') {
            Some((label, rest)) => (label, Some(rest.trim_end().trim_end_matches(')'))),
            None => (head.as_str(), None),
        };
        let kind = Kind::from_label(label)?;
        let text = compact(text.trim().trim_start_matches("**").trim(), TEXT_MAX);
        if text.is_empty() {
            return None;
        }
        let read = read_sentence(&text, Origin::User).filter(|item| item.kind == kind);
        let subject = match subject.map(normalize_subject).filter(|s| !s.is_empty()) {
            Some(subject) => subject,
            None => read
                .as_ref()
                .map_or_else(|| implied_subject(kind, &text), |item| item.subject.clone()),
        };
        let value = read.map_or_else(|| text.clone(), |item| item.value);
        Some(Standing {
            kind,
            subject,
            value,
            text,
        })
    }

    /// Whether `self` and `other` are about the same thing (so the newer replaces the older).
    pub fn same_subject(&self, other: &Standing) -> bool {
        if self.subject == other.subject {
            return true;
        }
        // "budget" and "budget cap" are one subject; rules and preferences match exactly.
        let valued = |kind| matches!(kind, Kind::Fact | Kind::Constraint);
        if !(valued(self.kind) && valued(other.kind)) {
            return false;
        }
        // Subjects are a few words: comparing word by word beats building sets.
        let within = |small: &str, large: &str| {
            small
                .split(' ')
                .all(|word| large.split(' ').any(|other| other == word))
        };
        within(&self.subject, &other.subject) || within(&other.subject, &self.subject)
    }
}

/// The subject a line without one stands for.
fn implied_subject(kind: Kind, text: &str) -> String {
    match kind {
        Kind::Goal => "goal".to_string(),
        _ => normalize_subject(text.trim_end_matches(['.', '!'])),
    }
}

/// Where a text comes from: what forms are read in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A user's or a system prompt's sentences: every form.
    User,
    /// A tool's output: `name: value` and `name is value` lines only.
    Tool,
}

/// Cheap test before a sentence is read closely: most sentences hold none of these.
static CUES: Markers = Markers::new(&[
    " is ",
    " are ",
    ": ",
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
    " set to ",
]);

/// Whether a sentence starts like "we deploy to …" (read without a cue word).
fn starts_with_who(sentence: &str) -> bool {
    let head = sentence.as_bytes().get(..6).unwrap_or(sentence.as_bytes());
    let lower = head.to_ascii_lowercase();
    [&b"we "[..], b"i ", b"i'm ", b"we're ", b"the te", b"you "]
        .iter()
        .any(|who| lower.starts_with(who))
}

/// The standing items `text` states, in order.
pub fn extract(text: &str, origin: Origin) -> Vec<Standing> {
    match origin {
        Origin::User => sentences(text)
            .into_iter()
            .filter(|sentence| {
                sentence.len() <= 600 && (starts_with_who(sentence) || CUES.any_in(sentence))
            })
            .filter_map(|sentence| read_sentence(sentence, Origin::User))
            .collect(),
        Origin::Tool => text[..crate::budget::floor_boundary(text, TOOL_SCAN_BYTES)]
            .lines()
            .filter(|line| line.len() <= 160 && may_name_a_value(line))
            .filter_map(|line| read_sentence(line, Origin::Tool))
            .take(TOOL_FACTS)
            .collect(),
    }
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

/// Leading words that say a sentence holds from now on, or mark it as worth remembering.
const LEADS: &[&str] = &[
    "from now on, ",
    "from now on ",
    "going forward, ",
    "henceforth, ",
    "remember: ",
    "remember that ",
    "please remember that ",
    "keep in mind that ",
    "note: ",
    "note that ",
    "important: ",
    "fyi, ",
    "fyi: ",
    "also, ",
    "and ",
    "also ",
    "ok, ",
    "okay, ",
    "actually, ",
    "update: ",
    "correction: ",
    "scratch that, ",
    "never mind, ",
    "instead, ",
    "wait, ",
    "sorry, ",
    "so ",
    "but ",
];

const RULE_STARTS: &[&str] = &[
    "never ",
    "always ",
    "do not ",
    "don't ",
    "must ",
    "must not ",
    "should never ",
    "under no circumstances ",
];

const PREFERENCE_STARTS: &[&str] = &[
    "i prefer ",
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
    "i'd like you to use ",
    "i want you to use ",
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
];

/// The kind a label names: `Safety rule: …`, `Hard constraint: …`, `Preference: …`.
fn kind_of_label(label: &str) -> Option<Kind> {
    let last = label.split_whitespace().next_back()?;
    Some(match last.trim_end_matches('s') {
        "rule" => Kind::Rule,
        "constraint" | "limit" => Kind::Constraint,
        "fact" => Kind::Fact,
        "goal" | "objective" | "task" => Kind::Goal,
        "preference" => Kind::Preference,
        _ => return None,
    })
}

/// A subject without the specific values in it (`not exceed $500` → `not exceed`), so that a
/// rule or preference restated with another value replaces the older one.
fn without_values(text: &str) -> String {
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
fn read_sentence(sentence: &str, origin: Origin) -> Option<Standing> {
    let text = compact(
        sentence
            .trim()
            .trim_start_matches(['-', '*', '•', '>', ' ']),
        TEXT_MAX,
    );
    if text.is_empty() {
        return None;
    }
    // Byte offsets of `lower` are those of `text` (ASCII lower-casing keeps lengths).
    let lower = text.to_ascii_lowercase();
    let mut body = lower.as_str();
    let mut standing_from_now = false;
    if origin == Origin::User {
        'leads: loop {
            for lead in LEADS {
                if let Some(rest) = body.strip_prefix(lead) {
                    standing_from_now |= lead.starts_with("from now") || lead.starts_with("going");
                    body = rest;
                    continue 'leads;
                }
            }
            break;
        }
    }
    let start = lower.len() - body.len();
    let original = &text[start..];
    if origin == Origin::User {
        // "Noted for later: the budget is $500": the standing sentence after a short label.
        if let Some((label, _)) = body.split_once(": ") {
            let short = label.split_whitespace().count() <= 4
                && label.bytes().all(|b| b.is_ascii_alphabetic() || b == b' ');
            if short {
                let inner = &original[label.len() + 2..];
                if let Some(item) = read_sentence(inner, origin) {
                    return Some(Standing {
                        text: text.clone(),
                        ..item
                    });
                }
                // A label naming the kind: "Hard constraint: stay under 2 GB".
                if let Some(kind) = kind_of_label(label) {
                    let value = trim_value(inner);
                    let subject = match kind {
                        Kind::Goal => "goal".to_string(),
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
    if origin == Origin::User {
        // Rules: an imperative with never / always / must / do not.
        let imperative = body
            .strip_prefix("please ")
            .or_else(|| body.strip_prefix("you "))
            .or_else(|| body.strip_prefix("we "))
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
        // Preferences: "I prefer …", "please use …".
        if let Some(rest) = PREFERENCE_STARTS.iter().find_map(|s| body.strip_prefix(s)) {
            let offset = lower.len() - rest.len();
            let value = trim_value(&text[offset..]);
            let subject = match rest.find(" for ") {
                Some(at) => rest[at + 5..].to_string(),
                None => value
                    .split([',', ';'])
                    .next()
                    .unwrap_or(value)
                    .split(" over ")
                    .next()
                    .unwrap_or(value)
                    .split(" instead of ")
                    .next()
                    .unwrap_or(value)
                    .to_string(),
            };
            return item(Kind::Preference, subject, value);
        }
    }
    // "name is value", "name: value", "name changed to value".
    if let Some((name, value)) = named_value(body) {
        let offset = lower.len() - value.len();
        let value = &text[offset..];
        // "The user's preferred editor is Helix": a preference, whatever its value.
        let preferred = ["prefer", "favorite", "favourite"]
            .iter()
            .any(|word| name.contains(word));
        if origin == Origin::User && preferred && value.split_whitespace().count() <= VALUE_WORDS {
            let name = strip_articles(name);
            return item(Kind::Preference, name.to_string(), value);
        }
        if looks_specific(value) && value.split_whitespace().count() <= VALUE_WORDS {
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
        // "we deploy to us-west-2", "I'm working in eu-central-1".
        if let Some((verb, value)) = verb_place(body) {
            let offset = lower.len() - value.len();
            let value = &text[offset..];
            if looks_specific(value) && value.split_whitespace().count() <= VALUE_WORDS {
                return item(Kind::Fact, verb, value);
            }
        }
        if standing_from_now {
            let value = trim_value(original);
            return item(Kind::Rule, without_values(value), value);
        }
    }
    None
}

/// `name is value` (also `are`, `is now`, `was changed to`, `changed to`, `moved to`,
/// `=`) or `name: value`, with a short alphabetic name.
fn named_value(body: &str) -> Option<(&str, &str)> {
    const LINKS: &[&str] = &[
        " has been changed to ",
        " was changed to ",
        " has changed to ",
        " changed to ",
        " was moved to ",
        " moved to ",
        " is now ",
        " are now ",
        " is set to ",
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
    // Markup is not a value.
    if value.contains('<') && value.contains('>') {
        return None;
    }
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

/// The current standing items of a session, in the order they were stated, each subject once:
/// a newer value replaces the older (which is remembered as superseded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Book {
    items: Vec<Standing>,
    /// Values replaced by newer ones: (old item, new value).
    superseded: Vec<(Standing, String)>,
}

impl Book {
    pub fn items(&self) -> &[Standing] {
        &self.items
    }

    /// What was replaced, and by which value.
    pub fn superseded(&self) -> &[(Standing, String)] {
        &self.superseded
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds `item`; one with the same subject is replaced (the newer value wins and moves last).
    pub fn add(&mut self, item: Standing) {
        if self.items.iter().any(|known| known.text == item.text) {
            return;
        }
        // A preference that names an older one it replaces ("spaces over tabs", "spaces
        // instead of tabs") supersedes it too.
        let replaces = |known: &Standing| {
            known.same_subject(&item)
                || (known.kind == Kind::Preference
                    && item.kind == Kind::Preference
                    && mentions_word(&item.text, &known.value))
        };
        if let Some(at) = self.items.iter().position(replaces) {
            let old = self.items.remove(at);
            if !old.value.eq_ignore_ascii_case(&item.value) {
                // Each old value once, with its latest replacement; the newest few are kept
                // (marking looks for each in every other item).
                self.superseded.retain(|(gone, _)| gone.value != old.value);
                self.superseded.push((old, item.value.clone()));
                if self.superseded.len() > MAX_ITEMS {
                    self.superseded.remove(0);
                }
            }
        }
        self.items.push(item);
        while self.items.len() > MAX_ITEMS {
            // The oldest of the kind kept least.
            let rank = self
                .items
                .iter()
                .map(|i| i.kind.keep_rank())
                .min()
                .unwrap_or(0);
            let at = self
                .items
                .iter()
                .position(|i| i.kind.keep_rank() == rank)
                .unwrap_or(0);
            self.items.remove(at);
        }
    }

    pub fn extend(&mut self, items: impl IntoIterator<Item = Standing>) {
        for item in items {
            self.add(item);
        }
    }

    /// Adds the items of section lines a summary wrote (lines that are not items are skipped).
    pub fn add_lines<'a>(&mut self, lines: impl IntoIterator<Item = &'a str>) {
        for line in lines {
            if let Some(item) = Standing::parse_line(line) {
                self.add(item);
            }
        }
    }

    /// The section's lines.
    pub fn lines(&self) -> Vec<String> {
        self.items.iter().map(Standing::line).collect()
    }

    /// `text` with each superseded value in it marked as such (`$500 (superseded by $700)`),
    /// so that no other part of a summary still shows it as current.
    pub fn mark_superseded(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (old, new) in &self.superseded {
            if old.value.len() < 2 || self.items.iter().any(|i| i.value == old.value) {
                continue;
            }
            out = mark_value(&out, &old.value, new);
        }
        out
    }
}

/// Whether `text` holds `word` as a whole word, ignoring case.
fn mentions_word(text: &str, word: &str) -> bool {
    let (text, word) = (text.to_lowercase(), word.to_lowercase());
    !word.is_empty()
        && text.match_indices(&word).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + word.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
}

/// `text` with every standalone `value` not already marked followed by `(superseded by new)`.
fn mark_value(text: &str, value: &str, new: &str) -> String {
    const NOTE: &str = " (superseded by ";
    if !text.contains(value) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = 0;
    for (at, _) in text.match_indices(value) {
        let end = at + value.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        let standalone =
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric);
        if at < rest || !standalone || text[end..].starts_with(NOTE) {
            continue;
        }
        out.push_str(&text[rest..end]);
        out.push_str(NOTE);
        out.push_str(new);
        out.push(')');
        rest = end;
    }
    out.push_str(&text[rest..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Standing {
        let items = extract(text, Origin::User);
        assert_eq!(items.len(), 1, "{text}: {items:?}");
        items.into_iter().next().unwrap()
    }

    fn kind_subject_value(text: &str) -> (Kind, String, String) {
        let item = one(text);
        (item.kind, item.subject, item.value)
    }

    #[test]
    fn reads_the_forms_users_write() {
        let cases: &[(&str, Kind, &str, &str)] = &[
            (
                "Never reveal the vault code.",
                Kind::Rule,
                "reveal vault code",
                "reveal the vault code",
            ),
            (
                "Please do not push to main",
                Kind::Rule,
                "push to main",
                "push to main",
            ),
            (
                "You must always run the tests first.",
                Kind::Rule,
                "always run tests first",
                "always run the tests first",
            ),
            ("The budget is $500.", Kind::Constraint, "budget", "$500"),
            (
                "Hard constraint: total spend must stay under $4,817.",
                Kind::Constraint,
                "spend must stay under",
                "total spend must stay under $4,817",
            ),
            (
                "Safety rule: never share the vault code ZX-99.",
                Kind::Rule,
                "share vault code",
                "share the vault code ZX-99",
            ),
            (
                "The user's preferred editor is Helix.",
                Kind::Preference,
                "preferred editor",
                "Helix",
            ),
            (
                "Preference: tabs over spaces",
                Kind::Preference,
                "tabs over spaces",
                "tabs over spaces",
            ),
            (
                "Remember that the API rate limit is 40 requests per minute.",
                Kind::Constraint,
                "api rate limit",
                "40 requests per minute",
            ),
            (
                "We must not exceed $500.",
                Kind::Rule,
                "not exceed",
                "not exceed $500",
            ),
            (
                "Noted for later: The budget is $500.",
                Kind::Constraint,
                "budget",
                "$500",
            ),
            (
                "Budget cap: $4,817",
                Kind::Constraint,
                "budget cap",
                "$4,817",
            ),
            (
                "We deploy to us-west-2.",
                Kind::Fact,
                "deploy to",
                "us-west-2",
            ),
            (
                "The deadline is 2026-03-14.",
                Kind::Fact,
                "deadline",
                "2026-03-14",
            ),
            ("The user prefers tabs.", Kind::Preference, "tabs", "tabs"),
            (
                "I prefer snake_case for file names",
                Kind::Preference,
                "file names",
                "snake_case for file names",
            ),
            (
                "The goal is to ship the importer by Friday.",
                Kind::Goal,
                "goal",
                "to ship the importer by Friday",
            ),
            (
                "Our task: migrate billing to Stripe",
                Kind::Goal,
                "goal",
                "migrate billing to Stripe",
            ),
            (
                "The vault code is ZEPHYR-4471.",
                Kind::Fact,
                "vault code",
                "ZEPHYR-4471",
            ),
            (
                "The deadline has been changed to 2026-04-02",
                Kind::Fact,
                "deadline",
                "2026-04-02",
            ),
        ];
        for (text, kind, subject, value) in cases {
            assert_eq!(
                kind_subject_value(text),
                (*kind, subject.to_string(), value.to_string()),
                "{text}"
            );
        }
        let from_now = one("From now on, answer in French.");
        assert_eq!(from_now.kind, Kind::Rule);
        assert_eq!(from_now.text, "From now on, answer in French.");
    }

    #[test]
    fn ordinary_sentences_are_not_standing_facts() {
        for text in [
            "The problem is that the loop skips the last row.",
            "It is 42 lines long.",
            "step 12: please look at module_12/file_12.py and keep going",
            "Can you fix the failing test in src/parser.rs?",
            "error: could not compile `ctxhost` due to 2 previous errors",
            "This is fine.",
            "We went to lunch.",
            "td_field = TimeDelta(precision=\"milliseconds\")",
            "ValueError: chr() arg not in range(0x110000)",
            "SETTING: You are a skilled cybersecurity professional and top CTF player.",
            "The replacement text is terminated by a line with only end_of_edit on it.",
        ] {
            assert_eq!(extract(text, Origin::User), [], "{text}");
        }
        assert_eq!(
            extract(
                "error: boom 42\nwarning: unused `x`\nInstalling build dependencies: finished with status 'done'\n\
                 Age: <input type=\"text\" name=\"age\" />\nRegion: eu-central-1",
                Origin::Tool
            )
            .iter()
            .map(|i| i.value.as_str())
            .collect::<Vec<_>>(),
            ["eu-central-1"]
        );
    }

    #[test]
    fn a_newer_value_supersedes_the_older_one() {
        let mut book = Book::default();
        book.extend(extract(
            "The budget is $500. Never reveal the vault code. We deploy to us-west-2.",
            Origin::User,
        ));
        book.extend(extract(
            "Update: budget cap: $700. We now deploy to eu-central-1.",
            Origin::User,
        ));
        let values: Vec<&str> = book.items().iter().map(|i| i.value.as_str()).collect();
        assert_eq!(values, ["reveal the vault code", "$700", "eu-central-1"]);
        let old: Vec<&str> = book
            .superseded()
            .iter()
            .map(|(old, _)| old.value.as_str())
            .collect();
        assert_eq!(old, ["$500", "us-west-2"]);
        assert_eq!(
            book.mark_superseded("keep it under $500 and $5000"),
            "keep it under $500 (superseded by $700) and $5000"
        );
        // Marking twice changes nothing.
        let once = book.mark_superseded("deploy to us-west-2");
        assert_eq!(book.mark_superseded(&once), once);
    }

    #[test]
    fn a_rule_or_label_restated_with_another_value_replaces_the_older() {
        let mut book = Book::default();
        book.extend(extract(
            "We must not exceed $500. Hard constraint: memory stays under 2 GB.",
            Origin::User,
        ));
        book.extend(extract(
            "We must not exceed $700. Hard constraint: memory stays under 3 GB.",
            Origin::User,
        ));
        let values: Vec<&str> = book.items().iter().map(|i| i.value.as_str()).collect();
        assert_eq!(values, ["not exceed $700", "memory stays under 3 GB"]);

        let mut book = Book::default();
        book.extend(extract(
            "The user prefers tabs. We deploy to us-west-2.",
            Origin::User,
        ));
        book.extend(extract(
            "Scratch that, the user prefers spaces over tabs. Correction: we deploy to eu-west-1 now.",
            Origin::User,
        ));
        let values: Vec<&str> = book.items().iter().map(|i| i.value.as_str()).collect();
        assert_eq!(values, ["spaces over tabs", "eu-west-1"]);
    }

    #[test]
    fn lines_round_trip() {
        let mut book = Book::default();
        book.extend(extract(
            "Never reveal the vault code. Budget cap: $500. The goal is to ship v2. \
             I prefer tabs for indentation.",
            Origin::User,
        ));
        let lines = book.lines();
        assert_eq!(
            lines,
            [
                "Rule: Never reveal the vault code.",
                "Constraint: Budget cap: $500.",
                "Goal: The goal is to ship v2.",
                "Preference: I prefer tabs for indentation.",
            ]
        );
        let mut again = Book::default();
        again.add_lines(lines.iter().map(String::as_str));
        assert_eq!(again.items(), book.items());
        let mut bold = Book::default();
        bold.add_lines(["- **Constraint** (budget cap): Budget cap: $500."]);
        assert_eq!(bold.items()[0].value, "$500");
    }

    #[test]
    fn the_book_keeps_rules_when_it_overflows() {
        let mut book = Book::default();
        book.extend(extract("Never reveal the vault code.", Origin::User));
        for i in 0..MAX_ITEMS + 5 {
            // Names of letters only: `name is value` names are words.
            let name: String = i
                .to_string()
                .bytes()
                .map(|d| char::from(d - b'0' + b'a'))
                .collect();
            book.extend(extract(
                &format!("Mirror {name} is 10.0.0.{i}"),
                Origin::User,
            ));
        }
        assert_eq!(book.items().len(), MAX_ITEMS);
        assert_eq!(book.items()[0].kind, Kind::Rule);
    }
}
