//! A standing fact's line costs what the fact needs: one label a line, no emphasis that
//! limits nothing, every value verbatim, and the line reads back as the same item.

use ctxhost_offline_summary::standing::{extract, Origin, Standing};

/// The one item `text` states, and its line.
fn line_of(text: &str) -> (Standing, String) {
    let items = extract(text, Origin::User);
    assert_eq!(items.len(), 1, "{text}: {items:?}");
    let item = items.into_iter().next().unwrap();
    let line = item.line();
    // The line reads back as the item: same kind, subject and value.
    let back = Standing::parse_line(&line).unwrap_or_else(|| panic!("{line} reads back"));
    assert_eq!(
        (back.kind, &back.subject, &back.value),
        (item.kind, &item.subject, &item.value),
        "{line}"
    );
    (item, line)
}

#[test]
fn a_stated_label_that_says_what_the_kind_says_goes() {
    let cases = [
        // A limit's label on a prohibition: the Rule label says it binds.
        (
            "Constraint — do not merge into the branch release-7731 on Fridays.",
            "Rule: Do not merge into the branch release-7731 on Fridays.",
        ),
        // Acceptance criteria are requirements: a rule.
        (
            "Acceptance criteria: always ship a migration with its rollback script RB-4410.",
            "Rule: Always ship a migration with its rollback script RB-4410.",
        ),
        // Background to know, on a fact.
        (
            "Environment: the cache directory is /var/cache/heron-58.",
            "Fact: The cache directory is /var/cache/heron-58.",
        ),
        (
            "Context: the staging database is pg-ledger-12.",
            "Fact: The staging database is pg-ledger-12.",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(line_of(text).1, want, "{text}");
    }
}

#[test]
fn a_stated_label_stays_when_the_line_would_have_to_write_the_subject() {
    // Without "Environment" the statement reads as another subject: the line keeps the
    // label rather than write the subject out.
    let (item, line) = line_of("Environment: staging runs kernel build k6.8.12.");
    assert_eq!(item.subject, "environment");
    assert_eq!(
        line,
        "Fact: Environment: staging runs kernel build k6.8.12."
    );
}

#[test]
fn an_emphasis_closing_a_rule_goes_and_every_value_stays() {
    let (item, line) = line_of(
        "Do not print the signing key SK-90-QL in a log or a reply under any circumstances.",
    );
    assert_eq!(
        line,
        "Rule: Do not print the signing key SK-90-QL in a log or a reply."
    );
    assert!(item.value.contains("SK-90-QL"), "{item:?}");
    let (_, line) = line_of("Never restart the broker mq-east-4 whatsoever.");
    assert_eq!(line, "Rule: Never restart the broker mq-east-4.");
    // Where it carries the negation it is the rule, and it stays.
    let (_, line) = line_of("Under no circumstances deploy to cluster kite-19.");
    assert!(line.contains("Under no circumstances"), "{line}");
    // Said of something that is no rule, it is no emphasis of one: the sentence is kept.
    let kept = "The fallback region is eu-north-7 under any circumstances.";
    let items = extract(kept, Origin::User);
    assert!(
        items.iter().all(|item| item.text.contains("circumstances")),
        "{items:?}"
    );
}

#[test]
fn a_rule_said_to_the_agent_is_the_rule_itself() {
    let (item, line) = line_of("The agent must always tag each release with the prefix rel-2291.");
    assert_eq!(
        line,
        "Rule: Always tag each release with the prefix rel-2291."
    );
    assert_eq!(item.subject, "tag each release with prefix");
    // Said to the agent or to "you", it is one rule: a restatement replaces it.
    let (you, _) = line_of("You must always tag each release with the prefix rel-3300.");
    assert!(item.same_subject(&you), "{item:?} {you:?}");
}

#[test]
fn labels_and_emphasis_go_together() {
    let (_, line) = line_of(
        "Acceptance criteria: the agent must never drop the audit table AUD-77 under any circumstances.",
    );
    assert_eq!(line, "Rule: Never drop the audit table AUD-77.");
}
