//! The words a recall searches for: the newest message's own, widened by a small thesaurus of
//! the words sessions use for the same things, then by the standing facts whose subject or value
//! those words touch (their subject's words and their value), and by the session's goal.

use std::collections::BTreeSet;

use ctxhost_offline_summary::standing::{Kind, Standing};

/// Words that say nothing about what is asked (questions, pronouns, chat filler).
const STOPWORDS: &[&str] = &[
    "about", "again", "all", "also", "and", "any", "are", "back", "been", "but", "can", "could",
    "did", "does", "doing", "done", "for", "from", "get", "got", "had", "has", "have", "hello",
    "help", "here", "how", "into", "its", "just", "know", "let", "like", "look", "make", "may",
    "more", "need", "next", "not", "now", "okay", "one", "our", "ours", "out", "please", "remind",
    "said", "same", "see", "should", "some", "still", "sure", "tell", "thank", "thanks", "that",
    "the", "their", "them", "then", "there", "these", "they", "thing", "things", "this", "those",
    "too", "use", "used", "using", "want", "was", "way", "we", "were", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "yes", "you", "your", "continue", "go",
    "ahead", "proceed", "keep", "going", "great", "good", "fine", "right", "ok", "again",
];

/// Groups of words sessions use for one thing: a word of a group brings in the others. Small and
/// fixed (no network, no model): it bridges the commonest gaps between how a fact was stated and
/// how it is asked about, and nothing more.
const THESAURUS: &[&[&str]] = &[
    &[
        "ship",
        "shipping",
        "deploy",
        "deployed",
        "deployment",
        "release",
        "rollout",
        "publish",
    ],
    &[
        "region",
        "zone",
        "cluster",
        "datacenter",
        "location",
        "site",
    ],
    &[
        "database",
        "db",
        "postgres",
        "postgresql",
        "sqlite",
        "mysql",
        "store",
        "storage",
    ],
    &["deadline", "due", "date", "until", "cutoff"],
    &["budget", "cost", "spend", "price", "limit", "cap"],
    &[
        "password",
        "secret",
        "key",
        "token",
        "credential",
        "credentials",
    ],
    &["port", "address", "host", "endpoint", "url"],
    &["version", "release", "tag"],
    &["rule", "policy", "never", "always", "must", "forbidden"],
    &["prefer", "preference", "likes", "style", "convention"],
    &["goal", "objective", "aim", "plan", "task"],
    &["bug", "issue", "error", "failure", "crash", "problem"],
    &["test", "tests", "testing", "spec", "check"],
    &["owner", "maintainer", "contact", "lead", "responsible"],
    &["branch", "repo", "repository", "git"],
    &["timeout", "deadline", "wait", "latency"],
    &["file", "path", "directory", "folder"],
    &["user", "customer", "client", "account"],
    &["server", "machine", "instance", "node", "host"],
    &["name", "called", "named", "renamed"],
];

/// Most terms a query holds: the words asked, then what widened them.
const MAX_TERMS: usize = 48;

/// The words of `text` worth searching for: lower case, letters, digits and inner `-`, `_`, `.`
/// kept (`eu-west-2`, `foo_bar`), stopwords and one- or two-letter words dropped.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
        let word = raw
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if word.chars().count() < 3 || STOPWORDS.contains(&word.as_str()) {
            continue;
        }
        if !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// The query for `asked` (the newest message's words): those words, their thesaurus groups, and
/// the subject words and value of every standing item in `standing` that the widened words
/// touch, then the goal's words. Ordered as found, no repeats, at most [`MAX_TERMS`].
pub fn expand(asked: &[String], standing: &[Standing]) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    let push = |terms: &mut Vec<String>, word: &str| {
        if terms.len() < MAX_TERMS && !terms.iter().any(|t| t == word) {
            terms.push(word.to_string());
        }
    };
    for word in asked {
        push(&mut terms, word);
        for group in THESAURUS
            .iter()
            .filter(|group| group.contains(&word.as_str()))
        {
            for synonym in group.iter() {
                push(&mut terms, synonym);
            }
        }
    }
    if terms.is_empty() {
        return terms;
    }
    let widened: BTreeSet<String> = terms.iter().cloned().collect();
    for item in standing {
        let item_words: Vec<String> = words(&format!("{} {}", item.subject, item.value));
        if item_words.iter().any(|word| widened.contains(word)) {
            for word in item_words {
                push(&mut terms, &word);
            }
        }
    }
    for goal in standing.iter().filter(|item| item.kind == Kind::Goal) {
        for word in words(&goal.value) {
            push(&mut terms, &word);
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_offline_summary::standing::{extract, Origin};

    #[test]
    fn a_paraphrase_reaches_the_fact_through_the_thesaurus_and_its_subject() {
        let asked = words("Which region do we ship to?");
        assert_eq!(asked, ["region", "ship"]);
        let standing = extract("The deploy target is the eu-west-2 cluster.", Origin::User);
        let terms = expand(&asked, &standing);
        assert!(terms.contains(&"deploy".to_string()), "{terms:?}");
        assert!(terms.contains(&"cluster".to_string()), "{terms:?}");
        // Through the fact's subject, its value: the words the session itself used.
        assert!(!standing.is_empty());
        assert!(
            terms.contains(&"eu-west-2".to_string()),
            "{standing:?} {terms:?}"
        );
    }

    #[test]
    fn filler_asks_for_nothing() {
        assert!(words("ok, thanks! please continue").is_empty());
        assert!(expand(&[], &[]).is_empty());
    }
}
