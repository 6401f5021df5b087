//! `ctxhost quality`: what the model still knows after compaction. Plants typed facts in a
//! session, compacts it round after round through an engine at a fixed budget and probes every
//! output (the harness is `ctxhost-quality`, which engine authors run in their own tests).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use ctxhost_core::{Session, SessionOptions};
use ctxhost_quality::corpus::Corpus;
use ctxhost_quality::{Budget, QualityReport, Settings, Spread, Style, Subject, SubjectError};
use ctxhost_sdk::{CompressOptions, Message};
use ctxhost_wire::transcript::{self, Format};
use serde_json::Value;

use super::{output, quality_plot, App, GlobalArgs};

/// Exit code when a fact kind kept less than `--min` of its facts.
pub const UNDER_GATE: u8 = 4;

/// The session used without a transcript: the example shipped with ctxhost.
const EXAMPLE_SESSION: &str = include_str!("../../../../examples/session.json");

#[derive(Debug, Args)]
#[command(after_help = "\
Facts: three of each kind with values from --seed, planted from start to end; the first of
each kind is superseded later. --style harness (the default) plants rules, constraints, facts,
goals and preferences in the harness's own sentences, each a user message; chat, ticket,
labelled and prose phrase those and prohibitions, decisions and open questions their own way,
each a turn of its own acknowledged by the assistant, with filler turns between them, and
plant four files touched by tool calls (created, read, modified, renamed, deleted). The
session is cut into ROUNDS + 1 parts at user messages; round k appends part k to the previous
round's output and compresses it (forced) to the budget. A fact survives a round when the
output states its current value (a file: its path and what was done to it last) and shows no
superseded value as current; it is stale when the last the output says of it is a superseded
value (a former path, an earlier state). A round is within budget when the output fits it, or
when the protected head (system prompt and task) alone exceeds it, the rest of the output does.
Engines with lcm's tools are also scored on what a scripted agent recovers with at most three
calls (lcm_grep for the fact's subject, then lcm_expand on the matches). --replicates N runs
seeds SEED to SEED+N-1, each on a fresh session, and prints each kind's median and range.

Exit status: 0 when measured (and every kind passed --min); 4 when a fact kind kept less than
--min of its facts after the last round (with replicates: its median); 3 when the engine
failed in a round; 1 on errors.")]
pub struct QualityArgs {
    /// Session to plant the facts in: OpenAI chat messages (JSON array or JSONL), a Hermes
    /// trajectory, Anthropic Messages, a Claude Code session log or a Codex rollout (`-` reads
    /// standard input) [default: the example session shipped with ctxhost]
    pub transcript: Option<PathBuf>,
    /// Plant the facts in a generated session of this many exchanges instead
    #[arg(long, value_name = "TURNS", conflicts_with = "transcript")]
    pub generated: Option<usize>,
    /// Plant the facts in the corpus' long session (its transcripts one after another) instead:
    /// the corpus in DIR, else in $CTXHOST_CORPUS, else host/quality/corpus/swe-agent in the
    /// current directory or above it (a ctxhost checkout's)
    #[arg(long, value_name = "DIR", num_args = 0..=1, conflicts_with_all = ["transcript", "generated"])]
    pub corpus: Option<Option<PathBuf>>,
    /// Use this engine instead of `context.engine` (an engine that does not resolve is an
    /// error)
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Each round's output budget: a share of the round's input (`20%`) or a number of tokens
    #[arg(long, value_name = "BUDGET", default_value = "20%", value_parser = |s: &str| s.parse::<Budget>())]
    pub budget: Budget,
    /// Compactions in a row
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=50))]
    pub rounds: u16,
    /// Picks the facts' values and where they go (same seed, same facts)
    #[arg(long, value_name = "N", default_value_t = Settings::default().seed)]
    pub seed: u64,
    /// How the facts are phrased: harness, chat, ticket, labelled, prose, or all (each in turn)
    #[arg(long, value_name = "STYLE", default_value = "harness", value_parser = styles)]
    pub style: Styles,
    /// Runs this many seeds (from --seed up) and prints each kind's median and range
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub replicates: u16,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Fail (exit 4) when any fact kind keeps less than this share of its facts (0 to 1) in
    /// the last round's output
    #[arg(long, value_name = "SHARE", value_parser = share)]
    pub min: Option<f64>,
    /// Draw the survival of each fact kind over the rounds as an SVG to FILE
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Transcript format: openai, hermes, anthropic, claude-code or codex [default: detected]
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| s.parse::<Format>())]
    pub format: Option<Format>,
    /// Write each round's output into DIR, as STYLE/seed-N/round-K.json (the messages) and
    /// round-K.txt (the text the facts are probed in, each message under a `--- role ---` line)
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
}

