//! The files a session touched, each at its last known state: what was done to it (read,
//! written, edited, renamed, deleted, in the order last done, so the last is its state), the
//! path it had before a rename, and the last command or call that touched it.
//!
//! A summary's Files section lists one file a line, `path (edited, renamed from old; last:
//! `cmd`)`, which is read back here, so the state is carried from each summary into the next
//! and updated like the standing facts: a rename replaces the old path, a delete says deleted.

use crate::extract::{compact, same_file};

/// Longest command kept as a file's last one.
const COMMAND_MAX: usize = 120;

/// What was done to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Read,
    Searched,
    Written,
    Edited,
    Renamed,
    Deleted,
    /// A word a summarizer wrote that is none of these, kept as written.
    Other(String),
}

impl Change {
    pub fn word(&self) -> &str {
        match self {
            Change::Read => "read",
            Change::Searched => "searched",
            Change::Written => "written",
            Change::Edited => "edited",
            Change::Renamed => "renamed",
            Change::Deleted => "deleted",
            Change::Other(word) => word,
        }
    }

    pub fn from_word(word: &str) -> Change {
        match word.trim() {
            "read" => Change::Read,
            "searched" => Change::Searched,
            "written" | "created" => Change::Written,
            "edited" | "modified" => Change::Edited,
            "renamed" | "moved" => Change::Renamed,
            "deleted" | "removed" => Change::Deleted,
            other => Change::Other(other.to_string()),
        }
    }
}

/// One file at its last known state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    pub path: String,
    /// Each change once, in the order last done: the last is the file's state.
    pub changes: Vec<Change>,
    /// The path it had before its last rename.
    pub renamed_from: Option<String>,
    /// The last command or tool call that touched it.
    pub last: Option<String>,
}

impl FileState {
    pub fn new(path: &str) -> FileState {
        FileState {
            path: path.to_string(),
            changes: Vec::new(),
            renamed_from: None,
            last: None,
        }
    }

    /// Records `change` (done last) and the command that did it.
    pub fn record(&mut self, change: Option<Change>, last: Option<&str>) {
        if let Some(change) = change {
            self.changes.retain(|known| *known != change);
            self.changes.push(change);
        }
        if let Some(last) = last.map(|l| compact(&l.replace('`', "'"), COMMAND_MAX)) {
            if !last.is_empty() {
                self.last = Some(last);
            }
        }
    }

    /// Whether a call did something to it (not only named it).
    pub fn is_touched(&self) -> bool {
        !self.changes.is_empty() || self.last.is_some()
    }

    pub fn is_deleted(&self) -> bool {
        self.changes.last() == Some(&Change::Deleted)
    }

    /// The file as a line of a summary's section (without a list marker).
    pub fn line(&self) -> String {
        let changes: Vec<String> = self
            .changes
            .iter()
            .map(|change| match (change, &self.renamed_from) {
                (Change::Renamed, Some(from)) => format!("renamed from {from}"),
                (change, _) => change.word().to_string(),
            })
            .collect();
        let mut notes = changes.join(", ");
        if let Some(last) = &self.last {
            if !notes.is_empty() {
                notes.push_str("; ");
            }
            notes.push_str(&format!("last: `{last}`"));
        }
        if notes.is_empty() {
            self.path.clone()
        } else {
            format!("{} ({notes})", self.path)
        }
    }

    /// Reads a line [`Self::line`] wrote (also the older `path (read, edited)`).
    pub fn parse_line(line: &str) -> Option<FileState> {
        let line = line
            .trim()
            .trim_start_matches(['-', '*', '•'])
            .trim()
            .replace("**", "");
        if line.is_empty() {
            return None;
        }
        // A line a cut left without its closing parenthesis (`a.rs (written; last: `wri…`)
        // still names the file and what was done to it.
        let closed = line
            .strip_suffix(')')
            .and_then(|inner| inner.split_once(" ("));
        let cut = || {
            line.strip_suffix('…')
                .and_then(|inner| inner.split_once(" ("))
                .map(|(path, notes)| {
                    let notes = notes
                        .split_once("last: ")
                        .map_or(notes, |(changes, _)| changes);
                    (path, notes.trim_end().trim_end_matches(';'))
                })
        };
        let Some((path, notes)) = closed.or_else(cut) else {
            return Some(FileState::new(line.trim_matches('`')));
        };
        let mut state = FileState::new(path.trim().trim_matches('`'));
        let (changes, last) = match notes.split_once("last: ") {
            Some((changes, last)) => (changes.trim_end().trim_end_matches(';'), Some(last)),
            None => (notes, None),
        };
        for word in changes.split(", ").map(str::trim).filter(|w| !w.is_empty()) {
            match word.strip_prefix("renamed from ") {
                Some(from) => {
                    state.renamed_from = Some(from.trim().to_string());
                    state.changes.push(Change::Renamed);
                }
                None => state.changes.push(Change::from_word(word)),
            }
        }
        state.last = last
            .map(|last| last.trim().trim_matches('`').to_string())
            .filter(|last| !last.is_empty());
        Some(state)
    }

