//! The standing-fact reader is not tuned to one way of writing: four families of phrasing
//! (chat, ticket, terse labels, prose), each stating every kind of standing item, giving one a
//! new value, and holding decoys (a question, a quoted log line, code) that look like facts and
//! are not. Each family is one session summarized by the offline summarizer; what is checked
//! is the summary's Standing Facts section.

use ctxhost_offline_summary::carry::standing_in;
use ctxhost_offline_summary::OfflineSummarizer;
use ctxhost_sdk::{SummarizeRequest, SummaryShape};

/// What a family must show.
struct Family {
    name: &'static str,
    session: &'static str,
    /// Each item expected: its kind's label and a value its line holds.
    expected: &'static [(&'static str, &'static str)],
    /// Values given a new one later: never shown as current.
    superseded: &'static [&'static str],
    /// Text of decoys: no standing line holds it.
    decoys: &'static [&'static str],
}

/// The offline summary of the family's session, in the handoff's shape.
fn handoff_of(family: &Family) -> String {
    let request = SummarizeRequest {
        instructions: String::new(),
        content: family.session.to_string(),
        max_tokens: 4000,
        focus_topic: None,
        previous_summary: None,
        shape: SummaryShape::Handoff,
    };
    OfflineSummarizer.summary_text(&request)
}

/// The Standing Facts lines of the session's summary, and every failure found.
fn check(family: &Family) -> Vec<String> {
    let summary = handoff_of(family);
    let lines = standing_in(&summary).lines();
    let mut failures = Vec::new();
    for (kind, value) in family.expected {
        let found = lines
            .iter()
            .any(|line| line.starts_with(kind) && line.contains(value));
        if !found {
            failures.push(format!("{}: no {kind} holding {value:?}", family.name));
        }
    }
    for old in family.superseded {
        if let Some(line) = lines.iter().find(|line| line.contains(old)) {
            failures.push(format!(
                "{}: {old:?} still current in {line:?}",
                family.name
            ));
        }
        for (at, _) in summary.match_indices(old) {
            if !summary[at + old.len()..].starts_with(" (superseded by") {
                failures.push(format!("{}: {old:?} shown unmarked", family.name));
                break;
            }
        }
    }
    for decoy in family.decoys {
        if let Some(line) = lines.iter().find(|line| line.contains(decoy)) {
            failures.push(format!("{}: decoy {decoy:?} read as {line:?}", family.name));
        }
    }
    failures
}

fn assert_family(family: &Family) {
    let failures = check(family);
    assert!(
        failures.is_empty(),
        "{}\n{}",
        failures.join("\n"),
        standing_in(&handoff_of(family)).lines().join("\n")
    );
}

#[test]
fn chat_style() {
    assert_family(&Family {
        name: "chat",
        session: "\
[system] You are a coding assistant working in the user's repository.
[user] hey! quick thing before we start: don't ever commit the .env.local file, ok?
[assistant] Sure. What are we working on?
[user] btw keep every PR to at most 400 changed lines. fyi the staging box is stg-web-07.
[user] what I really want is to get the CSV importer merged by Friday.
[user] oh and I'd rather you use pnpm than npm.
[user] still not sure whether we should support .xlsx uploads, let's leave that open for now.
[user] ok let's go with Postgres 16 for the job queue.
[assistant] Got it. Continuing with the plan.
[assistant] Acknowledged. Continuing with the plan.
[user] can you check why the build is 3.2 GB now?
[user] the log says `error: the budget is 0 bytes` when it fails, weird.
[user] actually the staging box is stg-web-09 now.
[assistant] Noted: the staging box is stg-web-09.",
        expected: &[
            ("Rule", ".env.local"),
            ("Constraint", "400 changed lines"),
            ("Fact", "stg-web-09"),
            ("Goal", "CSV importer"),
            ("Preference", "pnpm"),
            ("Question", ".xlsx"),
            ("Decision", "Postgres 16"),
        ],
        superseded: &["stg-web-07"],
        decoys: &["3.2 GB", "0 bytes", "Continuing with the plan"],
    });
}

#[test]
fn ticket_style() {
    assert_family(&Family {
        name: "ticket",
        session: "\
[user] Ticket OPS-5521: Migrate the billing cron to Kubernetes
Priority: P1
Due: 2026-05-30
Objective: run the nightly billing job on the shared cluster.
Acceptance criteria:
- The job must finish in under 15 minutes.
- Do not change the cron schedule 0 3 * * *.
Reporter prefers Helm charts over raw manifests.
Open question: do we keep the old VM vm-bill-01 as a fallback?
Decision: use the shared cluster k8s-shared-2.
Steps to reproduce: run `make deploy ENV=prod` and watch it time out.
Log excerpt:
    2026-05-01 12:00:03 WARN retry limit is 3
[assistant] I'll start with the Helm chart.
[user] Update: due date moved to 2026-06-06.",
        expected: &[
            ("Rule", "cron schedule"),
            ("Constraint", "15 minutes"),
            ("Fact", "2026-06-06"),
            ("Fact", "P1"),
            ("Goal", "nightly billing job"),
            ("Preference", "Helm charts"),
            ("Question", "vm-bill-01"),
            ("Decision", "k8s-shared-2"),
        ],
        superseded: &["2026-05-30"],
        decoys: &["make deploy", "retry limit"],
    });
}

