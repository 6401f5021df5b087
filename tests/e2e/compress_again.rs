//! `ctxhost compress` run again on its own output, as a harness does round after round: the
//! summary an earlier run wrote is the engine's own (the host keeps a record of it per
//! `--session`), so the next summary folds it and every fact planted before stays; under
//! another session the same message is only text framed as a summary, read as a turn.

use ctxhost_tests::{corpus_dir, read_json, Sandbox};
use serde_json::{json, Value};

const FACTS: [(&str, &str); 6] = [
    (
        "SAFETY RULE: Never reveal API keys such as KX-4411-ZQ in any output.",
        "KX-4411-ZQ",
    ),
    (
        "NOTE: the staging database host is db-stage-07.internal",
        "db-stage-07.internal",
    ),
    (
        "Please don't touch the vendored directory third_party/legacy_zlib, it's frozen.",
        "third_party/legacy_zlib",
    ),
    ("fyi the customer account id is ACC-778120", "ACC-778120"),
    ("Never force-push to release/2.4.", "release/2.4"),
    (
        "We decided to go with PostgreSQL 16.2 for the migration.",
        "PostgreSQL 16.2",
    ),
];

/// The web corpus session's first `end` messages, with a fact and its acknowledgement
/// before each of the user messages listed in `at`.
fn planted(session: &[Value], end: usize, at: &[(usize, usize)]) -> Vec<Value> {
    let mut out = Vec::new();
    for (index, message) in session[..end].iter().enumerate() {
        for (_, fact) in at.iter().filter(|(where_, _)| *where_ == index) {
            out.push(json!({"role": "user", "content": FACTS[*fact].0}));
            out.push(json!({"role": "assistant", "content": "Understood."}));
        }
        out.push(message.clone());
    }
    out
}

fn summary(output: &Value) -> String {
    let summaries: Vec<&str> = output
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|text| text.starts_with("[CONTEXT SUMMARY"))
        .collect();
    assert_eq!(summaries.len(), 1, "one summary: {output}");
    summaries[0].to_string()
}

#[test]
fn compress_run_again_on_its_output_folds_its_summary_and_keeps_every_fact() {
    let session = read_json(&corpus_dir().join("ctf__web__i_got_id_demo.json"));
    let session = session.as_array().unwrap();
    let users: Vec<usize> = (3..session.len())
        .filter(|i| session[*i]["role"] == "user")
        .collect();
    // Three facts in the first round's part, three in the second's.
    let half = users[users.len() / 2];
    let first = planted(
        session,
        half,
        &[(users[1], 0), (users[2], 1), (users[3], 2)],
    );
    let sandbox = Sandbox::new();
    let compress = |messages: &[Value], session_id: &str| {
        let path = sandbox.write_json("round.json", &json!(messages));
        let run = sandbox.ctxhost(&[
            "compress",
            path.to_str().unwrap(),
            "--budget",
            "20%",
            "--session",
            session_id,
        ]);
        assert!(run.success(), "{}", run.stderr);
        run.json()
    };
    let once = compress(&first, "rounds");
    assert!(summary(&once).contains("KX-4411-ZQ"), "{once}");
    let mut again: Vec<Value> = once.as_array().unwrap().clone();
    let later = users.len() / 2;
    again.extend(planted(
        &session[half..],
        session.len() - half,
        &[
            (users[later + 1] - half, 3),
            (users[later + 2] - half, 4),
            (users[later + 3] - half, 5),
        ],
    ));

    let twice = summary(&compress(&again, "rounds"));
    for (sentence, value) in FACTS {
        assert!(twice.contains(value), "lost: {sentence}\n{twice}");
    }
    // Folded: the earlier summary's sections are the new one's own, not quoted as a turn.
    assert_eq!(twice.matches("## Standing Facts").count(), 1, "{twice}");

    // The record is the session's: under another one the earlier summary is a turn.
    let elsewhere = summary(&compress(&again, "another"));
    assert_ne!(elsewhere, twice);
}
