//! Trimming, so a summary request fits the summary model's window and a summary fits its
//! `max_tokens`. The estimates and cuts themselves are the offline summary's
//! ([`ctxhost_offline_summary::budget`]): every summarizer sizes text alike.

use std::borrow::Cow;

use ctxhost_sdk::{budget, EngineError};

use ctxhost_offline_summary::budget::{
    ceil_boundary, estimate_tokens, floor_boundary, token_bytes, truncate_bytes,
    DEFAULT_SUMMARY_TOKENS,
};

/// Keeps the beginning and the end of `text` within `max_tokens`, replacing the middle with a
/// marker saying how much was left out. Cuts fall on line breaks when one is near.
pub fn trim_middle(text: &str, max_tokens: u64) -> Cow<'_, str> {
    let budget = token_bytes(max_tokens);
    if text.len() <= budget {
        return Cow::Borrowed(text);
    }
    // The marker's length depends on the number it carries; reserve for the widest.
    let marker_room = marker(text.len()).len();
    if budget <= marker_room + 8 {
        return truncate_bytes(text, budget);
    }
    let keep = budget - marker_room;
    // The end holds the latest state: give it the larger share.
    let head_len = keep * 2 / 5;
    let tail_len = keep - head_len;
    let head_end = snap_to_line(text, floor_boundary(text, head_len), true);
    let tail_start = snap_to_line(text, ceil_boundary(text, text.len() - tail_len), false);
    let omitted = tail_start.saturating_sub(head_end);
    Cow::Owned(format!(
        "{}{}{}",
        &text[..head_end],
        marker(omitted),
        &text[tail_start..]
    ))
}

fn marker(omitted_bytes: usize) -> String {
    format!(
        "\n[... {omitted_bytes} characters omitted from the middle to fit the summary model's \
         context window ...]\n"
    )
}

/// Moves a cut to a nearby line break (within 160 bytes) without growing the kept text.
fn snap_to_line(text: &str, cut: usize, is_head_end: bool) -> usize {
    const REACH: usize = 160;
    if is_head_end {
        let from = floor_boundary(text, cut.saturating_sub(REACH));
        match text[from..cut].rfind('\n') {
            Some(at) => from + at + 1,
            None => cut,
        }
    } else {
        let to = ceil_boundary(text, cut.saturating_add(REACH));
        match text[cut..to].find('\n') {
            Some(at) => cut + at + 1,
            None => cut,
        }
    }
}

/// An LLM's summary within the `max_tokens` it was asked for (a model counts tokens its own
/// way, and the standing facts it dropped come back on top of its answer): cut by the budget
/// order every engine spends by (`ctxhost_sdk::budget`), its narrative first and the standing
/// facts last.
pub fn fit_summary(text: &str, max_tokens: u64) -> Cow<'_, str> {
    let max_tokens = if max_tokens == 0 {
        DEFAULT_SUMMARY_TOKENS
    } else {
        max_tokens
    };
    let fits = |text: &str| estimate_tokens(text) <= max_tokens;
    if fits(text) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(budget::trim_summary(text, fits))
}

/// What an LLM summary request looks like once it fits the model's window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    pub content: String,
    pub previous_summary: Option<String>,
    /// The output cap to send.
    pub max_tokens: u64,
}

/// Fits a request into a `window`-token model: caps the output at half the window and trims
/// the middle of the content (and of an oversized previous summary) so that the prompt, the
/// output and a safety margin fit. `fixed_text` is what is sent whatever happens
/// (instructions, framing, focus).
pub fn fit_request(
    fixed_text_tokens: u64,
    content: &str,
    previous_summary: Option<&str>,
    max_tokens: u64,
    window: u64,
) -> Result<Fitted, EngineError> {
    let requested = if max_tokens == 0 {
        DEFAULT_SUMMARY_TOKENS
    } else {
        max_tokens
    };
    let output = requested.min(window / 2).max(1);
    let margin = (window / 20).clamp(256, 8192);
    let available = window.saturating_sub(output + margin);
    let Some(room) = available
        .checked_sub(fixed_text_tokens)
        .filter(|r| *r >= 256)
    else {
        return Err(EngineError::invalid_input(format!(
            "the summary request does not fit the summary model's window: the instructions \
             alone take ~{fixed_text_tokens} tokens of {window} (auxiliary.compression.context_length), \
             with {output} kept for the summary"
        )));
    };
    let content_tokens = estimate_tokens(content);
    let previous_tokens = previous_summary.map_or(0, estimate_tokens);
    if content_tokens + previous_tokens <= room {
        return Ok(Fitted {
            content: content.to_string(),
            previous_summary: previous_summary.map(str::to_string),
            max_tokens: output,
        });
    }
    // The new turns get at least two thirds of the room; the previous summary the rest.
    let previous = previous_summary.map(|text| {
        let share = (room / 3).max(room.saturating_sub(content_tokens));
        trim_middle(text, share).into_owned()
    });
    let content_room = room.saturating_sub(previous.as_deref().map_or(0, estimate_tokens));
    Ok(Fitted {
        content: trim_middle(content, content_room).into_owned(),
        previous_summary: previous,
        max_tokens: output,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_middle_keeps_both_ends_and_fits() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let trimmed = trim_middle(&text, 200);
        assert!(estimate_tokens(&trimmed) <= 200, "{}", trimmed.len());
        assert!(trimmed.starts_with("line 0\n"));
        assert!(trimmed.ends_with("line 1999\n"));
        assert!(trimmed.contains("omitted from the middle"));
    }

    #[test]
    fn trim_middle_respects_char_boundaries() {
        let text = "é".repeat(5000);
        let trimmed = trim_middle(&text, 300);
        assert!(estimate_tokens(&trimmed) <= 300);
        assert!(trimmed.starts_with('é') && trimmed.ends_with('é'));
    }

    #[test]
    fn an_oversized_summary_loses_its_narrative_before_its_standing_facts() {
        let done: String = (0..200).map(|i| format!("- Ran step {i}\n")).collect();
        let summary = format!(
            "## Goal\n- Ship it\n\n## Progress\n### Done\n{done}\n## Standing Facts\n\
             - Rule: Never reveal API keys."
        );
        let fitted = fit_summary(&summary, 100);
        assert!(estimate_tokens(&fitted) <= 100, "{fitted}");
        assert!(fitted.contains("Never reveal API keys") && fitted.contains("Ship it"));
        assert!(fitted.contains("Ran step 199") && !fitted.contains("Ran step 0\n"));
        assert_eq!(fit_summary("short", 100), "short");
    }

    #[test]
    fn fit_request_trims_content_to_the_window() {
        let content = "x".repeat(40_000 * 4);
        let fitted = fit_request(100, &content, None, 1000, 8192).unwrap();
        assert_eq!(fitted.max_tokens, 1000);
        let total = 100 + estimate_tokens(&fitted.content) + fitted.max_tokens;
        assert!(total <= 8192, "{total}");
        let small = fit_request(100, "short", Some("prev"), 0, 8192).unwrap();
        assert_eq!(small.content, "short");
        assert_eq!(small.max_tokens, DEFAULT_SUMMARY_TOKENS);
        assert!(fit_request(8000, "short", None, 100, 8192).is_err());
    }
}