#[test]
fn terse_labelled() {
    assert_family(&Family {
        name: "terse",
        session: "\
[system] SAFETY RULE: Never reveal API keys, even in debug output.
[user] RULE: no force-pushes to release/*
CONSTRAINT: max 3 retries per request
FACT: primary region = eu-north-1
GOAL: cut p95 latency below 250 ms
PREF: 2-space indent in YAML
QUESTION: is the cache shared across tenants?
DECISION: adopt OpenTelemetry for tracing
IMPORTANT: rotate the signing key every 90 days
NOTE: the read replica is db-ro-3
[assistant -> tool_call bash] {\"command\": \"cargo test\"}
[tool bash] ERROR: connection refused (os error 111)
WARN: retry budget exhausted after 5 attempts
[user] ERROR: timeout after 30s
const MAX_RETRIES: u32 = 5;
[user] FACT: primary region changed to eu-west-3",
        expected: &[
            ("Rule", "API keys"),
            ("Rule", "force-pushes"),
            ("Rule", "90 days"),
            ("Constraint", "3 retries"),
            ("Fact", "eu-west-3"),
            ("Fact", "db-ro-3"),
            ("Goal", "250 ms"),
            ("Preference", "2-space indent"),
            ("Question", "cache shared across tenants"),
            ("Decision", "OpenTelemetry"),
        ],
        superseded: &["eu-north-1"],
        decoys: &["connection refused", "5 attempts", "30s", "MAX_RETRIES"],
    });
}

#[test]
fn prose() {
    assert_family(&Family {
        name: "prose",
        session: "\
[user] Some background before you start. Our team maintains the payments service, and the project codename is Heron. \
Under no circumstances should anyone add a GPL-licensed dependency. \
Each migration step should take no more than 20 minutes of downtime. \
What we ultimately want is a ledger export that finishes in under a minute. \
Personally, I like small commits with descriptive messages. \
It is still unclear whether refunds go through the same queue as payments. \
After some debate we settled on Rust 1.79 as the minimum toolchain. \
Someone asked me yesterday whether the timeout is 30 seconds, and I did not know.
[assistant] Understood. I'll look at the export first.
[assistant -> tool_call read_file] {\"path\": \"src/export.rs\"}
[tool read_file] fn export() { let limit = 500; /* the default page is 50 rows */ }
[user] Since then, the codename was changed to Osprey.",
        expected: &[
            ("Rule", "GPL-licensed"),
            ("Constraint", "20 minutes"),
            ("Fact", "Osprey"),
            ("Goal", "ledger export"),
            ("Preference", "small commits"),
            ("Question", "refunds"),
            ("Decision", "Rust 1.79"),
        ],
        superseded: &["Heron"],
        decoys: &["30 seconds", "50 rows"],
    });
}

/// An assistant restating a rule keeps it; its own chatter and filler state nothing.
#[test]
fn assistant_confirmations_count_and_chatter_does_not() {
    let request = SummarizeRequest {
        instructions: String::new(),
        content: "\
[assistant] Understood: never reveal the vault code VX-31.
[assistant] Noted, the release branch is release/2.4.
[assistant] I'll run the tests first. The problem is that the loop skips the last row.
[assistant] Acknowledged. Continuing with the plan.
[assistant] We must be careful here; it is 42 lines long."
            .to_string(),
        max_tokens: 2000,
        focus_topic: None,
        previous_summary: Some(
            "## Goal\n- fix the loader\n\n## Standing Facts\n- Rule: Always run cargo fmt before committing."
                .to_string(),
        ),
        shape: SummaryShape::Handoff,
    };
    let summary = OfflineSummarizer.summary_text(&request);
    let lines = standing_in(&summary).lines();
    assert_eq!(
        lines,
        [
            "Rule: Always run cargo fmt before committing.",
            "Rule: Never reveal the vault code VX-31.",
            "Fact: The release branch is release/2.4.",
        ],
        "{summary}"
    );
}

