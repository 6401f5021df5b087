//! `ctxhost plugins` in a terminal: pick the context engine from a radio list, as Hermes'
//! "Context Engine (select one)" does. Choosing an engine writes `context.engine`.

use std::process::ExitCode;

use ctxhost::engines::State;
use dialoguer::Select;

use super::plugins::select_engine;
use super::{App, GlobalArgs};

pub fn run(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let app = App::for_edit(global)?;
    let rows = app.engines.list();
    let selected = app.config().context.engine.clone();
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let items: Vec<String> = rows
        .iter()
        .map(|row| {
            let mark = if row.name == selected { "(●)" } else { "( )" };
            let about = match &row.problem {
                Some(problem) if row.state != State::Installed => problem.clone(),
                _ => row.description.clone(),
            };
            format!(
                "{mark} {:<width$}  {:<9}  {about}",
                row.name,
                row.state.label()
            )
        })
        .collect();
    let default = rows.iter().position(|r| r.name == selected).unwrap_or(0);
    let choice = Select::new()
        .with_prompt("Context Engine (select one) — ↑/↓ to move, Enter to choose, Esc to cancel")
        .items(&items)
        .default(default)
        .max_length(12)
        .interact_opt()?;
    let Some(index) = choice else {
        println!("no change: context.engine = {selected}");
        return Ok(ExitCode::SUCCESS);
    };
    let row = &rows[index];
    if row.name == selected && row.active {
        println!("no change: context.engine = {selected}");
        return Ok(ExitCode::SUCCESS);
    }
    if matches!(row.state, State::Broken | State::Shadowed) {
        anyhow::bail!(
            "cannot select '{}': {}",
            row.name,
            row.problem.as_deref().unwrap_or("it cannot be used")
        );
    }
    println!("{}", select_engine(&app, &row.name, false)?);
    Ok(ExitCode::SUCCESS)
}
