//! The size rules every summarizer shares: tokens estimated from bytes, cuts that fall on
//! character boundaries, and the parts of a summary in the order a budget keeps them.
//!
//! Tokens are estimated as bytes / 4, rounded up: that is the usual chars / 4 for ASCII and
//! errs on the safe side for other scripts, where a character costs more tokens.

use std::borrow::Cow;

/// `max_tokens` used when a request leaves it at 0.
pub const DEFAULT_SUMMARY_TOKENS: u64 = 2048;

/// Estimated tokens in `text`.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// How many bytes of text `tokens` allow.
pub fn token_bytes(tokens: u64) -> usize {
    usize::try_from(tokens.saturating_mul(4)).unwrap_or(usize::MAX)
}

/// The largest char boundary at or before `index`.
pub fn floor_boundary(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    let mut index = index;
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The smallest char boundary at or after `index`.
pub fn ceil_boundary(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    let mut index = index;
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// `text` cut to at most `max_bytes` bytes on a char boundary, ending with `…` when cut.
pub fn truncate_bytes(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    const ELLIPSIS: &str = "…";
    if max_bytes < ELLIPSIS.len() {
        return Cow::Owned(text[..floor_boundary(text, max_bytes)].to_string());
    }
    let cut = floor_boundary(text, max_bytes - ELLIPSIS.len());
    Cow::Owned(format!("{}{ELLIPSIS}", text[..cut].trim_end()))
}

/// What a section of a summary carries, in the order a budget keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// Standing rules, constraints, facts, goals, preferences, decisions and open questions.
    Facts,
    /// The files touched, while their lines fit their share of the room
    /// ([`ctxhost_sdk::budget::files_share`]): they go after the goal and plan, before any
    /// standing fact.
    FilesShare,
    /// What the session is for and what comes next.
    GoalAndPlan,
    /// The files touched, each at its last state, past their share.
    Files,
    /// Limits and preferences said in passing (inside an ask) that no standing form read: the
    /// standing facts carry what was stated as binding, so these come after the files.
    Remarks,
    /// What is in progress or blocked.
    Progress,
    /// What was done, decided and seen on the way: the first to go.
    Narrative,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_bytes_over_four_rounded_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
    }

    #[test]
    fn truncate_bytes_never_exceeds() {
        for max in 0..12 {
            assert!(truncate_bytes("héllo wörld ünïcode", max).len() <= max);
        }
    }
}
