//! The SQL text of each of the store's statements in PostgreSQL's dialect (`$N` parameters,
//! real booleans, rows written many at a time as arrays through `unnest`: called in the
//! select list, which reads the arrays in step, rather than in `FROM`, which first copies
//! the rows into a store of their own, a fifth of a large insert's time).

use postgres::types::Type;

use crate::sql::{Check, Stmt};

/// How many rows of `stmt` are written with `COPY`, when they are many: the statement and the
/// types of the columns it reads (each row's parameters, then those `sql.rs` derives).
/// Streamed, the rows are written by the server while the engine is still sending the next.
pub fn copy(stmt: Stmt) -> Option<(&'static str, &'static [Type])> {
    match stmt {
        Stmt::InsertMessages => Some((
            "COPY lcm_messages (id, conversation_id, seq, role, head, json, text, tokens, hash, \
             prev_id, created_at, tsv, cjk) FROM STDIN (FORMAT binary)",
            &MESSAGE_TYPES,
        )),
        Stmt::InsertContextItems => Some((
            "COPY lcm_context_items (conversation_id, position, message_id, summary_id) \
             FROM STDIN (FORMAT binary)",
            &CONTEXT_ITEM_TYPES,
        )),
        _ => None,
    }
}

static MESSAGE_TYPES: [Type; 13] = [
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::BOOL,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::TS_VECTOR,
    Type::BOOL,
];

static CONTEXT_ITEM_TYPES: [Type; 4] = [Type::INT8, Type::INT8, Type::INT8, Type::TEXT];

/// The insert of the spans of messages a write stored (`sql.rs` derives them), its parameters
/// numbered as given: conversation, first and last `seq`, words.
macro_rules! insert_spans {
    ($conversation:literal, $first:literal, $last:literal, $words:literal) => {
        concat!(
            "INSERT INTO lcm_message_spans (conversation_id, seq_start, seq_end, words) ",
            "SELECT unnest($",
            $conversation,
            "::bigint[]), unnest($",
            $first,
            "::bigint[]), ",
            "unnest($",
            $last,
            "::bigint[]), unnest($",
            $words,
            "::tsvector[])"
        )
    };
}

/// The spans of messages written by `COPY`, after them.
pub const INSERT_SPANS: &str = insert_spans!("1", "2", "3", "4");

