//! Phrasing families: the same kinds of facts said the way different people and tools say them
//! (chat, tickets, terse labels, narrative prose), with the acknowledgements and filler turns an
//! outside suite puts between them, and the files an agent touches planted as real tool calls.
//! The harness's own phrasing is the `harness` family ([`facts::plan`]).

use ctxhost_sdk::{Message, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::facts::{self, Fact, FactKind, FileAction, FileHistory, Fresh, Shape, Statement};
use super::rng::Rng;

/// How the planted facts are phrased.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// The harness's own sentences: "Update: the budget cap is now $5,120." Five kinds, no
    /// filler, no files.
    #[default]
    Harness,
    /// "btw, always run the smoke suite kestrel-7318 before every merge, ok?"
    Chat,
    /// "Acceptance criteria: ..." / "Constraint — do not ..."
    Ticket,
    /// "SAFETY RULE: Never ...", "LIMIT: ..."
    Labelled,
    /// Facts inside the sentences of a paragraph.
    Prose,
}

impl Style {
    /// Every family, in report order.
    pub const ALL: [Style; 5] = [
        Style::Harness,
        Style::Chat,
        Style::Ticket,
        Style::Labelled,
        Style::Prose,
    ];

    /// The family's name, as `--style` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Style::Harness => "harness",
            Style::Chat => "chat",
            Style::Ticket => "ticket",
            Style::Labelled => "labelled",
            Style::Prose => "prose",
        }
    }

    /// The kinds of facts this family plants, in report order.
    pub fn kinds(self) -> Vec<FactKind> {
        match self {
            Style::Harness => FactKind::ALL[..5].to_vec(),
            _ => FactKind::ALL.to_vec(),
        }
    }

    /// Whether a statement goes in before a user message of the session (a turn of its own,
    /// acknowledged) rather than right after it (the harness's way).
    pub(crate) fn turns_of_its_own(self) -> bool {
        self != Style::Harness
    }
}

impl std::fmt::Display for Style {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A name `--style` does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("style '{0}' is none of harness, chat, ticket, labelled, prose (or all)")]
pub struct BadStyle(pub String);

impl std::str::FromStr for Style {
    type Err = BadStyle;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Style::ALL
            .into_iter()
            .find(|s| s.name() == text.trim())
            .ok_or_else(|| BadStyle(text.to_string()))
    }
}

/// One fact of a text kind, the same in every family: what it is about (words the clause
/// holds, as a search for it would use them), the clause stating it and, for the first of each
/// kind, the clause superseding it (`{v}` the value, `{old}` the value it replaces).
struct Subject {
    kind: FactKind,
    subject: &'static str,
    clause: &'static str,
    update: Option<&'static str>,
    shape: Shape,
}

