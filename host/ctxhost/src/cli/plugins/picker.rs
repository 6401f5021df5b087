//! `ctxhost plugins` in a terminal: pick the context engine from a radio list, as Hermes'
//! "Context Engine (select one)" does. Choosing an engine writes `context.engine`.

use std::process::ExitCode;

use ctxhost_core::engines::State;
use dialoguer::Select;

use super::select::select_engine;
use crate::cli::{App, GlobalArgs};

pub fn run(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let app = App::for_edit(global)?;
    let rows = app.engines.list();
    let selected = app.config().context.engine.clone();
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    // Lines that wrap break the list's redrawing, and the list measures lines in bytes: cut
    // them to the terminal's width in bytes (minus the cursor).
    let columns = usize::from(dialoguer::console::Term::stderr().size().1).max(40) - 3;
    let items: Vec<String> = rows
        .iter()
        .map(|row| {
            let mark = if row.name == selected { "(*)" } else { "( )" };
            let about = match &row.problem {
                Some(problem) if row.state != State::Installed => problem.clone(),
                _ => row.description.clone(),
            };
            let line = format!(
                "{mark} {:<width$}  {:<9}  {about}",
                row.name,
                row.state.label()
            );
            fit(&line, columns)
        })
        .collect();
    let default = rows.iter().position(|r| r.name == selected).unwrap_or(0);
    let choice = Select::new()
        .with_prompt("Context Engine (select one); arrows move, Enter chooses, Esc cancels")
        .items(&items)
        .default(default)
        .max_length(12)
        .report(false)
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

/// `line` cut to at most `columns` bytes (on a character boundary), with `...` when cut.
fn fit(line: &str, columns: usize) -> String {
    if line.len() <= columns {
        return line.to_string();
    }
    let mut end = columns.saturating_sub(3);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &line[..end])
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn lines_are_cut_to_bytes_on_character_boundaries() {
        assert_eq!(fit("short", 10), "short");
        assert_eq!(fit("abcdefghijkl", 10), "abcdefg...");
        let cut = fit("ab—cdefghijkl", 8);
        assert!(cut.len() <= 8, "{cut}");
        assert_eq!(cut, "ab—...");
    }
}
