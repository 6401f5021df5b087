//! # ctxhost-offline-summary
//!
//! The offline summarizer: deterministic and extractive, and network-free by construction (this
//! crate depends on the SDK and serde_json only, never on an HTTP client or an async runtime),
//! so the built-in engine and any program can depend on it without pulling a network stack in.
//! It is the host's default summarizer and the last rung of the host's failure ladder: it
//! cannot fail.
//!
//! It reads the rendered turns back ([`parse`]), pulls out the facts ([`digest`]: user asks,
//! actions and their outcomes, the files touched at their last state ([`files`]), errors, decisions, the latest state, and the standing
//! rules, constraints, facts, goals and preferences of [`standing`]), merges them into
//! the previous summary when there is one ([`merge`]), puts the focus topic first, and renders
//! the handoff template within `max_tokens` ([`handoff`]). Same request, same summary.

pub mod budget;
pub mod carry;
mod digest;
mod extract;
pub mod files;
mod handoff;
mod markers;
mod merge;
mod parse;
mod record;
mod restated;
pub mod sections;
pub mod standing;
mod turn_facts;

#[cfg(test)]
mod test_texts;

use ctxhost_sdk::{SummarizeRequest, Summary, SummaryShape};

use crate::budget::{token_bytes, DEFAULT_SUMMARY_TOKENS};

use handoff::Key;

pub use record::files_in;

/// Items kept per section before fitting to the budget.
const MAX_ITEMS: usize = 40;
/// Lines mentioning the focus topic copied into Critical Context.
const FOCUS_LINES: usize = 6;

/// Deterministic, extractive summaries from the turns themselves; no network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OfflineSummarizer;

impl OfflineSummarizer {
    pub const NAME: &'static str = "offline";

    /// The summary for `request`, signed with [`Self::NAME`].
    pub fn summary(&self, request: &SummarizeRequest) -> Summary {
        Summary {
            text: self.summary_text(request),
            summarizer: Self::NAME.to_string(),
            fallback_reason: None,
        }
    }

    /// The summary text for `request`.
    pub fn summary_text(&self, request: &SummarizeRequest) -> String {
        let max_tokens = if request.max_tokens == 0 {
            DEFAULT_SUMMARY_TOKENS
        } else {
            request.max_tokens
        };
        if request.shape == SummaryShape::Digest {
            // Earlier records are merged as they are; turns are read for their facts.
            let mut record = record::Record::default();
            if !record.add_records(&request.content) {
                record.add_digest(&digest::digest(&parse::parse_turns(&request.content)));
            }
            return record.render_within(token_bytes(max_tokens));
        }
        let turns = parse::parse_turns(&request.content);
        let digest = digest::digest(&turns);
        let previous = request
            .previous_summary
            .as_deref()
            .filter(|p| !p.trim().is_empty());
        let mut handoff = merge::merge(previous, digest);
        if let Some(topic) = focus(request) {
            let mut lines: Vec<String> = request
                .content
                .lines()
                .filter(|line| extract::mentions(line, topic))
                .map(|line| extract::compact(without_role_tag(line), 240))
                .filter(|line| !line.is_empty())
                .collect();
            lines.dedup();
            let section = handoff.section_mut(Key::Critical);
            let focus_items: Vec<String> = lines
                .into_iter()
                .take(FOCUS_LINES)
                .map(|line| format!("On \"{topic}\": {line}"))
                .collect();
            // First in Critical Context.
            let existing = std::mem::take(&mut section.items);
            handoff.extend(Key::Critical, focus_items);
            handoff.section_mut(Key::Critical).items.extend(existing);
            handoff.prioritise(topic);
        }
        handoff.cap(MAX_ITEMS);
        handoff.render_within(token_bytes(max_tokens))
    }
}

/// The files the turns of `content` (a transcript as a summarizer is given it) touched, each
/// at its last state, in the order last touched: what a summary of it lists under Files when
/// nothing is cut.
pub fn files_touched(content: &str) -> files::FileBook {
    let mut book = files::FileBook::default();
    for state in digest::digest(&parse::parse_turns(content)).files {
        book.add(state);
    }
    book
}

/// `line` without a leading `[role ...]` tag.
fn without_role_tag(line: &str) -> &str {
    match line.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
        Some((tag, rest)) if tag.len() <= 80 && !rest.trim().is_empty() => rest.trim_start(),
        _ => line,
    }
}

fn focus(request: &SummarizeRequest) -> Option<&str> {
    request
        .focus_topic
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
}
