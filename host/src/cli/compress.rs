//! `ctxhost compress`: one compression of a recorded conversation.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use ctxhost::transcript::{self, Format};
use ctxhost::Runner;
use ctxhost_sdk::{CompressOptions, Message};

use super::{App, GlobalArgs};

/// Exit code when the engine failed and the conversation was printed unchanged.
pub const ENGINE_FAILED: u8 = 3;

#[derive(Debug, Args)]
pub struct CompressArgs {
    /// Conversation to compress: OpenAI chat messages as a JSON array or JSON Lines (`-` reads
    /// standard input)
    pub transcript: PathBuf,
    /// Topic to preserve in priority
    #[arg(long, value_name = "TOPIC")]
    pub focus: Option<String>,
    /// Compress even if the engine thinks it is not needed yet
    #[arg(long)]
    pub force: bool,
    /// Use this engine instead of `context.engine`
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Memory-provider text to fold into the summary as reference material
    #[arg(long, value_name = "TEXT")]
    pub memory: Option<String>,
    /// Transcript format: openai, hermes or anthropic [default: detected]
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| s.parse::<Format>())]
    pub format: Option<Format>,
}

pub fn run(global: &GlobalArgs, args: &CompressArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    app.warm_tokenizer();
    let messages = transcript::read(&args.transcript, args.format)?;
    let name = args
        .engine
        .clone()
        .unwrap_or_else(|| app.config().context.engine.clone());
    let resolved = app.engines.resolve(&name)?;
    for warning in &resolved.warnings {
        app.warn(warning);
    }
    let standby = if resolved.source == ctxhost::engines::EngineSource::BuiltIn {
        None
    } else {
        Some(app.engines.compressor()?)
    };
    let mut runner = Runner::new(&resolved.name, resolved.engine, standby);
    let services = app.engines.services().clone();
    let count = |messages: &[Message]| services.tokens().count_messages(messages);
    let tokens_before = count(&messages);
    let options = CompressOptions {
        current_tokens: Some(tokens_before),
        focus_topic: args.focus.clone(),
        force: args.force,
        memory_context: args.memory.clone(),
    };
    let input = Arc::new(messages);
    let outcome = app
        .runtime
        .block_on(runner.compress(input.clone(), options));
    let tokens_after = count(&outcome.messages);
    print_messages(&outcome.messages)?;
    if let Some(error) = &outcome.error {
        eprintln!("error: {error}");
        return Ok(ExitCode::from(ENGINE_FAILED));
    }
    eprintln!(
        "{}: {} → {} messages, {} → {} tokens ({})",
        outcome.engine,
        input.len(),
        outcome.messages.len(),
        tokens_before,
        tokens_after,
        percent_change(tokens_before, tokens_after)
    );
    Ok(ExitCode::SUCCESS)
}

/// A JSON array with one message per line: valid JSON, and readable and diffable as text.
fn print_messages(messages: &[Message]) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    out.write_all(b"[")?;
    for (index, message) in messages.iter().enumerate() {
        out.write_all(if index == 0 { b"\n" } else { b",\n" })?;
        serde_json::to_writer(&mut out, message)?;
    }
    out.write_all(b"\n]\n")?;
    out.flush()?;
    Ok(())
}

fn percent_change(before: u64, after: u64) -> String {
    if before == 0 {
        return "unchanged".to_string();
    }
    let change = (after as f64 - before as f64) / before as f64 * 100.0;
    if change.abs() < 0.05 {
        "unchanged".to_string()
    } else {
        format!("{change:+.1}%")
    }
}
