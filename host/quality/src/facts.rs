//! The facts the harness plants: kinds of standing information an agent must keep, each with a
//! value nobody could guess, and the harness's own phrasing of the first five kinds (the
//! `harness` style; the other phrasing families are in [`style`](crate::style)).

use ctxhost_sdk::Message;
use serde::{Deserialize, Serialize};

use super::rng::Rng;

/// What kind of standing information a fact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// Something the agent must never (or always) do: "Never reveal the vault code ...".
    Rule,
    /// A hard limit: "The budget is capped at $4,317".
    Constraint,
    /// A fact about the world: "We deploy to region eu-north-7q".
    Fact,
    /// What the work is for: "The goal is ...".
    Goal,
    /// How the user likes things done: "I prefer ...".
    Preference,
    /// Something the agent must not do: "SAFETY RULE: Never reveal the API key ...".
    Prohibition,
    /// A choice made: "Decision — we use ... as the queue backend".
    Decision,
    /// A question still open: "Open question: whether ...".
    Question,
    /// A file a tool call read, created, modified, renamed or deleted, with its last state.
    Artifact,
}

impl FactKind {
    /// Every kind, in report order.
    pub const ALL: [FactKind; 9] = [
        FactKind::Rule,
        FactKind::Constraint,
        FactKind::Fact,
        FactKind::Goal,
        FactKind::Preference,
        FactKind::Prohibition,
        FactKind::Decision,
        FactKind::Question,
        FactKind::Artifact,
    ];

    /// The kind's name, as the report writes it.
    pub fn name(self) -> &'static str {
        match self {
            FactKind::Rule => "rule",
            FactKind::Constraint => "constraint",
            FactKind::Fact => "fact",
            FactKind::Goal => "goal",
            FactKind::Preference => "preference",
            FactKind::Prohibition => "prohibition",
            FactKind::Decision => "decision",
            FactKind::Question => "question",
            FactKind::Artifact => "artifact",
        }
    }
}

impl std::fmt::Display for FactKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One planted fact: its subject, its first value and, when superseded later in the session,
/// the value that replaced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// Index in the plan (stable for one seed).
    pub id: usize,
    /// Its kind.
    pub kind: FactKind,
    /// Words naming what the fact is about, as a search for it would use them ("budget").
    pub subject: String,
    /// The value first planted.
    pub value: String,
    /// The value that supersedes it later in the session, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// For an [`FactKind::Artifact`]: what the tool calls did to the file (the value is its
    /// path; a rename's new path supersedes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileHistory>,
}

/// What tool calls did to a planted file: a first action, and maybe a later one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileHistory {
    /// The first tool call's action.
    pub first: FileAction,
    /// The later tool call's action, if any: the file's last state once the session reaches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub then: Option<FileAction>,
}

/// What a tool call did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAction {
    /// Read it.
    Read,
    /// Created it.
    Created,
    /// Changed its content.
    Modified,
    /// Moved it to another path.
    Renamed,
    /// Deleted it.
    Deleted,
}

impl FileAction {
    /// Every action.
    pub const ALL: [FileAction; 5] = [
        FileAction::Read,
        FileAction::Created,
        FileAction::Modified,
        FileAction::Renamed,
        FileAction::Deleted,
    ];

    /// The words (and tool and command names) that state this action on a line naming the
    /// file, lowercase.
    pub fn words(self) -> &'static [&'static str] {
        match self {
            FileAction::Read => &["read", "read_file", "viewed", "opened", "inspected", "cat"],
            FileAction::Created => &[
                "created",
                "create",
                "create_file",
                "write_file",
                "wrote",
                "written",
            ],
            FileAction::Modified => &[
                "modified",
                "modify",
                "edited",
                "edit",
                "edit_file",
                "changed",
                "updated",
                "patched",
                "str_replace",
                "apply_patch",
            ],
            FileAction::Renamed => &[
                "renamed",
                "rename",
                "rename_file",
                "moved",
                "move",
                "move_file",
                "mv",
            ],
            FileAction::Deleted => &[
                "deleted",
                "delete",
                "delete_file",
                "removed",
                "remove",
                "rm",
            ],
        }
    }
}

impl std::fmt::Display for FileAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.words()[0])
    }
}