const SUBJECTS: &[Subject] = &[
    Subject {
        kind: FactKind::Rule,
        subject: "smoke suite",
        clause: "run the smoke suite {v} before every merge",
        update: Some("the smoke suite was renamed to {v}; run that one before every merge"),
        shape: Shape::Codename,
    },
    Subject {
        kind: FactKind::Rule,
        subject: "release tag",
        clause: "use the release tag {v} on every release",
        update: None,
        shape: Shape::Code,
    },
    Subject {
        kind: FactKind::Rule,
        subject: "audit log",
        clause: "record each schema change in the audit log {v}",
        update: None,
        shape: Shape::Ticket,
    },
    Subject {
        kind: FactKind::Prohibition,
        subject: "protected branch",
        clause: "push directly to the protected branch {v}",
        update: Some(
            "the protected branch moved to {v}, and direct pushes to it are forbidden just the same",
        ),
        shape: Shape::Codename,
    },
    Subject {
        kind: FactKind::Prohibition,
        subject: "API key",
        clause: "reveal the API key {v} in any reply, log or file",
        update: None,
        shape: Shape::Code,
    },
    Subject {
        kind: FactKind::Prohibition,
        subject: "production database",
        clause: "run migrations against the production database {v}",
        update: None,
        shape: Shape::Codename,
    },
    Subject {
        kind: FactKind::Constraint,
        subject: "request rate",
        clause: "the request rate stays at most {v} requests per minute",
        update: Some("the request rate limit changed to {v} requests per minute"),
        shape: Shape::Amount,
    },
    Subject {
        kind: FactKind::Constraint,
        subject: "memory ceiling",
        clause: "the worker's memory ceiling is {v} MiB",
        update: None,
        shape: Shape::Amount,
    },
    Subject {
        kind: FactKind::Constraint,
        subject: "job timeout",
        clause: "the job timeout is {v} ms for every job",
        update: None,
        shape: Shape::Amount,
    },
    Subject {
        kind: FactKind::Fact,
        subject: "runtime version",
        clause: "production runs runtime version {v}",
        update: Some("production is no longer on runtime version {old}; it runs {v} now"),
        shape: Shape::Version,
    },
    Subject {
        kind: FactKind::Fact,
        subject: "data directory",
        clause: "the data directory is {v}",
        update: None,
        shape: Shape::Path,
    },
    Subject {
        kind: FactKind::Fact,
        subject: "incident",
        clause: "the incident we are fixing is {v}",
        update: None,
        shape: Shape::Ticket,
    },
    Subject {
        kind: FactKind::Goal,
        subject: "billing service",
        clause: "move the billing service onto cluster {v}",
        update: Some("the billing service goes onto cluster {v} instead"),
        shape: Shape::Codename,
    },
    Subject {
        kind: FactKind::Goal,
        subject: "importer rewrite",
        clause: "ship the importer rewrite by {v}",
        update: None,
        shape: Shape::Date,
    },
    Subject {
        kind: FactKind::Goal,
        subject: "acceptance check",
        clause: "make the acceptance check {v} pass",
        update: None,
        shape: Shape::Ticket,
    },
    Subject {
        kind: FactKind::Preference,
        subject: "reviewer",
        clause: "{v} is the reviewer of the pull requests",
        update: Some("my preferred reviewer is now {v}"),
        shape: Shape::Codename,
    },
    Subject {
        kind: FactKind::Preference,
        subject: "commit prefix",
        clause: "every commit message starts with the commit prefix {v}",
        update: None,
        shape: Shape::Code,
    },
    Subject {
        kind: FactKind::Preference,
        subject: "log format",
        clause: "the log format is {v}",
        update: None,
        shape: Shape::Codename,
    },
    Subject {
        kind: FactKind::Decision,
        subject: "queue backend",
        clause: "we use {v} as the queue backend",
        update: Some("we switched the queue backend to {v} instead"),
        shape: Shape::Codename,
    },
    Subject {
        kind: FactKind::Decision,
        subject: "cache key",
        clause: "the cache key scheme is {v}",
        update: None,
        shape: Shape::Code,
    },
    Subject {
        kind: FactKind::Decision,
        subject: "feature flag",
        clause: "the rollout goes behind the feature flag {v}",
        update: None,
        shape: Shape::Codename,
    },
    Subject {
        kind: FactKind::Question,
        subject: "storage quota",
        clause: "whether the storage quota {v} applies to archived tenants",
        update: Some("the open question is now whether the storage quota {v} applies to archived tenants"),
        shape: Shape::Code,
    },
    Subject {
        kind: FactKind::Question,
        subject: "legacy endpoint",
        clause: "whether the legacy endpoint {v} can be switched off",
        update: None,
        shape: Shape::Path,
    },
    Subject {
        kind: FactKind::Question,
        subject: "vendor contract",
        clause: "who owns the vendor contract {v}",
        update: None,
        shape: Shape::Ticket,
    },
];

