//! The consistency checks `doctor` runs on either database, once: rows stored twice, links
//! pointing nowhere or lost, messages edited since they were stored, and (as notes, not
//! faults) rows outside the model's current view. Each database adds what only it has (SQLite
//! its quick check, full-text indexes and repairs; PostgreSQL its schema version and
//! `pg_trgm`).

use super::sql::{Check, Param, Sql, Stmt};
use super::{Doctor, Problem, StoreError};
use crate::ids::message_hash;

/// What a database's doctor says to do about a fault it cannot or may repair.
pub struct Advice {
    /// Whether `apply` repairs duplicates and lost links here.
    pub repairs: bool,
    /// How to get deleted rows back (after "; ").
    pub restore: &'static str,
    /// How to get edited messages back (after "; ").
    pub restore_edited: &'static str,
}

/// What to do about a fault.
#[derive(Clone, Copy)]
enum Remedy {
    /// `doctor {"apply": true}`, where the database repairs it; the words say what it does.
    Apply(&'static str),
    Restore,
    /// Nothing the doctor can say.
    None,
}

/// (check, name, what it means, what to do).
const FAULTS: &[(Check, &str, &str, Remedy)] = &[
    (
        Check::DuplicateMessages,
        "duplicate_messages",
        "messages stored twice (the same content following the same message)",
        Remedy::Apply(" to remove the copies"),
    ),
    (
        Check::SplitConversations,
        "split_conversations",
        "sessions written into two conversations at once (two processes started the session \
         together): the newer conversation is the one used, the older one holds copies of \
         its messages",
        Remedy::None,
    ),
    (
        Check::SequenceGaps,
        "sequence_gaps",
        "sequence numbers missing: stored messages were deleted",
        Remedy::Restore,
    ),
    (
        Check::BrokenMessageLinks,
        "broken_message_links",
        "leaf summaries point at messages that are not stored",
        Remedy::Restore,
    ),
    (
        Check::MissingSourceLinks,
        "missing_source_links",
        "leaf summaries lost links to their source messages",
        Remedy::Apply(""),
    ),
    (
        Check::MissingChildLinks,
        "missing_child_links",
        "condensed summaries lost links to their children",
        Remedy::Apply(""),
    ),
    (
        Check::BrokenSummaryLinks,
        "broken_summary_links",
        "condensed summaries point at summaries that are not stored",
        Remedy::None,
    ),
    (
        Check::LeavesWithoutSources,
        "leaves_without_sources",
        "leaf summaries with no source messages",
        Remedy::None,
    ),
    (
        Check::CondensedWithoutChildren,
        "condensed_without_children",
        "condensed summaries with no child summaries",
        Remedy::None,
    ),
    (
        Check::MessagesWithoutConversation,
        "messages_without_conversation",
        "messages whose conversation is not stored (rows deleted or restored by hand with the \
         database's checks off)",
        Remedy::None,
    ),
    (
        Check::DanglingContextItems,
        "dangling_context_items",
        "context items point at rows that are not stored (the next call rebuilds the list)",
        Remedy::None,
    ),
];

/// Findings that are not faults: the model's view is what the host last sent, so stored rows
/// outside it (turns another engine left out, summaries of an earlier view) are normal; they
/// stay searchable and recoverable through the tools.
const NOTES: &[(Check, &str, &str)] = &[
    (
        Check::MessagesOutOfView,
        "messages_out_of_view",
        "messages neither in the context nor under any summary (reachable through the tools)",
    ),
    (
        Check::SummariesOutOfView,
        "summaries_out_of_view",
        "summaries neither in the context nor merged into another",
    ),
];

/// Runs every check, adding what it finds to `found`.
pub fn examine(c: &mut dyn Sql, advice: &Advice, found: &mut Doctor) -> Result<(), StoreError> {
    for (check, name, meaning, remedy) in FAULTS {
        let count = count(c, *check)?;
        if count == 0 {
            continue;
        }
        let detail = match remedy {
            Remedy::Apply(what) if advice.repairs => {
                format!("{meaning}; run doctor with {{\"apply\": true}}{what}")
            }
            Remedy::Restore => format!("{meaning}; {}", advice.restore),
            Remedy::Apply(_) | Remedy::None => meaning.to_string(),
        };
        found.problems.push(Problem {
            check: name,
            count,
            detail,
        });
    }
    let edited = edited_messages(c)?;
    if !edited.is_empty() {
        let shown: Vec<String> = edited.iter().take(10).map(Edited::describe).collect();
        found.problems.push(Problem {
            check: "checksum_mismatch",
            count: edited.len() as u64,
            detail: format!(
                "messages changed since they were stored ({}); {}",
                shown.join(", "),
                advice.restore_edited
            ),
        });
    }
    for (check, name, meaning) in NOTES {
        let count = count(c, *check)?;
        if count > 0 {
            found.notes.push(Problem {
                check: name,
                count,
                detail: meaning.to_string(),
            });
        }
    }
    Ok(())
}

fn count(c: &mut dyn Sql, check: Check) -> Result<u64, StoreError> {
    c.one(Stmt::Count(check), &[], |row| row.u64(0))
}

/// A stored message whose JSON no longer hashes to its checksum.
pub struct Edited {
    pub rowid: i64,
    pub conversation: i64,
    pub seq: i64,
    pub hash: String,
}

impl Edited {
    fn describe(&self) -> String {
        format!("conversation {} msg_{}", self.conversation, self.seq)
    }
}

/// Every message whose JSON no longer hashes to the checksum taken when it was stored (a value
/// that no longer reads back is edited too).
pub fn edited_messages(c: &mut dyn Sql) -> Result<Vec<Edited>, StoreError> {
    let mut edited = Vec::new();
    c.query(Stmt::MessageChecksums, &[] as &[Param<'_>], &mut |row| {
        let hash = row.text(3)?;
        if !row.json(4).is_ok_and(|json| message_hash(&json) == hash) {
            edited.push(Edited {
                rowid: row.i64(0)?,
                conversation: row.i64(1)?,
                seq: row.i64(2)?,
                hash,
            });
        }
        Ok(true)
    })?;
    Ok(edited)
}
