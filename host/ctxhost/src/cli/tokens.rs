//! `ctxhost tokens`: where a transcript's tokens go.

use std::path::PathBuf;
use std::process::ExitCode;

use super::report::thousands;
use clap::Args;
use ctxhost_wire::transcript::{self, Format};
use serde::Serialize;

use super::{App, GlobalArgs};

#[derive(Debug, Args)]
pub struct TokensArgs {
    /// Transcript to measure (any format `ctxhost run` reads)
    pub transcript: PathBuf,
    /// How many of the heaviest messages to show
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Print JSON instead of tables
    #[arg(long)]
    pub json: bool,
    /// Transcript format: openai, hermes, anthropic, claude-code or codex [default: detected]
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| s.parse::<Format>())]
    pub format: Option<Format>,
}

#[derive(Serialize)]
struct RoleTotal {
    role: String,
    messages: usize,
    tokens: u64,
}

#[derive(Serialize)]
struct Heavy {
    /// 1-based position in the transcript.
    index: usize,
    role: String,
    tokens: u64,
    preview: String,
}

pub fn run(global: &GlobalArgs, args: &TokensArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    app.warm_tokenizer();
    let messages = transcript::read(&args.transcript, args.format)?;
    let counter = app.engines.services().tokens();
    let counts: Vec<u64> = messages.iter().map(|m| counter.count_message(m)).collect();
    let total: u64 = counts.iter().sum();

    let mut roles: Vec<RoleTotal> = Vec::new();
    for (message, &tokens) in messages.iter().zip(&counts) {
        match roles.iter_mut().find(|r| r.role == message.role()) {
            Some(row) => {
                row.messages += 1;
                row.tokens += tokens;
            }
            None => roles.push(RoleTotal {
                role: message.role().to_string(),
                messages: 1,
                tokens,
            }),
        }
    }
    roles.sort_by_key(|r| std::cmp::Reverse(r.tokens));

    let mut order: Vec<usize> = (0..messages.len()).collect();
    order.sort_by(|&a, &b| counts[b].cmp(&counts[a]).then(a.cmp(&b)));
    let heavy: Vec<Heavy> = order
        .into_iter()
        .take(args.top)
        .map(|i| Heavy {
            index: i + 1,
            role: messages[i].role().to_string(),
            tokens: counts[i],
            preview: preview(&messages[i].searchable_text(), 60),
        })
        .collect();

    if args.json {
        let value = serde_json::json!({
            "encoding": counter.encoding(),
            "messages": messages.len(),
            "tokens": total,
            "by_role": roles,
            "heaviest": heavy,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} messages, {} tokens ({})",
        messages.len(),
        thousands(total),
        counter.encoding()
    );
    println!();
    println!(
        "{:<10} {:>8} {:>10} {:>7}",
        "ROLE", "MESSAGES", "TOKENS", "SHARE"
    );
    for row in &roles {
        let share = if total == 0 {
            0.0
        } else {
            row.tokens as f64 / total as f64 * 100.0
        };
        println!(
            "{:<10} {:>8} {:>10} {:>6.1}%",
            row.role,
            row.messages,
            thousands(row.tokens),
            share
        );
    }
    println!();
    println!("{:>5}  {:<10} {:>8}  PREVIEW", "#", "ROLE", "TOKENS");
    for row in &heavy {
        println!(
            "{:>5}  {:<10} {:>8}  {}",
            row.index,
            row.role,
            thousands(row.tokens),
            row.preview
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The first `width` characters on one line.
fn preview(text: &str, width: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(width) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}
