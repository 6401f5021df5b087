//! # ctxhost-quality
//!
//! What the model still knows after compaction: plant typed facts in a session, compact it
//! round after round through an engine at a fixed budget, and probe every output for them. It
//! is the harness behind `ctxhost quality`, and engine authors run it in their tests on a fake
//! host (`ctxhost_sdk_test::EngineSubject`). It also reads the [`corpus`] of agent transcripts,
//! found at run time.
//!
//! - [`plant_in_style`]: kinds of standing facts ([`FactKind`]), three of each with
//!   unguessable values from a seed, planted from start to end of the session; the first fact
//!   of each kind is superseded later. The [`Style`] is the phrasing family: the harness's own
//!   sentences for five kinds ([`plant`]), or chat, ticket, labelled and prose phrasings of eight
//!   kinds, each statement a turn of its own with acknowledgements and filler, plus files
//!   touched by real tool calls (the artifact kind).
//! - [`run_in_style`] (and [`run`], the harness's phrasing): the session cut into
//!   `rounds + 1` parts at turn boundaries; round *k* appends part *k* to the previous round's
//!   output and compresses it (forced) with [`CompressOptions::target_tokens`] set to the
//!   [`Budget`]. After each round a fact is kept when the output states its current value (a
//!   file: its path and last action) and shows no superseded value as current; it is *stale*
//!   when the output's last word on it is a superseded value ([`probe`]). A round is within
//!   budget when the output fits, or when the protected head alone exceeds the budget, what
//!   follows it. An engine with lcm's tools is also scored on what a scripted agent recovers
//!   with them ([`retrieval`]).
//! - [`QualityReport`]: serde data, a [`table`](QualityReport::table), and the gate
//!   [`passes`](QualityReport::passes); [`Spread`]: replicates under several seeds, each kind's
//!   median and range.
//!
//! ```
//! use ctxhost_quality::{self as quality, Budget, Settings};
//! use ctxhost_sdk_test::EngineSubject;
//! # use ctxhost_sdk::{CompressOptions, ContextEngine, EngineError, EngineStatus, Message};
//! # /// Keeps the system prompt and the last two messages.
//! # struct Tail;
//! # impl ContextEngine for Tail {
//! #     fn name(&self) -> &str { "tail" }
//! #     fn should_compress(&mut self, _: u64) -> Result<bool, EngineError> { Ok(true) }
//! #     fn compress(&mut self, m: &[Message], _: &CompressOptions) -> Result<Vec<Message>, EngineError> {
//! #         let mut out = vec![m[0].clone()];
//! #         let mut start = m.len().saturating_sub(2).max(1);
//! #         while start > 1 && !m[start].is_user() { start -= 1; }
//! #         out.extend_from_slice(&m[start..]);
//! #         Ok(out)
//! #     }
//! #     fn status(&mut self) -> Result<EngineStatus, EngineError> { Ok(EngineStatus::default()) }
//! # }
//! let session = quality::generated_session(7, 60);
//! let settings = Settings { budget: Budget::Share(20.0), rounds: 5, seed: 7 };
//! let report = quality::run(&mut EngineSubject::new(Tail), &session, &settings).unwrap();
//! assert_eq!(report.rounds.len(), 5);
//! // A tail keeps only what was said last: most facts are gone.
//! assert!(!report.passes(0.9));
//! println!("{}", report.table());
//! ```

#![warn(missing_docs)]

mod budget;
pub mod corpus;
mod facts;
mod plant;
pub mod probe;
mod report;
pub mod retrieval;
mod rng;
mod spread;
mod style;
mod subject;

pub use budget::{BadBudget, Budget};
pub use facts::{Fact, FactKind, FileAction, FileHistory};
pub use plant::{plant, plant_in_style, split, Placement, Planted};
pub use report::{
    FactRound, FirstUnderHalf, KindScore, Outcome, QualityReport, Retrieval, Round, Score,
};
pub use rng::Rng;
pub use spread::{KindSpread, Range, Spread};
pub use style::{BadStyle, Style};
pub use subject::{tool_name, Subject, SubjectError};

use ctxhost_sdk::{CompressOptions, Message};