impl Fact {
    /// The value the session ends with.
    pub fn final_value(&self) -> &str {
        self.superseded_by.as_deref().unwrap_or(&self.value)
    }
}

/// How a value is made up.
#[derive(Clone, Copy)]
pub(crate) enum Shape {
    /// `ZX-4821-QM`
    Code,
    /// `4,317` (with the thousands separator the sentence's reader expects)
    Amount,
    /// `eu-north-7q`
    Region,
    /// `kestrel-7318`
    Codename,
    /// `OPS-48213`
    Ticket,
    /// `2027-03-14`
    Date,
    /// `v7.38.12`
    Version,
    /// `/srv/kestrel-7318/data`
    Path,
}

/// One kind of fact: its subject, the sentence planting it and the sentence superseding it
/// (`{v}` is the value).
struct Template {
    kind: FactKind,
    subject: &'static str,
    plant: &'static str,
    update: &'static str,
    shape: Shape,
}

/// Three facts per kind; the first of each kind is the one superseded.
const TEMPLATES: &[Template] = &[
    Template {
        kind: FactKind::Rule,
        subject: "vault code",
        plant: "Never reveal the vault code {v} to anyone, in any reply or file.",
        update: "Update: the vault code was rotated, never reveal the new vault code {v}.",
        shape: Shape::Code,
    },
    Template {
        kind: FactKind::Rule,
        subject: "protected branch",
        plant: "Never force-push to the protected branch {v}.",
        update: "Update: the protected branch is now {v}; never force-push to it.",
        shape: Shape::Codename,
    },
    Template {
        kind: FactKind::Rule,
        subject: "staging host",
        plant: "Never run destructive commands on the staging host {v}.",
        update: "Update: the staging host moved to {v}; still no destructive commands there.",
        shape: Shape::Codename,
    },
    Template {
        kind: FactKind::Constraint,
        subject: "budget",
        plant: "The budget is capped at ${v} for this whole project.",
        update: "Update: the budget cap is now ${v}.",
        shape: Shape::Amount,
    },
    Template {
        kind: FactKind::Constraint,
        subject: "batch size",
        plant: "The batch size must stay at or below {v} rows.",
        update: "Update: the batch size limit is now {v} rows.",
        shape: Shape::Amount,
    },
    Template {
        kind: FactKind::Constraint,
        subject: "memory limit",
        plant: "The worker's memory limit is {v} MiB; do not exceed it.",
        update: "Update: the memory limit is now {v} MiB.",
        shape: Shape::Amount,
    },
    Template {
        kind: FactKind::Fact,
        subject: "region",
        plant: "We deploy to region {v}.",
        update: "Update: we now deploy to region {v}.",
        shape: Shape::Region,
    },
    Template {
        kind: FactKind::Fact,
        subject: "release date",
        plant: "The release date is {v}.",
        update: "Update: the release date moved to {v}.",
        shape: Shape::Date,
    },
    Template {
        kind: FactKind::Fact,
        subject: "tracking ticket",
        plant: "The tracking ticket for this work is {v}.",
        update: "Update: the tracking ticket is now {v}.",
        shape: Shape::Ticket,
    },
    Template {
        kind: FactKind::Goal,
        subject: "billing service",
        plant: "The goal is to move the billing service onto cluster {v}.",
        update: "Update: the goal changed, the billing service goes onto cluster {v} instead.",
        shape: Shape::Codename,
    },
    Template {
        kind: FactKind::Goal,
        subject: "milestone",
        plant: "The next milestone is called {v}.",
        update: "Update: the next milestone was renamed {v}.",
        shape: Shape::Codename,
    },
    Template {
        kind: FactKind::Goal,
        subject: "acceptance check",
        plant: "We are done when the acceptance check {v} passes.",
        update: "Update: the acceptance check to pass is now {v}.",
        shape: Shape::Ticket,
    },
    Template {
        kind: FactKind::Preference,
        subject: "indentation style",
        plant: "I prefer tabs over spaces; call that indentation style {v}.",
        update: "Update: I now prefer the indentation style called {v}.",
        shape: Shape::Codename,
    },
    Template {
        kind: FactKind::Preference,
        subject: "commit tag",
        plant: "I prefer every commit message to start with the commit tag {v}.",
        update: "Update: the commit tag I prefer is now {v}.",
        shape: Shape::Code,
    },
    Template {
        kind: FactKind::Preference,
        subject: "reviewer",
        plant: "I prefer {v} as the reviewer of every pull request.",
        update: "Update: my preferred reviewer is now {v}.",
        shape: Shape::Codename,
    },
];

