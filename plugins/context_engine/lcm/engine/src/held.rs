//! The standing facts a summary block's span holds, read down the DAG: those the block's
//! standing section states and those of every summary under it, each subject at its newest
//! value.
//!
//! A block written into a small room (a round whose newest turn left little) keeps the
//! standing facts it has room for; the summaries under it are stored unchanged and still
//! state the rest. A merge reading only the block's text would lose those facts for good, so a
//! merge reads them back from there, and a round with room for them merges the blocks that
//! lost some (see `compaction`).

use std::collections::HashMap;

use ctxhost_offline_summary::carry;
use ctxhost_offline_summary::standing::{Book, Kind, Standing};
use ctxhost_sdk::EngineError;

use ctxhost_lcm_store::{Store, SummaryKind, SummaryRow};

/// What the summaries of one conversation hold, read once per summary (a summary never
/// changes once written: its id derives from its sources).
#[derive(Debug, Default)]
pub struct Held {
    by_summary: HashMap<String, Book>,
}

impl Held {
    /// The standing facts `summary` and the summaries under it state, in the order they were
    /// stated, each subject at its newest value.
    pub fn of(
        &mut self,
        store: &Store,
        conv: i64,
        summary: &SummaryRow,
    ) -> Result<Book, EngineError> {
        if let Some(book) = self.by_summary.get(&summary.id) {
            return Ok(book.clone());
        }
        let mut book = Book::default();
        if summary.kind == SummaryKind::Condensed {
            // Children in the order they cover the conversation: a newer value wins.
            for child in store.summary_children(&summary.id)? {
                if let Some(child) = store.summary(conv, &child)? {
                    book.extend(self.of(store, conv, &child)?.items().iter().cloned());
                }
            }
        }
        book.extend(carry::standing_in(&summary.text).items().iter().cloned());
        self.by_summary.insert(summary.id.clone(), book.clone());
        Ok(book)
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
        let held = self.of(store, conv, summary)?;
        let text = summary.text.to_lowercase();
        Ok(held
            .items()
            .iter()
            .filter(|item| item.kind != Kind::Note)
            .filter(|item| !text.contains(&item.value.to_lowercase()))
            .cloned()
            .collect())
    }
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
