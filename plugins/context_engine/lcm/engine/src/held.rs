//! The standing facts and the files a summary block's span holds, read down the DAG: those
//! the block's own sections state and those of every summary under it, each subject and each
//! file at its newest state.
//!
//! A block written into a small room (a round whose newest turn left little) keeps the
//! standing facts and files it has room for; the summaries under it are stored unchanged and
//! still state the rest. A merge reading only the block's text would lose those for good, so
//! a merge reads them back from there, and a round with room for them merges the blocks that
//! lost some (see `compaction`).

use std::collections::HashMap;

use ctxhost_offline_summary::budget::Part;
use ctxhost_offline_summary::carry;
use ctxhost_offline_summary::files::{FileBook, FileState};
use ctxhost_offline_summary::sections;
use ctxhost_offline_summary::standing::{Book, Kind, Standing};
use ctxhost_sdk::EngineError;

use ctxhost_lcm_store::{Store, SummaryKind, SummaryRow};

/// A summary's escalation when the engine truncated its sources instead of summarizing them.
const TRUNCATED: u8 = 2;

/// What one summary's span holds.
#[derive(Debug, Clone, Default)]
struct Holding {
    standing: Book,
    /// Each file at its newest state, in the order last touched: only those no summary after
    /// the one stating it may have cut a newer state of (see [`may_have_cut_files`]).
    files: FileBook,
    /// Whether a summary of the span may have cut files.
    lossy: bool,
}

/// Whether a cut may have dropped files from `text`: a cut takes the narrative, the progress
/// and the remarks before any file (the budget order), so a summary still stating one of
/// those kept every file.
fn may_have_cut_files(text: &str) -> bool {
    !sections::parts(text)
        .iter()
        .any(|(part, _)| matches!(part, Part::Narrative | Part::Progress | Part::Remarks))
}

/// What the summaries of one conversation hold, read once per summary (a summary never
/// changes once written: its id derives from its sources).
#[derive(Debug, Default)]
pub struct Held {
    by_summary: HashMap<String, Holding>,
}

impl Held {
    fn holding(
        &mut self,
        store: &Store,
        conv: i64,
        summary: &SummaryRow,
    ) -> Result<&Holding, EngineError> {
        if !self.by_summary.contains_key(&summary.id) {
            let mut holding = Holding::default();
            if summary.kind == SummaryKind::Condensed {
                // Children in the order they cover the conversation: a newer state wins.
                for child in store.summary_children(&summary.id)? {
                    if let Some(child) = store.summary(conv, &child)? {
                        let under = self.holding(store, conv, &child)?;
                        holding
                            .standing
                            .extend(under.standing.items().iter().cloned());
                        if under.lossy {
                            // A file it does not state may have changed in its span since.
                            let mut kept = FileBook::default();
                            for state in holding.files.files() {
                                if states(&under.files, &state.path) {
                                    kept.add(state.clone());
                                }
                            }
                            holding.files = kept;
                            holding.lossy = true;
                        }
                        for state in under.files.files() {
                            holding.files.add(state.clone());
                        }
                    }
                }
            }
            if summary.kind != SummaryKind::Condensed {
                // A leaf is the only record of its span's files; one the engine truncated
                // (no summary written) lists none of them.
                holding.lossy =
                    summary.escalation >= TRUNCATED || may_have_cut_files(&summary.text);
            }
            let standing = carry::standing_in(&summary.text);
            holding.standing.extend(standing.items().iter().cloned());
            for state in ctxhost_offline_summary::files_in(&summary.text).files() {
                holding.files.add(state.clone());
            }
            self.by_summary.insert(summary.id.clone(), holding);
        }
        Ok(&self.by_summary[&summary.id])
    }

    /// The standing facts `summary` and the summaries under it state, in the order they were
    /// stated, each subject at its newest value.
    pub fn of(
        &mut self,
        store: &Store,
        conv: i64,
        summary: &SummaryRow,
    ) -> Result<Book, EngineError> {
        Ok(self.holding(store, conv, summary)?.standing.clone())
    }

    /// The files `summary` and the summaries under it list, each at its newest state, in the
    /// order last touched.
    pub fn files_of(
        &mut self,
        store: &Store,
        conv: i64,
        summary: &SummaryRow,
    ) -> Result<FileBook, EngineError> {
        Ok(self.holding(store, conv, summary)?.files.clone())
    }

