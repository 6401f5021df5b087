//! `ctxhost plugins list` and `ctxhost engines`: what engines resolution can see.

use std::process::ExitCode;

use clap::Args;
use ctxhost_core::engines::Listing;

use crate::cli::{App, GlobalArgs};

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

pub fn list(global: &GlobalArgs, args: &ListArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    let rows = app.engines.list();
    for row in &rows {
        for warning in &row.warnings {
            eprintln!("warning: {}: {warning}", row.name);
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", table(&rows));
    let problems: Vec<&Listing> = rows.iter().filter(|r| r.problem.is_some()).collect();
    if !problems.is_empty() {
        println!();
        for row in problems {
            println!(
                "{}: {}",
                row.name,
                row.problem.as_deref().unwrap_or_default()
            );
            if app.verbose {
                if let Some(detail) = &row.detail {
                    println!("{detail}");
                }
            }
        }
    }
    if !rows.iter().any(|r| r.active) {
        eprintln!(
            "note: context.engine is '{}', which resolves to none of these; the built-in compressor runs instead",
            app.config().context.engine
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A plain-text table; `*` marks the engine `context.engine` selects.
pub fn table(rows: &[Listing]) -> String {
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|row| {
            [
                format!("{} {}", if row.active { "*" } else { " " }, row.name),
                row.source.clone(),
                row.version.clone().unwrap_or_else(|| "-".to_string()),
                row.api_level
                    .map_or_else(|| "-".to_string(), |level| level.to_string()),
                row.state.label().to_string(),
                row.path
                    .as_ref()
                    .map_or_else(|| "-".to_string(), |p| p.display().to_string()),
            ]
        })
        .collect();
    let header = ["  NAME", "SOURCE", "VERSION", "API", "STATE", "PATH"].map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&cells) {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}