    /// Takes in a later state of the same file: its changes after this one's, its last
    /// command, its path.
    fn absorb(&mut self, later: FileState) {
        for change in later.changes {
            self.changes.retain(|known| *known != change);
            self.changes.push(change);
        }
        if later.path.len() >= self.path.len() || later.renamed_from.is_some() {
            self.path = later.path;
        }
        if later.renamed_from.is_some() {
            self.renamed_from = later.renamed_from;
        }
        if later.last.is_some() {
            self.last = later.last;
        }
    }
}

/// The files of a session as they stand: each once, at its last state, in the order last
/// touched (a file touched again moves to the end), so a cap keeps the most recent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileBook {
    files: Vec<FileState>,
}

impl FileBook {
    pub fn files(&self) -> &[FileState] {
        &self.files
    }

    /// Adds a later state: it updates the entry of the same file (or, when renamed, of the
    /// path it had), which moves to the end when the later state touched it (a file only
    /// named again keeps its place).
    pub fn add(&mut self, state: FileState) {
        let touched = state.is_touched();
        let position = |path: &str, files: &[FileState]| {
            let matches: Vec<usize> = (0..files.len())
                .filter(|&i| same_file(&files[i].path, path))
                .collect();
            match matches[..] {
                [one] => Some(one),
                _ => files.iter().position(|f| f.path == path),
            }
        };
        let old = state
            .renamed_from
            .as_deref()
            .and_then(|from| position(from, &self.files))
            .or_else(|| position(&state.path, &self.files));
        let Some(at) = old else {
            self.files.push(state);
            return;
        };
        let mut entry = self.files.remove(at);
        entry.absorb(state);
        // The old path's entry and one already at the new path are one file now.
        let other = self
            .files
            .iter()
            .position(|f| same_file(&f.path, &entry.path));
        let place = match other {
            Some(other) => {
                let mut merged = self.files.remove(other);
                merged.absorb(entry);
                entry = merged;
                other.min(at)
            }
            None => at,
        };
        if touched {
            self.files.push(entry);
        } else {
            self.files.insert(place, entry);
        }
    }

    /// Adds the files of section lines a summary wrote.
    pub fn add_lines<'a>(&mut self, lines: impl IntoIterator<Item = &'a str>) {
        for line in lines {
            if let Some(state) = FileState::parse_line(line) {
                self.add(state);
            }
        }
    }

    /// The section's lines, what matters least first, as a cap or a budget cut takes them:
    /// the files only named, then those something was done to, the least recently touched
    /// first (the newest last).
    pub fn lines(&self) -> Vec<String> {
        let touched = self.files.iter().filter(|f| f.is_touched());
        let named = self.files.iter().filter(|f| !f.is_touched());
        named.chain(touched).map(FileState::line).collect()
    }
}

/// What one command does to files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Touch(String, Change),
    Rename { from: String, to: String },
}

/// What a shell command does to the files it names, as far as its words say: `mv` renames,
/// `rm` deletes, `sed -i` and `>>` edit, `>`, `tee`, `touch` and `cp`'s target write, and an
/// `apply_patch` body's headers say which files it adds, updates, moves or deletes.
pub fn shell_effects(command: &str) -> Vec<Effect> {
    let mut effects = patch_effects(command);
    let mut heredoc: Option<String> = None;
    for line in command.lines() {
        if let Some(end) = &heredoc {
            if line.trim() == end {
                heredoc = None;
            }
            continue;
        }
        if let Some((_, marker)) = line.split_once("<<") {
            let end = marker
                .trim_start_matches('-')
                .trim()
                .trim_matches(['\'', '"'])
                .split_whitespace()
                .next()
                .unwrap_or_default();
            if !end.is_empty() {
                heredoc = Some(end.to_string());
            }
        }
        for simple in line.split(['|', ';', '&']).map(str::trim) {
            simple_effects(simple, &mut effects);
        }
    }
    effects
}

