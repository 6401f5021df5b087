//! How the PostgreSQL store writes: many rows by `COPY` and a few as arrays storing the same
//! columns, and the full-text index's pending words merged by the pool's upkeep, off the
//! writer's call, where the role owns the tables.

use std::time::Duration;

use ctxhost_lcm_store::{
    FullTextQuery, ItemKey, Location, NewMessage, PostgresStore, Prev, Repair, Store, Term,
    ROWS_PER_STATEMENT, UPKEEP_EVERY,
};
use ctxhost_test_postgres::Postgres;

fn open(url: &str) -> Store {
    let Location::Postgres(url) = Location::postgres(url).unwrap() else {
        unreachable!()
    };
    Store::Postgres(Box::new(
        PostgresStore::open(&url, Duration::from_secs(30)).unwrap(),
    ))
}

fn client(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

/// Message `i` of a conversation: a head first, then words of every kind (upper case, dotted
/// names, digits), CJK text now and then, and repeats.
fn message(i: usize, prev: Prev) -> NewMessage {
    let text = match i % 7 {
        0 => format!("検索エンジンの設計 {i}"),
        3 => "ok".to_string(),
        _ => format!(
            "Parse marshmallow.fields.String in step {i}: CAFÉ-{}",
            i * 31
        ),
    };
    NewMessage {
        role: if i.is_multiple_of(2) {
            "user"
        } else {
            "assistant"
        }
        .into(),
        head: i == 0,
        json: serde_json::json!({"role": "user", "content": text}).to_string(),
        tokens: text.len() as u64 / 4,
        hash: format!("h{i}"),
        text,
        prev,
    }
}

/// Every column of the conversation's messages (the one each follows by its sequence number),
/// and its context list.
fn rows(url: &str, conv: i64) -> (Vec<String>, Vec<String>) {
    let mut client = client(url);
    let mut read = |sql: &str| -> Vec<String> {
        let rows = client.query(sql, &[&conv]).unwrap();
        rows.iter().map(|row| row.get(0)).collect()
    };
    let messages = read(
        "SELECT concat_ws(' | ', m.seq, m.role, m.head, m.json, m.text, m.tokens, m.hash, \
         p.seq, m.tsv::text, m.cjk) \
         FROM lcm_messages m LEFT JOIN lcm_messages p ON p.id = m.prev_id \
         WHERE m.conversation_id = $1 ORDER BY m.seq",
    );
    let context = read(
        "SELECT concat_ws(' | ', ci.position, m.seq, ci.summary_id) \
         FROM lcm_context_items ci LEFT JOIN lcm_messages m ON m.id = ci.message_id \
         WHERE ci.conversation_id = $1 ORDER BY ci.position",
    );
    (messages, context)
}

/// Many rows at once go by `COPY` (streamed, their words found as they go); a few go as
/// arrays. Both store the same columns, words and CJK mark included.
#[test]
fn rows_written_by_copy_are_the_rows_written_a_few_at_a_time() {
    let url = Postgres::database("lcm_copy");
    let mut store = open(&url);
    let count = ROWS_PER_STATEMENT + 500;
    let whole = store.current_conversation("whole").unwrap();
    let all: Vec<NewMessage> = (0..count)
        .map(|i| message(i, if i < 2 { Prev::First } else { Prev::New(i - 1) }))
        .collect();
    let ids = store.append_messages(whole, &all).unwrap();
    let items: Vec<ItemKey> = ids[1..].iter().map(|id| ItemKey::Message(*id)).collect();
    store.set_context(whole, &items).unwrap();

    let piecemeal = store.current_conversation("piecemeal").unwrap();
    let mut ids: Vec<i64> = Vec::new();
    for start in (0..count).step_by(100) {
        let batch: Vec<NewMessage> = (start..(start + 100).min(count))
            .map(|i| {
                let prev = match i {
                    0 | 1 => Prev::First,
                    i if i == start => Prev::Stored(ids[i - 1]),
                    i => Prev::New(i - 1 - start),
                };
                message(i, prev)
            })
            .collect();
        ids.extend(store.append_messages(piecemeal, &batch).unwrap());
        let items: Vec<ItemKey> = ids[1..].iter().map(|id| ItemKey::Message(*id)).collect();
        store.set_context(piecemeal, &items).unwrap();
    }

    let (whole_rows, whole_context) = rows(&url, whole);
    let (piecemeal_rows, piecemeal_context) = rows(&url, piecemeal);
    assert_eq!(whole_rows.len(), count);
    assert_eq!(whole_rows, piecemeal_rows);
    assert_eq!(whole_context.len(), count - 1);
    assert_eq!(whole_context, piecemeal_context);
    assert!(
        whole_rows[7].ends_with("| t"),
        "a CJK message is marked: {}",
        whole_rows[7]
    );
    assert!(
        whole_rows[8].contains("'marshmallow':2"),
        "its words are stored: {}",
        whole_rows[8]
    );
}

/// The first and last `seq` of each span of the conversation.
fn spans(url: &str, conv: i64) -> Vec<(i64, i64)> {
    client(url)
        .query(
            "SELECT seq_start, seq_end FROM lcm_message_spans \
             WHERE conversation_id = $1 ORDER BY seq_start",
            &[&conv],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// The index holds the words of spans of messages: each write cuts its messages into spans of
/// `SPAN_MESSAGES`, a search finds a message anywhere in one, and `doctor` counts the messages
/// no span holds the words of.
#[test]
fn each_write_cuts_its_messages_into_spans_whose_words_a_search_finds() {
    let url = Postgres::database("lcm_spans");
    let mut store = open(&url);
    let conv = store.current_conversation("s").unwrap();
    let first: Vec<NewMessage> = (0..ROWS_PER_STATEMENT + 100)
        .map(|i| message(i, Prev::First))
        .collect();
    store.append_messages(conv, &first).unwrap();
    let few: Vec<NewMessage> = (first.len()..first.len() + 70)
        .map(|i| message(i, Prev::First))
        .collect();
    store.append_messages(conv, &few).unwrap();
    let cut = spans(&url, conv);
    // By `COPY` (2,100 messages), then as arrays (70): every span but each write's last
    // holds `SPAN_MESSAGES`, and the spans follow each other.
    assert_eq!(cut.len(), 2_100_usize.div_ceil(64) + 2, "{cut:?}");
    assert_eq!(cut[0], (0, 63));
    assert_eq!(cut[32], (2048, 2099));
    assert_eq!(cut[33..], [(2100, 2163), (2164, 2169)]);
    assert!(cut.windows(2).all(|w| w[1].0 == w[0].1 + 1));
    for step in [1_000, 2_130, 2_169] {
        // A phrase's words in a row, and a word only that message holds.
        let query = FullTextQuery {
            terms: vec![
                Term {
                    text: "marshmallow-fields".into(),
                    prefix: false,
                },
                Term {
                    text: (step * 31).to_string(),
                    prefix: false,
                },
            ],
            any: false,
        };
        let hits = store
            .fts_messages(conv, &query, (0, i64::MAX), false, 10)
            .unwrap();
        let seqs: Vec<i64> = hits
            .iter()
            .map(|hit| match hit {
                ctxhost_lcm_store::Hit::Message { seq, .. } => *seq,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(seqs, [step as i64], "step {step}");
    }
    // (The messages' made-up hashes are a fault of their own.)
    let outside = |store: &mut Store| {
        let doctor = store.doctor(&Repair::default()).unwrap();
        doctor
            .problems
            .iter()
            .find(|p| p.check == "words_outside_spans")
            .map(|p| p.count)
    };
    assert_eq!(outside(&mut store), None);

    Postgres::psql(
        &url,
        &format!("DELETE FROM lcm_message_spans WHERE conversation_id = {conv} AND seq_start = 64"),
    );
    assert_eq!(outside(&mut store), Some(64));

    // Deleting the session deletes its spans with its messages.
    assert!(store.delete_session("s").unwrap());
    assert_eq!(spans(&url, conv), []);
}

/// `count` messages from number `from` on, each of 300 words of its own.
fn wordy(from: usize, count: usize) -> Vec<NewMessage> {
    (from..from + count)
        .map(|i| {
            let text: Vec<String> = (0..300).map(|w| format!("w{i}x{w}")).collect();
            let text = text.join(" ");
            NewMessage {
                role: "user".into(),
                head: false,
                json: serde_json::json!({"role": "user", "content": text}).to_string(),
                tokens: 1_000,
                hash: format!("h{i}"),
                text,
                prev: Prev::First,
            }
        })
        .collect()
}

/// Pages of the messages' full-text index's pending list (read as the superuser).
fn pending_pages(url: &str) -> i64 {
    let mut client = client(url);
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        .unwrap();
    client
        .query_one(
            "SELECT n_pending_pages::bigint FROM \
             gin_metapage_info(get_raw_page('lcm_message_spans_words', 0))",
            &[],
        )
        .unwrap()
        .get(0)
}

/// Whether the messages' words have statistics.
fn analyzed(url: &str) -> bool {
    client(url)
        .query_one(
            "SELECT count(*) > 0 FROM pg_stats \
             WHERE tablename = 'lcm_message_spans' AND attname = 'words'",
            &[],
        )
        .unwrap()
        .get(0)
}

fn found(store: &Store, conv: i64, word: &str) -> usize {
    let query = FullTextQuery {
        terms: vec![Term {
            text: word.into(),
            prefix: false,
        }],
        any: false,
    };
    store
        .fts_messages(conv, &query, (0, i64::MAX), false, 10)
        .unwrap()
        .len()
}

/// 4 MB, the server's own limit, in pages.
const SERVER_LIMIT_PAGES: i64 = 512;

/// Writes leave their words pending past the server's 4 MB (no insert pays for merging them),
/// still found by a search; after `UPKEEP_EVERY` messages the pool merges them and refreshes
/// the statistics by itself, off the writer's call.
#[test]
fn words_wait_in_the_pending_list_until_the_pool_merges_them() {
    let url = Postgres::database("lcm_upkeep");
    let mut store = open(&url);
    let conv = store.current_conversation("s").unwrap();
    let first = UPKEEP_EVERY - 500;
    store.append_messages(conv, &wordy(0, first)).unwrap();
    let pending = pending_pages(&url);
    assert!(pending > SERVER_LIMIT_PAGES, "{pending} pending pages");
    assert_eq!(found(&store, conv, "w17x250"), 1);
    assert!(!analyzed(&url));

    store.append_messages(conv, &wordy(first, 500)).unwrap();
    let Store::Postgres(postgres) = &store else {
        unreachable!()
    };
    postgres.settle();
    assert_eq!(pending_pages(&url), 0);
    assert!(analyzed(&url));
    assert_eq!(found(&store, conv, "w4900x3"), 1);
    let doctor = store.doctor(&Repair::default()).unwrap();
    assert!(
        doctor.notes.iter().all(|note| note.check != "index_upkeep"),
        "{doctor:?}"
    );
}

/// A role that does not own the tables may not merge them: its connections keep the server's
/// limit (its inserts merge the list as it fills), and the server's autovacuum does the upkeep.
#[test]
fn a_role_that_does_not_own_the_tables_keeps_the_servers_limit() {
    let url = Postgres::database("lcm_upkeep_role");
    let owner = open(&url);
    Postgres::psql(
        &url,
        "CREATE ROLE lcm_writer LOGIN; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO lcm_writer; \
         GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO lcm_writer;",
    );
    let writer_url = url.replacen("postgres://postgres@", "postgres://lcm_writer@", 1);
    assert_ne!(writer_url, url);
    let mut writer = open(&writer_url);
    let conv = writer.current_conversation("s").unwrap();
    writer
        .append_messages(conv, &wordy(0, UPKEEP_EVERY - 500))
        .unwrap();
    let pending = pending_pages(&url);
    assert!(pending <= SERVER_LIMIT_PAGES, "{pending} pending pages");
    assert_eq!(found(&writer, conv, "w17x250"), 1);
    let doctor = writer.doctor(&Repair::default()).unwrap();
    assert!(
        doctor.notes.iter().all(|note| note.check != "index_upkeep"),
        "{doctor:?}"
    );
    drop(owner);
}