/// A session the harness cannot measure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QualityError {
    /// No plain-text user message after the first: nowhere to plant a fact.
    #[error("the session has no plain-text user message after the first one to plant facts in")]
    NowhereToPlant,
    /// Too few user messages to cut the session into that many parts.
    #[error("the session is too short to cut into {parts} parts at user messages; use fewer rounds or a longer session")]
    /// Too few user messages to cut the session into that many parts.
    TooShort {
        /// The parts asked for.
        parts: usize,
    },
    /// Zero rounds asked.
    #[error("at least one round is needed")]
    NoRounds,
}

/// How to run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The output budget of every round.
    pub budget: Budget,
    /// Compactions in a row (the session is cut into one part more).
    pub rounds: usize,
    /// Picks the facts' values and where they go.
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            budget: Budget::default(),
            rounds: 5,
            seed: 27,
        }
    }
}

/// Plants the facts in `session` in the harness's own phrasing, compacts it `settings.rounds`
/// times through `subject` and probes every output ([`run_in_style`] with [`Style::Harness`]).
pub fn run(
    subject: &mut dyn Subject,
    session: &[Message],
    settings: &Settings,
) -> Result<QualityReport, QualityError> {
    run_in_style(subject, session, settings, Style::Harness)
}

/// Plants the facts in `session` phrased in `style`, compacts it `settings.rounds` times
/// through `subject` and probes every output.
pub fn run_in_style(
    subject: &mut dyn Subject,
    session: &[Message],
    settings: &Settings,
    style: Style,
) -> Result<QualityReport, QualityError> {
    if settings.rounds == 0 {
        return Err(QualityError::NoRounds);
    }
    let planted = plant_in_style(session, settings.seed, style)?;
    let ends = split(&planted.messages, settings.rounds + 1, |m| {
        subject.count(std::slice::from_ref(m))
    })?;
    // The protected head: the system prompt and the task (everything up to the first user
    // message), which engines keep as it is.
    let head_len = planted
        .messages
        .iter()
        .position(Message::is_user)
        .map_or(0, |i| i + 1);
    let head = &planted.messages[..head_len];
    let head_tokens = subject.count(head);
    let kinds = style.kinds();
    let tools = subject.tool_names();
    let retrieving = retrieval::available(&tools);
    let mut context: Vec<Message> = planted.messages[..ends[0]].to_vec();
    let mut rounds = Vec::with_capacity(settings.rounds);
    for round in 1..=settings.rounds {
        let seen = ends[round];
        context.extend_from_slice(&planted.messages[ends[round - 1]..seen]);
        let input_tokens = subject.count(&context);
        let budget_tokens = settings.budget.tokens_for(input_tokens);
        let options = CompressOptions {
            current_tokens: Some(input_tokens),
            force: true,
            target_tokens: Some(budget_tokens),
            ..CompressOptions::default()
        };
        let (output, error) = match subject.compress(&context, &options) {
            Ok(output) => (output, None),
            Err(error) => (context.clone(), Some(error.to_string())),
        };
        let output_tokens = subject.count(&output);
        // When the head alone exceeds the budget no engine that keeps it can meet it: the
        // rest of the output is measured instead.
        let measured_tokens = if head_tokens > budget_tokens {
            let rest: Vec<Message> = output
                .iter()
                .filter(|m| !head.iter().any(|h| same_to_the_model(m, h)))
                .cloned()
                .collect();
            subject.count(&rest)
        } else {
            output_tokens
        };
        let text: String = output
            .iter()
            .map(|m| m.searchable_text().into_owned())
            .collect::<Vec<_>>()
            .join("\n");
        let mut facts = Vec::new();
        for fact in &planted.facts {
            // Only facts the session has reached count.
            if planted
                .placement(fact.id, false)
                .is_none_or(|at| at >= seen)
            {
                continue;
            }
            let changed = planted.placement(fact.id, true).is_some_and(|at| at < seen);
            let updated = fact.superseded_by.as_ref().filter(|_| changed);
            let current = updated.unwrap_or(&fact.value).clone();
            let former = updated.map(|_| fact.value.as_str());
            let (shown, state) = match fact.file {
                Some(history) => {
                    let action = history.then.filter(|_| changed).unwrap_or(history.first);
                    (probe::file(&text, &current, action, former), Some(action))
                }
                None => (probe::value(&text, &current, former), None),
            };
            let retrieved =
                retrieving.then(|| retrieval::recovers(subject, &tools, &fact.subject, &current));
            facts.push(FactRound {
                fact: fact.id,
                current,
                state,
                kept: shown.kept,
                stale: shown.stale,
                retrieved,
            });
        }
        let kind_of = |id: usize| planted.facts[id].kind;
        let (survival, overall) = scores(&kinds, &facts, kind_of, |f| f.kept);
        let retrieval = retrieving.then(|| {
            let (survival, overall) =
                scores(&kinds, &facts, kind_of, |f| f.retrieved == Some(true));
            Retrieval { survival, overall }
        });
        rounds.push(Round {
            round,
            input_messages: context.len(),
            input_tokens,
            budget_tokens,
            output_messages: output.len(),
            output_tokens,
            head_tokens,
            measured_tokens,
            budget_met: measured_tokens <= budget_tokens,
            error,
            survival,
            overall,
            stale: facts.iter().filter(|f| f.stale).map(|f| f.fact).collect(),
            retrieval,
            facts,
        });
        context = output;
    }
    let outcome = outcome(&kinds, &rounds);
    Ok(QualityReport {
        engine: subject.engine(),
        style,
        seed: settings.seed,
        budget: settings.budget,
        session_messages: planted.messages.len(),
        session_tokens: subject.count(&planted.messages),
        facts: planted.facts,
        rounds,
        outcome,
    })
}