/// The effects of one simple command (no `|`, `;`, `&&`).
fn simple_effects(simple: &str, effects: &mut Vec<Effect>) {
    let words: Vec<&str> = simple
        .split_whitespace()
        .map(|w| w.trim_matches(['\'', '"']))
        .collect();
    let mut args: Vec<&str> = Vec::new();
    let mut words_iter = words.iter().copied().peekable();
    while let Some(word) = words_iter.next() {
        // Redirections: `> f`, `>f`, `>> f`.
        let (append, target) = match word {
            ">" | "1>" => (false, words_iter.next()),
            ">>" => (true, words_iter.next()),
            w if w.starts_with(">>") => (true, Some(&w[2..])),
            w if w.starts_with('>') && w.len() > 1 && !w.starts_with(">&") => {
                (false, Some(&w[1..]))
            }
            _ => {
                args.push(word);
                continue;
            }
        };
        if let Some(target) = target.filter(|t| is_file_word(t) && *t != "/dev/null") {
            let change = if append {
                Change::Edited
            } else {
                Change::Written
            };
            effects.push(Effect::Touch(target.to_string(), change));
        }
    }
    // `sudo`, `env X=1` and `git` before the command itself.
    let mut rest = &args[..];
    while let Some((first, tail)) = rest.split_first() {
        if matches!(*first, "sudo" | "env" | "command" | "exec" | "git") || first.contains('=') {
            rest = tail;
        } else {
            break;
        }
    }
    let Some((program, tail)) = rest.split_first() else {
        return;
    };
    let program = program.rsplit('/').next().unwrap_or(program);
    let flags_in = |flag: &str| tail.iter().any(|w| w.starts_with(flag));
    let files: Vec<&str> = tail
        .iter()
        .copied()
        .filter(|w| !w.starts_with('-') && is_file_word(w))
        .collect();
    match program {
        "mv" if files.len() >= 2 => {
            let (to, from) = files.split_last().expect("two or more");
            for from in from {
                let to = match to.strip_suffix('/') {
                    Some(dir) => format!("{dir}/{}", from.rsplit('/').next().unwrap_or(from)),
                    None => to.to_string(),
                };
                effects.push(Effect::Rename {
                    from: from.to_string(),
                    to,
                });
            }
        }
        "rm" | "unlink" | "rmdir" => {
            for file in files {
                effects.push(Effect::Touch(file.to_string(), Change::Deleted));
            }
        }
        "sed" | "perl" if flags_in("-i") || flags_in("--in-place") || flags_in("-pi") => {
            // Without `-e`, the first operand is the script.
            let skip = usize::from(!flags_in("-e"));
            for file in files.into_iter().skip(skip) {
                effects.push(Effect::Touch(file.to_string(), Change::Edited));
            }
        }
        "touch" => {
            for file in files {
                effects.push(Effect::Touch(file.to_string(), Change::Written));
            }
        }
        "tee" => {
            let change = if flags_in("-a") {
                Change::Edited
            } else {
                Change::Written
            };
            for file in files {
                effects.push(Effect::Touch(file.to_string(), change.clone()));
            }
        }
        "cp" if files.len() >= 2 => {
            let (to, from) = files.split_last().expect("two or more");
            for from in from {
                effects.push(Effect::Touch(from.to_string(), Change::Read));
            }
            if !to.ends_with('/') {
                effects.push(Effect::Touch(to.to_string(), Change::Written));
            }
        }
        _ => {}
    }
}

/// A word that may be a file: a letter or digit in it, no variables, globs or options.
fn is_file_word(word: &str) -> bool {
    word.chars().any(char::is_alphanumeric)
        && !word.contains(['$', '*', '?', '(', ')', '{', '}', '<', '>', '`'])
        && word != "."
        && word != ".."
}

