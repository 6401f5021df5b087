//! `ctxhost run`: replay a recorded session through an engine and report what it did.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use ctxhost::engines::EngineSource;
use ctxhost::plot;
use ctxhost::replay::{replay, Replay, ReplayOptions};
use ctxhost::transcript::{self, Format};
use ctxhost::{atomic, report, Runner};
use ctxhost_sdk::Message;
use indicatif::{ProgressBar, ProgressStyle};

use super::{App, GlobalArgs};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Recorded session: OpenAI chat messages (JSON array or JSONL), a Hermes trajectory, or
    /// Anthropic Messages; `-` reads standard input
    pub transcript: PathBuf,
    /// Use this engine instead of `context.engine`
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Also replay through this engine, and show both side by side
    #[arg(long, value_name = "NAME")]
    pub compare: Option<String>,
    /// The model's window in tokens, instead of `model.context_length`
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1024..))]
    pub context_length: Option<u64>,
    /// Session id handed to the engine [default: the transcript's file name]
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Write the final context (JSON messages) to FILE
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Draw context tokens per model call as an SVG to FILE
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Transcript format: openai, hermes or anthropic [default: detected]
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| s.parse::<Format>())]
    pub format: Option<Format>,
}

pub fn run(global: &GlobalArgs, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let mut app = App::new(global)?;
    app.warm_tokenizer();
    let messages = transcript::read(&args.transcript, args.format)?;
    if let Some(length) = args.context_length {
        app.engines.config_mut().model.context_length = length;
    }
    let session_id = args
        .session
        .clone()
        .unwrap_or_else(|| session_name(&args.transcript));
    let mut engines = vec![args
        .engine
        .clone()
        .unwrap_or_else(|| app.config().context.engine.clone())];
    engines.extend(args.compare.clone());

    let mut replays = Vec::new();
    for name in &engines {
        replays.push(replay_one(&app, name, &messages, &session_id)?);
    }

    if let Some(path) = &args.out {
        write_messages(path, &replays[0].final_context)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.plot {
        let series: Vec<plot::Series> = replays.iter().map(series).collect();
        let title = format!("ctxhost run: {session_id}");
        atomic::write(path, plot::svg(&title, &series).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        let value = serde_json::json!({ "runs": replays });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        let texts: Vec<String> = replays.iter().map(report::text).collect();
        print!("{}", texts.join("\n"));
        if let [a, b] = replays.as_slice() {
            println!();
            println!(
                "compare      {} sends {} input tokens, {} sends {}",
                a.engine,
                report::thousands(a.total_input_tokens),
                b.engine,
                report::thousands(b.total_input_tokens)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn replay_one(
    app: &App,
    name: &str,
    messages: &[Message],
    session_id: &str,
) -> anyhow::Result<Replay> {
    let resolved = app.engines.resolve(name)?;
    for warning in &resolved.warnings {
        app.warn(warning);
    }
    let standby = match resolved.source {
        EngineSource::BuiltIn => None,
        _ => Some(app.engines.compressor()?),
    };
    let mut runner = Runner::new(&resolved.name, resolved.engine, standby);
    let options = ReplayOptions {
        session_id: session_id.to_string(),
        model: app.config().model.name.clone(),
        context_length: app.config().model.context_length,
    };
    let bar = progress_bar(messages.len() as u64, &resolved.name);
    let tokens = app.engines.services().tokens();
    let replay = app.runtime.block_on(replay(
        &mut runner,
        messages,
        tokens,
        &options,
        |done, _| bar.set_position(done as u64),
    ));
    bar.finish_and_clear();
    for error in &replay.errors {
        eprintln!("error: {error}");
    }
    Ok(replay)
}

/// A bar on stderr while a long replay runs; nothing when stderr is not a terminal.
fn progress_bar(total: u64, engine: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) =
        ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} messages {elapsed}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(engine.to_string());
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

fn session_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty() && s != "-")
        .unwrap_or_else(|| "session".to_string())
}

/// The same shape `ctxhost compress` prints: a JSON array, one message per line.
pub fn write_messages(path: &Path, messages: &[Message]) -> anyhow::Result<()> {
    let mut text = String::from("[");
    for (index, message) in messages.iter().enumerate() {
        text.push_str(if index == 0 { "\n" } else { ",\n" });
        text.push_str(&serde_json::to_string(message)?);
    }
    text.push_str("\n]\n");
    atomic::write(path, text.as_bytes())?;
    Ok(())
}