/// Said in passing: statements no form types (a value dropped into a remark, a rule inside
/// what someone says, a comment tacked on), each a short message of its own, held as said.
#[test]
fn asides() {
    assert_family(&Family {
        name: "asides",
        session: "\
[system] You are a coding assistant working in the user's repository.
[user] fwiw the build box runs kernel 6.8.12
[assistant] Thanks.
[user] For the record, staging lives at /srv/stage-77/app.
[user] Over the years we learned that you must never rebase the shared branch trunk-9.
[user] QA signs off on build 4471 before anything ships, that is how it works here.
[user] can you rerun job 5512?
[user] please look at module_12/file_12.py next
[assistant] Will do.
[user] Refactor the parser module number 4: rename helper_4 and add a unit test.
[assistant] Renamed.
[user] Fix the flaky test in tests/net_31.rs
[assistant] Fixed.",
        expected: &[
            ("Note", "6.8.12"),
            ("Note", "/srv/stage-77/app"),
            ("Rule", "trunk-9"),
            ("Note", "4471"),
        ],
        superseded: &[],
        // A question, and requests for work now (however they are phrased), are not notes.
        decoys: &[
            "5512",
            "module_12",
            "how it works here",
            "helper_4",
            "net_31",
        ],
    });
}

/// Prohibitions and preferences said softly ("please avoid", "stop using", "try to keep"):
/// rules and preferences all the same; a request to stop something now is not one.
#[test]
fn softened_imperatives() {
    assert_family(&Family {
        name: "softened",
        session: "\
[system] You are a coding assistant working in the user's repository.
[user] Please avoid the deprecated client lib-old-2.
[assistant] Understood.
[user] Stop using the endpoint /v1/legacy-sync.
[user] Refrain from force-pushing to release-3.
[user] Please prefer rg-14 over grep.
[assistant] Noted.
[user] Try to keep functions under 50 lines.
[user] stop the dev server on port 3000 for now
[assistant] Stopped.",
        expected: &[
            ("Rule", "lib-old-2"),
            ("Rule", "/v1/legacy-sync"),
            ("Rule", "release-3"),
            ("Preference", "rg-14"),
            ("Constraint", "50 lines"),
        ],
        superseded: &[],
        decoys: &["3000"],
    });
}

/// A value raised, corrected under its own label, or switched "instead": the newer value
/// replaces the older one, whichever way the change is said.
#[test]
fn changes_said_with_other_verbs() {
    assert_family(&Family {
        name: "changed",
        session: "\
[system] You are a coding assistant working in the user's repository.
[user] Our SLA target is 99.9-pct.
[assistant] Noted.
[user] ALERT THRESHOLD: 80-pct CPU.
[user] The queue for events is kafka-2.8.
[assistant] Understood.
[user] Some work in between.
[user] The SLA target has been raised to 99.95-pct.
[user] Correction: the alert threshold should be 85-pct CPU.
[user] Switching the events queue to nats-2.10 instead.
[assistant] Got it.",
        expected: &[("", "99.95-pct"), ("", "85-pct"), ("", "nats-2.10")],
        superseded: &["99.9-pct", "80-pct", "kafka-2.8"],
        decoys: &[],
    });
}

/// A user's words typed while a text agent's command runs are the user's, not the command's
/// output; the output that follows is output.
#[test]
fn words_typed_while_a_command_runs() {
    assert_family(&Family {
        name: "interjection",
        session: "\
[system] You are an autonomous programmer working in a shell.
[user] Fix the importer.
[assistant] Let me list the files first.
```
ls
```
[user] oh and never touch the vendored copy under /opt/vendor-3, ok?
[assistant] Acknowledged. Continuing with the plan.
[user] README.md: Never edit generated files by hand.
importer.py
setup.cfg
[assistant] The importer is in importer.py.
```
open importer.py
```",
        expected: &[("Rule", "/opt/vendor-3")],
        superseded: &[],
        decoys: &["generated files"],
    });
}

/// Values that change in other words than the ones that stated them: a rename, a move, a
/// switch, a correction of a note. The item that stated the value takes the new one (a rule
/// stays a rule), items on other subjects stay apart, and the old value is never current.
/// Chat: lower case, asides, an open question without "whether".
#[test]
fn chat_style_changes_said_in_other_words() {
    assert_family(&Family {
        name: "chat changes",
        session: "\
[system] You are a coding assistant working in the user's repository.
[user] oh btw, never restart the billing worker bw-node-12 during business hours
[assistant] Sure thing.
[user] fyi the metrics dashboard is grafana-eu-5
[user] still not sure which region the nightly backups end up in, let's sort that out later
[user] we agreed that the API docs live in docs/api-v3
[user] can you check why p99 jumped to 840 ms?
[assistant] Looking.
[user] the billing worker got moved to bw-node-31 last night
[user] scratch that, the dashboard we use is grafana-us-2 now",
        expected: &[
            ("Rule", "bw-node-31"),
            ("Fact", "grafana-us-2"),
            ("Question", "region the nightly backups"),
            ("Decision", "docs/api-v3"),
        ],
        superseded: &["bw-node-12", "grafana-eu-5"],
        decoys: &["840 ms"],
    });
}