    /// The standing facts held under `summary` that its own text no longer states (by the
    /// rule the host restores an LLM's summary by: an item is kept while its value is in the
    /// text; notes held as said are the summary's to weigh).
    pub fn dropped(
        &mut self,
        store: &Store,
        conv: i64,
        summary: &SummaryRow,
    ) -> Result<Vec<Standing>, EngineError> {
        let held = &self.holding(store, conv, summary)?.standing;
        let text = summary.text.to_lowercase();
        Ok(held
            .items()
            .iter()
            .filter(|item| item.kind != Kind::Note)
            .filter(|item| !text.contains(&item.value.to_lowercase()))
            .cloned()
            .collect())
    }

    /// The files held under `summary` whose newest state its own Files section no longer
    /// states (a cut dropped the file, or its last command), in the order last touched.
    pub fn dropped_files(
        &mut self,
        store: &Store,
        conv: i64,
        summary: &SummaryRow,
    ) -> Result<Vec<FileState>, EngineError> {
        let held = &self.holding(store, conv, summary)?.files;
        let own = ctxhost_offline_summary::files_in(&summary.text);
        Ok(held
            .files()
            .iter()
            .filter(|state| !own.files().contains(state))
            .cloned()
            .collect())
    }
}

impl Held {
    /// For each of `children` (a run to merge, oldest first), its [`Held::dropped_files`]
    /// that no later child may have changed without stating (one whose span may have cut
    /// files and does not state it): those are put back at a state no newer one replaced;
    /// and the paths its text lists that a later child may have changed so.
    pub fn dropped_files_of_run(
        &mut self,
        store: &Store,
        conv: i64,
        children: &[SummaryRow],
    ) -> Result<Vec<ChildFiles>, EngineError> {
        let mut lossy_later: Vec<FileBook> = Vec::new();
        let mut out = Vec::with_capacity(children.len());
        for child in children.iter().rev() {
            let unsure = |path: &str| !lossy_later.iter().all(|later| states(later, path));
            let dropped = self.dropped_files(store, conv, child)?;
            let kept: Vec<FileState> = dropped
                .into_iter()
                .filter(|state| !unsure(&state.path))
                .collect();
            // The files its own text lists that a later child may have changed unsaid.
            let stale: Vec<String> = ctxhost_offline_summary::files_in(&child.text)
                .files()
                .iter()
                .filter(|state| unsure(&state.path))
                .map(|state| state.path.clone())
                .collect();
            out.push(ChildFiles {
                put_back: kept,
                unsure: stale,
            });
            let holding = self.holding(store, conv, child)?;
            if holding.lossy {
                lossy_later.push(holding.files.clone());
            }
        }
        out.reverse();
        Ok(out)
    }
}

/// What a merge does with one child's files (see [`Held::dropped_files_of_run`]).
#[derive(Debug)]
pub struct ChildFiles {
    /// The files its cut dropped, at their newest state, to put back.
    pub put_back: Vec<FileState>,
    /// The paths its text lists that a later child may have changed without saying.
    pub unsure: Vec<String>,
}

/// Whether `book` states the file at `path` (at it, or renamed from it).
fn states(book: &FileBook, path: &str) -> bool {
    book.files()
        .iter()
        .any(|f| f.path == path || f.renamed_from.as_deref() == Some(path))
}

/// `items` as a standing section, in the digest's form (what summarizers read back).
pub fn section(items: &[Standing]) -> String {
    let mut out = String::from("Standing:\n");
    for item in items {
        out.push_str("- ");
        out.push_str(&item.line());
        out.push('\n');
    }
    out
}

/// `files` as a Files section, in the digest's form (what summarizers read back).
pub fn files_section(files: &[FileState]) -> String {
    let mut out = String::from("Files:\n");
    for state in files {
        out.push_str("- ");
        out.push_str(&state.line());
        out.push('\n');
    }
    out
}

/// `text` without the lines of its Files sections that list one of `paths`.
pub fn without_files(text: &str, paths: &[String]) -> String {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_end() == "Files:" {
            inside = true;
        } else if inside {
            match line.strip_prefix("- ") {
                Some(item) => {
                    let listed = FileState::parse_line(item)
                        .is_some_and(|state| paths.contains(&state.path));
                    if listed {
                        continue;
                    }
                }
                None => inside = false,
            }
        }
        out.push(line);
    }
    out.join("\n")
}
