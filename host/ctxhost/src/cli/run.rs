//! `ctxhost run`: replay a recorded session through an engine and report what it did.

use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::Args;
use ctxhost_config::Override;
use ctxhost_core::costing::{Costing, Pause, SummarizerPricing};
use ctxhost_core::replay::{replay, Replay};
use ctxhost_core::SessionOptions;
use ctxhost_costs::cache::Ttl;
use ctxhost_costs::policy::CachePolicy;
use ctxhost_costs::price::{price_of, ModelPrice};
use ctxhost_sdk::Message;
use ctxhost_wire::transcript::{self, Format, OutputFormat};
use indicatif::{ProgressBar, ProgressStyle};

use super::compress::{write_messages, ENGINE_FAILED};
use super::{output, oversized, plot, report, App, GlobalArgs};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Recorded session: OpenAI chat messages (JSON array or JSONL), a Hermes trajectory,
    /// Anthropic Messages, a Claude Code session log or a Codex rollout; `-` reads standard input
    pub transcript: PathBuf,
    /// Use this engine instead of `context.engine` (an engine that does not resolve is an
    /// error)
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Also replay through this engine, and show both side by side (strict like --engine)
    #[arg(long, value_name = "NAME")]
    pub compare: Option<String>,
    /// The model's window in tokens, instead of `model.context_length`
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1024..))]
    pub context_length: Option<u64>,
    /// Replay into this persistent session (the engine's state is kept and can be searched
    /// afterwards) [default: a fresh temporary state, named after the transcript's file]
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Keep the engine's state after the replay, in the session named after the transcript's
    /// file (or --session)
    #[arg(long)]
    pub keep: bool,
    /// Write the final context to FILE (`-`: standard output), as --output-format says
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Format of --out: openai, the input's own (`same`: a Claude Code or Codex log is written
    /// back as a log), hermes, anthropic, claude-code or codex
    #[arg(long, value_name = "FORMAT", default_value = "openai", value_parser = |s: &str| s.parse::<OutputFormat>())]
    pub output_format: OutputFormat,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Draw context tokens per model call as an SVG to FILE
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Transcript format: openai, hermes, anthropic, claude-code or codex [default: detected]
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| s.parse::<Format>())]
    pub format: Option<Format>,
    /// Price the calls as this model (its provider's prices and prompt cache) [default:
    /// model.name]
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Seconds between two model calls the transcript gives no time for (Claude Code and Codex
    /// logs do; the provider's cache expires after 5 minutes unused)
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_PACE_SECONDS, value_parser = seconds)]
    pub pace: f64,
    /// A break of SECONDS before model call AT (from 1), to see what a cold cache costs;
    /// repeatable
    #[arg(long, value_name = "AT:SECONDS", value_parser = pause)]
    pub pause: Vec<Pause>,
    /// When compressions run: `cache-aware` (when they pay against the prompt cache) or
    /// `tokens` (whenever the engine asks) [default: serve.compression.cache_aware]
    #[arg(long, value_name = "POLICY")]
    pub policy: Option<Policy>,
    /// The TTL of the cache breakpoints on Anthropic models: 5m or 1h [default:
    /// serve.anthropic.cache_ttl]
    #[arg(long, value_name = "TTL", value_parser = |s: &str| s.parse::<Ttl>())]
    pub cache_ttl: Option<Ttl>,
}

/// `--policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Policy {
    CacheAware,
    Tokens,
}

/// An agent's calls inside one turn come seconds apart, its turns minutes apart.
const DEFAULT_PACE_SECONDS: f64 = 30.0;

fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 => Ok(value),
        _ => Err(format!("`{text}` is not a number of seconds (0 or more)")),
    }
}

