//! What an LLM summarizer's calls used, as its provider reported them: the tokens it bills
//! for, so a replay can price the summarizer beside the model it summarizes for.

use std::ops::AddAssign;

use serde::Serialize;
use serde_json::Value;

/// Tokens of the answers a summarizer's provider gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct SummarizerUsage {
    /// Answers the provider gave; each is billed, whether its summary was used or not.
    pub calls: u64,
    /// Every input token, read from the provider's cache or not.
    pub input_tokens: u64,
    /// Of the input, read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Of the input, written to the provider's prompt cache (Anthropic).
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
}

impl SummarizerUsage {
    /// One chat-completions answer's `usage` (`prompt_tokens` counts the cached ones too:
    /// `prompt_tokens_details.cached_tokens`).
    pub(crate) fn of_chat_completion(body: &Value) -> SummarizerUsage {
        let usage = &body["usage"];
        let number = |value: &Value| value.as_u64().unwrap_or(0);
        SummarizerUsage {
            calls: 1,
            input_tokens: number(&usage["prompt_tokens"]),
            cache_read_tokens: number(&usage["prompt_tokens_details"]["cached_tokens"]),
            cache_write_tokens: 0,
            output_tokens: number(&usage["completion_tokens"]),
        }
    }

    /// One Anthropic Messages answer's `usage` (`input_tokens` counts only what no cache
    /// read or wrote).
    pub(crate) fn of_anthropic_message(body: &Value) -> SummarizerUsage {
        let usage = &body["usage"];
        let number = |value: &Value| value.as_u64().unwrap_or(0);
        let read = number(&usage["cache_read_input_tokens"]);
        let written = number(&usage["cache_creation_input_tokens"]);
        SummarizerUsage {
            calls: 1,
            input_tokens: number(&usage["input_tokens"]) + read + written,
            cache_read_tokens: read,
            cache_write_tokens: written,
            output_tokens: number(&usage["output_tokens"]),
        }
    }

    /// What was used after `earlier` (a reading of the same running total).
    pub fn since(&self, earlier: &SummarizerUsage) -> SummarizerUsage {
        SummarizerUsage {
            calls: self.calls.saturating_sub(earlier.calls),
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            cache_read_tokens: self
                .cache_read_tokens
                .saturating_sub(earlier.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_sub(earlier.cache_write_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
        }
    }
}

impl AddAssign for SummarizerUsage {
    fn add_assign(&mut self, other: SummarizerUsage) {
        self.calls += other.calls;
        self.input_tokens += other.input_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.output_tokens += other.output_tokens;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_providers_usage_counts_every_input_token_once() {
        let chat = json!({"usage": {"prompt_tokens": 1_200, "completion_tokens": 300,
                                    "prompt_tokens_details": {"cached_tokens": 1_024}}});
        assert_eq!(
            SummarizerUsage::of_chat_completion(&chat),
            SummarizerUsage {
                calls: 1,
                input_tokens: 1_200,
                cache_read_tokens: 1_024,
                cache_write_tokens: 0,
                output_tokens: 300,
            }
        );
        let message = json!({"usage": {"input_tokens": 50, "cache_read_input_tokens": 2_000,
                                       "cache_creation_input_tokens": 100, "output_tokens": 40}});
        let used = SummarizerUsage::of_anthropic_message(&message);
        assert_eq!(used.input_tokens, 2_150);
        assert_eq!(
            (used.cache_read_tokens, used.cache_write_tokens),
            (2_000, 100)
        );
        // An answer without usage still counts as a call.
        let bare = SummarizerUsage::of_chat_completion(&json!({"choices": []}));
        assert_eq!(
            bare,
            SummarizerUsage {
                calls: 1,
                ..SummarizerUsage::default()
            }
        );
    }

    #[test]
    fn a_running_total_read_twice_gives_what_was_used_between() {
        let mut total = SummarizerUsage::default();
        total += SummarizerUsage::of_chat_completion(
            &json!({"usage": {"prompt_tokens": 100, "completion_tokens": 10}}),
        );
        let earlier = total;
        total += SummarizerUsage::of_chat_completion(
            &json!({"usage": {"prompt_tokens": 70, "completion_tokens": 7}}),
        );
        let between = total.since(&earlier);
        assert_eq!((between.calls, between.input_tokens), (1, 70));
        assert_eq!(between.output_tokens, 7);
    }
}
