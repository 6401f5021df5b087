//! The database schema and its migrations.
//!
//! The schema version lives in `PRAGMA user_version`. Each migration moves the store up one
//! version inside its own transaction, so a store written by an older release opens in a newer
//! one, and a crash mid-migration leaves the previous version intact. A store written by a newer
//! release is refused rather than misread.

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// Migration `i` (0-based) takes the store from version `i` to version `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: the lossless store: conversations, verbatim messages, the summary DAG, the context
    // list the model sees, and full-text indexes over messages and summaries.
    r#"
    CREATE TABLE conversations (
        id          INTEGER PRIMARY KEY,
        session_id  TEXT NOT NULL,
        created_at  INTEGER NOT NULL
    );
    CREATE INDEX conversations_by_session ON conversations(session_id, id);

    -- `json` is the message exactly as the host passed it; `text` is what search sees; `head`
    -- marks leading system messages, which are stored but never summarized.
    CREATE TABLE messages (
        id              INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id),
        seq             INTEGER NOT NULL,
        role            TEXT NOT NULL,
        head            INTEGER NOT NULL DEFAULT 0,
        json            TEXT NOT NULL,
        text            TEXT NOT NULL,
        tokens          INTEGER NOT NULL,
        hash            TEXT NOT NULL,
        created_at      INTEGER NOT NULL,
        UNIQUE (conversation_id, seq)
    );
    -- Head messages are few: a partial index finds them without reading the conversation.
    CREATE INDEX messages_head ON messages(conversation_id) WHERE head = 1;

    CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, content = 'messages', content_rowid = 'id', tokenize = 'unicode61'
    );
    -- Rows are indexed by the code that inserts them, in one statement per batch: an insert
    -- trigger would make FTS5 flush its pending index at every row's statement savepoint,
    -- which costs several times the insert itself. Deletes stay in sync through a trigger.
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END;

    CREATE TABLE summaries (
        id              TEXT PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id),
        kind            TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
        depth           INTEGER NOT NULL,
        seq_start       INTEGER NOT NULL,
        seq_end         INTEGER NOT NULL,
        time_start      INTEGER NOT NULL,
        time_end        INTEGER NOT NULL,
        message_count   INTEGER NOT NULL,
        source_tokens   INTEGER NOT NULL,
        tokens          INTEGER NOT NULL,
        block_tokens    INTEGER NOT NULL,
        text            TEXT NOT NULL,
        summarizer      TEXT NOT NULL,
        escalation      INTEGER NOT NULL,
        created_at      INTEGER NOT NULL
    );
    CREATE INDEX summaries_by_conversation ON summaries(conversation_id, depth);

    CREATE VIRTUAL TABLE summaries_fts USING fts5(
        text, content = 'summaries', content_rowid = 'rowid', tokenize = 'unicode61'
    );
    CREATE TRIGGER summaries_fts_delete AFTER DELETE ON summaries BEGIN
        INSERT INTO summaries_fts(summaries_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    END;

    -- Leaf summaries point at the messages they cover, condensed ones at the summaries they
    -- merge; `ord` keeps the original order.
    CREATE TABLE summary_messages (
        summary_id  TEXT NOT NULL,
        ord         INTEGER NOT NULL,
        message_id  INTEGER NOT NULL,
        PRIMARY KEY (summary_id, ord)
    ) WITHOUT ROWID;
    CREATE INDEX summary_messages_by_message ON summary_messages(message_id);

    CREATE TABLE summary_parents (
        parent_id   TEXT NOT NULL,
        ord         INTEGER NOT NULL,
        child_id    TEXT NOT NULL,
        PRIMARY KEY (parent_id, ord)
    ) WITHOUT ROWID;
    CREATE INDEX summary_parents_by_child ON summary_parents(child_id);

    -- What the model sees after the head, in `position` order (positions may have gaps: a run
    -- replaced by one summary keeps the position of its first item, so nothing is renumbered).
    CREATE TABLE context_items (
        conversation_id INTEGER NOT NULL,
        position        INTEGER NOT NULL,
        message_id      INTEGER,
        summary_id      TEXT,
        PRIMARY KEY (conversation_id, position),
        CHECK ((message_id IS NULL) <> (summary_id IS NULL))
    ) WITHOUT ROWID;
    "#,
    // 2: per-compaction telemetry, so `last_compaction` survives a restart of the host.
    r#"
    CREATE TABLE compactions (
        id              INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL,
        created_at      INTEGER NOT NULL,
        report          TEXT NOT NULL
    );
    CREATE INDEX compactions_by_conversation ON compactions(conversation_id, id);
    "#,
    // 3: a larger in-memory buffer for the message index (FTS5's `hashsize`, 1 MB by default).
    // A big ingest then writes fewer, larger index segments and spends far less time merging
    // them; the buffer is only used while a write transaction is open.
    r#"
    INSERT INTO messages_fts(messages_fts, rank) VALUES ('hashsize', 8388608);
    "#,
    // 4: messages by content hash, so ingest can tell whether a message the host sends outside
    // the aligned tail (another engine's summary, turns it kept) is already stored.
    r#"
    CREATE INDEX messages_by_hash ON messages(conversation_id, hash);
    "#,
    // 5: a message's identity is its content and the message it follows (`prev_id`, 0 for the
    // first), so a prefix re-sent, a replay or a resume finds what is stored instead of storing
    // it again. Stores written before knew no other order than `seq`: each message follows the
    // previous non-head one.
    r#"
    ALTER TABLE messages ADD COLUMN prev_id INTEGER NOT NULL DEFAULT 0;
    UPDATE messages SET prev_id = coalesce((
        SELECT p.id FROM messages p
        WHERE p.conversation_id = messages.conversation_id AND p.head = 0 AND p.seq < messages.seq
        ORDER BY p.seq DESC LIMIT 1
    ), 0) WHERE head = 0;
    CREATE INDEX messages_by_prev ON messages(conversation_id, prev_id);
    "#,
    // 6: each message's text is kept once. The searchable text derives from the original JSON,
    // so the full-text index keeps no copy of it (contentless, rows deleted by id) and the
    // column goes; large originals are written zstd-compressed from now on (as blobs). The
    // index buffers up to 32 MB of terms per transaction (fewer segments to merge in a large
    // ingest). Summaries get an index by their newest message.
    r#"
    DROP TRIGGER messages_fts_delete;
    DROP TABLE messages_fts;
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, content = '', contentless_delete = 1, tokenize = 'unicode61'
    );
    INSERT INTO messages_fts(messages_fts, rank) VALUES ('hashsize', 33554432);
    INSERT INTO messages_fts(rowid, text) SELECT id, text FROM messages;
    ALTER TABLE messages DROP COLUMN text;
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        DELETE FROM messages_fts WHERE rowid = old.id;
    END;
    -- Newest summaries first without sorting every match (`lcm_grep`'s default order).
    CREATE INDEX summaries_by_end ON summaries(conversation_id, seq_end);
    "#,
    // 7: the tables take the names they have in PostgreSQL (`lcm_*`), so both databases answer
    // the same statements about the same tables. The message index keeps no text and is
    // renamed with its own tables; the summaries' index names its content table, so it is made
    // again over the renamed one. Indexes keep their names (no statement names them but one).
    r#"
    DROP TRIGGER messages_fts_delete;
    DROP TRIGGER summaries_fts_delete;
    DROP TABLE summaries_fts;
    ALTER TABLE conversations RENAME TO lcm_conversations;
    ALTER TABLE messages RENAME TO lcm_messages;
    ALTER TABLE summaries RENAME TO lcm_summaries;
    ALTER TABLE summary_messages RENAME TO lcm_summary_messages;
    ALTER TABLE summary_parents RENAME TO lcm_summary_parents;
    ALTER TABLE context_items RENAME TO lcm_context_items;
    ALTER TABLE compactions RENAME TO lcm_compactions;
    ALTER TABLE messages_fts RENAME TO lcm_messages_fts;
    CREATE VIRTUAL TABLE lcm_summaries_fts USING fts5(
        text, content = 'lcm_summaries', content_rowid = 'rowid', tokenize = 'unicode61'
    );
    INSERT INTO lcm_summaries_fts(lcm_summaries_fts) VALUES ('rebuild');
    CREATE TRIGGER lcm_messages_fts_delete AFTER DELETE ON lcm_messages BEGIN
        DELETE FROM lcm_messages_fts WHERE rowid = old.id;
    END;
    CREATE TRIGGER lcm_summaries_fts_delete AFTER DELETE ON lcm_summaries BEGIN
        INSERT INTO lcm_summaries_fts(lcm_summaries_fts, rowid, text)
        VALUES ('delete', old.rowid, old.text);
    END;
    "#,
];

