//! How a view is scored: a superseded value shown as current, a file's last state, the budget
//! measured past a head that alone exceeds it, and the spread over replicates.

use ctxhost_quality::probe::{self, Shown};
use ctxhost_quality::{Budget, FileAction, Range, Settings, Spread, Style};
use ctxhost_sdk::Message;
use ctxhost_sdk_test::{EngineSubject, Rewrite};

const KEPT: Shown = Shown {
    kept: true,
    stale: false,
};
const LOST: Shown = Shown {
    kept: false,
    stale: false,
};
const STALE: Shown = Shown {
    kept: false,
    stale: true,
};

#[test]
fn a_value_is_kept_when_the_last_word_on_it_is_current() {
    // Not superseded yet: stated or not.
    assert_eq!(probe::value("cap: 4,317", "4,317", None), KEPT);
    assert_eq!(probe::value("nothing", "4,317", None), LOST);
    // Superseded: the update said after the old value.
    let view = "The budget is capped at $4,317.\nUpdate: the budget cap is now $5,120.";
    assert_eq!(probe::value(view, "5,120", Some("4,317")), KEPT);
    // Both on one line: the change itself.
    let view = "production is no longer on v2.10.11; it runs v3.20.40 now";
    assert_eq!(probe::value(view, "v3.20.40", Some("v2.10.11")), KEPT);
    // The old value marked as former, the current one stated elsewhere.
    let view = "- runtime version v3.20.40\n- (was v2.10.11 until Tuesday)";
    assert_eq!(probe::value(view, "v3.20.40", Some("v2.10.11")), KEPT);
    // Only the old value, marked as former: not current, not stale.
    let view = "production no longer runs v2.10.11";
    assert_eq!(probe::value(view, "v3.20.40", Some("v2.10.11")), LOST);
}

#[test]
fn a_superseded_value_shown_as_current_is_stale_even_beside_the_current_one() {
    // The current value is in the view, but the view's last word is the old one.
    let view =
        "Update: the budget cap is now $5,120.\n## Standing facts\n- budget capped at $4,317";
    assert_eq!(probe::value(view, "5,120", Some("4,317")), STALE);
    // Only the old value.
    assert_eq!(
        probe::value("- budget: $4,317", "5,120", Some("4,317")),
        STALE
    );
}