/// How a family frames a clause of each kind (`{c}`).
fn frame(style: Style, kind: FactKind) -> &'static str {
    use FactKind as K;
    match (style, kind) {
        (Style::Chat, K::Rule) => "btw, always {c}, ok?",
        (Style::Chat, K::Prohibition) => "oh and never {c}. seriously.",
        (Style::Chat, K::Constraint) => "fyi {c}, that's a hard limit",
        (Style::Chat, K::Fact) => "fwiw {c}",
        (Style::Chat, K::Goal) => "so the point of all this is to {c}",
        (Style::Chat, K::Preference) => "I'd rather {c}, if that works for you",
        (Style::Chat, K::Decision) => "ok let's go with this: {c}",
        (Style::Chat, K::Question) => "hmm, still not sure {c}, let's figure that out later",
        (Style::Ticket, K::Rule) => "Acceptance criteria: the agent must always {c}.",
        (Style::Ticket, K::Prohibition) => "Constraint — do not {c} under any circumstances.",
        (Style::Ticket, K::Constraint) => "Constraint — {c}.",
        (Style::Ticket, K::Fact) => "Environment: {c}.",
        (Style::Ticket, K::Goal) => "Goal: {c}.",
        (Style::Ticket, K::Preference) => "Preference: {c}.",
        (Style::Ticket, K::Decision) => "Decision — {c}.",
        (Style::Ticket, K::Question) => "Open question: {c}?",
        (Style::Labelled, K::Rule) => "RULE: Always {c}.",
        (Style::Labelled, K::Prohibition) => "SAFETY RULE: Never {c}.",
        (Style::Labelled, K::Constraint) => "LIMIT: {c}.",
        (Style::Labelled, K::Fact) => "NOTE: {c}.",
        (Style::Labelled, K::Goal) => "GOAL: {c}.",
        (Style::Labelled, K::Preference) => "PREFERENCE: {c}.",
        (Style::Labelled, K::Decision) => "DECISION: {c}.",
        (Style::Labelled, K::Question) => "OPEN QUESTION: {c}.",
        (Style::Prose, K::Rule) => {
            "Over the years the team learned that you must always {c}, and that still holds today."
        }
        (Style::Prose, K::Prohibition) => {
            "One thing everyone here agrees on is that you must never {c}, whatever the deadline."
        }
        (Style::Prose, K::Constraint) => {
            "Keep in mind that {c}; the platform enforces it without warning."
        }
        (Style::Prose, K::Fact) => "For context, {c}, which matters for what follows.",
        (Style::Prose, K::Goal) => "What we are really trying to do this week is to {c}.",
        (Style::Prose, K::Preference) => "Personally I would like it if {c}.",
        (Style::Prose, K::Decision) => "After some back and forth we agreed that {c}.",
        (Style::Prose, K::Question) => {
            "Nobody has settled yet {c}, so we will have to come back to it."
        }
        _ => "{c}",
    }
}

/// How a family frames a change of value (`{u}`).
fn update_frame(style: Style) -> &'static str {
    match style {
        Style::Chat => "wait, scratch that: {u}",
        Style::Ticket => "Change request: {u}.",
        Style::Labelled => "CHANGED: {u}.",
        _ => "Plans shifted since then: {u}, so keep that in mind.",
    }
}

/// A user turn that asks for nothing in particular: the next step, or filler.
fn nudge(style: Style) -> &'static str {
    match style {
        Style::Chat => "k, go on",
        Style::Ticket => "Status update, please.",
        Style::Labelled => "CONTINUE.",
        _ => "Please keep going with the plan.",
    }
}

/// The assistant's acknowledgement of a statement, and its filler reply.
const ACK: &str = "Acknowledged. Continuing with the plan.";

/// The files planted: a name, and what the tool calls do to it.
const FILES: [(&str, FileAction, Option<FileAction>); 4] = [
    (
        "retry_policy.rs",
        FileAction::Created,
        Some(FileAction::Modified),
    ),
    ("schema.sql", FileAction::Read, None),
    (
        "importer.py",
        FileAction::Modified,
        Some(FileAction::Renamed),
    ),
    (
        "scratch_notes.md",
        FileAction::Created,
        Some(FileAction::Deleted),
    ),
];

