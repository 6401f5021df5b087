//! `ctxhost compress`: one compression of a recorded conversation.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use ctxhost_core::SessionOptions;
use ctxhost_quality::Budget;
use ctxhost_sdk::{CompressOptions, Message};
use ctxhost_wire::transcript::{self, Format, OutputFormat};

use super::{output, oversized, App, GlobalArgs, SessionArg};

/// Exit code when the engine failed and the conversation was printed unchanged.
pub const ENGINE_FAILED: u8 = 3;

#[derive(Debug, Args)]
pub struct CompressArgs {
    /// Conversation to compress: OpenAI chat messages (JSON array or JSONL), a Hermes trajectory,
    /// Anthropic Messages, a Claude Code session log or a Codex rollout (`-` reads standard
    /// input)
    pub transcript: PathBuf,
    /// Topic to preserve in priority
    #[arg(long, value_name = "TOPIC")]
    pub focus: Option<String>,
    /// Compress even if the engine thinks it is not needed yet
    #[arg(long)]
    pub force: bool,
    /// Make the result fit this many tokens, whatever the model's window: the engine meets any
    /// size down to what its protected head needs (implies --force)
    #[arg(long, value_name = "N", value_parser = target_tokens, conflicts_with = "budget")]
    pub target_tokens: Option<u64>,
    /// Make the result fit this share of the input's tokens (`20%`), or this many tokens
    /// (implies --force)
    #[arg(long, value_name = "SHARE", value_parser = |s: &str| s.parse::<Budget>())]
    pub budget: Option<Budget>,
    /// Use this engine instead of `context.engine` (an engine that does not resolve is an
    /// error)
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    #[command(flatten)]
    pub session: SessionArg,
    /// Memory-provider text to fold into the summary as reference material
    #[arg(long, value_name = "TEXT")]
    pub memory: Option<String>,
    /// Transcript format: openai, hermes, anthropic, claude-code or codex [default: detected]
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| s.parse::<Format>())]
    pub format: Option<Format>,
    /// Format of the result: openai, the input's own (`same`: a Claude Code or Codex log is
    /// written back as a log), hermes, anthropic, claude-code or codex
    #[arg(long, value_name = "FORMAT", default_value = "openai", value_parser = |s: &str| s.parse::<OutputFormat>())]
    pub output_format: OutputFormat,
}

pub fn run(global: &GlobalArgs, args: &CompressArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    app.warm_tokenizer();
    // A summary's redaction patterns compile on another core while the transcript is read.
    std::thread::spawn(ctxhost_redact::warm);
    let read = transcript::read_transcript(&args.transcript, args.format)?;
    let (messages, output_format) = (read.messages, args.output_format.resolve(read.format));
    let mut session = app.open_session(
        args.engine.as_deref(),
        // A run on the previous run's output: what the engine wrote there is its own.
        SessionOptions::new(&args.session.session).recording_written(),
    )?;
    let count = |messages: &[Message]| app.engines.services().tokens().count_messages(messages);
    let tokens_before = count(&messages);
    // A size asked for is the size wanted: the engine compresses to it even where its own
    // threshold says there is no need yet.
    let target = args.target_tokens.or_else(|| {
        args.budget
            .map(|budget| budget.tokens_for(tokens_before).max(1))
    });
    let options = CompressOptions {
        current_tokens: Some(tokens_before),
        focus_topic: args.focus.clone(),
        force: args.force || target.is_some(),
        memory_context: args.memory.clone(),
        target_tokens: target,
    };
    let input = Arc::new(messages);
    let outcome = app.runtime.block_on(async {
        if let Err(error) = session.begin().await {
            eprintln!("warning: {error}");
        }
        session.compress(input.clone(), options).await
    });
    let tokens_after = count(&outcome.messages);
    write_messages(Path::new("-"), &outcome.messages, output_format)?;
    let window = session.context_length();
    if tokens_after > window {
        oversized::warn(&input, window, |m| {
            app.engines.services().tokens().count_message(m)
        });
    }
    if let Some(error) = &outcome.error {
        eprintln!("error: {error}; the conversation is returned unchanged");
        return Ok(ExitCode::from(ENGINE_FAILED));
    }
    if let Some(error) = &outcome.record_error {
        eprintln!("warning: {error}; a later run on this output reads the summary as a turn");
    }
    let asked = target.map_or(String::new(), |target| format!(", target {target}"));
    eprintln!(
        "{}: {} → {} messages, {} → {} tokens ({}{asked})",
        outcome.engine,
        input.len(),
        outcome.messages.len(),
        tokens_before,
        tokens_after,
        percent_change(tokens_before, tokens_after)
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes messages in `format` to `path` (`-`: standard output), with a note on stderr for
/// what that format cannot hold.
pub fn write_messages(path: &Path, messages: &[Message], format: Format) -> anyhow::Result<()> {
    let written = transcript::write(messages, format);
    for note in &written.notes {
        eprintln!("note: {note}");
    }
    output::write(path, written.text.as_bytes())?;
    Ok(())
}

/// `--target-tokens`: a whole number of tokens, at least 1.
fn target_tokens(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(tokens) if tokens > 0 => Ok(tokens),
        _ => Err("must be a whole number of tokens, at least 1".to_string()),
    }
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