/// Whether two messages read the same to the model: the same role and text (an engine may
/// store a message and give it back in another but equal shape).
fn same_to_the_model(a: &Message, b: &Message) -> bool {
    a.role() == b.role() && a.searchable_text() == b.searchable_text()
}

fn scores(
    kinds: &[FactKind],
    facts: &[FactRound],
    kind_of: impl Fn(usize) -> FactKind,
    kept: impl Fn(&FactRound) -> bool,
) -> (Vec<KindScore>, Score) {
    let survival = kinds
        .iter()
        .map(|&kind| {
            let of_kind = facts.iter().filter(|f| kind_of(f.fact) == kind);
            KindScore {
                kind,
                score: Score::new(of_kind.clone().count(), of_kind.filter(|f| kept(f)).count()),
            }
        })
        .collect();
    let overall = Score::new(facts.len(), facts.iter().filter(|f| kept(f)).count());
    (survival, overall)
}

fn outcome(kinds: &[FactKind], rounds: &[Round]) -> Outcome {
    let last = rounds.last().expect("at least one round ran");
    let first_under_half = kinds
        .iter()
        .map(|&kind| FirstUnderHalf {
            kind,
            round: rounds
                .iter()
                .find(|r| {
                    r.survival
                        .iter()
                        .any(|s| s.kind == kind && s.score.planted > 0 && s.score.share < 0.5)
                })
                .map(|r| r.round),
        })
        .collect();
    Outcome {
        survival: last.survival.clone(),
        overall: last.overall,
        weakest: last
            .survival
            .iter()
            .filter(|s| s.score.planted > 0)
            .map(|s| s.score.share)
            .fold(1.0, f64::min),
        first_under_half,
        stale: last.stale.len(),
        budgets_met: rounds.iter().filter(|r| r.budget_met).count(),
        retrieval: last.retrieval.clone(),
    }
}

/// A made-up working session of `turns` exchanges (a system prompt, then user asks and
/// assistant answers of a few hundred characters each), the same for the same seed: for when
/// no recorded session is at hand.
pub fn generated_session(seed: u64, turns: usize) -> Vec<Message> {
    const TOPICS: &[&str] = &[
        "the importer's retry logic",
        "the flaky integration test",
        "the dashboard's slow query",
        "the config loader's defaults",
        "the cache invalidation bug",
        "the release notes",
        "the log rotation job",
        "the API pagination",
    ];
    let mut rng = Rng::new(seed ^ 0x5E55_1011);
    let mut messages = vec![Message::system(
        "You are a careful software engineering agent. Work step by step and report what you \
         changed.",
    )];
    for turn in 0..turns {
        let topic = rng.pick(TOPICS);
        let n = rng.range(2, 40);
        messages.push(Message::user(format!(
            "Step {turn}: please look at {topic}. The last run printed {n} warnings in the \
             module we touched yesterday; check whether they come from our change, and keep \
             the fix small. Show me the diff before you apply anything that touches shared \
             code."
        )));
        messages.push(Message::assistant(format!(
            "Looked at {topic}. Of the {n} warnings, most come from an unused import and a \
             shadowed variable in the helper; none is from yesterday's change. I removed the \
             import, renamed the variable, and reran the checks: they pass. The diff is two \
             lines in the helper and one in its test; nothing shared was touched."
        )));
    }
    messages
}
