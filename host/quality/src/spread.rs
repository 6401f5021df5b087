//! Replicates: the same measure under several seeds, and each kind's median and range over
//! them, so one lucky seed does not pass for a property of the engine.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::budget::Budget;
use super::facts::FactKind;
use super::report::{percent, QualityReport};
use super::style::Style;

/// The median, lowest and highest of some figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Range {
    /// The middle figure (the mean of the two middle ones for an even count).
    pub median: f64,
    /// The lowest.
    pub min: f64,
    /// The highest.
    pub max: f64,
}

impl Range {
    /// The range of `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Range> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let (first, last) = (*sorted.first()?, *sorted.last()?);
        let middle = sorted.len() / 2;
        let median = if sorted.len().is_multiple_of(2) {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        } else {
            sorted[middle]
        };
        Some(Range {
            median,
            min: first,
            max: last,
        })
    }

    /// `90% (80-100%)`, shares as percent.
    fn percent(self) -> String {
        format!(
            "{} ({}-{})",
            percent(self.median),
            percent(self.min).trim_end_matches('%'),
            percent(self.max)
        )
    }

    /// `2 (0-3)`, counts as they are.
    fn count(self) -> String {
        format!("{} ({}-{})", self.median, self.min, self.max)
    }
}

/// One kind's share kept after the last round, over the replicates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KindSpread {
    /// The kind.
    pub kind: FactKind,
    /// Its share kept.
    #[serde(flatten)]
    pub share: Range,
}

/// Replicates of one engine and phrasing family: every report, and the spread of their last
/// rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The engine measured.
    pub engine: String,
    /// How the facts were phrased.
    pub style: Style,
    /// Each round's output budget.
    pub budget: Budget,
    /// The seed of each replicate, in order.
    pub seeds: Vec<u64>,
    /// Per kind, the share kept after the last round.
    pub survival: Vec<KindSpread>,
    /// All kinds together.
    pub overall: Range,
    /// Facts shown with a superseded value as current, after the last round.
    pub stale: Range,
    /// Rounds whose output fit the budget.
    pub budgets_met: Range,
    /// What the engine's tools recover after the last round (engines with lcm's tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Range>,
    /// Every replicate's report.
    pub replicates: Vec<QualityReport>,
}

impl Spread {
    /// The spread of `replicates` (reports of one engine and style); `None` when there are none.
    pub fn of(replicates: Vec<QualityReport>) -> Option<Spread> {
        let first = replicates.first()?;
        let over = |figure: &dyn Fn(&QualityReport) -> f64| {
            let values: Vec<f64> = replicates.iter().map(figure).collect();
            Range::of(&values).expect("at least one replicate")
        };
        let survival = first
            .kinds()
            .into_iter()
            .map(|kind| KindSpread {
                kind,
                share: over(&|r| {
                    r.outcome
                        .survival
                        .iter()
                        .find(|s| s.kind == kind)
                        .map_or(1.0, |s| s.score.share)
                }),
            })
            .collect();
        let tools = first.outcome.retrieval.is_some().then(|| {
            over(&|r| {
                r.outcome
                    .retrieval
                    .as_ref()
                    .map_or(0.0, |t| t.overall.share)
            })
        });
        Some(Spread {
            engine: first.engine.clone(),
            style: first.style,
            budget: first.budget,
            seeds: replicates.iter().map(|r| r.seed).collect(),
            survival,
            overall: over(&|r| r.outcome.overall.share),
            stale: over(&|r| r.outcome.stale as f64),
            budgets_met: over(&|r| r.outcome.budgets_met as f64),
            tools,
            replicates,
        })
    }

    /// The spread as a table: one row per kind (median and range of the share kept after the
    /// last round), then overall, stale, rounds within budget and the tools.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let rounds = self.replicates.first().map_or(0, |r| r.rounds.len());
        let seeds: Vec<String> = self.seeds.iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "engine {}, style {}, budget {}, {} replicates (seeds {}), after round {rounds}",
            self.engine,
            self.style,
            self.budget,
            self.replicates.len(),
            seeds.join(", ")
        );
        let _ = writeln!(out, "{:<16}{:>18}", "kind", "kept: median (range)");
        for kind in &self.survival {
            let _ = writeln!(out, "{:<16}{:>18}", kind.kind.name(), kind.share.percent());
        }
        let _ = writeln!(out, "{:<16}{:>18}", "overall", self.overall.percent());
        let _ = writeln!(out, "{:<16}{:>18}", "stale", self.stale.count());
        let _ = writeln!(
            out,
            "{:<16}{:>18}",
            format!("budget met /{rounds}"),
            self.budgets_met.count()
        );
        if let Some(tools) = self.tools {
            let _ = writeln!(out, "{:<16}{:>18}", "tools", tools.percent());
        }
        out
    }
}