fn pause(text: &str) -> Result<Pause, String> {
    let (at, length) = text.split_once(':').ok_or_else(|| {
        format!("`{text}` is not AT:SECONDS (e.g. 12:900, a 15-minute break before call 12)")
    })?;
    let before_call = at
        .parse::<usize>()
        .ok()
        .filter(|&call| call >= 1)
        .ok_or_else(|| format!("`{at}` in `{text}` is not a model call number (1 or more)"))?;
    Ok(Pause {
        before_call,
        seconds: seconds(length)?,
    })
}

pub fn run(global: &GlobalArgs, args: &RunArgs) -> anyhow::Result<ExitCode> {
    if args.out.as_deref().is_some_and(is_stdout) && args.plot.as_deref().is_some_and(is_stdout) {
        bail!("--out - and --plot - would both write to standard output; send one to a file");
    }
    let overrides = args
        .context_length
        .map(Override::ContextLength)
        .into_iter()
        .collect();
    let app = App::with_overrides(global, overrides)?;
    app.warm_tokenizer();
    let read = transcript::read_transcript(&args.transcript, args.format)?;
    let (messages, format) = (read.messages, read.format);
    let session_id = args
        .session
        .clone()
        .unwrap_or_else(|| session_name(&args.transcript));
    // Replays start from a fresh engine state unless asked to keep it, so the same command
    // gives the same report twice.
    let persistent = args.keep || args.session.is_some();
    let mut engines = vec![args.engine.clone()];
    if let Some(compare) = &args.compare {
        engines.push(Some(compare.clone()));
    }

    let costing = costing(&app, args, &messages);
    let mut replays = Vec::new();
    for name in &engines {
        let mut options = SessionOptions::new(&session_id);
        if !persistent {
            options = options.temporary();
        }
        replays.push(replay_one(
            &app,
            name.as_deref(),
            &messages,
            costing.as_ref(),
            options,
        )?);
    }

    if let Some(path) = &args.out {
        write_messages(
            path,
            &replays[0].final_context,
            args.output_format.resolve(format),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.plot {
        let series: Vec<plot::Series> = replays.iter().map(series).collect();
        let title = format!("ctxhost run: {session_id}");
        output::write(path, plot::svg(&title, &series).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        output::say_written("the plot", path);
    }
    // Calls went over the window: say which messages no engine could have made fit.
    if let Some(over) = replays.iter().find(|r| r.peak_tokens > r.context_length) {
        oversized::warn(&messages, over.context_length, |m| {
            app.engines.services().tokens().count_message(m)
        });
    }
    let mut text = String::new();
    if args.json {
        let value = serde_json::json!({ "format": format.name(), "runs": replays });
        text = serde_json::to_string_pretty(&value)? + "\n";
    } else {
        text.push_str(&format!("format       {format}\n"));
        if costing.is_none() {
            text.push_str(&format!(
                "cost         unknown: no price for {model} (set serve.models.{model}.price, or --model a known one)\n",
                model = cost_model(&app, args)
            ));
        }
        let texts: Vec<String> = replays.iter().map(report::text).collect();
        text.push_str(&texts.join("\n"));
        if let [a, b] = replays.as_slice() {
            text.push('\n');
            text.push_str(&report::compare(a, b));
        }
    }
    // Standard output carries one thing: the final context when `--out -` asks for it there,
    // the report otherwise (then on stderr).
    if args.out.as_deref().is_some_and(is_stdout) {
        std::io::stderr().write_all(text.as_bytes())?;
    } else {
        std::io::stdout().write_all(text.as_bytes())?;
    }
    // A replay that did not run on the engine asked for, or lost it on the way, is not a
    // success: the report says what happened, the exit code says that something did.
    if replays
        .iter()
        .any(|r| r.fell_back_to.is_some() || r.requested != r.engine)
    {
        return Ok(ExitCode::from(ENGINE_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// The model the calls are priced as.
fn cost_model(app: &App, args: &RunArgs) -> String {
    args.model
        .clone()
        .unwrap_or_else(|| app.engines.config().model.name.clone())
}

/// How to price the replay: `None` when the model has no price.
fn costing(app: &App, args: &RunArgs, messages: &[Message]) -> Option<Costing> {
    let model = cost_model(app, args);
    let price = configured_price(app, &model)?;
    let cache_aware = match args.policy {
        Some(policy) => policy == Policy::CacheAware,
        None => app.engines.config().serve.compression.cache_aware,
    };
    Some(Costing {
        model,
        price,
        ttl: args
            .cache_ttl
            .unwrap_or(app.engines.config().serve.anthropic.cache_ttl),
        pace_seconds: args.pace,
        pauses: args.pause.clone(),
        times: transcript::message_times(messages),
        policy: cache_aware.then(CachePolicy::default),
        summarizer: summarizer_pricing(app),
    })
}

/// `model`'s price: `serve.models.<model>.price`, else the table's.
fn configured_price(app: &App, model: &str) -> Option<ModelPrice> {
    let configured = app
        .engines
        .config()
        .serve
        .models
        .get(model)
        .and_then(|setting| setting.price());
    price_of(model, configured)
}

/// The LLM summarizer the engines summarize with (`auxiliary.compression`), priced as its
/// model; `None` for the offline one.
fn summarizer_pricing(app: &App) -> Option<SummarizerPricing> {
    let settings = &app.engines.config().summarizer;
    if settings.provider == ctxhost_config::summarizer::Provider::Offline {
        return None;
    }
    let model = settings.model.clone()?;
    Some(SummarizerPricing {
        summarizer: settings.describe(),
        price: configured_price(app, &model),
        model,
    })
}

fn replay_one(
    app: &App,
    engine: Option<&str>,
    messages: &[Message],
    costing: Option<&Costing>,
    options: SessionOptions,
) -> anyhow::Result<Replay> {
    let mut session = app.open_session(engine, options)?;
    let bar = progress_bar(messages.len() as u64, session.engine(), "messages");
    let replay = app
        .runtime
        .block_on(replay(&mut session, messages, costing, |done, _| {
            bar.set_position(done as u64)
        }));
    bar.finish_and_clear();
    for error in &replay.errors {
        eprintln!("error: {error}");
    }
    Ok(replay)
}

/// A bar on stderr while something long runs (`{pos}/{len} UNIT`); nothing when stderr is not
/// a terminal.
pub(super) fn progress_bar(total: u64, prefix: &str, unit: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    let template = format!("{{prefix}} [{{bar:40}}] {{pos}}/{{len}} {unit} {{elapsed}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(prefix.to_string());
    bar
}

fn series(replay: &Replay) -> plot::Series {
    plot::Series {
        engine: replay.engine.clone(),
        tokens_per_call: replay.calls.iter().map(|c| c.tokens).collect(),
        baseline_per_call: replay.calls.iter().map(|c| c.baseline_tokens).collect(),
        compressions: replay
            .compressions
            .iter()
            .filter(|c| c.error.is_none())
            .map(|c| plot::Compression {
                call: c.call,
                tokens_before: c.tokens_before,
                tokens_after: c.tokens_after,
            })
            .collect(),
        threshold: replay.threshold_tokens,
        context_length: replay.context_length,
        cost: replay.cost.as_ref().map(|cost| {
            let micro = |dollars: f64| (dollars * 1_000_000.0).round() as u64;
            let mut engine = 0.0;
            let mut no_engine = 0.0;
            let (engine_line, no_engine_line) = cost
                .calls
                .iter()
                .map(|call| {
                    engine += call.engine_dollars;
                    no_engine += call.no_engine_dollars;
                    (micro(engine), micro(no_engine))
                })
                .unzip();
            plot::CostLines {
                engine: engine_line,
                no_engine: no_engine_line,
            }
        }),
    }
}

fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

fn session_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty() && s != "-")
        .unwrap_or_else(|| "session".to_string())
}
