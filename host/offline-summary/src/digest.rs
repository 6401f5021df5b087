//! What a run of turns amounts to: asks, actions and their outcomes, files, errors,
//! decisions and the latest state.

use std::collections::HashMap;

use super::extract::{
    call_facts, compact, error_lines, file_verb, is_next_step, is_shell_tool, names_file, paths,
    prompt_commands, same_file, sentences, trailing_command, CallFacts,
};
use super::files::{patch_effects, shell_effects, Change, Effect, FileState};
use super::parse::{Role, Turn};
use super::standing::Standing;
use super::turn_facts::{self, Marks};

const ASK_MAX: usize = 400;
const STATE_MAX: usize = 400;
const SENTENCE_MAX: usize = 240;
const ERROR_MAX: usize = 240;
const COMMAND_MAX: usize = 160;
/// Verbatim error lines kept for Critical Context.
const CRITICAL_ERRORS: usize = 8;

/// The facts of the new turns, one list per template section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Digest {
    /// User asks in order.
    pub asks: Vec<String>,
    /// A goal guessed from untagged text, when no user turn was recognised.
    pub inferred_goal: Option<String>,
    pub constraints: Vec<String>,
    pub done: Vec<String>,
    pub in_progress: Vec<String>,
    /// Actions that failed and were not done again successfully (`Ran `x` failed: error`);
    /// their errors are in `critical` too.
    pub blocked: Vec<String>,
    pub decisions: Vec<String>,
    /// Files touched, named or seen, each at its last known state.
    pub files: Vec<FileState>,
    pub next_steps: Vec<String>,
    pub critical: Vec<String>,
    /// Actions that succeeded (their Done text), to clear stale blockers.
    pub succeeded: Vec<String>,
    /// Standing rules, constraints, facts, goals and preferences, in the order stated.
    pub standing: Vec<Standing>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Pending,
    Ok,
    Failed(String),
}

#[derive(Debug, Clone)]
struct Action {
    tool: String,
    text: String,
    turn: usize,
    outcome: Outcome,
}

/// How strongly a file belongs in the Files section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    /// A tool call targeted it.
    Touched,
    /// The user or the assistant named it.
    Named,
    /// It only appeared in some output (a listing, a search result).
    Seen,
}

/// Outputs list many files; only this many of those are kept.
const SEEN_FILES: usize = 8;

#[derive(Default)]
struct Files {
    /// Each file, its rank, and when it was last touched (a count of touches so far).
    entries: Vec<(FileState, Rank, usize)>,
    touches: usize,
    /// The entries by the path's last `/`-separated part: two paths [`same_file`] accepts
    /// end alike, so only the entries of a path's own name need comparing (in entry order).
    by_name: HashMap<String, Vec<usize>>,
}

