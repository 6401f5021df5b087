//! The SQL text of each of the store's statements in SQLite's dialect (`?N` parameters,
//! booleans as 0 and 1, the full-text rows kept apart in FTS5 tables).

use crate::sql::{Check, Stmt};

/// The statements `stmt` runs, in order (`query` reads the rows of the last).
pub fn sql(stmt: Stmt) -> &'static [&'static str] {
    match stmt {
        Stmt::CurrentConversation => {
            &["SELECT id FROM lcm_conversations WHERE session_id = ?1 ORDER BY id DESC LIMIT 1"]
        }
        Stmt::NewConversation => &[
            "INSERT INTO lcm_conversations(session_id, created_at) VALUES (?1, ?2) RETURNING id",
        ],
        // A write transaction is `IMMEDIATE`: the one writer of the database already.
        Stmt::LockConversations => &[],
        Stmt::Context => &[concat!(
            "SELECT ci.position, ci.message_id IS NOT NULL, ",
            message_columns!(),
            ", ",
            summary_columns!(),
            " FROM lcm_context_items ci \
             LEFT JOIN lcm_messages m ON m.id = ci.message_id \
             LEFT JOIN lcm_summaries s ON s.id = ci.summary_id \
             WHERE ci.conversation_id = ?1 ORDER BY ci.position"
        )],
        Stmt::ContextKeys => &[
            "SELECT position, message_id, summary_id FROM lcm_context_items \
             WHERE conversation_id = ?1 ORDER BY position",
        ],
        Stmt::DeleteContextItems => &["DELETE FROM lcm_context_items \
             WHERE conversation_id = ?1 AND position IN (SELECT value FROM json_each(?2))"],
        Stmt::DeleteContextFrom => {
            &["DELETE FROM lcm_context_items WHERE conversation_id = ?1 AND position >= ?2"]
        }
        Stmt::InsertContextItems => &[
            "INSERT INTO lcm_context_items(conversation_id, position, message_id, summary_id) \
             VALUES (?1, ?2, ?3, ?4)",
        ],
        Stmt::InsertSummary => &[INSERT_SUMMARY, INSERT_SUMMARY_TEXT],
        Stmt::LinkSources => {
            &["INSERT INTO lcm_summary_messages(summary_id, ord, message_id) VALUES (?1, ?2, ?3)"]
        }
        // Each statement binds the parameters up to the last it names.
        Stmt::WriteSummary => &[
            INSERT_SUMMARY,
            INSERT_SUMMARY_TEXT,
            "INSERT INTO lcm_summary_messages(summary_id, ord, message_id) \
             SELECT ?1, key, value FROM json_each(?17)",
            "INSERT INTO lcm_summary_parents(parent_id, ord, child_id) \
             SELECT ?1, key, value FROM json_each(?18)",
            "DELETE FROM lcm_context_items \
             WHERE conversation_id = ?2 AND position IN (SELECT value FROM json_each(?19))",
            "INSERT INTO lcm_context_items(conversation_id, position, message_id, summary_id) \
             SELECT ?2, ?20, NULL, ?1 WHERE changes() = json_array_length(?19)",
        ],
        Stmt::LinkChildren => {
            &["INSERT INTO lcm_summary_parents(parent_id, ord, child_id) VALUES (?1, ?2, ?3)"]
        }

        Stmt::MessageBySeq => &[concat!(
            "SELECT ",
            message_columns!(),
            " FROM lcm_messages m WHERE m.conversation_id = ?1 AND m.seq = ?2"
        )],
        Stmt::MessagesByRowid => &[concat!(
            "SELECT w.value, ",
            message_columns!(),
            " FROM json_each(?1) w LEFT JOIN lcm_messages m ON m.id = w.value ORDER BY w.key"
        )],
        Stmt::Summary => &[concat!(
            "SELECT ",
            summary_columns!(),
            " FROM lcm_summaries s WHERE s.id = ?1 AND s.conversation_id = ?2"
        )],
        Stmt::Summaries => &[concat!(
            "SELECT ",
            summary_columns!(),
            " FROM json_each(?2) w CROSS JOIN lcm_summaries s ON s.id = w.value \
             WHERE s.conversation_id = ?1"
        )],
        Stmt::SummaryChildren => {
            &["SELECT child_id FROM lcm_summary_parents WHERE parent_id = ?1 ORDER BY ord"]
        }
        Stmt::SummaryParents => {
            &["SELECT parent_id FROM lcm_summary_parents WHERE child_id = ?1 ORDER BY parent_id"]
        }
        Stmt::SummarySourceSeqs => &["SELECT m.seq FROM lcm_summary_messages sm \
             JOIN lcm_messages m ON m.id = sm.message_id WHERE sm.summary_id = ?1 ORDER BY sm.ord"],
        Stmt::SummaryInContext => &["SELECT EXISTS(SELECT 1 FROM lcm_context_items \
             WHERE conversation_id = ?1 AND summary_id = ?2)"],
        // `CROSS JOIN` keeps the walk going from the tree outwards (the planner may otherwise
        // scan every link in the store).
        Stmt::MessagesUnder => &["WITH RECURSIVE tree(id) AS ( \
                 SELECT ?1 \
                 UNION SELECT p.child_id FROM lcm_summary_parents p \
                   JOIN tree ON p.parent_id = tree.id \
             ) \
             SELECT m.id, m.seq, m.tokens FROM tree \
             CROSS JOIN lcm_summary_messages sm ON sm.summary_id = tree.id \
             CROSS JOIN lcm_messages m ON m.id = sm.message_id \
             ORDER BY m.seq"],
        Stmt::LeafOf => {
            &["SELECT summary_id FROM lcm_summary_messages WHERE message_id = ?1 LIMIT 1"]
        }
        Stmt::TopOf => &["WITH RECURSIVE up(id, level) AS ( \
                 SELECT ?1, 0 \
                 UNION SELECT p.parent_id, up.level + 1 FROM lcm_summary_parents p \
                   JOIN up ON p.child_id = up.id \
             ) SELECT id FROM up ORDER BY level DESC LIMIT 1"],
        Stmt::Ancestors => &["WITH RECURSIVE up(id) AS ( \
                 SELECT summary_id FROM lcm_summary_messages WHERE message_id = ?1 \
                 UNION SELECT p.parent_id FROM lcm_summary_parents p JOIN up ON p.child_id = up.id \
             ) SELECT id FROM up"],

        Stmt::HeadHashes => {
            &["SELECT hash FROM lcm_messages WHERE conversation_id = ?1 AND head = 1"]
        }
        Stmt::HasRawMessages => &["SELECT EXISTS(SELECT 1 FROM lcm_messages \
             WHERE conversation_id = ?1 AND head = 0)"],
        Stmt::RawAfter => &["SELECT id, seq, prev_id, hash FROM lcm_messages \
             WHERE conversation_id = ?1 AND seq > ?2 AND head = 0 ORDER BY seq LIMIT ?3"],
        // Ingest runs these two for each message it does not find next in the chain: left to
        // itself, SQLite reads the conversation in `seq` order to skip the sort (every message
        // of it, per message: quadratic). The few matching rows are sorted instead.
        Stmt::RawChild => &["SELECT id, seq, prev_id, hash FROM lcm_messages \
             INDEXED BY messages_by_prev \
             WHERE conversation_id = ?1 AND prev_id = ?2 AND hash = ?3 AND head = 0 \
             ORDER BY seq LIMIT 1"],
        Stmt::RawWithHash => &["SELECT id, seq, prev_id, hash FROM lcm_messages \
             INDEXED BY messages_by_hash \
             WHERE conversation_id = ?1 AND hash = ?2 AND head = 0 ORDER BY seq"],
        // CROSS JOIN: the hashes asked drive the loop, each a search of the index (the
        // planner would otherwise read the conversation's messages and look each one up).
        Stmt::StoredHashes => &["SELECT DISTINCT m.hash FROM json_each(?2) w \
             CROSS JOIN lcm_messages m INDEXED BY messages_by_hash \
             WHERE m.conversation_id = ?1 AND m.hash = w.value AND m.head = 0"],
        Stmt::SummariesOver => &["SELECT summary_id FROM lcm_summary_messages \
             WHERE message_id IN (SELECT value FROM json_each(?1)) \
             UNION SELECT parent_id FROM lcm_summary_parents \
             WHERE child_id IN (SELECT value FROM json_each(?2))"],
        // Down from each summary through last children while it has no stored source; the
        // depth bounds a cycle in a damaged store.
        Stmt::LastMessages => &["WITH RECURSIVE down(origin, id, depth) AS ( \
                 SELECT value, value, 0 FROM json_each(?1) \
                 UNION ALL \
                 SELECT d.origin, (SELECT child_id FROM lcm_summary_parents \
                                   WHERE parent_id = d.id ORDER BY ord DESC LIMIT 1), d.depth + 1 \
                 FROM down d \
                 WHERE d.depth < 64 \
                 AND NOT EXISTS (SELECT 1 FROM lcm_summary_messages sm \
                     JOIN lcm_messages x ON x.id = sm.message_id WHERE sm.summary_id = d.id) \
                 AND EXISTS (SELECT 1 FROM lcm_summary_parents WHERE parent_id = d.id) \
             ) \
             SELECT d.origin, m.id, m.seq, m.prev_id, m.hash FROM down d \
             JOIN lcm_messages m ON m.id = ( \
                 SELECT sm.message_id FROM lcm_summary_messages sm \
                 JOIN lcm_messages x ON x.id = sm.message_id \
                 WHERE sm.summary_id = d.id ORDER BY sm.ord DESC LIMIT 1)"],
        Stmt::NextSeq => {
            &["SELECT coalesce(max(seq), -1) + 1 FROM lcm_messages WHERE conversation_id = ?1"]
        }
        // The ids SQLite itself would give (one past the largest), drawn inside the write
        // transaction, which no other writer shares.
        Stmt::AllocateMessageIds => &["WITH RECURSIVE n(i) AS ( \
                 SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 \
             ) SELECT (SELECT coalesce(max(id), 0) FROM lcm_messages) + i FROM n"],
        // One row per statement, the index row apart (an insert trigger would make FTS5 flush
        // its pending terms at every statement; see `hashsize` in the schema).
        Stmt::InsertMessages => &[
            "INSERT INTO lcm_messages(id, conversation_id, seq, role, head, json, tokens, hash, \
             prev_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?8, ?9, ?10, ?11)",
            "INSERT INTO lcm_messages_fts(rowid, text) VALUES (?1, ?7)",
        ],

        Stmt::InsertCompactions => &[
            "INSERT INTO lcm_compactions(conversation_id, created_at, report) VALUES (?1, ?2, ?3)",
        ],
        Stmt::LastCompaction => &[
            "SELECT report FROM lcm_compactions WHERE conversation_id = ?1 \
             ORDER BY id DESC LIMIT 1",
        ],
        Stmt::MessageStats => &[
            "SELECT count(*), coalesce(sum(head), 0), coalesce(sum(tokens), 0) \
             FROM lcm_messages WHERE conversation_id = ?1",
        ],
        Stmt::SummaryStats => &["SELECT depth, count(*), coalesce(sum(tokens), 0) \
             FROM lcm_summaries WHERE conversation_id = ?1 GROUP BY depth ORDER BY depth"],
        Stmt::ContextStats => &["SELECT count(message_id), count(summary_id) \
             FROM lcm_context_items WHERE conversation_id = ?1"],
        Stmt::CompactionCount => {
            &["SELECT count(*) FROM lcm_compactions WHERE conversation_id = ?1"]
        }

        Stmt::Sessions => &[SESSIONS],
        // Tokens of the context list after the head (the system prompt, which the host sends
        // each turn, is not counted): raw messages and summary blocks.
        Stmt::ContextTokens => &[
            "SELECT coalesce(sum(coalesce(m.tokens, s.block_tokens)), 0), count(*) \
             FROM lcm_context_items ci \
             LEFT JOIN lcm_messages m ON m.id = ci.message_id \
             LEFT JOIN lcm_summaries s ON s.id = ci.summary_id \
             WHERE ci.conversation_id = ?1",
        ],
        Stmt::SessionMessages => &[
            "SELECT count(*) FROM lcm_messages WHERE conversation_id IN \
             (SELECT id FROM lcm_conversations WHERE session_id = ?1)",
        ],
        Stmt::DeleteSession => DELETE_SESSION,
        Stmt::ExportConversations => &["SELECT id, created_at FROM lcm_conversations \
             WHERE session_id = ?1 ORDER BY id"],
        Stmt::ExportMessages => &[
            "SELECT m.seq, m.role, m.head, m.json, m.tokens, m.hash, p.seq, m.created_at \
             FROM lcm_messages m LEFT JOIN lcm_messages p ON p.id = m.prev_id \
             WHERE m.conversation_id = ?1 ORDER BY m.seq",
        ],
        Stmt::ExportSources => &["SELECT sm.summary_id, m.seq FROM lcm_summary_messages sm \
             JOIN lcm_summaries s ON s.id = sm.summary_id \
             JOIN lcm_messages m ON m.id = sm.message_id \
             WHERE s.conversation_id = ?1 ORDER BY sm.summary_id, sm.ord"],
        Stmt::ExportChildren => &["SELECT p.parent_id, p.child_id FROM lcm_summary_parents p \
             JOIN lcm_summaries s ON s.id = p.parent_id \
             WHERE s.conversation_id = ?1 ORDER BY p.parent_id, p.ord"],
        Stmt::ExportSummaries => &[concat!(
            "SELECT ",
            summary_columns!(),
            " FROM lcm_summaries s WHERE s.conversation_id = ?1"
        )],
        Stmt::ExportContext => &["SELECT ci.position, m.seq, ci.summary_id \
             FROM lcm_context_items ci LEFT JOIN lcm_messages m ON m.id = ci.message_id \
             WHERE ci.conversation_id = ?1 ORDER BY ci.position"],
        Stmt::ExportCompactions => &["SELECT created_at, report FROM lcm_compactions \
             WHERE conversation_id = ?1 ORDER BY id"],

        Stmt::Count(check) => count(check),
        Stmt::MessageChecksums => {
            &["SELECT id, conversation_id, seq, hash, json FROM lcm_messages"]
        }
    }
}

