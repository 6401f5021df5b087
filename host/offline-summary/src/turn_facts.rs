//! What each turn's text says on its own (the paths it names, its error lines, its sentences
//! that decide, constrain or leave something to do), read before the turns are read in order.
//!
//! That reading is most of a digest's time and depends on nothing but the turn and the one
//! before it, so a long run of turns is read on two threads, each taking a contiguous half;
//! the digest then walks the turns in order as before, and comes out the same.

use crate::extract::{error_lines, is_constraint, is_decision, paths, sentences, trailing_command};
use crate::markers::Markers;
use crate::parse::{Role, Turn};
use crate::standing::{self, Origin, Standing};

/// Below this much text the turns are read on the calling thread: a thread costs more.
const PARALLEL_MIN_BYTES: usize = 64 * 1024;

static TODO: Markers = Markers::new(&["todo", "fixme"]);

/// A sentence and the markers it holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Marks {
    pub constraint: bool,
    pub decision: bool,
    pub todo: bool,
}

impl Marks {
    fn any(self) -> bool {
        self.constraint || self.decision || self.todo
    }
}

/// One turn's facts, as far as the digest reads them for its role.
#[derive(Debug, Default)]
pub struct TurnFacts<'a> {
    /// The output of a command a turn before ran (a text agent's fenced block), rather than
    /// an ask.
    pub observation: bool,
    /// File paths in the turn's text, in order of first mention.
    pub paths: Vec<String>,
    /// Its error lines (user turns and tool results: the turns whose errors are read).
    pub errors: Vec<String>,
    /// Its sentences holding a marker, in order (asks, assistant turns and untagged text).
    pub sentences: Vec<(&'a str, Marks)>,
    /// The standing items it states (system and user turns; an assistant's confirmations;
    /// name-value lines of tool results).
    pub standing: Vec<Standing>,
}

/// The facts of every turn, in order.
pub fn read(turns: &[Turn]) -> Vec<TurnFacts<'_>> {
    let bytes: usize = turns.iter().map(|t| t.text.len()).sum();
    if bytes < PARALLEL_MIN_BYTES || turns.len() < 2 {
        return (0..turns.len()).map(|i| facts(turns, i)).collect();
    }
    // The first turn past half the text starts the second half.
    let mut seen = 0;
    let split = turns
        .iter()
        .position(|turn| {
            seen += turn.text.len();
            seen * 2 >= bytes
        })
        .map_or(turns.len() / 2, |at| at.clamp(1, turns.len() - 1));
    std::thread::scope(|scope| {
        let first = scope.spawn(|| (0..split).map(|i| facts(turns, i)).collect::<Vec<_>>());
        let second: Vec<_> = (split..turns.len()).map(|i| facts(turns, i)).collect();
        let mut all = match first.join() {
            Ok(first) => first,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        all.extend(second);
        all
    })
}

/// Longest user turn read as words typed between a text agent's command and its output.
const INTERJECTION_MAX: usize = 600;

/// Whether the user turn at `index`, after a text agent's command, is the user's own words
/// rather than the command's output: a few lines that the agent answers without a command of
/// its text (with words, or with a tool call), where an agent reacts to its command's output
/// with its next command.
fn interjected(turns: &[Turn], index: usize) -> bool {
    let text = &turns[index].text;
    let short = text.len() <= INTERJECTION_MAX && text.lines().count() <= 3;
    short
        && turns[index].role == Role::User
        && turns.get(index + 1).is_some_and(|next| match next.role {
            Role::Assistant => trailing_command(&next.text).is_none(),
            Role::ToolCall { .. } => true,
            _ => false,
        })
}

/// Turns looked back over for the command whose output a user turn is.
const OUTPUT_LOOKBACK: usize = 64;

/// Whether the user turn at `index` is the output of a text agent's command: the command ends
/// the assistant turn before it, or an earlier one when only words the user typed while it ran
/// (and the agent's answers to them, which ran nothing) came between.
fn is_output(turns: &[Turn], index: usize) -> bool {
    if turns[index].role != Role::User || interjected(turns, index) {
        return false;
    }
    let mut at = index;
    let earliest = index.saturating_sub(OUTPUT_LOOKBACK);
    while at > earliest {
        let before = at - 1;
        if turns[before].role != Role::Assistant {
            return false;
        }
        if trailing_command(&turns[before].text).is_some() {
            return true;
        }
        // An answer that ran no command of its text (after tool calls, perhaps): the user's
        // words before it came while the command ran.
        let mut said = before;
        while said > earliest
            && matches!(
                turns[said - 1].role,
                Role::ToolCall { .. } | Role::ToolResult { .. }
            )
        {
            said -= 1;
        }
        match said.checked_sub(1) {
            Some(said) if interjected(turns, said) => at = said,
            _ => return false,
        }
    }
    false
}

fn facts(turns: &[Turn], index: usize) -> TurnFacts<'_> {
    let turn = &turns[index];
    let text = turn.text.as_str();
    let observation = is_output(turns, index);
    let marked = |marks: fn(&str) -> Marks| -> Vec<(&str, Marks)> {
        sentences(text)
            .into_iter()
            .map(|sentence| (sentence, marks(sentence)))
            .filter(|(_, marks)| marks.any())
            .collect()
    };
    let (errors, sentences) = match &turn.role {
        Role::User if observation => (error_lines(text), Vec::new()),
        Role::User => (
            error_lines(text),
            marked(|s| Marks {
                constraint: is_constraint(s),
                decision: is_decision(s),
                todo: false,
            }),
        ),
        Role::Assistant | Role::Other => (
            Vec::new(),
            marked(|s| Marks {
                constraint: false,
                decision: is_decision(s),
                todo: TODO.any_in(s),
            }),
        ),
        Role::ToolResult { .. } => (error_lines(text), Vec::new()),
        Role::System | Role::ToolCall { .. } => (Vec::new(), Vec::new()),
    };
    let standing = match &turn.role {
        Role::User if observation => standing::extract(text, Origin::Tool),
        Role::User | Role::System => standing::extract(text, Origin::User),
        Role::ToolResult { .. } => standing::extract(text, Origin::Tool),
        Role::Assistant => standing::extract(text, Origin::Assistant),
        Role::ToolCall { .. } | Role::Other => Vec::new(),
    };
    TurnFacts {
        observation,
        paths: paths(text),
        errors,
        sentences,
        standing,
    }
}