/// What follows a path's last `/`.
fn last_part(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl Files {
    /// The entry of `path`, made when there is none.
    fn entry(&mut self, path: &str, rank: Rank) -> usize {
        let named = self
            .by_name
            .get(last_part(path))
            .map_or(&[][..], Vec::as_slice);
        // `src/a.rs` and `/repo/src/a.rs` are one file, when that is unambiguous.
        let matches: Vec<usize> = named
            .iter()
            .copied()
            .filter(|&i| same_file(&self.entries[i].0.path, path))
            .collect();
        let index = match matches[..] {
            [index] => {
                if path.len() > self.entries[index].0.path.len() {
                    self.entries[index].0.path = path.to_string();
                }
                index
            }
            _ => match named
                .iter()
                .copied()
                .find(|&i| self.entries[i].0.path == path)
            {
                Some(index) => index,
                None => {
                    self.entries.push((FileState::new(path), rank, 0));
                    let index = self.entries.len() - 1;
                    self.by_name
                        .entry(last_part(path).to_string())
                        .or_default()
                        .push(index);
                    index
                }
            },
        };
        let entry = &mut self.entries[index];
        entry.1 = entry.1.min(rank);
        index
    }

    fn note(&mut self, path: &str, change: Option<Change>, rank: Rank, last: Option<&str>) {
        if rank == Rank::Seen && !names_file(path) {
            return;
        }
        let index = self.entry(path, rank);
        let last = last.filter(|_| rank == Rank::Touched);
        self.entries[index].0.record(change, last);
        if rank == Rank::Touched {
            self.touched_now(index);
        }
    }

    fn touched_now(&mut self, index: usize) {
        self.touches += 1;
        self.entries[index].2 = self.touches;
    }

    /// `from` is now `to`: its entry takes the new path.
    fn rename(&mut self, from: &str, to: &str, last: &str) {
        let index = self.entry(from, Rank::Touched);
        if let Some(list) = self.by_name.get_mut(last_part(&self.entries[index].0.path)) {
            list.retain(|&i| i != index);
        }
        let entry = &mut self.entries[index].0;
        entry.renamed_from = Some(entry.path.clone());
        entry.path = to.to_string();
        entry.record(Some(Change::Renamed), Some(last));
        self.touched_now(index);
        self.by_name
            .entry(last_part(to).to_string())
            .or_default()
            .push(index);
    }

    /// What `command` does to files; the paths it named, so a caller notes the others.
    fn note_command(&mut self, command: &str) -> Vec<String> {
        let mut named = Vec::new();
        for effect in shell_effects(command) {
            match effect {
                Effect::Touch(path, change) => {
                    self.note(&path, Some(change), Rank::Touched, Some(command));
                    named.push(path);
                }
                Effect::Rename { from, to } => {
                    self.rename(&from, &to, command);
                    named.push(from);
                    named.push(to);
                }
            }
        }
        named
    }

    fn note_paths(&mut self, paths: &[String], change: Option<Change>, rank: Rank) {
        for path in paths {
            self.note(path, change.clone(), rank, None);
        }
    }

    /// Paths a call or command named and did something to, beyond what its words said.
    fn note_touched(
        &mut self,
        paths: &[String],
        handled: &[String],
        change: Option<Change>,
        last: &str,
    ) {
        for path in paths {
            if !handled.iter().any(|done| same_file(done, path)) {
                self.note(path, change.clone(), Rank::Touched, Some(last));
            }
        }
    }

    /// Touched files first, in the order last touched, then named ones, then a few seen
    /// ones, each in order of first mention.
    fn render(mut self) -> Vec<FileState> {
        self.entries
            .sort_by_key(|(_, rank, last_touch)| (*rank, *last_touch));
        let mut seen = 0;
        self.entries
            .into_iter()
            .filter(|(_, rank, _)| {
                seen += usize::from(*rank == Rank::Seen);
                *rank != Rank::Seen || seen <= SEEN_FILES
            })
            .map(|(state, _, _)| state)
            .collect()
    }
}

/// Reads the turns.
pub fn digest(turns: &[Turn]) -> Digest {
    let mut digest = Digest::default();
    let mut actions: Vec<Action> = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    let mut files = Files::default();
    let mut errors: Vec<String> = Vec::new();
    let mut last_ask: Option<(usize, String)> = None;
    let mut last_assistant: Option<(usize, &str)> = None;
    let mut todos: Vec<String> = Vec::new();

    // A text agent's command (a fenced block ending its turn) awaiting the next user turn,
    // which is then the command's output rather than an ask.
    let mut observation_for: Option<usize> = None;
    let facts = turn_facts::read(turns);
    for ((index, turn), facts) in turns.iter().enumerate().zip(facts) {
        let text = turn.text.as_str();
        // A user's words typed while the command ran (and the agent's answer to them) are not
        // its output: the command waits for the user turn that is.
        let awaiting = if facts.observation {
            observation_for.take()
        } else {
            None
        };
        debug_assert_eq!(awaiting.is_some(), facts.observation);
        digest.standing.extend(facts.standing);
        match &turn.role {
            Role::User if awaiting.is_some() => {
                if let Some(action) = awaiting {
                    record_result(&mut actions[action], &facts.errors, &mut errors);
                }
                files.note_paths(&facts.paths, None, Rank::Seen);
            }
            Role::User => {
                let ask = compact(text, ASK_MAX);
                if !ask.is_empty() {
                    digest.asks.push(ask.clone());
                    last_ask = Some((index, ask));
                }
                for &(sentence, marks) in &facts.sentences {
                    if marks.constraint {
                        digest.constraints.push(compact(sentence, SENTENCE_MAX));
                    } else if marks.decision {
                        digest
                            .decisions
                            .push(format!("User: {}", compact(sentence, SENTENCE_MAX)));
                    }
                }
                files.note_paths(&facts.paths, None, Rank::Named);
                for error in &facts.errors {
                    errors.push(format!(
                        "reported by the user: {}",
                        compact(error, ERROR_MAX)
                    ));
                }
            }
            Role::Assistant => {
                if !text.trim().is_empty() {
                    last_assistant = Some((index, text));
                }
                note_decisions(&facts.sentences, &mut digest.decisions, &mut todos);
                files.note_paths(&facts.paths, None, Rank::Named);
                if let Some(command) = trailing_command(text) {
                    let handled = files.note_command(&command);
                    let verb = command_verb(&command);
                    files.note_touched(&paths(&command), &handled, verb, &command);
                    actions.push(Action {
                        tool: "shell".to_string(),
                        text: format!("Ran `{}`", compact(&command, COMMAND_MAX)),
                        turn: index,
                        outcome: Outcome::Pending,
                    });
                    observation_for = Some(actions.len() - 1);
                }
            }
            Role::System => files.note_paths(&facts.paths, None, Rank::Named),
            Role::ToolCall { name } => {
                let call = call_facts(name, text);
                let verb = match &call.command {
                    Some(command) => command_verb(command),
                    None => file_verb(name, call.action.as_deref()).map(Change::from_word),
                };
                // The last thing that touched a file: the command, or the call.
                let last = match (&call.command, &call.action) {
                    (Some(command), _) => command.clone(),
                    (None, Some(action)) => format!("{name} {action}"),
                    (None, None) => name.clone(),
                };
                let mut handled = match &call.command {
                    Some(command) => files.note_command(command),
                    None => Vec::new(),
                };
                for effect in patch_effects(text)
                    .into_iter()
                    .filter(|_| call.command.is_none())
                {
                    match effect {
                        Effect::Touch(path, change) => {
                            files.note(&path, Some(change), Rank::Touched, Some(&last));
                            handled.push(path);
                        }
                        Effect::Rename { from, to } => {
                            files.rename(&from, &to, &last);
                            handled.extend([from, to]);
                        }
                    }
                }
                if let Some(path) = call.path.as_ref().filter(|p| !handled.contains(p)) {
                    files.note(path, verb.clone(), Rank::Touched, Some(&last));
                    handled.push(path.clone());
                }
                files.note_touched(&facts.paths, &handled, verb, &last);
                actions.push(Action {
                    tool: name.clone(),
                    text: describe_call(name, &call, text),
                    turn: index,
                    outcome: Outcome::Pending,
                });
                pending.push(actions.len() - 1);
            }
            Role::ToolResult { name } => {
                let slot = pending
                    .iter()
                    .position(|&a| actions[a].tool == *name)
                    .or((!pending.is_empty()).then_some(0));
                match slot.map(|slot| pending.remove(slot)) {
                    Some(action) => record_result(&mut actions[action], &facts.errors, &mut errors),
                    None => {
                        let label = if name.is_empty() { "tool output" } else { name };
                        prompt_actions(text, label, index, &mut actions, &mut errors);
                    }
                }
                files.note_paths(&facts.paths, None, Rank::Seen);
            }
            Role::Other => {
                if digest.inferred_goal.is_none() {
                    digest.inferred_goal = text
                        .lines()
                        .map(str::trim)
                        .find(|line| line.chars().any(char::is_alphanumeric))
                        .map(|line| compact(line, ASK_MAX));
                }
                prompt_actions(text, "output", index, &mut actions, &mut errors);
                note_decisions(&facts.sentences, &mut digest.decisions, &mut todos);
                files.note_paths(&facts.paths, None, Rank::Named);
            }
        }
    }

    // Progress.
    let last_turn = turns.len().saturating_sub(1);
    let mut done: Vec<(String, usize)> = Vec::new();
    // Indexes, so that a session of thousands of actions is read in one pass: where each text
    // is in `done`, and the last action of each text that succeeded.
    let mut done_at: HashMap<&str, usize> = HashMap::new();
    let last_success: HashMap<&str, usize> = actions
        .iter()
        .enumerate()
        .filter(|(_, action)| action.outcome == Outcome::Ok)
        .map(|(i, action)| (action.text.as_str(), i))
        .collect();
    for (i, action) in actions.iter().enumerate() {
        let finished = match &action.outcome {
            Outcome::Ok => true,
            Outcome::Pending => action.turn < last_turn,
            Outcome::Failed(error) => {
                let fixed_later = last_success
                    .get(action.text.as_str())
                    .is_some_and(|&later| later > i);
                if !fixed_later {
                    push_unique(
                        &mut digest.blocked,
                        format!("{} failed: {error}", action.text),
                    );
                }
                false
            }
        };
        if finished {
            match done_at.get(action.text.as_str()) {
                Some(&at) => done[at].1 += 1,
                None => {
                    done_at.insert(&action.text, done.len());
                    done.push((action.text.clone(), 1));
                }
            }
            if action.outcome == Outcome::Ok {
                push_unique(&mut digest.succeeded, action.text.clone());
            }
        }
    }
    digest.done = done
        .into_iter()
        .map(|(text, count)| {
            if count > 1 {
                format!("{text} (×{count})")
            } else {
                text
            }
        })
        .collect();

    let unanswered = match (&last_ask, last_assistant) {
        (Some((ask_turn, ask)), Some((said_turn, _))) if *ask_turn > said_turn => Some(ask),
        (Some((_, ask)), None) => Some(ask),
        _ => None,
    };
    if let Some(ask) = unanswered {
        digest
            .in_progress
            .push(format!("Unanswered user request: {ask}"));
    }
    if let Some(action) = actions
        .iter()
        .rev()
        .find(|a| a.outcome == Outcome::Pending && a.turn == last_turn)
    {
        digest
            .in_progress
            .push(format!("Waiting for the result of: {}", action.text));
    }
    if let Some((_, text)) = last_assistant {
        digest.in_progress.push(format!(
            "Last assistant update: {}",
            compact(text, STATE_MAX)
        ));
    }

    // Next steps: the open ask, what the assistant said it would do next. A failed action is
    // said once, as a blocker, not again as a step.
    if let Some(ask) = unanswered {
        digest
            .next_steps
            .push(format!("Respond to the latest request: {ask}"));
    }
    if let Some((_, text)) = last_assistant {
        for sentence in sentences(text) {
            if is_next_step(sentence) {
                push_unique(&mut digest.next_steps, compact(sentence, SENTENCE_MAX));
            }
        }
    }
    for todo in todos {
        push_unique(&mut digest.next_steps, todo);
    }

    digest.files = files.render();
    let mut unique_errors: Vec<String> = Vec::new();
    for error in errors.into_iter().rev() {
        if !unique_errors.contains(&error) {
            unique_errors.push(error);
        }
        if unique_errors.len() == CRITICAL_ERRORS {
            break;
        }
    }
    unique_errors.reverse();
    digest.critical = unique_errors
        .into_iter()
        .map(|error| format!("Error: {error}"))
        .collect();
    digest
}

/// An action's output, by the error lines `found` in it: its outcome, and its errors for
/// Critical Context.
fn record_result(action: &mut Action, found: &[String], errors: &mut Vec<String>) {
    action.outcome = match found.first() {
        Some(error) => Outcome::Failed(compact(error, ERROR_MAX)),
        None => Outcome::Ok,
    };
    if !found.is_empty() {
        errors.push(error_item(&action.text, found));
    }
}

/// One Critical Context line for an action's errors.
fn error_item(source: &str, found: &[String]) -> String {
    let errors: Vec<String> = found
        .iter()
        .take(3)
        .map(|e| compact(e, ERROR_MAX / 2))
        .collect();
    format!("{}: {}", compact(source, 100), errors.join(" | "))
}

/// How a shell command touches the files it names, from its first word (`cat` reads,
/// `rm` deletes, SWE-agent's `open` / `edit` / `create`).
fn command_verb(command: &str) -> Option<Change> {
    let first = command.split_whitespace().next()?;
    file_verb(first.rsplit('/').next().unwrap_or(first), None).map(Change::from_word)
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// A turn's decisions and to-dos, from its marked sentences.
fn note_decisions(marked: &[(&str, Marks)], decisions: &mut Vec<String>, todos: &mut Vec<String>) {
    for &(sentence, marks) in marked {
        if marks.decision {
            push_unique(decisions, compact(sentence, SENTENCE_MAX));
        }
        if marks.todo {
            push_unique(todos, compact(sentence, SENTENCE_MAX));
        }
    }
}

/// Commands typed at a `$ ` prompt in `text`, each with the outcome its output shows.
fn prompt_actions(
    text: &str,
    label: &str,
    turn: usize,
    actions: &mut Vec<Action>,
    errors: &mut Vec<String>,
) {
    let lines: Vec<&str> = text.lines().collect();
    let commands = prompt_commands(text);
    if commands.is_empty() {
        for error in error_lines(text) {
            errors.push(format!("{label}: {}", compact(&error, ERROR_MAX)));
        }
        return;
    }
    let first = commands[0].0;
    if first > 0 {
        for error in error_lines(&lines[..first].join("\n")) {
            errors.push(format!("{label}: {}", compact(&error, ERROR_MAX)));
        }
    }
    for (n, (line, command)) in commands.iter().enumerate() {
        let end = commands.get(n + 1).map_or(lines.len(), |next| next.0);
        let output = lines[line + 1..end].join("\n");
        let found = error_lines(&output);
        let text = format!("Ran `{}`", compact(command, COMMAND_MAX));
        if !found.is_empty() {
            errors.push(error_item(&text, &found));
        }
        actions.push(Action {
            tool: label.to_string(),
            text,
            turn,
            outcome: match found.first() {
                Some(error) => Outcome::Failed(compact(error, ERROR_MAX)),
                None => Outcome::Ok,
            },
        });
    }
}

/// A Done line for a tool call.
fn describe_call(name: &str, facts: &CallFacts, arguments: &str) -> String {
    let tool = if name.is_empty() { "tool" } else { name };
    if let Some(command) = &facts.command {
        let command = compact(command, COMMAND_MAX);
        return if is_shell_tool(tool) {
            format!("Ran `{command}`")
        } else {
            format!("Ran `{command}` [{tool}]")
        };
    }
    let verb = file_verb(tool, facts.action.as_deref()).map(|verb| match verb {
        "written" => "Wrote",
        "edited" => "Edited",
        "deleted" => "Deleted",
        "read" => "Read",
        "searched" => "Searched",
        _ => "Touched",
    });
    match (&facts.path, &facts.query, verb) {
        (_, Some(query), _) => {
            let place = facts
                .path
                .as_deref()
                .map(|p| format!(" in {p}"))
                .unwrap_or_default();
            format!("{tool} \"{}\"{place}", compact(query, COMMAND_MAX))
        }
        (Some(path), None, Some(verb)) => format!("{verb} {path} [{tool}]"),
        (Some(path), None, None) => format!("{tool} {path}"),
        (None, None, _) => {
            let arguments = compact(arguments, 100);
            if arguments.is_empty() || arguments == "{}" {
                format!("Called {tool}")
            } else {
                format!("Called {tool}({arguments})")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_turns;
    use super::*;

    #[test]
    fn a_session_becomes_facts() {
        let content = "\
[user] Please fix the failing test in src/parser.rs. Don't change the public API.
[assistant] I'll run the tests first.
[assistant -> tool_call bash] {\"command\": \"cargo test\"}
[tool bash] error[E0308]: mismatched types
 --> src/parser.rs:10:5
[assistant] We decided to use a Vec instead of a HashMap.
[assistant -> tool_call str_replace_based_edit_tool] {\"command\": \"str_replace\", \"path\": \"src/parser.rs\"}
[tool str_replace_based_edit_tool] ok
[assistant -> tool_call bash] {\"command\": \"cargo test\"}
[tool bash] test result: ok. 3 passed; 0 failed
[assistant] All tests pass now. Next I need to update the docs.
[user] now add a changelog entry";
        let digest = digest(&parse_turns(content));
        assert_eq!(digest.asks.len(), 2);
        assert!(digest.asks[0].starts_with("Please fix the failing test"));
        assert_eq!(digest.constraints, ["Don't change the public API."]);
        assert!(
            digest.done.contains(&"Ran `cargo test`".to_string()),
            "{:?}",
            digest.done
        );
        assert!(digest
            .done
            .contains(&"Edited src/parser.rs [str_replace_based_edit_tool]".to_string()));
        // The failure was fixed by a later run.
        assert!(digest.blocked.is_empty(), "{:?}", digest.blocked);
        assert_eq!(
            digest.decisions,
            ["We decided to use a Vec instead of a HashMap."]
        );
        let files: Vec<String> = digest.files.iter().map(FileState::line).collect();
        assert_eq!(
            files,
            ["src/parser.rs (edited; last: `str_replace_based_edit_tool str_replace`)"]
        );
        assert!(digest.in_progress[0].contains("now add a changelog entry"));
        assert!(digest
            .next_steps
            .iter()
            .any(|s| s.contains("update the docs")));
        assert!(digest.critical[0].contains("error[E0308]"));
    }

    #[test]
    fn prompt_commands_in_untagged_text() {
        let digest = digest(&parse_turns(
            "working on the build\n$ make\ncc: fatal: missing.h\n$ ls\nMakefile",
        ));
        assert_eq!(
            digest.inferred_goal.as_deref(),
            Some("working on the build")
        );
        assert_eq!(digest.done, ["Ran `ls`"]);
        assert_eq!(digest.blocked, ["Ran `make` failed: cc: fatal: missing.h"]);
        let files: Vec<String> = digest.files.iter().map(FileState::line).collect();
        assert_eq!(files, ["missing.h", "Makefile"]);
    }
}