pub(crate) const WORDS: &[&str] = &[
    "kestrel", "quartz", "juniper", "osprey", "basalt", "marlin", "tundra", "cobalt", "saffron",
    "lantern", "meridian", "willow", "garnet", "halyard", "zephyr", "obsidian",
];

const REGIONS: &[&str] = &["eu-north", "ap-south", "us-east", "sa-west", "me-central"];

pub(crate) fn value(shape: Shape, rng: &mut Rng) -> String {
    match shape {
        Shape::Code => format!(
            "{}{}-{}-{}{}",
            rng.letter(),
            rng.letter(),
            rng.range(1000, 9999),
            rng.letter(),
            rng.letter()
        ),
        Shape::Amount => {
            let n = rng.range(1_000, 99_999);
            format!("{},{:03}", n / 1000, n % 1000)
        }
        Shape::Region => format!(
            "{}-{}{}",
            rng.pick(REGIONS),
            rng.range(2, 9),
            rng.letter().to_ascii_lowercase()
        ),
        Shape::Codename => format!("{}-{}", rng.pick(WORDS), rng.range(1000, 9999)),
        Shape::Ticket => format!(
            "{}{}{}-{}",
            rng.letter(),
            rng.letter(),
            rng.letter(),
            rng.range(10_000, 99_999)
        ),
        Shape::Date => format!(
            "20{}-{:02}-{:02}",
            rng.range(31, 39),
            rng.range(1, 12),
            rng.range(1, 28)
        ),
        Shape::Version => format!(
            "v{}.{}.{}",
            rng.range(2, 9),
            rng.range(10, 99),
            rng.range(10, 99)
        ),
        Shape::Path => format!("/srv/{}-{}/data", rng.pick(WORDS), rng.range(1000, 9999)),
    }
}

/// What to plant for one fact: the fact it belongs to, whether it supersedes its first value,
/// and the messages stating it (the first one the statement proper; the rest acknowledgements
/// and filler turns).
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub fact: usize,
    pub supersedes: bool,
    pub messages: Vec<ctxhost_sdk::Message>,
    /// Index in `messages` of the message that states the fact.
    pub states: usize,
}

/// Values never drawn twice in one plan.
#[derive(Default)]
pub(crate) struct Fresh(std::collections::HashSet<String>);

impl Fresh {
    pub(crate) fn value(&mut self, shape: Shape, rng: &mut Rng) -> String {
        loop {
            let v = value(shape, rng);
            if self.0.insert(v.clone()) {
                return v;
            }
        }
    }

    /// Takes `value` when it was not drawn yet.
    pub(crate) fn take(&mut self, value: &str) -> bool {
        self.0.insert(value.to_string())
    }
}

/// The facts of one seed in the harness's own phrasing (three per kind, the first of each kind
/// superseded later), and the statements that plant them: one user message each.
pub fn plan(rng: &mut Rng) -> (Vec<Fact>, Vec<Statement>) {
    let mut facts = Vec::new();
    let mut sentences = Vec::new();
    let mut used = Fresh::default();
    let mut fresh = |shape: Shape, rng: &mut Rng| used.value(shape, rng);
    let mut first_of_kind = std::collections::HashSet::new();
    for (id, template) in TEMPLATES.iter().enumerate() {
        let first = fresh(template.shape, rng);
        let superseded_by = first_of_kind
            .insert(template.kind)
            .then(|| fresh(template.shape, rng));
        sentences.push(Statement {
            fact: id,
            supersedes: false,
            messages: vec![Message::user(template.plant.replace("{v}", &first))],
            states: 0,
        });
        if let Some(new) = &superseded_by {
            sentences.push(Statement {
                fact: id,
                supersedes: true,
                messages: vec![Message::user(template.update.replace("{v}", new))],
                states: 0,
            });
        }
        facts.push(Fact {
            id,
            kind: template.kind,
            subject: template.subject.to_string(),
            value: first,
            superseded_by,
            file: None,
        });
    }
    (facts, sentences)
}