#[test]
fn a_file_is_kept_when_the_view_states_its_path_and_last_action() {
    let path = "src/kestrel_4821/retry_policy.rs";
    // The verbatim tool call, or a summary's Files section.
    let call = format!(r#"edit_file {{"path":"{path}","old":"a","new":"b"}}"#);
    assert_eq!(probe::file(&call, path, FileAction::Modified, None), KEPT);
    let summary = format!("## Files\n- {path}: created, then modified (edit_file)");
    assert_eq!(
        probe::file(&summary, path, FileAction::Modified, None),
        KEPT
    );
    let deleted = format!("- {path} (deleted with rm)");
    assert_eq!(probe::file(&deleted, path, FileAction::Deleted, None), KEPT);
    // Lost: not named, or named with no action.
    assert_eq!(
        probe::file("nothing here", path, FileAction::Modified, None),
        LOST
    );
    let bare = format!("we talked about {path}");
    assert_eq!(probe::file(&bare, path, FileAction::Modified, None), LOST);
    // Stale: the last the view says is an earlier state.
    let earlier = format!("edit_file {path}\nwrite_file {{\"path\":\"{path}\"}}");
    assert_eq!(
        probe::file(&earlier, path, FileAction::Modified, None),
        STALE
    );
    let created = format!("- {path}: created");
    assert_eq!(
        probe::file(&created, path, FileAction::Deleted, None),
        STALE
    );
}

#[test]
fn a_renamed_file_is_kept_under_its_new_path_and_stale_under_its_old_one() {
    let (old, new) = ("src/a_1000/importer.py", "src/b_2000/importer.py");
    let moved = format!(r#"bash {{"command":"git mv {old} {new}"}}"#);
    assert_eq!(
        probe::file(&moved, new, FileAction::Renamed, Some(old)),
        KEPT
    );
    let summary = format!("- {new}: renamed from {old}");
    assert_eq!(
        probe::file(&summary, new, FileAction::Renamed, Some(old)),
        KEPT
    );
    // The old path, edited, is what the view says last.
    let stale = format!("{moved}\n- {old}: modified");
    assert_eq!(
        probe::file(&stale, new, FileAction::Renamed, Some(old)),
        STALE
    );
    let only_old = format!("- {old}: modified");
    assert_eq!(
        probe::file(&only_old, new, FileAction::Renamed, Some(old)),
        STALE
    );
}

/// Keeps everything but moves the updates up front, right after the system prompt: every
/// replaced value is then the view's last word on its fact.
fn updates_first(m: &[Message]) -> Vec<Message> {
    let update = |m: &&Message| m.text().is_some_and(|t| t.starts_with("Update:"));
    let mut out = vec![m[0].clone()];
    out.extend(m[1..].iter().filter(update).cloned());
    out.extend(m[1..].iter().filter(|m| !update(m)).cloned());
    out
}

#[test]
fn a_run_scores_a_value_the_view_states_after_its_update_as_stale_not_kept() {
    let session = ctxhost_quality::generated_session(3, 80);
    let settings = Settings {
        budget: Budget::Share(20.0),
        rounds: 2,
        seed: 11,
    };
    let report = ctxhost_quality::run(
        &mut EngineSubject::new(Rewrite::new("updates-first", updates_first)),
        &session,
        &settings,
    )
    .unwrap();
    // Every update is reached by the last round: five facts, both values in view, all stale.
    let last = report.rounds.last().unwrap();
    let updated: Vec<usize> = report
        .facts
        .iter()
        .filter(|f| f.superseded_by.is_some())
        .map(|f| f.id)
        .collect();
    assert_eq!(updated.len(), 5);
    assert_eq!(last.stale, updated, "{}", report.table());
    assert_eq!(last.overall.kept, 10, "{}", report.table());
    for fact in &last.facts {
        assert_eq!(fact.kept, !updated.contains(&fact.fact), "{fact:?}");
    }
}

/// Keeps the head (system prompt and task) and the newest user message with what follows it.
fn head_and_tail(m: &[Message]) -> Vec<Message> {
    let first_user = m.iter().position(Message::is_user).unwrap();
    let last_user = m.iter().rposition(Message::is_user).unwrap();
    let mut out = m[..=first_user].to_vec();
    out.extend_from_slice(&m[last_user.max(first_user + 1)..]);
    out
}

/// Keeps the system prompt, the newest user message with what follows it, and the task last:
/// the head kept, though not in front.
fn task_last(m: &[Message]) -> Vec<Message> {
    let mut out = head_and_tail(m);
    let task = out.remove(1);
    out.push(task);
    out
}

#[test]
fn when_the_head_alone_exceeds_the_budget_what_follows_it_is_measured() {
    let mut session = ctxhost_quality::generated_session(3, 60);
    session[0] = Message::system("You are a careful agent. ".repeat(300));
    let settings = Settings {
        budget: Budget::Tokens(400),
        rounds: 3,
        seed: 2,
    };
    let report = ctxhost_quality::run(
        &mut EngineSubject::new(Rewrite::new("head-and-tail", head_and_tail)),
        &session,
        &settings,
    )
    .unwrap();
    for round in &report.rounds {
        assert!(round.head_tokens > round.budget_tokens, "{round:?}");
        assert!(round.output_tokens > round.budget_tokens);
        assert!(round.measured_tokens < round.output_tokens - round.head_tokens / 2);
        assert_eq!(round.budget_met, round.measured_tokens <= 400);
        assert!(round.budget_met, "{}", report.table());
    }
    assert!(report.table().contains("measured"), "{}", report.table());
    // The head's messages anywhere in the output are the head's.
    let moved = ctxhost_quality::run(
        &mut EngineSubject::new(Rewrite::new("task-last", task_last)),
        &session,
        &settings,
    )
    .unwrap();
    for round in &moved.rounds {
        assert!(round.measured_tokens < round.output_tokens - round.head_tokens / 2);
        assert!(round.budget_met, "{}", moved.table());
    }
    assert_eq!(
        moved.rounds[0].measured_tokens,
        report.rounds[0].measured_tokens
    );
    // A head within the budget: the whole output is measured.
    let roomy = Settings {
        budget: Budget::Tokens(100_000),
        ..settings
    };
    let report = ctxhost_quality::run(
        &mut EngineSubject::new(Rewrite::new("head-and-tail", head_and_tail)),
        &session,
        &roomy,
    )
    .unwrap();
    for round in &report.rounds {
        assert_eq!(round.measured_tokens, round.output_tokens);
    }
    assert!(!report.table().contains("measured"), "{}", report.table());
}

#[test]
fn the_median_and_range_of_a_hand_made_set() {
    let range = Range::of(&[0.5, 1.0, 0.75]).unwrap();
    assert_eq!((range.median, range.min, range.max), (0.75, 0.5, 1.0));
    let range = Range::of(&[1.0, 0.2, 0.6, 0.4]).unwrap();
    assert!((range.median - 0.5).abs() < 1e-12, "{range:?}");
    assert_eq!((range.min, range.max), (0.2, 1.0));
    let one = Range::of(&[0.3]).unwrap();
    assert_eq!((one.median, one.min, one.max), (0.3, 0.3, 0.3));
    assert_eq!(Range::of(&[]), None);
}

#[test]
fn replicates_are_summed_up_per_kind_from_their_last_rounds() {
    let session = ctxhost_quality::generated_session(3, 80);
    // Three replicates of one real run, their last rounds' rule scores set by hand.
    let base = ctxhost_quality::run_in_style(
        &mut EngineSubject::new(Rewrite::new("head-and-tail", head_and_tail)),
        &session,
        &Settings {
            budget: Budget::Share(20.0),
            rounds: 2,
            seed: 4,
        },
        Style::Chat,
    )
    .unwrap();
    let hand_made: Vec<_> = [(4, 3, 1), (5, 1, 0), (6, 2, 3)]
        .into_iter()
        .map(|(seed, kept, stale)| {
            let mut report = base.clone();
            report.seed = seed;
            report.outcome.survival[0].score = ctxhost_quality::Score::new(3, kept);
            report.outcome.stale = stale;
            report
        })
        .collect();
    let spread = Spread::of(hand_made).unwrap();
    assert_eq!(spread.seeds, [4, 5, 6]);
    assert_eq!(spread.style, Style::Chat);
    let rules = spread.survival[0];
    assert_eq!(rules.kind, ctxhost_quality::FactKind::Rule);
    assert!((rules.share.median - 2.0 / 3.0).abs() < 1e-12);
    assert!((rules.share.min - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(rules.share.max, 1.0);
    assert_eq!(
        (spread.stale.median, spread.stale.min, spread.stale.max),
        (1.0, 0.0, 3.0)
    );
    assert_eq!(spread.survival.len(), Style::Chat.kinds().len());
    assert_eq!(spread.replicates.len(), 3);
    let table = spread.table();
    assert!(table.contains("rule"), "{table}");
    assert!(table.contains("67% (33-100%)"), "{table}");
    assert!(table.contains("seeds 4, 5, 6"), "{table}");
    assert_eq!(Spread::of(Vec::new()), None);
}

#[test]
fn replicates_of_other_seeds_plant_other_values() {
    let session = ctxhost_quality::generated_session(3, 80);
    let values = |seed| -> Vec<String> {
        ctxhost_quality::plant_in_style(&session, seed, Style::Prose)
            .unwrap()
            .facts
            .into_iter()
            .map(|f| f.value)
            .collect()
    };
    let (a, b) = (values(27), values(28));
    assert!(a.iter().zip(&b).all(|(x, y)| x != y));
    assert_eq!(a, values(27));
}
