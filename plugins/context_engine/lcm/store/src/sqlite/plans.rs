//! The plans SQLite picks for the statements ingest and the tools run once per message or per
//! call. A statement that searches the conversation by `(conversation_id)` alone reads every
//! message of it: one such per new message made ingest quadratic. The plans are asserted as
//! SQLite's `EXPLAIN QUERY PLAN` prints them, on an empty store and on one with statistics.

use std::time::Duration;

use super::{statements, SqliteStore};
use crate::sql::Stmt;
use crate::{NewMessage, Prev, Store};

/// Each hot statement and the search steps of its plan (the `SEARCH`/`SCAN` lines, in order).
const HOT: &[(Stmt, &[&str])] = &[
    (
        Stmt::CurrentConversation,
        &["SEARCH lcm_conversations USING COVERING INDEX conversations_by_session (session_id=?)"],
    ),
    (
        Stmt::HeadHashes,
        &["SEARCH lcm_messages USING INDEX messages_head (conversation_id=?)"],
    ),
    (
        Stmt::RawAfter,
        &[
            "SEARCH lcm_messages USING INDEX sqlite_autoindex_lcm_messages_1 \
           (conversation_id=? AND seq>?)",
        ],
    ),
    (
        Stmt::RawChild,
        &["SEARCH lcm_messages USING INDEX messages_by_prev (conversation_id=? AND prev_id=?)"],
    ),
    (
        Stmt::RawWithHash,
        &["SEARCH lcm_messages USING INDEX messages_by_hash (conversation_id=? AND hash=?)"],
    ),
    (
        Stmt::StoredHashes,
        &[
            "SCAN w VIRTUAL TABLE INDEX 1:",
            "SEARCH m USING INDEX messages_by_hash (conversation_id=? AND hash=?)",
        ],
    ),
    (
        Stmt::NextSeq,
        &[
            "SEARCH lcm_messages USING COVERING INDEX sqlite_autoindex_lcm_messages_1 \
           (conversation_id=?)",
        ],
    ),
    (
        Stmt::MessageBySeq,
        &["SEARCH m USING INDEX sqlite_autoindex_lcm_messages_1 (conversation_id=? AND seq=?)"],
    ),
    (
        Stmt::MessagesByRowid,
        &[
            "SCAN w VIRTUAL TABLE INDEX 1:",
            "SEARCH m USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN",
        ],
    ),
    (
        Stmt::Summary,
        &["SEARCH s USING INDEX sqlite_autoindex_lcm_summaries_1 (id=?)"],
    ),
    (
        Stmt::Summaries,
        &[
            "SCAN w VIRTUAL TABLE INDEX 1:",
            "SEARCH s USING INDEX sqlite_autoindex_lcm_summaries_1 (id=?)",
        ],
    ),
    (
        Stmt::LastMessages,
        &[
            "SCAN json_each VIRTUAL TABLE INDEX 1:",
            "SCAN d",
            "SEARCH sm USING PRIMARY KEY (summary_id=?)",
            "SEARCH x USING INTEGER PRIMARY KEY (rowid=?)",
            "SEARCH lcm_summary_parents USING PRIMARY KEY (parent_id=?)",
            "SEARCH lcm_summary_parents USING PRIMARY KEY (parent_id=?)",
            "SCAN d",
            "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)",
            "SEARCH sm USING PRIMARY KEY (summary_id=?)",
            "SEARCH x USING INTEGER PRIMARY KEY (rowid=?)",
        ],
    ),
    (
        Stmt::Ancestors,
        &[
            "SEARCH lcm_summary_messages USING COVERING INDEX summary_messages_by_message \
             (message_id=?)",
            "SCAN up",
            "SEARCH p USING COVERING INDEX summary_parents_by_child (child_id=?)",
            "SCAN up",
        ],
    ),
    (
        Stmt::ContextKeys,
        &["SEARCH lcm_context_items USING PRIMARY KEY (conversation_id=?)"],
    ),
    (
        Stmt::DeleteContextFrom,
        &["SEARCH lcm_context_items USING PRIMARY KEY (conversation_id=? AND position>?)"],
    ),
];

/// The `SEARCH`/`SCAN` lines of the plan of each of `stmt`'s statements.
fn plan(store: &SqliteStore, stmt: Stmt) -> Vec<String> {
    store
        .with_connection(|conn| {
            let mut lines = Vec::new();
            for text in statements::sql(stmt) {
                let mut explained = conn.prepare(&format!("EXPLAIN QUERY PLAN {text}"))?;
                let mut rows = explained.raw_query();
                while let Some(row) = rows.next()? {
                    let detail: String = row.get(3)?;
                    if detail.starts_with("SEARCH") || detail.starts_with("SCAN") {
                        lines.push(detail);
                    }
                }
            }
            Ok(lines)
        })
        .expect("explains")
}

fn assert_plans(store: &SqliteStore, when: &str) {
    let mut wrong = Vec::new();
    for (stmt, expected) in HOT {
        let got = plan(store, *stmt);
        if got != *expected {
            wrong.push(format!("{stmt:?}: expected {expected:?}, planned {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{when}:\n{}", wrong.join("\n"));
}

#[test]
fn each_hot_statement_searches_the_index_meant_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    let store = SqliteStore::open(&path, Duration::from_millis(100)).unwrap();
    assert_plans(&store, "empty store");

    // Many sessions, one long conversation with many messages sharing a content (a repeated
    // "ok"), and the statistics of it: the planner then knows that conversation holds nearly
    // every message.
    let mut store = Store::Sqlite(store);
    for other in 0..50 {
        store
            .current_conversation(&format!("other {other}"))
            .unwrap();
    }
    let conv = store.current_conversation("s").unwrap();
    let messages: Vec<NewMessage> = (0..3_000)
        .map(|i| NewMessage {
            role: "user".into(),
            head: i == 0,
            json: format!("{{\"role\":\"user\",\"content\":\"m{i}\"}}"),
            text: format!("m{i}"),
            tokens: 3,
            hash: if i % 3 == 0 {
                "ok".into()
            } else {
                format!("h{i}")
            },
            prev: if i < 2 { Prev::First } else { Prev::New(i - 1) },
        })
        .collect();
    store.append_messages(conv, &messages).unwrap();
    let Store::Sqlite(store) = store else {
        unreachable!()
    };
    store
        .with_connection(|c| Ok(c.execute_batch("ANALYZE")?))
        .unwrap();
    assert_plans(&store, "after ANALYZE of a 3,000-message conversation");
}
