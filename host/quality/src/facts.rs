//! The facts the harness plants: five kinds of standing information an agent must keep, each
//! written as a natural sentence with a value nobody could guess.

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
}

impl FactKind {
    /// Every kind, in report order.
    pub const ALL: [FactKind; 5] = [
        FactKind::Rule,
        FactKind::Constraint,
        FactKind::Fact,
        FactKind::Goal,
        FactKind::Preference,
    ];

    /// The kind's name, as the report writes it.
    pub fn name(self) -> &'static str {
        match self {
            FactKind::Rule => "rule",
            FactKind::Constraint => "constraint",
            FactKind::Fact => "fact",
            FactKind::Goal => "goal",
            FactKind::Preference => "preference",
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
}

impl Fact {
    /// The value the session ends with.
    pub fn final_value(&self) -> &str {
        self.superseded_by.as_deref().unwrap_or(&self.value)
    }
}

/// How a value is made up.
#[derive(Clone, Copy)]
enum Shape {
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

const WORDS: &[&str] = &[
    "kestrel", "quartz", "juniper", "osprey", "basalt", "marlin", "tundra", "cobalt", "saffron",
    "lantern", "meridian", "willow", "garnet", "halyard", "zephyr", "obsidian",
];

const REGIONS: &[&str] = &["eu-north", "ap-south", "us-east", "sa-west", "me-central"];

fn value(shape: Shape, rng: &mut Rng) -> String {
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
    }
}

/// A sentence to plant: the fact it belongs to, and whether it supersedes its first value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentence {
    pub fact: usize,
    pub supersedes: bool,
    pub text: String,
}

/// The facts of one seed (three per kind, the first of each kind superseded later), and the
/// sentences that plant them: first values, then updates.
pub fn plan(rng: &mut Rng) -> (Vec<Fact>, Vec<Sentence>) {
    let mut facts = Vec::new();
    let mut sentences = Vec::new();
    let mut used = std::collections::HashSet::new();
    let mut fresh = |shape: Shape, rng: &mut Rng| loop {
        let v = value(shape, rng);
        if used.insert(v.clone()) {
            return v;
        }
    };
    let mut first_of_kind = std::collections::HashSet::new();
    for (id, template) in TEMPLATES.iter().enumerate() {
        let first = fresh(template.shape, rng);
        let superseded_by = first_of_kind
            .insert(template.kind)
            .then(|| fresh(template.shape, rng));
        sentences.push(Sentence {
            fact: id,
            supersedes: false,
            text: template.plant.replace("{v}", &first),
        });
        if let Some(new) = &superseded_by {
            sentences.push(Sentence {
                fact: id,
                supersedes: true,
                text: template.update.replace("{v}", new),
            });
        }
        facts.push(Fact {
            id,
            kind: template.kind,
            subject: template.subject.to_string(),
            value: first,
            superseded_by,
        });
    }
    (facts, sentences)
}
