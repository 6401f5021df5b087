//! Reading a view for one fact: is its current value (or a file's last state) stated, and is
//! a superseded value (or an earlier state) shown as the current one? The view is read line by
//! line in order, as a model reads it: what it states last about a thing is what it takes as
//! current.

use super::facts::FileAction;

/// What a view shows of one fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    /// The current value (a file's current path and last action) is stated, and nothing
    /// superseded is shown as current.
    pub kept: bool,
    /// A superseded value (a file's old path or an earlier action) is shown as current.
    pub stale: bool,
}

/// Words that mark a line's value as a former one ("no longer X", "was X", "renamed from X").
const FORMER: &[&str] = &[
    "no longer",
    "previously",
    "formerly",
    "superseded",
    "replaced",
    "instead of",
    " was ",
    "(was",
    "renamed from",
    "moved from",
    "changed from",
    "used to",
    "old ",
];

/// A fact with a value: `current`, and the value it replaced once the session has reached the
/// change. The superseded value is shown as current when the last line naming either value
/// names only the old one and does not mark it as former.
pub fn value(view: &str, current: &str, superseded: Option<&str>) -> Shown {
    let Some(old) = superseded else {
        return Shown {
            kept: view.contains(current),
            stale: false,
        };
    };
    let last = view
        .lines()
        .rev()
        .find(|line| line.contains(current) || line.contains(old));
    let stale = last.is_some_and(|line| {
        !line.contains(current) && {
            let lower = line.to_lowercase();
            !FORMER.iter().any(|marker| lower.contains(marker))
        }
    });
    Shown {
        kept: !stale && view.contains(current),
        stale,
    }
}

/// A file: its current `path` and last `action`, and its former path once a rename is reached.
/// The state shown is that of the last line naming the file (either path) together with an
/// action (a word, a tool's name or a command): kept when it names the current path and the
/// last action; stale when it shows an earlier action or only the former path.
pub fn file(view: &str, path: &str, action: FileAction, former: Option<&str>) -> Shown {
    let last = view.lines().rev().find_map(|line| {
        let names = line.contains(path) || former.is_some_and(|f| line.contains(f));
        let actions = actions(line);
        (names && !actions.is_empty()).then_some((line, actions))
    });
    let Some((line, actions)) = last else {
        return Shown {
            kept: false,
            stale: false,
        };
    };
    let kept = line.contains(path) && actions.contains(&action);
    Shown { kept, stale: !kept }
}

/// The actions a line states, by its words.
fn actions(line: &str) -> Vec<FileAction> {
    let lower = line.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    FileAction::ALL
        .into_iter()
        .filter(|action| action.words().iter().any(|w| words.contains(w)))
        .collect()
}