/// A summary's row ([`Stmt::InsertSummary`]'s parameters), and its full-text row after it.
const INSERT_SUMMARY: &str = "INSERT INTO lcm_summaries(id, conversation_id, kind, depth, \
     seq_start, seq_end, time_start, time_end, message_count, source_tokens, tokens, \
     block_tokens, text, summarizer, escalation, created_at) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";
const INSERT_SUMMARY_TEXT: &str =
    "INSERT INTO lcm_summaries_fts(rowid, text) VALUES (last_insert_rowid(), ?13)";

/// One row per session: id, messages, conversations, summaries, deepest summary, newest
/// conversation, last change (RFC 3339, UTC). `?1` limits it to one session when not null.
const SESSIONS: &str = "
    WITH convs AS (
        SELECT session_id, id FROM lcm_conversations
        WHERE ?1 IS NULL OR session_id = ?1
    )
    SELECT c.session_id,
           (SELECT count(*) FROM lcm_messages m JOIN convs x ON m.conversation_id = x.id
             WHERE x.session_id = c.session_id) AS messages,
           count(*) AS conversations,
           (SELECT count(*) FROM lcm_summaries s JOIN convs x ON s.conversation_id = x.id
             WHERE x.session_id = c.session_id) AS summaries,
           (SELECT max(depth) FROM lcm_summaries s JOIN convs x ON s.conversation_id = x.id
             WHERE x.session_id = c.session_id) AS max_depth,
           max(c.id) AS current,
           (SELECT strftime('%Y-%m-%dT%H:%M:%fZ', max(t) / 1000.0, 'unixepoch') FROM (
                SELECT max(created_at) AS t FROM lcm_conversations WHERE session_id = c.session_id
                UNION ALL
                SELECT max(m.created_at) FROM lcm_messages m JOIN convs x ON m.conversation_id = x.id
                 WHERE x.session_id = c.session_id
                UNION ALL
                SELECT max(s.created_at) FROM lcm_summaries s JOIN convs x ON s.conversation_id = x.id
                 WHERE x.session_id = c.session_id
           )) AS updated
    FROM convs c
    GROUP BY c.session_id
    HAVING messages > 0
    ORDER BY c.session_id";

