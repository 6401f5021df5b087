//! A compaction's summary and the reads of many summaries at once, on both databases: written
//! whole (its row, its links, its place in the context list) or not at all.

use std::time::Duration;

use ctxhost_lcm_store::{
    ContextItem, ItemKey, Location, NewMessage, Prev, Sources, Store, SummaryKind, SummaryRow,
};

fn summary(id: &str, conv: i64, kind: SummaryKind) -> SummaryRow {
    SummaryRow {
        id: id.into(),
        conversation_id: conv,
        kind,
        depth: u32::from(kind == SummaryKind::Condensed),
        seq_start: 0,
        seq_end: 3,
        time_start: 0,
        time_end: 0,
        message_count: 2,
        source_tokens: 10,
        tokens: 2,
        block_tokens: 4,
        text: format!("what {id} says"),
        summarizer: "test".into(),
        escalation: 0,
        created_at: 0,
    }
}

/// What the context list holds, by message sequence number or summary id.
fn context(store: &Store, conv: i64) -> Vec<String> {
    store
        .context(conv)
        .unwrap()
        .into_iter()
        .map(|item| match item.item {
            ContextItem::Message(message) => format!("{}:m{}", item.position, message.seq),
            ContextItem::Summary(summary) => format!("{}:{}", item.position, summary.id),
        })
        .collect()
}

/// A summary written by compaction takes the place of the context items it replaces, with
/// its links, in one write; when one of those items is gone, nothing of it is written. The
/// same on both databases.
#[test]
fn a_summary_replaces_its_items_with_its_links_or_is_not_written_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let postgres = ctxhost_test_postgres::Postgres::database("lcm_write_summary");
    for location in [
        Location::Sqlite(dir.path().join("lcm.sqlite")),
        Location::postgres(&postgres).unwrap(),
    ] {
        let mut store = Store::open_or_unusable(&location, Duration::from_secs(30));
        let conv = store.current_conversation("s").unwrap();
        let messages: Vec<NewMessage> = (0..6)
            .map(|i| NewMessage {
                role: "user".into(),
                head: false,
                json: format!("{{\"role\":\"user\",\"content\":\"m{i}\"}}"),
                text: format!("m{i}"),
                tokens: 3,
                hash: format!("h{i}"),
                prev: if i == 0 {
                    Prev::First
                } else {
                    Prev::New(i - 1)
                },
            })
            .collect();
        let ids = store.append_messages(conv, &messages).unwrap();
        let items: Vec<ItemKey> = ids.iter().map(|id| ItemKey::Message(*id)).collect();
        store.set_context(conv, &items).unwrap();
        let at: Vec<i64> = store
            .context(conv)
            .unwrap()
            .iter()
            .map(|i| i.position)
            .collect();

        for (id, range) in [("sum_a", 0..2), ("sum_b", 2..4)] {
            store
                .insert_summary(
                    &summary(id, conv, SummaryKind::Leaf),
                    &Sources::Messages(ids[range.clone()].to_vec()),
                    &at[range],
                )
                .unwrap();
        }
        store
            .insert_summary(
                &summary("sum_c", conv, SummaryKind::Condensed),
                &Sources::Children(vec!["sum_a".into(), "sum_b".into()]),
                &at[..1].iter().chain(&at[2..3]).copied().collect::<Vec<_>>(),
            )
            .unwrap();
        let written = context(&store, conv);
        assert_eq!(
            written,
            [
                format!("{}:sum_c", at[0]),
                format!("{}:m4", at[4]),
                format!("{}:m5", at[5])
            ],
            "{location:?}"
        );
        assert_eq!(store.summary_children("sum_c").unwrap(), ["sum_a", "sum_b"]);
        assert_eq!(store.summary_source_seqs("sum_b").unwrap(), [2, 3]);
        // Read many at once: the summaries named, and the last message each covers (a
        // condensed one's through its last child).
        let found = store.summaries(conv, &["sum_a", "sum_c", "sum_x"]).unwrap();
        let mut named: Vec<&String> = found.keys().collect();
        named.sort();
        assert_eq!(named, ["sum_a", "sum_c"]);
        let last = store
            .summaries_last_messages(&["sum_a", "sum_b", "sum_c", "sum_x"])
            .unwrap();
        let mut last: Vec<(String, i64)> =
            last.into_iter().map(|(id, raw)| (id, raw.seq)).collect();
        last.sort();
        assert_eq!(
            last,
            [
                ("sum_a".into(), 1),
                ("sum_b".into(), 3),
                ("sum_c".into(), 3)
            ]
        );

        // One of the items it would replace is not in the list: nothing is written.
        let failed = store
            .insert_summary(
                &summary("sum_d", conv, SummaryKind::Leaf),
                &Sources::Messages(ids[4..].to_vec()),
                &[at[4], at[5], at[5] + 100],
            )
            .unwrap_err();
        assert!(failed.message().contains("vanished"), "{failed:?}");
        assert!(store.summary(conv, "sum_d").unwrap().is_none());
        assert!(store.summary_source_seqs("sum_d").unwrap().is_empty());
        assert_eq!(context(&store, conv), written, "{location:?}");
    }
}
