//! Where the corpus is found at run time: a named directory, then `$CTXHOST_CORPUS`, then the
//! checkout's corpus from a starting directory upwards; and what each way of failing says. One
//! test in its own binary: it changes the process environment.

use std::path::Path;

use ctxhost_quality::corpus::{Corpus, CorpusError, CORPUS_ENV, SHIPPED};
use ctxhost_sdk::Message;

fn write(dir: &Path, name: &str, messages: &[Message]) {
    std::fs::write(dir.join(name), serde_json::to_string(messages).unwrap()).unwrap();
}

#[test]
fn a_named_directory_then_the_environment_then_the_checkout_and_nothing_found_says_so() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join(SHIPPED).is_dir())
        .expect("this crate is inside a checkout holding the corpus")
        .to_path_buf();
    let named = tempfile::tempdir().unwrap();
    let set = tempfile::tempdir().unwrap();
    let nowhere = tempfile::tempdir().unwrap();

    // Unset: the checkout's corpus, from any directory inside the checkout.
    std::env::remove_var(CORPUS_ENV);
    let inside = checkout.join("host/quality/src");
    let found = Corpus::locate(None, &inside).unwrap();
    assert_eq!(found.dir(), checkout.join(SHIPPED));
    assert_eq!(Corpus::locate(None, &checkout).unwrap(), found);
    // ... and nothing outside one.
    let error = Corpus::locate(None, nowhere.path()).unwrap_err();
    assert!(matches!(error, CorpusError::NotFound { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "no corpus found: CTXHOST_CORPUS is not set and no host/quality/corpus/swe-agent \
             is in {} or above it",
            nowhere.path().display()
        )
    );

    // Set: the environment wins over the checkout; a named directory wins over both.
    std::env::set_var(CORPUS_ENV, set.path());
    assert_eq!(Corpus::locate(None, &inside).unwrap().dir(), set.path());
    assert_eq!(
        Corpus::locate(None, nowhere.path()).unwrap().dir(),
        set.path()
    );
    let chosen = Corpus::locate(Some(named.path()), &inside).unwrap();
    assert_eq!(chosen.dir(), named.path());
    // Set but empty counts as unset.
    std::env::set_var(CORPUS_ENV, "");
    assert_eq!(Corpus::locate(None, &inside).unwrap(), found);
    std::env::remove_var(CORPUS_ENV);

    // What the named corpus holds: its *.json transcripts by name, the rest ignored.
    let b = [Message::system("s"), Message::user("b")];
    let a = [
        Message::system("s"),
        Message::user("a"),
        Message::assistant("x"),
    ];
    write(named.path(), "b.json", &b);
    write(named.path(), "a.json", &a);
    std::fs::write(named.path().join("notes.txt"), "not a transcript").unwrap();
    let names: Vec<String> = chosen
        .transcripts()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["a.json", "b.json"]);
    assert_eq!(chosen.transcript("b").unwrap(), b);
    assert_eq!(
        chosen.long_session().unwrap(),
        [a[0].clone(), a[1].clone(), a[2].clone(), b[1].clone()]
    );

    // Not a transcript: the file and the problem.
    std::fs::write(named.path().join("c.json"), "{}").unwrap();
    let error = chosen.transcripts().unwrap_err();
    assert!(
        matches!(error, CorpusError::NotMessages { .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("c.json: not a JSON array of chat messages"),
        "{error}"
    );

    // Empty, then missing: the directory each time.
    let error = Corpus::at(set.path()).transcripts().unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "the corpus at {} holds no *.json transcript",
            set.path().display()
        )
    );
    let gone = nowhere.path().join("gone");
    let error = Corpus::at(&gone).transcripts().unwrap_err();
    assert!(matches!(error, CorpusError::Unreadable { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with(&format!(
            "the corpus at {} cannot be read: ",
            gone.display()
        )),
        "{error}"
    );
}