/// Everything of the session `?1`, in an order that never leaves a row pointing at a deleted
/// one mid-way; conversations go last, since every other statement finds the rows through
/// them (the full-text rows go with their messages and summaries, through the delete triggers).
const DELETE_SESSION: &[&str] = &[
    "DELETE FROM lcm_context_items WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = ?1)",
    "DELETE FROM lcm_summary_messages WHERE summary_id IN
         (SELECT s.id FROM lcm_summaries s JOIN lcm_conversations c ON c.id = s.conversation_id
          WHERE c.session_id = ?1)",
    "DELETE FROM lcm_summary_parents WHERE parent_id IN
         (SELECT s.id FROM lcm_summaries s JOIN lcm_conversations c ON c.id = s.conversation_id
          WHERE c.session_id = ?1)",
    "DELETE FROM lcm_summaries WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = ?1)",
    "DELETE FROM lcm_messages WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = ?1)",
    "DELETE FROM lcm_compactions WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = ?1)",
    "DELETE FROM lcm_conversations WHERE session_id = ?1",
];

fn count(check: Check) -> &'static [&'static str] {
    match check {
        Check::DuplicateMessages => &["SELECT count(*) FROM lcm_messages a JOIN lcm_messages b \
             ON b.conversation_id = a.conversation_id AND b.prev_id = a.prev_id \
             AND b.hash = a.hash AND b.head = a.head AND b.id > a.id"],
        // A conversation of a session made while an older one of it was still being written:
        // two processes started the session at once (a reset starts one after the last write).
        Check::SplitConversations => &["SELECT count(*) FROM lcm_conversations b \
             WHERE EXISTS (SELECT 1 FROM lcm_messages m WHERE m.conversation_id = b.id) \
             AND EXISTS (SELECT 1 FROM lcm_conversations a \
               WHERE a.session_id = b.session_id AND a.id < b.id \
               AND (SELECT max(m.created_at) FROM lcm_messages m \
                    WHERE m.conversation_id = a.id) > b.created_at)"],
        Check::SequenceGaps => &["SELECT coalesce(sum(mx + 1 - n), 0) FROM \
             (SELECT max(seq) AS mx, count(*) AS n FROM lcm_messages GROUP BY conversation_id)"],
        Check::BrokenMessageLinks => &["SELECT count(*) FROM lcm_summary_messages sm \
             LEFT JOIN lcm_messages m ON m.id = sm.message_id WHERE m.id IS NULL"],
        Check::MissingSourceLinks => &["SELECT count(*) FROM lcm_summaries s \
             WHERE s.kind = 'leaf' AND s.message_count > \
             (SELECT count(*) FROM lcm_summary_messages sm WHERE sm.summary_id = s.id)"],
        Check::MissingChildLinks => &["SELECT count(*) FROM lcm_summaries s \
             WHERE s.kind = 'condensed' AND (SELECT coalesce(max(ord) + 1, 0) \
               FROM lcm_summary_parents p WHERE p.parent_id = s.id) \
             > (SELECT count(*) FROM lcm_summary_parents p WHERE p.parent_id = s.id)"],
        Check::BrokenSummaryLinks => &["SELECT count(*) FROM lcm_summary_parents p \
             LEFT JOIN lcm_summaries a ON a.id = p.parent_id \
             LEFT JOIN lcm_summaries b ON b.id = p.child_id \
             WHERE a.id IS NULL OR b.id IS NULL"],
        Check::LeavesWithoutSources => &["SELECT count(*) FROM lcm_summaries s \
             WHERE s.kind = 'leaf' AND NOT EXISTS \
             (SELECT 1 FROM lcm_summary_messages sm WHERE sm.summary_id = s.id)"],
        Check::CondensedWithoutChildren => &["SELECT count(*) FROM lcm_summaries s \
             WHERE s.kind = 'condensed' AND NOT EXISTS \
             (SELECT 1 FROM lcm_summary_parents p WHERE p.parent_id = s.id)"],
        Check::MessagesWithoutConversation => &["SELECT count(*) FROM lcm_messages m \
             WHERE NOT EXISTS (SELECT 1 FROM lcm_conversations c WHERE c.id = m.conversation_id)"],
        Check::DanglingContextItems => &["SELECT count(*) FROM lcm_context_items ci \
             LEFT JOIN lcm_messages m ON m.id = ci.message_id \
             LEFT JOIN lcm_summaries s ON s.id = ci.summary_id \
             WHERE (ci.message_id IS NOT NULL AND m.id IS NULL) \
                OR (ci.summary_id IS NOT NULL AND s.id IS NULL)"],
        Check::MessagesOutOfView => &["SELECT count(*) FROM lcm_messages m WHERE m.head = 0 \
             AND NOT EXISTS (SELECT 1 FROM lcm_context_items ci WHERE ci.message_id = m.id) \
             AND NOT EXISTS (SELECT 1 FROM lcm_summary_messages sm WHERE sm.message_id = m.id)"],
        Check::SummariesOutOfView => &["SELECT count(*) FROM lcm_summaries s \
             WHERE NOT EXISTS (SELECT 1 FROM lcm_context_items ci WHERE ci.summary_id = s.id) \
             AND NOT EXISTS (SELECT 1 FROM lcm_summary_parents p WHERE p.child_id = s.id)"],
    }
}
