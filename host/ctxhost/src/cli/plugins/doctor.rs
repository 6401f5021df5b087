//! `ctxhost plugins doctor`: loads every plugin it may and reports everything wrong, one line
//! each, exiting 1 if anything is.

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::Args;
use ctxhost_config::BUILT_IN_ENGINE;
use ctxhost_core::engines::ResolveError;
use std::sync::Arc;

use ctxhost_core::session::SessionError;
use ctxhost_core::SessionOptions;
use ctxhost_plugins::libraries::foreign_libraries;
use ctxhost_plugins::ProblemKind;
use ctxhost_sdk::{contract, CompressOptions, Message};
use serde::Serialize;

use crate::cli::{App, GlobalArgs};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Level {
    Ok,
    /// A choice, not a fault (e.g. a disabled plugin).
    Note,
    Problem,
}

impl Level {
    fn mark(self) -> &'static str {
        match self {
            Level::Ok => "ok     ",
            Level::Note => "note   ",
            Level::Problem => "problem",
        }
    }
}

#[derive(Debug, Serialize)]
struct Finding {
    engine: String,
    level: Level,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<ProblemKind>,
    message: String,
}

pub fn run(global: &GlobalArgs, args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    let findings = examine(&app);
    let problems = findings
        .iter()
        .filter(|f| f.level == Level::Problem)
        .count();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "ok": problems == 0,
                "findings": findings,
            }))?
        );
    } else {
        for finding in &findings {
            println!(
                "{}  {}: {}",
                finding.level.mark(),
                finding.engine,
                finding.message
            );
        }
        match problems {
            0 => println!("\nno problems"),
            1 => println!("\n1 problem"),
            n => println!("\n{n} problems"),
        }
    }
    Ok(if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The window the exercise runs with: small, so a short conversation crosses any threshold.
const EXERCISE_WINDOW: u64 = 8_192;

/// Runs plugin `name` for real, in a child process (whatever it does there cannot take the
/// doctor down) and on a temporary state: `status`, the per-turn checks (`should_compress`,
/// `should_compress_preflight`, under `plugins.<name>.check_timeout` as on every turn), then a
/// forced `compress` of a built-in conversation twice the window, whose output must keep the
/// whole output contract.
fn exercise(app: &App, name: &str) -> Result<String, (ProblemKind, String)> {
    let options = SessionOptions::new("ctxhost-doctor")
        .temporary()
        .strict()
        .isolated()
        .model("doctor-check", EXERCISE_WINDOW);
    let mut session = app.engines.open_session(name, options).map_err(|error| {
        let kind = match error {
            ResolveError::Config(_) => ProblemKind::BadSettings,
            _ => ProblemKind::LoadFailed,
        };
        (kind, error.to_string())
    })?;
    let conversation = Arc::new(conversation(&session));
    app.runtime.block_on(async {
        session.begin().await.map_err(fault)?;
        session.status().await.map_err(fault)?;
        let tokens = session.count(&conversation);
        checked(session.should_compress(tokens).await)?;
        checked(
            session
                .should_compress_preflight(conversation.clone())
                .await,
        )?;
        let compression = session
            .compress(
                conversation.clone(),
                CompressOptions {
                    force: true,
                    ..CompressOptions::default()
                },
            )
            .await;
        if let Some(error) = compression.error {
            return Err(fault(error));
        }
        contract::check_output(&conversation, &compression.messages, |list| {
            session.count(list)
        })
        .map_err(|violation| {
            (
                ProblemKind::LoadFailed,
                format!("its compress breaks the output contract: {violation}"),
            )
        })?;
        Ok(format!(
            "status and compress work ({} → {} tokens)",
            session.count(&conversation),
            session.count(&compression.messages)
        ))
    })
}

fn fault(error: SessionError) -> (ProblemKind, String) {
    (ProblemKind::LoadFailed, error.to_string())
}

/// A per-turn check's answer: an engine without the check is fine (the host uses its
/// default); any other failure, a timeout first of all, is a fault.
fn checked(answer: Result<bool, SessionError>) -> Result<(), (ProblemKind, String)> {
    match answer {
        Ok(_) | Err(SessionError::Unsupported { .. }) => Ok(()),
        Err(error) => Err(fault(error)),
    }
}

/// A plain conversation of about twice the exercise window.
fn conversation(session: &ctxhost_core::Session) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a careful coding assistant.")];
    let mut turn = 0;
    while session.count(&messages) < 2 * EXERCISE_WINDOW {
        messages.push(Message::user(format!(
            "Step {turn}: look at src/module_{turn}.rs and explain what `handle_{turn}` does. {}",
            "It reads the request, checks the input, and writes the answer. ".repeat(8)
        )));
        messages.push(Message::assistant(format!(
            "In step {turn}, `handle_{turn}` validates its input and returns a result. {}",
            "The function is small and its error paths are tested. ".repeat(8)
        )));
        turn += 1;
    }
    messages.push(Message::user("Now summarize what we found."));
    messages
}