/// The version that dropped the duplicated text: a store migrated past it is vacuumed once, so
/// the space comes back to the file system.
const TEXT_DROPPED: u32 = 6;

/// The schema version this build writes.
pub const LATEST: u32 = MIGRATIONS.len() as u32;

pub fn version(conn: &Connection) -> Result<u32, StoreError> {
    Ok(conn.query_row("PRAGMA user_version", [], |row| row.get(0))?)
}

/// Brings the store up to [`LATEST`].
pub fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    migrate_to(conn, LATEST)
}

/// Brings the store up to `target` (tests use it to build an old store).
///
/// Processes opening a new or old store at once migrate one after the other: each step runs in
/// a transaction taken for writing up front (`IMMEDIATE`, so the others wait up to the busy
/// timeout) and reads the version again inside it, so a step another process just applied is
/// not applied twice.
pub fn migrate_to(conn: &mut Connection, target: u32) -> Result<(), StoreError> {
    let first = version(conn)?;
    let target = target.min(LATEST);
    let mut current = first;
    loop {
        if current > LATEST {
            return Err(StoreError::Schema(format!(
                "schema version {current} is newer than this engine knows ({LATEST}); \
                 upgrade the lcm plugin"
            )));
        }
        if current >= target {
            break;
        }
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let now = version(&tx)?;
        if now == current {
            tx.execute_batch(MIGRATIONS[current as usize])?;
            // PRAGMA takes no bound parameters; the value is our own integer.
            tx.execute_batch(&format!("PRAGMA user_version = {}", current + 1))?;
            current += 1;
        } else {
            current = now;
        }
        tx.commit()?;
    }
    if (1..TEXT_DROPPED).contains(&first) && target >= TEXT_DROPPED {
        conn.execute_batch("VACUUM")?;
    }
    Ok(())
}
