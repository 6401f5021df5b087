//! Every statement the store's algorithms run, by name: each database's module holds the SQL
//! text of each (`sqlite/statements.rs`, `postgres/statements.rs`), so a statement one of them
//! lacks is a compile error, not a string found missing at run time.
//!
//! "Message columns" are `id, seq, role, head, json, tokens, created_at`; "summary columns"
//! the sixteen fields of [`SummaryRow`](super::SummaryRow), in its order.

/// A statement, with its parameters (in order) and the columns it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stmt {
    // --- conversations and the context list ---------------------------------------------
    /// (session) → id of its newest conversation.
    CurrentConversation,
    /// (session, created_at) → the new conversation's id.
    NewConversation,
    /// (): makes the write transaction the only one creating conversations until it ends
    /// (SQLite's write transactions already are).
    LockConversations,
    /// (conversation) → position, is a message, message columns, summary columns; by position.
    Context,
    /// (conversation) → position, message id?, summary id?; by position.
    ContextKeys,
    /// (conversation, positions): deletes those items.
    DeleteContextItems,
    /// (conversation, from position): deletes the items from there on.
    DeleteContextFrom,
    /// Rows of (conversation, position, message id?, summary id?).
    InsertContextItems,
    /// The summary columns, in order (and its full-text row where that is separate).
    InsertSummary,
    /// Rows of (summary id, ord, message id).
    LinkSources,
    /// Rows of (parent id, ord, child id).
    LinkChildren,
    /// A summary written by compaction: its columns (as [`Stmt::InsertSummary`]), then the
    /// ids of its source messages, those of its children (one list empty), the positions of the
    /// context items it replaces, and the first of them, which it takes. Reports one row
    /// changed (the summary's context item) when every replaced item was there; otherwise
    /// another count (`Backend::write_one` then undoes it, where the database has not).
    WriteSummary,

    // --- lookups ---------------------------------------------------------------------------
    /// (conversation, seq) → message columns.
    MessageBySeq,
    /// (row ids) → id asked, then message columns (NULLs for a missing row), in the order asked.
    MessagesByRowid,
    /// (summary id, conversation) → summary columns.
    Summary,
    /// (conversation, summary ids) → those of the conversation's summaries, in no order.
    Summaries,
    /// (summary id) → its children's ids, in order.
    SummaryChildren,
    /// (summary id) → ids of the summaries merging it.
    SummaryParents,
    /// (summary id) → seq of its source messages, in order.
    SummarySourceSeqs,
    /// (conversation, summary id) → whether it is in the context list.
    SummaryInContext,
    /// (summary id) → id, seq, tokens of every message under it, by seq.
    MessagesUnder,
    /// (message id) → the leaf summary covering it.
    LeafOf,
    /// (summary id) → its topmost ancestor (itself when merged into none).
    TopOf,
    /// (message id) → every summary above it, leaves and their ancestors.
    Ancestors,

    // --- the chain of messages, and storing them ---------------------------------------------
    /// (conversation) → hash of each head message.
    HeadHashes,
    /// (conversation) → whether it holds a non-head message.
    HasRawMessages,
    /// (conversation, seq, limit) → id, seq, prev id, hash of non-head messages after seq.
    RawAfter,
    /// (conversation, prev id, hash) → id, seq, prev id, hash: the first such non-head one.
    RawChild,
    /// (conversation, hash) → id, seq, prev id, hash of the non-head ones, by seq.
    RawWithHash,
    /// (conversation, hashes) → those of the hashes some non-head message has.
    StoredHashes,
    /// (message row ids, summary ids) → the summaries that have any of those messages as a
    /// source or any of those summaries as a child.
    SummariesOver,
    /// (summary ids) → for each that covers a stored message: its id, then the id, seq, prev
    /// id and hash of the last one (a leaf's last stored source; a condensed summary's through
    /// its last child, level after level).
    LastMessages,
    /// (conversation) → the seq the next message gets; no row when the conversation is not
    /// stored. On PostgreSQL it holds the conversation's row until the transaction ends, so the
    /// conversation cannot be deleted while its messages are written.
    NextSeq,
    /// (count) → that many new message ids, ascending.
    AllocateMessageIds,
    /// Rows of (id, conversation, seq, role, head, json, searchable text, tokens, hash,
    /// prev id, created_at).
    InsertMessages,

    // --- telemetry and status ---------------------------------------------------------------------
    /// Rows of (conversation, created_at, report).
    InsertCompactions,
    /// (conversation) → the newest report.
    LastCompaction,
    /// (conversation) → messages, head messages, their tokens.
    MessageStats,
    /// (conversation) → depth, count, tokens per depth.
    SummaryStats,
    /// (conversation) → messages and summaries in the context list.
    ContextStats,
    /// (conversation) → compactions recorded.
    CompactionCount,

    // --- sessions -----------------------------------------------------------------------------
    /// (session or NULL for all) → session, messages, conversations, summaries, deepest
    /// summary?, newest conversation, last change (RFC 3339, UTC)?; by session.
    Sessions,
    /// (conversation) → tokens of its context list, items in it.
    ContextTokens,
    /// (session) → messages stored for it.
    SessionMessages,
    /// (session): deletes everything of it, links first, conversations last.
    DeleteSession,
    /// (session) → id, created_at of its conversations, oldest first.
    ExportConversations,
    /// (conversation) → seq, role, head, json, tokens, hash, seq followed?, created_at; by seq.
    ExportMessages,
    /// (conversation) → summary id, source seq; by summary and ord.
    ExportSources,
    /// (conversation) → parent id, child id; by parent and ord.
    ExportChildren,
    /// (conversation) → summary columns.
    ExportSummaries,
    /// (conversation) → position, message seq?, summary id?; by position.
    ExportContext,
    /// (conversation) → created_at, report; oldest first.
    ExportCompactions,

    // --- doctor ---------------------------------------------------------------------------
    /// () → how many rows fail the check.
    Count(Check),
    /// () → id, conversation, seq, hash, json of every message.
    MessageChecksums,
}

/// A consistency check `doctor` runs on either database, by counting offending rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    DuplicateMessages,
    SplitConversations,
    SequenceGaps,
    BrokenMessageLinks,
    MissingSourceLinks,
    MissingChildLinks,
    BrokenSummaryLinks,
    LeavesWithoutSources,
    CondensedWithoutChildren,
    DanglingContextItems,
    MessagesWithoutConversation,
    MessagesOutOfView,
    SummariesOutOfView,
}

/// The message columns of `m`, as [`Stmt`] describes them (both databases' SQL uses it).
macro_rules! message_columns {
    () => {
        "m.id, m.seq, m.role, m.head, m.json, m.tokens, m.created_at"
    };
}

/// The summary columns of `s`.
macro_rules! summary_columns {
    () => {
        "s.id, s.conversation_id, s.kind, s.depth, s.seq_start, s.seq_end, s.time_start, \
         s.time_end, s.message_count, s.source_tokens, s.tokens, s.block_tokens, s.text, \
         s.summarizer, s.escalation, s.created_at"
    };
}