/// The statements `stmt` runs, in order (`query` reads the rows of the last). A statement
/// run for many rows (`execute_rows`) takes each parameter as an array of the rows' values.
pub fn sql(stmt: Stmt) -> &'static [&'static str] {
    match stmt {
        Stmt::CurrentConversation => {
            &["SELECT id FROM lcm_conversations WHERE session_id = $1 ORDER BY id DESC LIMIT 1"]
        }
        Stmt::NewConversation => &[
            "INSERT INTO lcm_conversations (session_id, created_at) VALUES ($1, $2) RETURNING id",
        ],
        // Blocks other transactions creating conversations (not readers) until this one ends.
        Stmt::LockConversations => &["LOCK TABLE lcm_conversations IN SHARE ROW EXCLUSIVE MODE"],
        Stmt::Context => &[concat!(
            "SELECT ci.position, ci.message_id IS NOT NULL, ",
            message_columns!(),
            ", ",
            summary_columns!(),
            " FROM lcm_context_items ci \
             LEFT JOIN lcm_messages m ON m.id = ci.message_id \
             LEFT JOIN lcm_summaries s ON s.id = ci.summary_id \
             WHERE ci.conversation_id = $1 ORDER BY ci.position"
        )],
        Stmt::ContextKeys => &[
            "SELECT position, message_id, summary_id FROM lcm_context_items \
             WHERE conversation_id = $1 ORDER BY position",
        ],
        // The range lets the index find them (the planner reads `= ANY` as a filter there).
        Stmt::DeleteContextItems => &["DELETE FROM lcm_context_items \
             WHERE conversation_id = $1 AND position = ANY($2::bigint[]) \
             AND position BETWEEN (SELECT min(p) FROM unnest($2::bigint[]) p) \
                              AND (SELECT max(p) FROM unnest($2::bigint[]) p)"],
        Stmt::DeleteContextFrom => {
            &["DELETE FROM lcm_context_items WHERE conversation_id = $1 AND position >= $2"]
        }
        Stmt::InsertContextItems => &[
            "INSERT INTO lcm_context_items (conversation_id, position, message_id, summary_id) \
             SELECT unnest($1::bigint[]), unnest($2::bigint[]), unnest($3::bigint[]), \
                    unnest($4::text[])",
        ],
        Stmt::InsertSummary => &[
            "INSERT INTO lcm_summaries (id, conversation_id, kind, depth, seq_start, seq_end, \
             time_start, time_end, message_count, source_tokens, tokens, block_tokens, text, \
             summarizer, escalation, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        ],
        Stmt::LinkSources => &[
            "INSERT INTO lcm_summary_messages (summary_id, ord, message_id) \
             SELECT unnest($1::text[]), unnest($2::bigint[])::int, unnest($3::bigint[])",
        ],
        // One statement, atomic by itself (no transaction around it: two round trips fewer per
        // summary). Every part is written only when all the replaced items are there, as the
        // one snapshot the parts share shows them. The item deleted at the first position and
        // the summary's inserted there are the same statement's: the deletion comes first (the
        // insert reads its rows), and a key deleted by the same transaction is free again.
        Stmt::WriteSummary => &["WITH present AS ( \
                 SELECT count(*) = cardinality($19::bigint[]) AS ok FROM lcm_context_items \
                 WHERE conversation_id = $2 AND position = ANY($19::bigint[]) \
                 AND position BETWEEN (SELECT min(p) FROM unnest($19::bigint[]) p) \
                                  AND (SELECT max(p) FROM unnest($19::bigint[]) p) \
             ), summary AS ( \
                 INSERT INTO lcm_summaries (id, conversation_id, kind, depth, seq_start, \
                 seq_end, time_start, time_end, message_count, source_tokens, tokens, \
                 block_tokens, text, summarizer, escalation, created_at) \
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 \
                 WHERE (SELECT ok FROM present) \
             ), sources AS ( \
                 INSERT INTO lcm_summary_messages (summary_id, ord, message_id) \
                 SELECT $1, (o - 1)::int, m FROM unnest($17::bigint[]) WITH ORDINALITY AS t(m, o) \
                 WHERE (SELECT ok FROM present) \
             ), children AS ( \
                 INSERT INTO lcm_summary_parents (parent_id, ord, child_id) \
                 SELECT $1, (o - 1)::int, c FROM unnest($18::text[]) WITH ORDINALITY AS t(c, o) \
                 WHERE (SELECT ok FROM present) \
             ), replaced AS ( \
                 DELETE FROM lcm_context_items \
                 WHERE conversation_id = $2 AND position = ANY($19::bigint[]) \
                 AND position BETWEEN (SELECT min(p) FROM unnest($19::bigint[]) p) \
                                  AND (SELECT max(p) FROM unnest($19::bigint[]) p) \
                 AND (SELECT ok FROM present) \
                 RETURNING 1 \
             ) \
             INSERT INTO lcm_context_items (conversation_id, position, message_id, summary_id) \
             SELECT $2, $20, NULL, $1 FROM replaced HAVING count(*) > 0"],
        Stmt::LinkChildren => &[
            "INSERT INTO lcm_summary_parents (parent_id, ord, child_id) \
             SELECT unnest($1::text[]), unnest($2::bigint[])::int, unnest($3::text[])",
        ],

        Stmt::MessageBySeq => &[concat!(
            "SELECT ",
            message_columns!(),
            " FROM lcm_messages m WHERE m.conversation_id = $1 AND m.seq = $2"
        )],
        Stmt::MessagesByRowid => &[concat!(
            "SELECT w.id, ",
            message_columns!(),
            " FROM unnest($1::bigint[]) WITH ORDINALITY AS w(id, ord) \
             LEFT JOIN lcm_messages m ON m.id = w.id ORDER BY w.ord"
        )],
        Stmt::Summary => &[concat!(
            "SELECT ",
            summary_columns!(),
            " FROM lcm_summaries s WHERE s.id = $1 AND s.conversation_id = $2"
        )],
        Stmt::Summaries => &[concat!(
            "SELECT ",
            summary_columns!(),
            " FROM lcm_summaries s WHERE s.conversation_id = $1 AND s.id = ANY($2::text[])"
        )],
        Stmt::SummaryChildren => {
            &["SELECT child_id FROM lcm_summary_parents WHERE parent_id = $1 ORDER BY ord"]
        }
        Stmt::SummaryParents => {
            &["SELECT parent_id FROM lcm_summary_parents WHERE child_id = $1 ORDER BY parent_id"]
        }
        Stmt::SummarySourceSeqs => &["SELECT m.seq FROM lcm_summary_messages sm \
             JOIN lcm_messages m ON m.id = sm.message_id WHERE sm.summary_id = $1 ORDER BY sm.ord"],
        Stmt::SummaryInContext => &["SELECT EXISTS (SELECT 1 FROM lcm_context_items \
             WHERE conversation_id = $1 AND summary_id = $2)"],
        Stmt::MessagesUnder => &["WITH RECURSIVE tree(id) AS ( \
                 SELECT $1::text \
                 UNION SELECT p.child_id FROM lcm_summary_parents p \
                   JOIN tree ON p.parent_id = tree.id \
             ) \
             SELECT m.id, m.seq, m.tokens FROM tree \
             JOIN lcm_summary_messages sm ON sm.summary_id = tree.id \
             JOIN lcm_messages m ON m.id = sm.message_id \
             ORDER BY m.seq"],
        Stmt::LeafOf => {
            &["SELECT summary_id FROM lcm_summary_messages WHERE message_id = $1 LIMIT 1"]
        }
        Stmt::TopOf => &["WITH RECURSIVE up(id, level) AS ( \
                 SELECT $1::text, 0 \
                 UNION SELECT p.parent_id, up.level + 1 FROM lcm_summary_parents p \
                   JOIN up ON p.child_id = up.id \
             ) SELECT id FROM up ORDER BY level DESC LIMIT 1"],
        Stmt::Ancestors => &["WITH RECURSIVE up(id) AS ( \
                 SELECT summary_id FROM lcm_summary_messages WHERE message_id = $1 \
                 UNION SELECT p.parent_id FROM lcm_summary_parents p JOIN up ON p.child_id = up.id \
             ) SELECT id FROM up"],

        Stmt::HeadHashes => &["SELECT hash FROM lcm_messages WHERE conversation_id = $1 AND head"],
        Stmt::HasRawMessages => &["SELECT EXISTS (SELECT 1 FROM lcm_messages \
             WHERE conversation_id = $1 AND NOT head)"],
        Stmt::RawAfter => &["SELECT id, seq, prev_id, hash FROM lcm_messages \
             WHERE conversation_id = $1 AND seq > $2 AND NOT head ORDER BY seq LIMIT $3"],
        Stmt::RawChild => &["SELECT id, seq, prev_id, hash FROM lcm_messages \
             WHERE conversation_id = $1 AND prev_id = $2 AND hash = $3 AND NOT head \
             ORDER BY seq LIMIT 1"],
        Stmt::RawWithHash => &["SELECT id, seq, prev_id, hash FROM lcm_messages \
             WHERE conversation_id = $1 AND hash = $2 AND NOT head ORDER BY seq"],
        // One index probe per hash, whatever the statistics say (as `hash = ANY`, a plan made
        // while the table was small read every message of the conversation each time).
        Stmt::StoredHashes => &["SELECT h FROM unnest($2::text[]) AS h WHERE EXISTS \
             (SELECT 1 FROM lcm_messages m \
              WHERE m.conversation_id = $1 AND m.hash = h AND NOT m.head)"],
        Stmt::SummariesOver => &["SELECT summary_id FROM lcm_summary_messages \
             WHERE message_id = ANY($1::bigint[]) \
             UNION SELECT parent_id FROM lcm_summary_parents WHERE child_id = ANY($2::text[])"],
        // Down from each summary through last children while it has no stored source; the
        // depth bounds a cycle in a damaged store.
        Stmt::LastMessages => &["WITH RECURSIVE down(origin, id, depth) AS ( \
                 SELECT w, w, 0 FROM unnest($1::text[]) AS w \
                 UNION ALL \
                 SELECT d.origin, (SELECT p.child_id FROM lcm_summary_parents p \
                                   WHERE p.parent_id = d.id ORDER BY p.ord DESC LIMIT 1), \
                        d.depth + 1 \
                 FROM down d \
                 WHERE d.depth < 64 \
                 AND NOT EXISTS (SELECT 1 FROM lcm_summary_messages sm \
                     JOIN lcm_messages x ON x.id = sm.message_id WHERE sm.summary_id = d.id) \
                 AND EXISTS (SELECT 1 FROM lcm_summary_parents p WHERE p.parent_id = d.id) \
             ) \
             SELECT d.origin, m.id, m.seq, m.prev_id, m.hash FROM down d CROSS JOIN LATERAL ( \
                 SELECT m.id, m.seq, m.prev_id, m.hash FROM lcm_summary_messages sm \
                 JOIN lcm_messages m ON m.id = sm.message_id \
                 WHERE sm.summary_id = d.id ORDER BY sm.ord DESC LIMIT 1) m"],
        Stmt::NextSeq => &[
            "SELECT (SELECT coalesce(max(m.seq), -1) + 1 FROM lcm_messages m \
                                    WHERE m.conversation_id = c.id) \
             FROM lcm_conversations c WHERE c.id = $1 FOR KEY SHARE",
        ],
        // The sequence is looked up once (a sub-select), not for every id: that lookup was
        // nine tenths of the statement's time.
        Stmt::AllocateMessageIds => &[
            "SELECT nextval((SELECT pg_get_serial_sequence('lcm_messages', 'id'))::regclass) \
             FROM generate_series(1, $1::bigint)",
        ],
        // $12 to $17 are what `sql.rs` derives from the texts ($7): each message's words and
        // CJK mark, and the rows of their spans, stored by the same statement (one round
        // trip for an agent's turn).
        Stmt::InsertMessages => &[concat!(
            "WITH spans AS (",
            insert_spans!("14", "15", "16", "17"),
            ") INSERT INTO lcm_messages (id, conversation_id, seq, role, head, json, text, \
             tokens, hash, prev_id, created_at, tsv, cjk) \
             SELECT unnest($1::bigint[]), unnest($2::bigint[]), unnest($3::bigint[]), \
                    unnest($4::text[]), unnest($5::bool[]), unnest($6::text[]), \
                    unnest($7::text[]), unnest($8::bigint[]), unnest($9::text[]), \
                    unnest($10::bigint[]), unnest($11::bigint[]), unnest($12::tsvector[]), \
                    unnest($13::bool[])"
        )],

        Stmt::InsertCompactions => &[
            "INSERT INTO lcm_compactions (conversation_id, created_at, report) \
             SELECT unnest($1::bigint[]), unnest($2::bigint[]), unnest($3::text[])",
        ],
        Stmt::LastCompaction => &[
            "SELECT report FROM lcm_compactions WHERE conversation_id = $1 \
             ORDER BY id DESC LIMIT 1",
        ],
        Stmt::MessageStats => &[
            "SELECT count(*), count(*) FILTER (WHERE head), coalesce(sum(tokens), 0)::bigint \
             FROM lcm_messages WHERE conversation_id = $1",
        ],
        Stmt::SummaryStats => &["SELECT depth, count(*), coalesce(sum(tokens), 0)::bigint \
             FROM lcm_summaries WHERE conversation_id = $1 GROUP BY depth ORDER BY depth"],
        Stmt::ContextStats => &["SELECT count(message_id), count(summary_id) \
             FROM lcm_context_items WHERE conversation_id = $1"],
        Stmt::CompactionCount => {
            &["SELECT count(*) FROM lcm_compactions WHERE conversation_id = $1"]
        }

        Stmt::Sessions => &[SESSIONS],
        Stmt::ContextTokens => &[
            "SELECT coalesce(sum(coalesce(m.tokens, s.block_tokens)), 0)::bigint, count(*) \
             FROM lcm_context_items ci \
             LEFT JOIN lcm_messages m ON m.id = ci.message_id \
             LEFT JOIN lcm_summaries s ON s.id = ci.summary_id \
             WHERE ci.conversation_id = $1",
        ],
        Stmt::SessionMessages => &[
            "SELECT count(*) FROM lcm_messages WHERE conversation_id IN \
             (SELECT id FROM lcm_conversations WHERE session_id = $1)",
        ],
        Stmt::DeleteSession => DELETE_SESSION,
        Stmt::ExportConversations => &["SELECT id, created_at FROM lcm_conversations \
             WHERE session_id = $1 ORDER BY id"],
        Stmt::ExportMessages => &[
            "SELECT m.seq, m.role, m.head, m.json, m.tokens, m.hash, p.seq, m.created_at \
             FROM lcm_messages m LEFT JOIN lcm_messages p ON p.id = m.prev_id \
             WHERE m.conversation_id = $1 ORDER BY m.seq",
        ],
        Stmt::ExportSources => &["SELECT sm.summary_id, m.seq FROM lcm_summary_messages sm \
             JOIN lcm_summaries s ON s.id = sm.summary_id \
             JOIN lcm_messages m ON m.id = sm.message_id \
             WHERE s.conversation_id = $1 ORDER BY sm.summary_id, sm.ord"],
        Stmt::ExportChildren => &["SELECT p.parent_id, p.child_id FROM lcm_summary_parents p \
             JOIN lcm_summaries s ON s.id = p.parent_id \
             WHERE s.conversation_id = $1 ORDER BY p.parent_id, p.ord"],
        Stmt::ExportSummaries => &[concat!(
            "SELECT ",
            summary_columns!(),
            " FROM lcm_summaries s WHERE s.conversation_id = $1"
        )],
        Stmt::ExportContext => &["SELECT ci.position, m.seq, ci.summary_id \
             FROM lcm_context_items ci LEFT JOIN lcm_messages m ON m.id = ci.message_id \
             WHERE ci.conversation_id = $1 ORDER BY ci.position"],
        Stmt::ExportCompactions => &["SELECT created_at, report FROM lcm_compactions \
             WHERE conversation_id = $1 ORDER BY id"],

        Stmt::Count(check) => count(check),
        Stmt::MessageChecksums => {
            &["SELECT id, conversation_id, seq, hash, json FROM lcm_messages"]
        }
    }
}

/// One row per session (as SQLite's listing): id, messages, conversations, summaries, deepest
/// summary, newest conversation, last change.
const SESSIONS: &str = "
    WITH convs AS (
        SELECT session_id, id, created_at FROM lcm_conversations
        WHERE $1::text IS NULL OR session_id = $1
    ),
    per_session AS (
        SELECT c.session_id,
               count(*) AS conversations,
               max(c.id) AS current,
               max(c.created_at) AS created
        FROM convs c GROUP BY c.session_id
    )
    SELECT p.session_id,
           (SELECT count(*) FROM lcm_messages m JOIN convs x ON m.conversation_id = x.id
             WHERE x.session_id = p.session_id) AS messages,
           p.conversations,
           (SELECT count(*) FROM lcm_summaries s JOIN convs x ON s.conversation_id = x.id
             WHERE x.session_id = p.session_id) AS summaries,
           (SELECT max(depth) FROM lcm_summaries s JOIN convs x ON s.conversation_id = x.id
             WHERE x.session_id = p.session_id) AS max_depth,
           p.current,
           to_char(to_timestamp(greatest(p.created,
               (SELECT max(m.created_at) FROM lcm_messages m JOIN convs x ON m.conversation_id = x.id
                 WHERE x.session_id = p.session_id),
               (SELECT max(s.created_at) FROM lcm_summaries s JOIN convs x ON s.conversation_id = x.id
                 WHERE x.session_id = p.session_id)) / 1000.0) AT TIME ZONE 'UTC',
               'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS updated
    FROM per_session p
    ORDER BY p.session_id COLLATE \"C\"";

/// Everything of the session `$1`, links first, conversations last.
const DELETE_SESSION: &[&str] = &[
    "DELETE FROM lcm_context_items WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = $1)",
    "DELETE FROM lcm_summary_messages WHERE summary_id IN
         (SELECT s.id FROM lcm_summaries s JOIN lcm_conversations c ON c.id = s.conversation_id
          WHERE c.session_id = $1)",
    "DELETE FROM lcm_summary_parents WHERE parent_id IN
         (SELECT s.id FROM lcm_summaries s JOIN lcm_conversations c ON c.id = s.conversation_id
          WHERE c.session_id = $1)",
    "DELETE FROM lcm_summaries WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = $1)",
    "DELETE FROM lcm_message_spans WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = $1)",
    "DELETE FROM lcm_messages WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = $1)",
    "DELETE FROM lcm_compactions WHERE conversation_id IN
         (SELECT id FROM lcm_conversations WHERE session_id = $1)",
    "DELETE FROM lcm_conversations WHERE session_id = $1",
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
        Check::SequenceGaps => &["SELECT coalesce(sum(mx + 1 - n), 0)::bigint FROM \
             (SELECT max(seq) AS mx, count(*) AS n FROM lcm_messages GROUP BY conversation_id) g"],
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
        Check::MessagesOutOfView => &["SELECT count(*) FROM lcm_messages m WHERE NOT m.head \
             AND NOT EXISTS (SELECT 1 FROM lcm_context_items ci WHERE ci.message_id = m.id) \
             AND NOT EXISTS (SELECT 1 FROM lcm_summary_messages sm WHERE sm.message_id = m.id)"],
        Check::SummariesOutOfView => &["SELECT count(*) FROM lcm_summaries s \
             WHERE NOT EXISTS (SELECT 1 FROM lcm_context_items ci WHERE ci.summary_id = s.id) \
             AND NOT EXISTS (SELECT 1 FROM lcm_summary_parents p WHERE p.child_id = s.id)"],
    }
}