/// The files an `apply_patch` body (`*** Update File: p`, `*** Move to: q`, …) touches, in
/// text as written or as a JSON string (with `\n` escaped).
pub fn patch_effects(text: &str) -> Vec<Effect> {
    const HEADERS: [(&str, Option<Change>); 4] = [
        ("*** Add File: ", Some(Change::Written)),
        ("*** Update File: ", Some(Change::Edited)),
        ("*** Delete File: ", Some(Change::Deleted)),
        ("*** Move to: ", None),
    ];
    if !text.contains("*** ") {
        return Vec::new();
    }
    let mut effects = Vec::new();
    let mut updated: Option<String> = None;
    for line in text.split('\n').flat_map(|line| line.split("\\n")) {
        let line = line.trim();
        for (header, change) in &HEADERS {
            let Some(path) = line.strip_prefix(header).map(str::trim) else {
                continue;
            };
            let path = path.trim_end_matches(['"', '\'', ',']).to_string();
            match change {
                Some(change) => {
                    updated = (*change == Change::Edited).then(|| path.clone());
                    effects.push(Effect::Touch(path, change.clone()));
                }
                None => {
                    if let Some(from) = updated.take() {
                        effects.push(Effect::Rename { from, to: path });
                    }
                }
            }
        }
    }
    effects
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &str, change: Change) -> Effect {
        Effect::Touch(path.to_string(), change)
    }

    #[test]
    fn a_line_cut_short_still_names_its_file() {
        let cut = FileState::parse_line("src/x/notes.md (written; last: `write…").unwrap();
        assert_eq!(cut.path, "src/x/notes.md");
        assert_eq!(cut.changes, [Change::Written]);
        let mut book = FileBook::default();
        book.add(cut);
        book.add_lines(["src/x/notes.md (deleted; last: `rm src/x/notes.md`)"]);
        assert_eq!(
            book.lines(),
            ["src/x/notes.md (written, deleted; last: `rm src/x/notes.md`)"]
        );
    }

    #[test]
    fn commands_say_what_they_do_to_files() {
        assert_eq!(
            shell_effects("git mv src/old.rs src/new.rs && rm -f tmp/a.txt"),
            [
                Effect::Rename {
                    from: "src/old.rs".into(),
                    to: "src/new.rs".into()
                },
                touch("tmp/a.txt", Change::Deleted),
            ]
        );
        assert_eq!(
            shell_effects("sed -i 's/a/b/' src/lib.rs; echo x >> notes.md"),
            [
                touch("src/lib.rs", Change::Edited),
                touch("notes.md", Change::Edited)
            ]
        );
        assert_eq!(
            shell_effects("cat > conf/app.toml <<'EOF'\nrm -rf /\nEOF\nmv a.py lib/"),
            [
                touch("conf/app.toml", Change::Written),
                Effect::Rename {
                    from: "a.py".into(),
                    to: "lib/a.py".into()
                }
            ]
        );
        assert_eq!(
            patch_effects("{\"input\": \"*** Begin Patch\\n*** Update File: a.rs\\n*** Move to: b.rs\\n@@\\n*** Delete File: c.rs\\n\"}"),
            [
                touch("a.rs", Change::Edited),
                Effect::Rename {
                    from: "a.rs".into(),
                    to: "b.rs".into()
                },
                touch("c.rs", Change::Deleted),
            ]
        );
        assert_eq!(shell_effects("cargo test 2>&1 | tail -5"), []);
        // An assignment's `=` in a script is no file.
        assert_eq!(shell_effects("mv = x"), []);
        assert_eq!(shell_effects("touch - ="), []);
    }

    #[test]
    fn a_rename_replaces_the_old_path_and_lines_round_trip() {
        let mut book = FileBook::default();
        let mut edited = FileState::new("src/old.rs");
        edited.record(Some(Change::Edited), Some("sed -i 's/x/y/' src/old.rs"));
        book.add(edited);
        book.add(FileState::new("README.md"));
        let mut renamed = FileState::new("src/new.rs");
        renamed.renamed_from = Some("src/old.rs".into());
        renamed.record(Some(Change::Renamed), Some("mv src/old.rs src/new.rs"));
        book.add(renamed);
        let lines = book.lines();
        assert_eq!(
            lines,
            [
                "README.md",
                "src/new.rs (edited, renamed from src/old.rs; last: `mv src/old.rs src/new.rs`)",
            ]
        );
        let mut again = FileBook::default();
        again.add_lines(lines.iter().map(String::as_str));
        assert_eq!(again, book);
        let mut gone = FileState::new("src/new.rs");
        gone.record(Some(Change::Deleted), Some("rm src/new.rs"));
        again.add(gone);
        assert!(again.files()[1].is_deleted(), "{:?}", again.lines());
        // The older form is read too.
        let old = FileState::parse_line("- src/a.rs (read, edited)").unwrap();
        assert_eq!(old.changes, [Change::Read, Change::Edited]);
    }
}
