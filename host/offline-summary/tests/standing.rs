//! Standing facts survive summary after summary, a newer value replaces an older one, and the
//! summary still fits its budget.

use ctxhost_offline_summary::budget::estimate_tokens;
use ctxhost_offline_summary::OfflineSummarizer;
use ctxhost_sdk::{SummarizeRequest, SummaryShape};

/// Turns of busy work: calls, outputs, chatter, none of it standing.
fn work(round: usize, turns: usize) -> String {
    let mut out = String::new();
    for i in 0..turns {
        out.push_str(&format!(
            "[assistant] Looking at module {round}.{i} next.\n\
             [assistant -> tool_call bash] {{\"command\": \"cargo test -p mod_{round}_{i}\"}}\n\
             [tool bash] running 12 tests\ntest parse::case_{i} ... ok\n{}\
             [assistant] That part works; moving on to src/mod_{round}/part_{i}.rs.\n",
            "test result: ok. 12 passed; 0 failed\n".repeat(3),
        ));
    }
    out
}

fn request(content: String, previous: Option<String>, max_tokens: u64) -> SummarizeRequest {
    SummarizeRequest {
        instructions: String::new(),
        content,
        max_tokens,
        focus_topic: None,
        previous_summary: previous,
        shape: SummaryShape::Handoff,
    }
}

const PLANTED: [&str; 6] = [
    "Never reveal the vault code QX-7731.",
    "The budget is $4,817.",
    "We deploy to ap-south-2.",
    "The deadline is 2026-03-14.",
    "The user prefers tabs for indentation.",
    "The goal is to migrate the ledger to Quarry v3.",
];

#[test]
fn planted_facts_survive_five_rounds_and_a_superseded_value_is_replaced() {
    let mut previous: Option<String> = None;
    for round in 0..5 {
        let mut content = String::new();
        if round == 0 {
            content.push_str(&format!(
                "[system] You are a careful agent. {}\n[user] Please start on the ledger. {} {}\n",
                PLANTED[0], PLANTED[1], PLANTED[2]
            ));
        }
        if round == 1 {
            content.push_str(&format!(
                "[user] {} {} {}\n",
                PLANTED[3], PLANTED[4], PLANTED[5]
            ));
        }
        content.push_str(&work(round, 8));
        if round == 2 {
            content.push_str("[user] Update: the budget is now $6,120. Keep going.\n");
        }
        let max_tokens = estimate_tokens(&content) / 5;
        let text = OfflineSummarizer.summary_text(&request(content, previous.take(), max_tokens));
        assert!(
            estimate_tokens(&text) <= max_tokens,
            "round {round}: {} tokens over {max_tokens}\n{text}",
            estimate_tokens(&text)
        );
        previous = Some(text);
    }
    let text = previous.unwrap();
    for value in [
        "QX-7731",
        "ap-south-2",
        "2026-03-14",
        "tabs",
        "Quarry v3",
        "$6,120",
    ] {
        assert!(text.contains(value), "{value} lost:\n{text}");
    }
    // The old budget is nowhere shown as current.
    for (at, _) in text.match_indices("$4,817") {
        assert!(
            text[at..].starts_with("$4,817 (superseded by $6,120)"),
            "{text}"
        );
    }
    let standing: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "## Standing Facts")
        .skip(1)
        .take_while(|l| l.starts_with("- "))
        .collect();
    assert_eq!(
        standing,
        [
            "- Rule: Never reveal the vault code QX-7731.",
            "- Fact: We deploy to ap-south-2.",
            "- Fact: The deadline is 2026-03-14.",
            "- Preference: The user prefers tabs for indentation.",
            "- Goal: The goal is to migrate the ledger to Quarry v3.",
            // The change takes the place of the value in the words that stated it.
            "- Constraint: The budget is $6,120.",
        ],
        "{text}"
    );
}