/// The facts of one seed in `style` and the statements planting them: three facts of each
/// text kind (the first of each superseded later) and four files touched by tool calls (three
/// touched again later).
pub fn plan(style: Style, rng: &mut Rng) -> (Vec<Fact>, Vec<Statement>) {
    if style == Style::Harness {
        return facts::plan(rng);
    }
    let mut facts = Vec::new();
    let mut statements = Vec::new();
    let mut fresh = Fresh::default();
    for (id, subject) in SUBJECTS.iter().enumerate() {
        let first = fresh.value(subject.shape, rng);
        let clause = subject.clause.replace("{v}", &first);
        statements.push(said(
            style,
            id,
            false,
            &frame(style, subject.kind).replace("{c}", &clause),
            rng,
        ));
        let superseded_by = subject.update.map(|update| {
            let new = fresh.value(subject.shape, rng);
            let update = update.replace("{v}", &new).replace("{old}", &first);
            statements.push(said(
                style,
                id,
                true,
                &update_frame(style).replace("{u}", &update),
                rng,
            ));
            new
        });
        facts.push(Fact {
            id,
            kind: subject.kind,
            subject: subject.subject.to_string(),
            value: first,
            superseded_by,
            file: None,
        });
    }
    for (name, first, then) in FILES {
        let id = facts.len();
        let path = file_path(&mut fresh, rng, name);
        let renamed = (then == Some(FileAction::Renamed)).then(|| file_path(&mut fresh, rng, name));
        statements.push(touched(style, id, false, first, &path, None, rng));
        if let Some(then) = then {
            statements.push(touched(
                style,
                id,
                true,
                then,
                &path,
                renamed.as_deref(),
                rng,
            ));
        }
        facts.push(Fact {
            id,
            kind: FactKind::Artifact,
            subject: name.to_string(),
            value: path,
            superseded_by: renamed,
            file: Some(FileHistory { first, then }),
        });
    }
    (facts, statements)
}

fn file_path(fresh: &mut Fresh, rng: &mut Rng, name: &str) -> String {
    loop {
        let dir = format!("src/{}_{}", rng.pick(facts::WORDS), rng.range(1000, 9999));
        let path = format!("{dir}/{name}");
        // The same draw as a value: never twice in a plan.
        if fresh.take(&path) {
            return path;
        }
    }
}

/// A user message stating `text`, acknowledged, and up to two filler exchanges after it.
fn said(style: Style, fact: usize, supersedes: bool, text: &str, rng: &mut Rng) -> Statement {
    let mut messages = vec![Message::user(text), Message::assistant(ACK)];
    filler(style, &mut messages, rng);
    Statement {
        fact,
        supersedes,
        messages,
        states: 0,
    }
}

fn filler(style: Style, messages: &mut Vec<Message>, rng: &mut Rng) {
    for _ in 0..rng.range(0, 2) {
        messages.push(Message::user(nudge(style)));
        messages.push(Message::assistant(ACK));
    }
}

/// A user nudge, then the assistant's tool call doing `action` to `path` (to `to` for a
/// rename), its result, and the acknowledgement: a turn in the OpenAI message shape.
fn touched(
    style: Style,
    fact: usize,
    supersedes: bool,
    action: FileAction,
    path: &str,
    to: Option<&str>,
    rng: &mut Rng,
) -> Statement {
    let call_id = format!("call_{fact}_{}", u8::from(supersedes));
    let n = rng.range(3, 60);
    let (name, arguments, result) = match action {
        FileAction::Read => (
            "read_file",
            json!({ "path": path }),
            format!("1\t-- {n} columns\n2\tcreate table jobs (id integer primary key);"),
        ),
        FileAction::Created => (
            "write_file",
            json!({ "path": path, "content": format!("limit = {n}\n") }),
            format!("Wrote {n} bytes to {path}"),
        ),
        FileAction::Modified => (
            "edit_file",
            json!({ "path": path, "old": "limit = 1", "new": format!("limit = {n}") }),
            format!("Edited {path}: 1 line changed"),
        ),
        FileAction::Renamed => (
            "bash",
            json!({ "command": format!("git mv {path} {}", to.unwrap_or(path)) }),
            "(no output)".to_string(),
        ),
        FileAction::Deleted => (
            "bash",
            json!({ "command": format!("rm {path}") }),
            "(no output)".to_string(),
        ),
    };
    let mut messages = vec![
        Message::user(nudge(style)),
        Message::assistant_tool_calls(vec![ToolCall::new(
            call_id.clone(),
            name,
            arguments.to_string(),
        )]),
        Message::tool_result(call_id, result),
        Message::assistant(ACK),
    ];
    filler(style, &mut messages, rng);
    Statement {
        fact,
        supersedes,
        messages,
        states: 1,
    }
}