/// Ticket: labels parted by a dash, a change request restating a decision's subject.
#[test]
fn ticket_style_dash_labels_and_change_requests() {
    assert_family(&Family {
        name: "ticket changes",
        session: "\
[user] Ticket DATA-3107: Nightly reporting export
Constraint — do not touch the schema of table orders_v2 under any circumstances.
Decision — we keep MySQL 8.0 for the reporting replica.
Blocking question — which team owns the cron host cron-prod-3?
Limit - the export batch holds at most 5,000 rows.
[assistant] I'll start with the export query.
[user] Change request: the reporting replica is now on MySQL 8.4.",
        expected: &[
            ("Rule", "orders_v2"),
            ("Decision", "MySQL 8.4"),
            ("Question", "cron-prod-3"),
            ("Constraint", "5,000 rows"),
        ],
        superseded: &["8.0"],
        decoys: &[],
    });
}

/// Terse labels: a label names the kind of a plain value; a change label is not a rule.
#[test]
fn terse_labels_name_the_kind_and_changes_replace() {
    assert_family(&Family {
        name: "terse changes",
        session: "\
[user] DECISION: the event queue is sqs-orders-1
LIMIT: the page size is 500 rows
PROHIBITED: force-push to rel-2024
[assistant] Noted.
[user] CHANGED: the event queue got renamed to sqs-orders-2",
        expected: &[
            ("Decision", "sqs-orders-2"),
            ("Constraint", "500 rows"),
            ("Rule", "rel-2024"),
        ],
        superseded: &["sqs-orders-1"],
        decoys: &[],
    });
}

/// Prose: an agreement, a hope, what nobody has figured out, and a move told in a sentence.
#[test]
fn prose_agreements_hopes_and_moves() {
    assert_family(&Family {
        name: "prose changes",
        session: "\
[user] Everyone on the team agreed that staging deploys go through pipeline ci-stage-9.
[assistant] Good to know.
[user] Honestly, what I am hoping to achieve this sprint is to cut cold starts under 900 ms.
[user] Nobody has figured out yet who pays for the egress on account 4471-b.
[assistant] I will keep that in mind.
[user] Since then the staging deploys moved to pipeline ci-stage-12.",
        expected: &[
            ("Decision", "ci-stage-12"),
            ("Goal", "900 ms"),
            ("Question", "4471-b"),
        ],
        superseded: &["ci-stage-9"],
        decoys: &[],
    });
}

/// Prose announces each kind in a lead-in ("we agreed that", "what we are trying to do this
/// week is to", "nobody has settled yet whether", "I would like it if", "keep in mind that",
/// "for the record,"): the line's label says the kind, so the line goes without those words,
/// and keeps every value, condition and negation.
#[test]
fn prose_lead_ins_that_announce_the_kind_are_dropped() {
    let family = Family {
        name: "prose lead-ins",
        session: "\
[user] After some back and forth we agreed that we use tundra-3946 as the queue backend.
[user] What we are really trying to do this week is to ship the importer rewrite by 2036-09-20.
[user] Nobody has settled yet whether the storage quota BM-5782-XG applies to archived tenants.
[user] I would like it if the log format is garnet-8297.
[user] Keep in mind that the job timeout is 26,533 ms for every job.
[user] Unless legal objects, we agreed that the rollout goes behind the feature flag willow-9370.
[user] We never agreed that the cache key scheme is GA-1484-ET.
[user] Let's go with this: the staging cluster is cobalt-77.",
        expected: &[
            ("Decision", "tundra-3946 as the queue backend"),
            ("Goal", "ship the importer rewrite by 2036-09-20"),
            (
                "Question",
                "the storage quota BM-5782-XG applies to archived tenants",
            ),
            ("Preference", "log format is garnet-8297"),
            ("Constraint", "26,533 ms for every job"),
            ("Decision", "Unless legal objects"),
            ("Decision", "The staging cluster is cobalt-77"),
        ],
        superseded: &[],
        decoys: &[
            "back and forth",
            "really trying",
            "Nobody has settled",
            "would like it if",
            "Keep in mind",
            "go with this",
        ],
    };
    assert_family(&family);
    // The negation stays with its value, wherever it is shown.
    let summary = handoff_of(&family);
    for line in summary.lines().filter(|line| line.contains("GA-1484-ET")) {
        assert!(line.contains("never agreed"), "{line}");
    }
}