#[test]
fn standing_facts_win_over_everything_else_when_the_budget_is_tight() {
    let content = format!("[user] {}\n{}", PLANTED.join(" "), work(0, 40));
    let text = OfflineSummarizer.summary_text(&request(content, None, 200));
    assert!(estimate_tokens(&text) <= 200, "{text}");
    for value in [
        "QX-7731",
        "$4,817",
        "ap-south-2",
        "2026-03-14",
        "tabs",
        "Quarry v3",
    ] {
        assert!(text.contains(value), "{value} lost:\n{text}");
    }
}

#[test]
fn digest_records_carry_standing_facts_and_merge_them() {
    let digest = |content: String| {
        OfflineSummarizer.summary_text(&SummarizeRequest {
            shape: SummaryShape::Digest,
            ..request(content, None, 300)
        })
    };
    let first = digest(format!(
        "[user · seq 1] {}\n{}",
        PLANTED[..3].join(" "),
        work(0, 3)
    ));
    assert!(
        first.starts_with("Standing:\n- Rule: Never reveal"),
        "{first}"
    );
    let second = digest(format!(
        "[user · seq 40] Correction: budget cap: $5,002.\n{}",
        work(1, 3)
    ));
    // A condensed record merges both; the newer budget wins.
    let merged = digest(format!(
        "[sum_a · leaf depth 0 · seq 1-39]\n{first}\n\n[sum_b · leaf depth 0 · seq 40-80]\n{second}"
    ));
    assert!(
        merged.contains("QX-7731") && merged.contains("ap-south-2"),
        "{merged}"
    );
    assert!(
        // The line keeps the value, not the label that said it changed.
        merged.contains("- Constraint: Budget cap: $5,002."),
        "{merged}"
    );
    assert!(!merged.contains("The budget is $4,817."), "{merged}");
}

#[test]
fn changes_announced_the_same_way_stay_apart_each_with_its_own_value() {
    // Each change opens with the same words and a colon: those words announce the change and
    // name nothing, so the second change must not take the first one's place (and words).
    let record = OfflineSummarizer.summary_text(&SummarizeRequest {
        shape: SummaryShape::Digest,
        ..request(
            "[user] Plans shifted since then: the billing service goes onto cluster basalt-2289 \
             instead, so keep that in mind.\n[assistant] Acknowledged.\n\
             [user] Plans shifted since then: we switched the queue backend to osprey-3069 \
             instead, so keep that in mind.\n[assistant] Acknowledged.\n"
                .to_string(),
            None,
            600,
        )
    });
    let standing: Vec<&str> = record
        .lines()
        .skip_while(|line| *line != "Standing:")
        .skip(1)
        .take_while(|line| line.starts_with("- "))
        .collect();
    let billing = standing
        .iter()
        .find(|line| line.contains("billing service"));
    let queue = standing.iter().find(|line| line.contains("queue backend"));
    assert!(
        billing.is_some_and(|line| line.contains("basalt-2289") && !line.contains("osprey")),
        "{record}"
    );
    assert!(
        queue.is_some_and(|line| line.contains("osprey-3069")),
        "{record}"
    );
}

#[test]
fn a_record_does_not_repeat_as_an_ask_what_its_standing_facts_state() {
    // An open question said with an aside in its own sentence, and a nudge: the question is
    // standing, so only the ask that asks for more is listed; an aside in a sentence of its
    // own that asks for more stays.
    let record = OfflineSummarizer.summary_text(&SummarizeRequest {
        shape: SummaryShape::Digest,
        ..request(
            "[user] Nobody has settled yet whether the legacy endpoint /srv/cobalt-3501/data \
             can be switched off, so we will have to come back to it.\n\
             [assistant] Acknowledged.\n\
             [user] Never push directly to the protected branch garnet-6619. Also split the \
             importer into two modules.\n[assistant] Acknowledged.\n"
                .to_string(),
            None,
            600,
        )
    });
    assert!(record.contains("/srv/cobalt-3501/data"), "{record}");
    let asked: Vec<&str> = record
        .lines()
        .filter(|line| line.starts_with("Asked:") || line.starts_with("- "))
        .filter(|line| line.contains("Nobody has settled") || line.contains("split the"))
        .collect();
    assert_eq!(asked.len(), 1, "{record}");
    assert!(asked[0].contains("split the importer"), "{record}");
}
