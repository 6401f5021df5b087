//! `ctxhost run`: replay a recorded session through an engine and report what it did.

use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::Args;
use ctxhost_config::Override;
use ctxhost_core::replay::{replay, Replay};
use ctxhost_core::SessionOptions;
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

    let mut replays = Vec::new();
    for name in &engines {
        let mut options = SessionOptions::new(&session_id);
        if !persistent {
            options = options.temporary();
        }
        replays.push(replay_one(&app, name.as_deref(), &messages, options)?);
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
        let texts: Vec<String> = replays.iter().map(report::text).collect();
        text.push_str(&texts.join("\n"));
        if let [a, b] = replays.as_slice() {
            text.push_str(&format!(
                "\ncompare      {} sends {} input tokens, {} sends {}\n",
                a.engine,
                report::thousands(a.total_input_tokens),
                b.engine,
                report::thousands(b.total_input_tokens)
            ));
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

fn replay_one(
    app: &App,
    engine: Option<&str>,
    messages: &[Message],
    options: SessionOptions,
) -> anyhow::Result<Replay> {
    let mut session = app.open_session(engine, options)?;
    let bar = progress_bar(messages.len() as u64, session.engine(), "messages");
    let replay = app
        .runtime
        .block_on(replay(&mut session, messages, |done, _| {
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
