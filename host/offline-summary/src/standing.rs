//! Standing facts: the rules, constraints, facts, goals and preferences a session states once
//! and expects to hold from then on ("never reveal the vault code", "the budget is $500", "we
//! deploy to us-west-2", "the user prefers tabs", "the goal is …").
//!
//! They are read from the sentences of system and user turns (from an assistant's only where it
//! confirms one, and from `name: value` / `name is value` lines of tool results) by their
//! sentence forms, in whatever phrasing (labels, imperatives, bounds, decisions, open
//! questions), carried verbatim from each summary
//! into the next, and a newer value for the same subject replaces the older one. A summary's
//! section lists one item a line, `Kind (subject): text`, which is read back here; the text is
//! as written, without a lead-in that only announces its kind ("we agreed that …"), which the
//! label says ([`lead_in`]).

mod book;
mod change;
mod forms;
mod lead_in;
mod read;

pub use book::Book;
pub use read::{extract, looks_specific, normalize_subject, note_value};

use crate::extract::compact;
use read::read_sentence;

/// Longest verbatim text an item keeps.
pub const TEXT_MAX: usize = 240;
/// Most items a summary carries; beyond it the oldest facts go first, rules last.
pub const MAX_ITEMS: usize = 40;

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
    /// Something chosen among options ("we settled on Rust 1.79"): holds until changed.
    Decision,
    /// Something left open on purpose ("still unclear whether refunds share the queue").
    Question,
    /// What a user said in a short message of its own, naming a value, that no form above
    /// reads: the user's word binds by default, so it is held as said.
    Note,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Rule,
        Kind::Constraint,
        Kind::Fact,
        Kind::Goal,
        Kind::Preference,
        Kind::Decision,
        Kind::Question,
        Kind::Note,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Kind::Rule => "Rule",
            Kind::Constraint => "Constraint",
            Kind::Fact => "Fact",
            Kind::Goal => "Goal",
            Kind::Preference => "Preference",
            Kind::Decision => "Decision",
            Kind::Question => "Question",
            Kind::Note => "Note",
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
            Kind::Note => 0,
            Kind::Fact => 1,
            Kind::Question => 2,
            Kind::Preference => 3,
            Kind::Decision => 4,
            Kind::Goal => 5,
            Kind::Constraint => 6,
            Kind::Rule => 7,
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
        let shown = self.shown_text();
        let line = self.line_showing(&shown);
        if shown == self.text {
            return line;
        }
        // Without its stated label the text may no longer give the subject, which the line
        // must then write: the stated label stays when that is shorter.
        let labelled = self.line_showing(&self.text);
        if labelled.len() < line.len() {
            labelled
        } else {
            line
        }
    }

    /// The line showing `text`, without a lead-in that only announces the kind, which the
    /// label says; unless reading the shorter text back would not give the subject (it would
    /// have to be written).
    fn line_showing(&self, text: &str) -> String {
        lead_in::without_lead_in(self.kind, text)
            .filter(|short| self.reads_back(short))
            .map_or_else(
                || self.line_of(text.to_string()),
                |short| self.line_of(short),
            )
    }

    /// Whether `text`, read back under this item's label, gives its subject.
    fn reads_back(&self, text: &str) -> bool {
        read_back(self.kind, text)
            .map_or_else(|| implied_subject(self.kind, text), |item| item.subject)
            == self.subject
    }

    /// The line showing `text`: the subject is written only when reading the text back would
    /// not give it.
    fn line_of(&self, text: String) -> String {
        if self.reads_back(&text) {
            format!("{}: {}", self.kind.label(), text)
        } else {
            format!("{} ({}): {}", self.kind.label(), self.subject, text)
        }
    }

    /// The item's text without a label that only says what the line's own label says
    /// ("Constraint — …", "DECISION: …", "Acceptance criteria: …" on a rule, "Environment: …"
    /// on a fact) or that it changed ("Change request: …"): one label a line, the fact, not
    /// its frame.
    fn shown_text(&self) -> String {
        let lower = self.text.to_ascii_lowercase();
        let Some((label, inner)) = read::label_split(&lower) else {
            return self.text.clone();
        };
        let repeats = read::label_says(label, self.kind) || forms::is_change_label(label);
        let rest = self.text[inner..].trim();
        if !repeats || rest.is_empty() || label.split_whitespace().count() > 3 {
            return self.text.clone();
        }
        // A sentence, as it was (a capital first), unless it opens with a value.
        let plain = rest
            .split(' ')
            .next()
            .is_some_and(|word| word.bytes().all(|b| b.is_ascii_lowercase()));
        let mut chars = rest.chars();
        match chars.next() {
            Some(first) if plain => first.to_uppercase().chain(chars).collect(),
            _ => rest.to_string(),
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
        let read = read_back(kind, &text);
        let subject = match subject.map(normalize_subject).filter(|s| !s.is_empty()) {
            Some(subject) => subject,
            None => read
                .as_ref()
                .map_or_else(|| implied_subject(kind, &text), |item| item.subject.clone()),
        };
        let value = match read {
            Some(item) => item.value,
            None if kind == Kind::Note => read::note_value(&text).unwrap_or_else(|| text.clone()),
            None => text.clone(),
        };
        Some(Standing {
            kind,
            subject,
            value,
            text,
        })
    }

    /// Whether the item reads as a sentence someone wrote (a capital first, a stop last), not
    /// a `name: value` line a tool printed.
    fn is_sentence(&self) -> bool {
        let text = self.text.trim();
        text.starts_with(|c: char| c.is_uppercase()) && text.ends_with(['.', '!', '?'])
    }

    /// When it goes, among the items of a section that must shrink: a line read from a tool's
    /// output (a fact or limit that is no sentence) first, a note held as said next, any other
    /// last.
    fn drop_tier(&self) -> u8 {
        match self.kind {
            Kind::Fact | Kind::Constraint if !self.is_sentence() => 0,
            Kind::Note => 1,
            _ => 2,
        }
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
        // As many words and not equal: neither holds the other.
        if self.subject.matches(' ').count() == other.subject.matches(' ').count() {
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

/// The item `text` reads as, for a line labelled `kind`: its own, or a plain value's under the
/// label naming its kind (as [`read_sentence`] reads a labelled statement).
fn read_back(kind: Kind, text: &str) -> Option<Standing> {
    read_sentence(text, Origin::User).filter(|item| {
        item.kind == kind || kind != Kind::Note && matches!(item.kind, Kind::Fact | Kind::Note)
    })
}

/// The subject a line without one stands for (a note's: its words without their values, so
/// that the same thing said with another value replaces it).
fn implied_subject(kind: Kind, text: &str) -> String {
    let text = text.trim_end_matches(['.', '!', '?']);
    match kind {
        // "To ship the importer by May": an aim, about what it does (as [`read`] reads "what
        // we want is to …"); any other goal text is the goal.
        Kind::Goal
            if !text
                .get(..3)
                .is_some_and(|to| to.eq_ignore_ascii_case("to ")) =>
        {
            "goal".to_string()
        }
        // As a label naming the kind gives it ([`read::read_sentence`]).
        Kind::Decision => normalize_subject(&read::choice_subject(text)),
        _ => normalize_subject(&read::without_values(text)),
    }
}

/// Where a text comes from: what forms are read in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A user's or a system prompt's sentences: every form.
    User,
    /// A tool's output: `name: value` and `name is value` lines only.
    Tool,
    /// An assistant's turn: only its confirmations of a standing item ("Understood: never
    /// reveal the vault code", "Noted, the release branch is release/2.4"); its own chatter
    /// states nothing binding.
    Assistant,
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
    fn reads_limits_done_conditions_renames_and_later_clauses() {
        let cases: &[(&str, Kind, &str)] = &[
            ("The batch size must stay at or below 4,317 rows.", Kind::Constraint, "4,317"),
            ("The tracking ticket for this work is QMZ-48213.", Kind::Fact, "QMZ-48213"),
            ("We are done when the acceptance check garnet-3333 passes.", Kind::Goal, "garnet-3333"),
            (
                "Update: the goal changed, the billing service goes onto cluster cobalt-9988 instead.",
                Kind::Goal,
                "cobalt-9988",
            ),
            ("Update: the next milestone was renamed willow-2222.", Kind::Fact, "willow-2222"),
            (
                "Update: I now prefer the indentation style called juniper-6666.",
                Kind::Preference,
                "juniper-6666",
            ),
            (
                "Update: the vault code was rotated, never reveal the new vault code QA-1234-ZZ.",
                Kind::Rule,
                "QA-1234-ZZ",
            ),
        ];
        for (text, kind, value) in cases {
            let item = one(text);
            assert_eq!(item.kind, *kind, "{text}: {item:?}");
            assert!(item.value.contains(value), "{text}: {item:?}");
            assert!(item.text.contains(value), "{text}: {item:?}");
        }
        // A new goal replaces the old one; a done-condition is a goal of its own.
        let mut book = Book::default();
        book.extend(extract(
            "The goal is to move billing onto cluster tundra-4512.",
            Origin::User,
        ));
        book.extend(extract(
            "We are done when the check garnet-3333 passes.",
            Origin::User,
        ));
        book.extend(extract(
            "Update: the goal changed, billing goes onto cluster cobalt-9988 instead.",
            Origin::User,
        ));
        let lines = book.lines().join("\n");
        assert!(
            lines.contains("cobalt-9988") && lines.contains("garnet-3333"),
            "{lines}"
        );
        assert!(!lines.contains("tundra-4512"), "{lines}");
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
                "run tests first",
                "run the tests first",
            ),
            ("The budget is $500.", Kind::Constraint, "budget", "$500"),
            (
                "Hard constraint: total spend must stay under $4,817.",
                Kind::Constraint,
                "spend",
                "$4,817",
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
            book.mark_superseded("keep it under $500 and $5000")
                .into_owned(),
            "keep it under $500 (superseded by $700) and $5000"
        );
        // Marking twice changes nothing.
        let once = book.mark_superseded("deploy to us-west-2");
        assert_eq!(book.mark_superseded(&once), once);
        assert!(matches!(
            book.mark_superseded("nothing replaced"),
            std::borrow::Cow::Borrowed(_)
        ));
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
    fn a_change_that_names_the_value_it_replaces_supersedes_it() {
        let mut book = Book::default();
        book.extend(extract(
            "DECISION: use Kafka for the event bus. We deploy to us-west-2.",
            Origin::User,
        ));
        book.extend(extract(
            "DECISION: use NATS instead of Kafka. We no longer deploy to us-west-2; we deploy to eu-central-1.",
            Origin::User,
        ));
        let values: Vec<&str> = book.items().iter().map(|i| i.value.as_str()).collect();
        assert_eq!(
            values,
            ["use NATS instead of Kafka", "eu-central-1"],
            "{:?}",
            book.lines()
        );
        let old: Vec<&str> = book
            .superseded()
            .iter()
            .map(|(old, _)| old.value.as_str())
            .collect();
        assert_eq!(old, ["use Kafka for the event bus", "us-west-2"]);
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
    fn a_change_said_in_other_words_replaces_only_what_it_changes() {
        let mut book = Book::default();
        book.extend(extract(
            "Never flush the cache on prod-db-2. Always tag images with the build id b-1042. \
             The deploy bucket is art-store-7.",
            Origin::User,
        ));
        // A change naming the bucket: the bucket's fact takes the new value; the rule that
        // shares no subject with it, and the one that shares only a word of another kind, stay.
        book.extend(extract(
            "Heads up: the deploy bucket was renamed to art-store-9. The cache is now redis-7.",
            Origin::User,
        ));
        let lines = book.lines();
        assert_eq!(
            lines,
            [
                "Rule: Never flush the cache on prod-db-2.",
                "Rule: Always tag images with the build id b-1042.",
                "Fact: The deploy bucket is art-store-9.",
                "Fact: The cache is now redis-7.",
            ],
        );
        let old: Vec<(&str, &str)> = book
            .superseded()
            .iter()
            .map(|(old, new)| (old.value.as_str(), new.as_str()))
            .collect();
        assert_eq!(old, [("art-store-7", "art-store-9")]);
    }

    /// Two summaries merged (lcm's condensed record, a summary and its previous one): a
    /// change one carries replaces what the other carried, in that item's words.
    #[test]
    fn a_change_in_a_later_summary_replaces_what_an_earlier_one_carried() {
        let mut book = Book::default();
        book.add_lines([
            "- Rule: Never push directly to the release branch rel-5.",
            "- Fact: The staging host is stg-2.",
        ]);
        book.add_lines(["- Fact: The release branch moved to rel-6."]);
        assert_eq!(
            book.lines(),
            [
                "Fact: The staging host is stg-2.",
                "Rule: Never push directly to the release branch rel-6.",
            ]
        );
        assert_eq!(
            book.mark_superseded("never push to rel-5").into_owned(),
            "never push to rel-5 (superseded by rel-6)"
        );
    }

    #[test]
    fn an_item_is_the_statement_without_the_remarks_after_it() {
        for (said, kept) in [
            (
                "Never force-push to main, whatever the deadline.",
                "Never force-push to main.",
            ),
            (
                "Keep in mind that the quota is 40 GB; the platform enforces it quietly.",
                "Keep in mind that the quota is 40 GB.",
            ),
            (
                "Still not sure who owns bucket logs-7, so we will come back to it.",
                "Still not sure who owns bucket logs-7.",
            ),
            // A condition stays.
            (
                "Never deploy on Fridays, unless the on-call lead approves.",
                "Never deploy on Fridays, unless the on-call lead approves.",
            ),
        ] {
            assert_eq!(one(said).text, kept, "{said}");
        }
    }

    #[test]
    fn a_pasted_document_and_event_lines_state_nothing_but_their_labels() {
        let mut document = String::from("Here is a transcript of an earlier run.\n");
        for i in 0..200 {
            document.push_str(&format!(
                "Always check step {i} twice. The port is 80{i:02}.\n"
            ));
        }
        document.push_str("SAFETY RULE: never print the token tk-5521.\n");
        let items = extract(&document, Origin::User);
        let values: Vec<&str> = items.iter().map(|i| i.value.as_str()).collect();
        assert_eq!(values, ["print the token tk-5521"], "{items:?}");
        let output = "Created wheel for pkg: filename=pkg-1.0.whl size=4534 sha256=ab12\n\
                      Stored in directory: /tmp/wheels/4d/da\nRegion: eu-central-1";
        let values: Vec<String> = extract(output, Origin::Tool)
            .into_iter()
            .map(|i| i.value)
            .collect();
        assert_eq!(values, ["eu-central-1"]);
    }

    /// `i` spelled in letters (`12` → `bc`): names of `name is value` are words.
    fn letters(i: usize) -> String {
        i.to_string()
            .bytes()
            .map(|d| char::from(d - b'0' + b'a'))
            .collect()
    }

    #[test]
    fn the_book_keeps_rules_when_it_overflows() {
        let mut book = Book::default();
        book.extend(extract("Never reveal the vault code.", Origin::User));
        for i in 0..MAX_ITEMS + 5 {
            let name = letters(i);
            book.extend(extract(
                &format!("Mirror {name} is 10.0.0.{i}"),
                Origin::User,
            ));
        }
        assert_eq!(book.items().len(), MAX_ITEMS);
        assert_eq!(book.items()[0].kind, Kind::Rule);
    }

    #[test]
    fn lines_a_tool_printed_go_before_facts_a_user_stated() {
        let mut book = Book::default();
        book.extend(extract("The release date is 2035-01-03.", Origin::User));
        for i in 0..MAX_ITEMS + 5 {
            let name = letters(i);
            book.extend(extract(
                &format!("Found mirror {name}: 10.0.0.{i}"),
                Origin::Tool,
            ));
        }
        assert_eq!(book.items().len(), MAX_ITEMS);
        assert!(
            book.items().iter().any(|i| i.value == "2035-01-03"),
            "{:?}",
            book.lines()
        );
    }
}
