//! The plans PostgreSQL picks for the statements ingest runs once per message, on a store
//! with one long conversation among many and fresh statistics (the store refreshes them after
//! a large import). A statement that reads a conversation by `(conversation_id)` alone, in
//! `seq` order, reads every message of it: one such per new message made ingest quadratic.

use std::time::Duration;

use postgres::types::ToSql;

use super::{statements, PostgresStore};
use crate::sql::{Param, Stmt};
use crate::{Location, NewMessage, Prev, Store};

/// The plan of `sql` run with `params`.
fn explain(store: &PostgresStore, sql: &str, params: &[&(dyn ToSql + Sync)]) -> String {
    store
        .with_client(|c| {
            let rows = c.query(&format!("EXPLAIN {sql}"), params)?;
            Ok(rows
                .iter()
                .map(|row| row.get::<_, String>(0))
                .collect::<Vec<_>>()
                .join("\n"))
        })
        .expect("explains")
}

fn plan(store: &PostgresStore, stmt: Stmt, params: &[Param<'_>]) -> String {
    let [text] = statements::sql(stmt) else {
        panic!("{stmt:?} is one statement");
    };
    let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
    explain(store, text, &params)
}

#[test]
fn each_hot_statement_searches_the_index_meant_for_it() {
    let url = ctxhost_test_postgres::Postgres::database("lcm_plans");
    let Location::Postgres(url) = Location::postgres(&url).unwrap() else {
        unreachable!()
    };
    let mut store = Store::Postgres(Box::new(
        PostgresStore::open(&url, Duration::from_secs(30)).unwrap(),
    ));
    for other in 0..50 {
        store
            .current_conversation(&format!("other {other}"))
            .unwrap();
    }
    let conv = store.current_conversation("s").unwrap();
    let messages: Vec<NewMessage> = (0..20_000)
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
    // At least `LARGE_IMPORT` messages: the store refreshes the statistics itself, after.
    store.append_messages(conv, &messages).unwrap();
    let Store::Postgres(store) = store else {
        unreachable!()
    };
    store.settle();
    let cases: &[(Stmt, &[Param<'_>], &str)] = &[
        (Stmt::HeadHashes, &[Param::Int(conv)], "lcm_messages_head"),
        (
            Stmt::RawAfter,
            &[Param::Int(conv), Param::Int(19_000), Param::Int(256)],
            "lcm_messages_conversation_id_seq_key",
        ),
        (
            Stmt::RawChild,
            &[Param::Int(conv), Param::Int(5), Param::Text("h6")],
            "lcm_messages_by_hash",
        ),
        (
            Stmt::RawWithHash,
            &[Param::Int(conv), Param::Text("new content")],
            "lcm_messages_by_hash",
        ),
        (
            Stmt::StoredHashes,
            &[Param::Int(conv), Param::Texts(&["new content", "h6"])],
            "lcm_messages_by_hash",
        ),
        (
            Stmt::NextSeq,
            &[Param::Int(conv)],
            "lcm_messages_conversation_id_seq_key",
        ),
        (
            Stmt::MessageBySeq,
            &[Param::Int(conv), Param::Int(7)],
            "lcm_messages_conversation_id_seq_key",
        ),
    ];
    let mut wrong = Vec::new();
    for (stmt, params, index) in cases {
        let plan = plan(&store, *stmt, params);
        if !plan.contains(&format!(" {index} ")) && !plan.contains(&format!(" on {index}")) {
            wrong.push(format!("{stmt:?} does not use {index}:\n{plan}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_search_reads_the_spans_index_for_words_and_the_trigram_index_for_cjk_text() {
    let url = ctxhost_test_postgres::Postgres::database("lcm_cjk_plan");
    let Location::Postgres(url) = Location::postgres(&url).unwrap() else {
        unreachable!()
    };
    let mut store = Store::Postgres(Box::new(
        PostgresStore::open(&url, Duration::from_secs(30)).unwrap(),
    ));
    let conv = store.current_conversation("s").unwrap();
    let messages: Vec<NewMessage> = (0..20_000)
        .map(|i| {
            let text = if i % 1000 == 0 {
                format!("検索エンジンの設計 {i}")
            } else {
                format!("plain words number {i}")
            };
            NewMessage {
                role: "user".into(),
                head: false,
                json: serde_json::json!({"role": "user", "content": text}).to_string(),
                text,
                tokens: 3,
                hash: format!("h{i}"),
                prev: if i == 0 {
                    Prev::First
                } else {
                    Prev::New(i - 1)
                },
            }
        })
        .collect();
    store.append_messages(conv, &messages).unwrap();
    let Store::Postgres(store) = store else {
        unreachable!()
    };
    store.settle();
    let (since, before) = (0_i64, i64::MAX);
    let search = |text: &str, index: &str| {
        let query = crate::FullTextQuery {
            terms: vec![crate::Term {
                text: text.into(),
                prefix: false,
            }],
            any: false,
        };
        let (sql, rendered) = super::search::messages_search(&query, false);
        let params = rendered.after([&conv, &since, &before, &50_i64]);
        let plan = explain(&store, &sql, &params);
        assert!(plan.contains(index), "{text}: {plan}");
        store
            .fts_messages(conv, &query, (since, before), false, 50)
            .unwrap()
            .len()
    };
    assert_eq!(search("エンジン", "lcm_messages_cjk_trgm"), 20);
    // Words are found through their spans' index.
    assert_eq!(search("number-1234", "lcm_message_spans_words"), 1);
}
