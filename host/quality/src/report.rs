//! What a quality run found, as typed data (serde: `ctxhost quality --json`), a table, and the
//! gate engine authors put in CI.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::budget::Budget;
use super::facts::{Fact, FactKind, FileAction};
use super::style::Style;

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QualityReport {
    /// The engine measured.
    pub engine: String,
    /// How the facts were phrased.
    pub style: Style,
    /// The seed that picked the facts and their places.
    pub seed: u64,
    /// Each round's output budget.
    pub budget: Budget,
    /// Messages of the session with its facts planted.
    pub session_messages: usize,
    /// Tokens of the planted session.
    pub session_tokens: u64,
    /// The facts planted (ids index this list).
    pub facts: Vec<Fact>,
    /// Every round, in order.
    pub rounds: Vec<Round>,
    /// The last round's figures, and when each kind first fell under half.
    pub outcome: Outcome,
}

/// One round: what went in, what came out, and what of the facts the output still shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// 1-based.
    pub round: usize,
    /// The round's input: the previous output and the next part.
    pub input_messages: usize,
    /// Tokens of the input.
    pub input_tokens: u64,
    /// What the output had to fit.
    pub budget_tokens: u64,
    /// The output.
    pub output_messages: usize,
    /// Tokens of the output.
    pub output_tokens: u64,
    /// Tokens of the protected head (the system prompt and the task), which engines keep.
    pub head_tokens: u64,
    /// What is held against the budget: the output, or when the head alone exceeds the budget,
    /// the output but the head's messages.
    pub measured_tokens: u64,
    /// `measured_tokens <= budget_tokens`.
    pub budget_met: bool,
    /// Set when the engine failed; the round's output is then its input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Facts planted so far whose current value the output shows, per kind.
    pub survival: Vec<KindScore>,
    /// All kinds together.
    pub overall: Score,
    /// Facts the output shows with a superseded value (for a file an earlier state or its
    /// former path) as the current one.
    pub stale: Vec<usize>,
    /// What the scripted retrieval agent recovered with the engine's tools (engines with
    /// lcm's tools only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<Retrieval>,
    /// Every planted fact at this round.
    pub facts: Vec<FactRound>,
}

/// The retrieval agent's score in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retrieval {
    /// Recovered out of planted, per kind.
    pub survival: Vec<KindScore>,
    /// All kinds together.
    pub overall: Score,
}

/// One fact at one round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactRound {
    /// The fact ([`Fact::id`]).
    pub fact: usize,
    /// Its value as of this round (the update once the session has reached it).
    pub current: String,
    /// For a file: what was last done to it as of this round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<FileAction>,
    /// The output states `current` (for a file: its path and last action) and shows no
    /// superseded value as current.
    pub kept: bool,
    /// The output shows a superseded value (a file's earlier state or former path) as current.
    pub stale: bool,
    /// The retrieval agent found `current`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieved: Option<bool>,
}

/// Kept out of planted, and the share.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Score {
    /// Facts the session has reached.
    pub planted: usize,
    /// Of them, those found.
    pub kept: usize,
    /// `kept / planted` (1 when nothing was planted yet).
    pub share: f64,
}

impl Score {
    /// `kept` of `planted`.
    pub fn new(planted: usize, kept: usize) -> Self {
        let share = if planted == 0 {
            1.0
        } else {
            kept as f64 / planted as f64
        };
        Score {
            planted,
            kept,
            share,
        }
    }
}

/// One kind's score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KindScore {
    /// The kind.
    pub kind: FactKind,
    #[serde(flatten)]
    /// Its facts.
    pub score: Score,
}

/// The run's result, read off its last round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Per kind, in the last round.
    pub survival: Vec<KindScore>,
    /// All kinds together, in the last round.
    pub overall: Score,
    /// The lowest kind's share in the last round: what [`QualityReport::passes`] compares.
    pub weakest: f64,
    /// Per kind, the first round its survival fell under one half (`None`: never).
    pub first_under_half: Vec<FirstUnderHalf>,
    /// Facts the last round shows with a superseded value as current.
    pub stale: usize,
    /// Rounds whose output fit the budget, out of all rounds.
    pub budgets_met: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The retrieval agent's last round.
    pub retrieval: Option<Retrieval>,
}

/// When a kind first fell under half.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstUnderHalf {
    /// The kind.
    pub kind: FactKind,
    /// The round (1-based).
    pub round: Option<usize>,
}

impl QualityReport {
    /// The gate: every kind keeps at least `min` (0 to 1) of its facts in the last round's
    /// output. One weak kind fails it, however well the others did.
    pub fn passes(&self, min: f64) -> bool {
        self.outcome.weakest >= min
    }

    /// The kinds planted, in report order.
    pub fn kinds(&self) -> Vec<FactKind> {
        FactKind::ALL
            .into_iter()
            .filter(|kind| self.facts.iter().any(|f| f.kind == *kind))
            .collect()
    }

    /// The report as a table: one row per round (survival per kind, overall, stale, size
    /// against budget), then the outcome.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "engine {}, style {}, seed {}, budget {}, {} facts in {} messages ({} tokens)",
            self.engine,
            self.style,
            self.seed,
            self.budget,
            self.facts.len(),
            self.session_messages,
            self.session_tokens
        );
        let kinds = self.kinds();
        let head_over = self
            .rounds
            .iter()
            .any(|r| r.measured_tokens != r.output_tokens);
        let _ = write!(out, "{:<6}", "round");
        for kind in &kinds {
            let _ = write!(out, "{:>12}", kind.name());
        }
        let _ = writeln!(
            out,
            "{:>9}{:>7}{:>10}{}{:>10}  tools",
            "overall",
            "stale",
            "tokens",
            if head_over {
                format!("{:>10}", "measured")
            } else {
                String::new()
            },
            "budget"
        );
        for round in &self.rounds {
            let _ = write!(out, "{:<6}", round.round);
            for kind in &kinds {
                let cell = round
                    .survival
                    .iter()
                    .find(|s| s.kind == *kind)
                    .map(|s| format!("{}/{}", s.score.kept, s.score.planted))
                    .unwrap_or_default();
                let _ = write!(out, "{cell:>12}");
            }
            let tools = round
                .retrieval
                .as_ref()
                .map(|r| percent(r.overall.share))
                .unwrap_or_else(|| "-".to_string());
            let measured = if head_over {
                format!("{:>10}", round.measured_tokens)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "{:>9}{:>7}{:>10}{}{:>9}{}  {}{}",
                percent(round.overall.share),
                round.stale.len(),
                round.output_tokens,
                measured,
                round.budget_tokens,
                if round.budget_met { " " } else { "!" },
                tools,
                round
                    .error
                    .as_ref()
                    .map(|e| format!("  error: {e}"))
                    .unwrap_or_default()
            );
        }
        let o = &self.outcome;
        let _ = writeln!(
            out,
            "kept {} of {} facts ({}), weakest kind {}, {} shown stale, budget met in {} of {} rounds{}",
            o.overall.kept,
            o.overall.planted,
            percent(o.overall.share),
            percent(o.weakest),
            o.stale,
            o.budgets_met,
            self.rounds.len(),
            o.retrieval
                .as_ref()
                .map(|r| format!(", tools recover {}", percent(r.overall.share)))
                .unwrap_or_default()
        );
        let under: Vec<String> = o
            .first_under_half
            .iter()
            .filter_map(|f| f.round.map(|r| format!("{} at round {r}", f.kind)))
            .collect();
        if !under.is_empty() {
            let _ = writeln!(out, "under half: {}", under.join(", "));
        }
        out
    }
}

pub(crate) fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}
