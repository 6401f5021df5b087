//! The standing facts and the files a summary block's span holds, read down the DAG: those
//! the block's own sections state and those of every summary under it, each subject and each
//! file at its newest state.
//!
//! A block written into a small room (a round whose newest turn left little) keeps the
//! standing facts and files it has room for; the summaries under it are stored unchanged and
//! still state the rest. A merge reading only the block's text would lose those for good, so
//! a merge reads them back from there, and a round with room for them merges the blocks that
//! lost some (see `compaction`). A leaf that may have cut its files (nothing it states says
//! which) has its files read from its stored messages, which lcm keeps whole.

use std::collections::HashMap;

use ctxhost_offline_summary::budget::Part;
use ctxhost_offline_summary::carry;
use ctxhost_offline_summary::files::{FileBook, FileState};
use ctxhost_offline_summary::sections;
use ctxhost_offline_summary::standing::{Book, Standing};
use ctxhost_sdk::EngineError;

use ctxhost_lcm_store::{Store, SummaryKind, SummaryRow};

use crate::summarize;

/// A summary's escalation when the engine truncated its sources instead of summarizing them.
const TRUNCATED: u8 = 2;

/// What one summary's span holds.
#[derive(Debug, Clone, Default)]
struct Holding {
    standing: Book,
    /// Each file at its newest state, in the order last touched.
    files: FileBook,
}

/// Whether a cut may have dropped files from `text`: both cuts a leaf may go through (the
/// offline summary's own, and the engine's when a summary is over its room) take the
/// narrative and the progress before any file, so a summary still stating one of those kept
/// every file. Remarks are no such sign: the engine's cut reads a digest's `Constraints:` as
/// beside the standing facts, kept past the files over their share.
fn may_have_cut_files(text: &str) -> bool {
    !sections::parts(text)
        .iter()
        .any(|(part, _)| matches!(part, Part::Narrative | Part::Progress))
}

/// The files a leaf's stored messages touched, each at its last state, read as the offline
/// summarizer reads them (the same rendering a leaf's summarizer is given).
fn files_of_sources(store: &Store, leaf: &SummaryRow) -> Result<FileBook, EngineError> {
    let rowids: Vec<i64> = store
        .messages_under(&leaf.id)?
        .iter()
        .map(|(rowid, _, _)| *rowid)
        .collect();
    let mut messages = Vec::with_capacity(rowids.len());
    for stored in store.messages_by_rowid(&rowids)? {
        let message = stored.message().map_err(|e| store.error(e))?;
        messages.push((stored.seq, message));
    }
    let call_names: HashMap<&str, &str> = messages
        .iter()
        .flat_map(|(_, message)| message.tool_calls())
        .map(|call| (call.id(), call.name()))
        .collect();
    let sources: Vec<_> = messages
        .iter()
        .flat_map(|(seq, message)| summarize::message_sources(*seq, message, &call_names))
        .collect();
    Ok(ctxhost_offline_summary::files_touched(
        &summarize::render_sources(&sources, u64::MAX),
    ))
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
                        for state in under.files.files() {
                            holding.files.add(state.clone());
                        }
                    }
                }
            }
            let cut = summary.kind != SummaryKind::Condensed
                && (summary.escalation >= TRUNCATED || may_have_cut_files(&summary.text));
            if cut {
                // A leaf that may have cut its files (or a truncation, which lists none): its
                // messages are stored whole, so its files are read from them.
                holding.files = files_of_sources(store, summary)?;
            } else {
                for state in ctxhost_offline_summary::files_in(&summary.text).files() {
                    holding.files.add(state.clone());
                }
            }
            let standing = carry::standing_in(&summary.text);
            holding.standing.extend(standing.items().iter().cloned());
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
    /// text). Notes held as said are among them: a small room cuts them first, and a round
    /// with room states them again like any other kind.
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

/// `items` as a standing section, in the digest's form (what summarizers read back).
pub fn section(items: &[Standing]) -> String {
    listed("Standing:", items.iter().map(Standing::line))
}

/// `files` as a Files section, in the digest's form (what summarizers read back).
pub fn files_section(files: &[FileState]) -> String {
    listed("Files:", files.iter().map(FileState::line))
}

/// A heading, then one `- ` line for each of `lines`.
fn listed(heading: &str, lines: impl Iterator<Item = String>) -> String {
    let mut out = format!("{heading}\n");
    for line in lines {
        out.push_str("- ");
        out.push_str(&line);
        out.push('\n');
    }
    out
}