/// The phrasing families `--style` names.
#[derive(Debug, Clone)]
pub struct Styles(Vec<Style>);

fn styles(text: &str) -> Result<Styles, ctxhost_quality::BadStyle> {
    if text.trim() == "all" {
        return Ok(Styles(Style::ALL.to_vec()));
    }
    Ok(Styles(vec![text.parse()?]))
}

fn share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("'{text}' is not a share from 0 to 1 (0.9 is 90%)")),
    }
}

/// What the table's columns mean, under it.
const LEGEND: &str = "n/m: of the m facts of that kind planted so far, the n whose current \
    value the round's output still states; overall: all kinds; stale: facts shown with a \
    replaced value as current; tokens: the output's size, budget: what it had to fit (! when \
    over); measured: the output but the protected head's messages, held against the budget \
    when the head alone exceeds it; tools: the share the engine's tools recover (- when it has \
    none)\n";

/// What the spread table's rows mean, under it.
const SPREAD_LEGEND: &str = "kept: the share of each kind's facts the last round's output \
    still states, median over the replicates (lowest-highest); stale: facts shown with a \
    superseded value as current; budget met: rounds within budget; tools: the share the \
    engine's tools recover\n";

pub fn run(global: &GlobalArgs, args: &QualityArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    app.warm_tokenizer();
    let messages = session(args)?;
    let styles = &args.style.0;
    if styles.len() > 1 || args.replicates > 1 {
        return run_spreads(&app, args, &messages);
    }
    let report = measure(&app, args, &messages, styles[0], args.seed)?;
    if let Some(path) = &args.plot {
        output::write(path, quality_plot::svg(&report).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        output::say_written("the plot", path);
    }
    let text = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        report.table() + LEGEND
    };
    // Standard output carries one thing: the picture when `--plot -` asks for it there.
    if args.plot.as_deref().is_some_and(|p| p.as_os_str() == "-") {
        std::io::stderr().write_all(text.as_bytes())?;
    } else {
        std::io::stdout().write_all(text.as_bytes())?;
    }
    if let Some(min) = args.min.filter(|&min| !report.passes(min)) {
        eprintln!(
            "quality: the weakest fact kind kept {:.0}% of its facts, under --min {:.0}%",
            report.outcome.weakest * 100.0,
            min * 100.0
        );
        return Ok(ExitCode::from(UNDER_GATE));
    }
    if report.rounds.iter().any(|r| r.error.is_some()) {
        return Ok(ExitCode::from(super::compress::ENGINE_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// One run on a fresh session of the engine.
fn measure(
    app: &App,
    args: &QualityArgs,
    messages: &[Message],
    style: Style,
    seed: u64,
) -> anyhow::Result<QualityReport> {
    let session = app.open_session(
        args.engine.as_deref(),
        SessionOptions::new("quality").temporary(),
    )?;
    let mut subject = SessionSubject::new(app, session, args.dump.is_some());
    let settings = Settings {
        budget: args.budget,
        rounds: usize::from(args.rounds),
        seed,
    };
    let report = ctxhost_quality::run_in_style(&mut subject, messages, &settings, style)?;
    if let Some(dir) = &args.dump {
        let dir = dir.join(style.name()).join(format!("seed-{seed}"));
        dump(&dir, subject.outputs.as_deref().unwrap_or_default())
            .with_context(|| format!("cannot write the rounds' outputs to {}", dir.display()))?;
    }
    Ok(report)
}

/// Writes each round's output (or the engine's error) into `dir`: `round-K.json` holds the
/// messages, `round-K.txt` the text the harness probes, each message under its role.
fn dump(dir: &std::path::Path, outputs: &[Result<Vec<Message>, String>]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (index, output) in outputs.iter().enumerate() {
        let round = index + 1;
        let (json, text) = match output {
            Ok(messages) => {
                let text: String = messages
                    .iter()
                    .map(|m| format!("--- {} ---\n{}\n", m.role(), m.searchable_text()))
                    .collect();
                (serde_json::to_string_pretty(messages)?, text)
            }
            Err(error) => (
                serde_json::to_string_pretty(&serde_json::json!({ "error": error }))?,
                format!("--- error ---\n{error}\n"),
            ),
        };
        output::write(&dir.join(format!("round-{round}.json")), json.as_bytes())?;
        output::write(&dir.join(format!("round-{round}.txt")), text.as_bytes())?;
    }
    Ok(())
}

/// Every style asked, `--replicates` seeds each: one spread per style.
fn run_spreads(app: &App, args: &QualityArgs, messages: &[Message]) -> anyhow::Result<ExitCode> {
    if args.plot.is_some() {
        anyhow::bail!("--plot draws one run: use it without --replicates and --style all");
    }
    let mut spreads = Vec::new();
    for &style in &args.style.0 {
        let reports = (0..u64::from(args.replicates))
            .map(|i| measure(app, args, messages, style, args.seed.wrapping_add(i)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        spreads.push(Spread::of(reports).expect("at least one replicate"));
    }
    let text = if args.json {
        serde_json::to_string_pretty(&spreads)? + "\n"
    } else {
        let tables: Vec<String> = spreads.iter().map(Spread::table).collect();
        tables.join("\n") + SPREAD_LEGEND
    };
    std::io::stdout().write_all(text.as_bytes())?;
    let weakest = |spread: &Spread| {
        spread
            .survival
            .iter()
            .map(|k| k.share.median)
            .fold(1.0, f64::min)
    };
    if let Some(min) = args.min {
        if let Some(under) = spreads.iter().find(|s| weakest(s) < min) {
            eprintln!(
                "quality: in the {} style the weakest fact kind kept a median {:.0}% of its facts, under --min {:.0}%",
                under.style,
                weakest(under) * 100.0,
                min * 100.0
            );
            return Ok(ExitCode::from(UNDER_GATE));
        }
    }
    let failed = spreads
        .iter()
        .flat_map(|s| &s.replicates)
        .any(|r| r.rounds.iter().any(|round| round.error.is_some()));
    if failed {
        return Ok(ExitCode::from(super::compress::ENGINE_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

fn session(args: &QualityArgs) -> anyhow::Result<Vec<Message>> {
    if let Some(turns) = args.generated {
        return Ok(ctxhost_quality::generated_session(args.seed, turns));
    }
    if let Some(named) = &args.corpus {
        let here = std::env::current_dir().context("cannot read the current directory")?;
        let corpus = Corpus::locate(named.as_deref(), &here).map_err(|error| {
            anyhow::anyhow!(
                "{error}; pass --corpus DIR, a directory of OpenAI chat-format *.json transcripts"
            )
        })?;
        return Ok(corpus.long_session()?);
    }
    match &args.transcript {
        Some(path) => Ok(transcript::read_transcript(path, args.format)?.messages),
        None => {
            let value: Value = serde_json::from_str(EXAMPLE_SESSION)
                .context("the example session shipped with ctxhost is not JSON")?;
            Ok(serde_json::from_value(value)
                .context("the example session shipped with ctxhost is not chat messages")?)
        }
    }
}

/// A host session as the harness drives it: compressions and tool calls on the app's runtime.
struct SessionSubject<'a> {
    app: &'a App,
    session: Session,
    engine: String,
    /// Every compression's output (or error), round after round, when `--dump` keeps them.
    outputs: Option<Vec<Result<Vec<Message>, String>>>,
}

impl<'a> SessionSubject<'a> {
    fn new(app: &'a App, mut session: Session, keep_outputs: bool) -> Self {
        if let Err(error) = app.runtime.block_on(session.begin()) {
            eprintln!("warning: {error}");
        }
        let engine = session.engine().to_string();
        SessionSubject {
            app,
            session,
            engine,
            outputs: keep_outputs.then(Vec::new),
        }
    }

    fn compress_once(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, SubjectError> {
        // After a failure the host serves the session with its standby compressor: rounds
        // from then on would measure another engine.
        if let Some(fallback) = self.session.fallback() {
            return Err(SubjectError(format!(
                "not run: {} failed in an earlier round ({})",
                fallback.from, fallback.reason
            )));
        }
        let input = Arc::new(messages.to_vec());
        let outcome = self
            .app
            .runtime
            .block_on(self.session.compress(input, options.clone()));
        match outcome.error {
            Some(error) => Err(SubjectError(error.to_string())),
            None => Ok(outcome.messages.to_vec()),
        }
    }
}

impl Subject for SessionSubject<'_> {
    fn engine(&self) -> String {
        self.engine.clone()
    }

    fn count(&self, messages: &[Message]) -> u64 {
        self.session.count(messages)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, SubjectError> {
        let output = self.compress_once(messages, options);
        if let Some(outputs) = &mut self.outputs {
            outputs.push(output.as_ref().map_err(|e| e.0.clone()).cloned());
        }
        output
    }

    fn tool_names(&mut self) -> Vec<String> {
        self.app
            .runtime
            .block_on(self.session.tool_schemas())
            .unwrap_or_default()
            .iter()
            .filter_map(ctxhost_quality::tool_name)
            .collect()
    }

    fn call_tool(&mut self, name: &str, args: &Value) -> Result<String, SubjectError> {
        self.app
            .runtime
            .block_on(self.session.call_tool(name.to_string(), args.clone()))
            .map_err(|e| SubjectError(e.to_string()))
    }
}
