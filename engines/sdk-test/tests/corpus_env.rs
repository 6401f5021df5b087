//! The corpus in tests: `CTXHOST_CORPUS` points at another corpus, unset it is the checkout's,
//! and a missing or unknown one is a panic that says what to do. One test in its own binary: it
//! changes the process environment.

use std::path::Path;

use ctxhost_quality::corpus::CORPUS_ENV;
use ctxhost_sdk::Message;
use ctxhost_sdk_test::corpus;

fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let panic = std::panic::catch_unwind(f).expect_err("it panics");
    panic
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| panic.downcast_ref::<&str>().unwrap().to_string())
}

fn write(dir: &Path, name: &str, messages: &[Message]) {
    std::fs::write(dir.join(name), serde_json::to_string(messages).unwrap()).unwrap();
}

#[test]
fn the_environment_names_the_corpus_and_a_missing_one_panics_with_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let b = [Message::system("s"), Message::user("b")];
    let a = [
        Message::system("s"),
        Message::user("a"),
        Message::assistant("x"),
    ];
    write(dir.path(), "b.json", &b);
    write(dir.path(), "a.json", &a);
    std::env::set_var(CORPUS_ENV, dir.path());
    assert_eq!(corpus::dir(), dir.path());
    let names: Vec<String> = corpus::transcripts().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["a.json", "b.json"]);
    assert_eq!(corpus::transcript("b"), b);
    assert_eq!(
        corpus::long_session(),
        [a[0].clone(), a[1].clone(), a[2].clone(), b[1].clone()]
    );

    // An unknown name: the ones there are.
    let message = panic_message(|| {
        corpus::transcript("no-such-transcript");
    });
    assert!(
        message.contains("no transcript named no-such-transcript in the corpus at ")
            && message.contains("a.json, b.json"),
        "{message}"
    );

    // Missing: where it looked, and how to point at the corpus.
    let gone = dir.path().join("nowhere");
    std::env::set_var(CORPUS_ENV, &gone);
    let message = panic_message(|| {
        corpus::transcripts();
    });
    assert!(
        message.starts_with(&format!(
            "the ctxhost test corpus: the corpus at {} cannot be read: ",
            gone.display()
        )),
        "{message}"
    );
    assert!(
        message.contains("set CTXHOST_CORPUS to a directory"),
        "{message}"
    );

    // Unset: the corpus the checkout holding this crate ships.
    std::env::remove_var(CORPUS_ENV);
    assert!(
        corpus::dir().ends_with("host/quality/corpus/swe-agent"),
        "{}",
        corpus::dir().display()
    );
    assert!(corpus::transcripts().len() >= 10);
}