fn examine(app: &App) -> Vec<Finding> {
    let config = app.config();
    let selected = config.context.engine.as_str();
    let mut findings = Vec::new();
    let finding = |engine: &str, level, kind, message: String| Finding {
        engine: engine.to_string(),
        level,
        kind,
        message,
    };

    findings.push(match app.engines.compressor() {
        Ok(_) => finding(BUILT_IN_ENGINE, Level::Ok, None, "built in".to_string()),
        Err(ResolveError::Config(error)) => finding(
            BUILT_IN_ENGINE,
            Level::Problem,
            Some(ProblemKind::BadSettings),
            error.to_string(),
        ),
        Err(error) => finding(
            BUILT_IN_ENGINE,
            Level::Problem,
            Some(ProblemKind::LoadFailed),
            error.to_string(),
        ),
    });

    let inspections = app.engines.inspect_plugins(true);
    let mut by_name: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for inspection in &inspections {
        by_name
            .entry(&inspection.candidate.name)
            .or_default()
            .push(inspection.candidate.dir.display().to_string());
    }
    let mut seen = Vec::new();
    for inspection in &inspections {
        let name = inspection.candidate.name.as_str();
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let source = inspection.candidate.root.label();
        match &inspection.loaded {
            Ok(manifest) => match exercise(app, name) {
                Ok(did) => findings.push(finding(
                    name,
                    Level::Ok,
                    None,
                    format!(
                        "{} ({source}, {}): {did}",
                        manifest.version,
                        inspection
                            .library
                            .as_deref()
                            .unwrap_or(&inspection.candidate.dir)
                            .display()
                    ),
                )),
                Err((kind, error)) => {
                    findings.push(finding(name, Level::Problem, Some(kind), error))
                }
            },
            Err(problem) if problem.kind.is_choice() && name != selected => findings.push(finding(
                name,
                Level::Note,
                Some(problem.kind),
                problem.summary.clone(),
            )),
            Err(problem) => findings.push(finding(
                name,
                Level::Problem,
                Some(problem.kind),
                problem.summary.clone(),
            )),
        }
    }
    for inspection in &inspections {
        let Some(library) = inspection.library.as_deref().filter(|l| l.is_file()) else {
            continue;
        };
        let refused =
            matches!(&inspection.loaded, Err(p) if p.kind == ProblemKind::ForeignLibraries);
        if refused {
            // Already reported, as the reason it does not load.
            continue;
        }
        let name = inspection.candidate.name.as_str();
        match foreign_libraries(library, &inspection.candidate.dir) {
            Ok(foreign) => findings.extend(foreign.into_iter().map(|foreign| {
                finding(
                    name,
                    Level::Problem,
                    Some(ProblemKind::ForeignLibraries),
                    foreign.to_string(),
                )
            })),
            Err(error) => findings.push(finding(
                name,
                Level::Problem,
                Some(ProblemKind::Unreadable),
                format!("cannot read {}: {error}", library.display()),
            )),
        }
    }
    for (name, dirs) in &by_name {
        if *name == BUILT_IN_ENGINE {
            findings.push(finding(
                name,
                Level::Problem,
                Some(ProblemKind::DuplicateName),
                format!(
                    "a plugin in {} takes the built-in engine's name and is never used; rename it",
                    dirs[0]
                ),
            ));
        } else if dirs.len() > 1 {
            findings.push(finding(
                name,
                Level::Problem,
                Some(ProblemKind::DuplicateName),
                format!(
                    "{} plugins share this name ({}); only the first is ever used: rename or remove the others",
                    dirs.len(),
                    dirs.join(", ")
                ),
            ));
        }
    }
    for name in config.trust.enabled.keys() {
        if !by_name.contains_key(name.as_str()) {
            findings.push(finding(
                name,
                Level::Note,
                None,
                format!("trust.enabled.{name} approves a plugin that is not installed"),
            ));
        }
    }
    let resolvable = selected == BUILT_IN_ENGINE
        || app.engines.is_registered(selected)
        || by_name.contains_key(selected);
    if !resolvable {
        findings.push(finding(
            selected,
            Level::Problem,
            Some(ProblemKind::MissingLibrary),
            format!(
                "context.engine selects '{selected}', which is not installed; the built-in compressor runs instead (`ctxhost plugins use NAME` picks another)"
            ),
        ));
    }
    findings
}
