//! Claude Code (Anthropic Messages, `POST /v1/messages?beta=true`): it names its session in
//! `x-claude-code-session-id`, and compacts with an ordinary request whose last user message asks
//! for a summary of the conversation so far. The request is its own turn at the end of the
//! history, or (after a resume, Claude Code merging consecutive user turns) a text block of its
//! own after the user's last words; a mid-conversation system entry may follow it. It reads the
//! summary back from a `<summary>` block, and keeps it in its compacted history as the text of
//! its continuation message (its first user turn, merged with the context it prepends and the
//! user's next words): its preamble, `Summary:` and the summary, then lines of its own.

use ctxhost_sdk::{Content, Message};
use http::HeaderMap;

use crate::compaction::{block_text, parts, Compaction, Prompt, Recognised};
use crate::header_starts;
use crate::kept::{at_the_head, ends_with_marker, kept_in, Kept};

/// The header Claude Code names its session in (the same id is in `metadata.user_id`).
pub const SESSION_HEADER: &str = "x-claude-code-session-id";
/// Its user agent: `claude-cli/VERSION (...)`.
const USER_AGENT: &str = "claude-cli/";

/// How Claude Code 2.1.197's summary request opens (its compaction prompt begins with it).
const PREAMBLE: &str = "CRITICAL: Respond with TEXT ONLY.";
/// Claude Code 2.1.197: the full-conversation summary requests (manual `/compact` and
/// auto-compact; the older and the newer wording). Its partial compaction ("... of the RECENT
/// portion of the conversation") keeps earlier messages itself and is not one.
const SUMMARY_REQUESTS: [&str; 2] = [
    "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.",
    "Your task is to create a detailed summary of this conversation. This summary will be placed at the start of a continuing session",
];

/// Claude Code 2.1.197: how its continuation message (the compacted history's summary) opens.
const CONTINUATION: &str =
    "This session is being continued from a previous conversation that ran out of context.";

/// Whether Claude Code sent a request with `headers`.
pub(crate) fn sent(headers: &HeaderMap) -> bool {
    headers.contains_key(SESSION_HEADER) || header_starts(headers, "user-agent", USER_AGENT)
}

/// Claude Code's summary request, if `history` ends with one: the last user message (only
/// system entries after it) is the request, or its last text block is.
pub(crate) fn compaction(history: &[Message]) -> Option<Recognised> {
    let index = history.iter().rposition(|m| !m.is_system())?;
    let last = &history[index];
    if !last.is_user() {
        return None;
    }
    let prompt = match last.content() {
        Content::Text(text) => is_summary_request(text).then_some(Prompt::Message(index))?,
        Content::Json(_) => {
            let parts = parts(last)?;
            let text = block_text(parts.last()?)?;
            if !is_summary_request(text) {
                return None;
            }
            if parts.len() == 1 {
                Prompt::Message(index)
            } else {
                Prompt::LastBlock(index)
            }
        }
        Content::Absent | Content::Null => return None,
    };
    Some(Recognised {
        kind: Compaction::ClaudeSummary,
        prompt,
    })
}

/// Whether `text` is Claude Code's summary request: it opens with the request (or its
/// preamble), never a user's words that quote it.
fn is_summary_request(text: &str) -> bool {
    let text = text.trim_start();
    let opens = text.starts_with(PREAMBLE) || SUMMARY_REQUESTS.iter().any(|s| text.starts_with(s));
    opens && SUMMARY_REQUESTS.iter().any(|s| text.contains(s))
}

/// The handoffs Claude Code's compacted history keeps: a text opening with its continuation
/// preamble, in a user turn with no answer of the model's before it, the marker line the last
/// of the summary (Claude Code's own lines after it).
pub(crate) fn kept(history: &[Message]) -> Vec<Kept> {
    let place = |index: usize| history[index].is_user() && at_the_head(history, index);
    kept_in(history, place, |text| {
        if !text.trim_start().starts_with(CONTINUATION) {
            return None;
        }
        ends_with_marker(text, |_| true)
    })
}

/// The handoff text as Claude Code reads it back: its `<summary>` block.
pub(crate) fn handoff(text: &str) -> String {
    format!("<summary>\n{text}\n</summary>")
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUEST: &str = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.\nMore";

    #[test]
    fn its_summary_request_is_told_by_where_it_opens() {
        let with = |text: &str| vec![Message::system("s"), Message::user(text)];
        assert_eq!(
            compaction(&with(REQUEST)).map(|r| r.prompt),
            Some(Prompt::Message(1))
        );
        assert_eq!(
            compaction(&with(SUMMARY_REQUESTS[1])).map(|r| r.kind),
            Some(Compaction::ClaudeSummary)
        );
        let quoted = format!("What does \"{}\" ask for?", SUMMARY_REQUESTS[0]);
        assert_eq!(compaction(&with(&quoted)), None);
        // Its preamble alone asks for no summary.
        assert_eq!(
            compaction(&with("CRITICAL: Respond with TEXT ONLY. Say hi.")),
            None
        );
    }

    #[test]
    fn a_block_after_the_users_words_is_taken_out_alone() {
        let mut merged = Message::user("");
        merged.set_content_json(&serde_json::json!([
            {"type": "text", "text": "say hi again"},
            {"type": "text", "text": REQUEST},
        ]));
        let mut history = vec![
            Message::system("s"),
            merged,
            Message::system("Session resumed."),
        ];
        let recognised = compaction(&history).unwrap();
        assert_eq!(recognised.prompt, Prompt::LastBlock(1));
        recognised.take_prompt(&mut history);
        assert_eq!(history[1].content_text(), "say hi again");
        assert_eq!(history.len(), 3);
        // The request in a block before the user's words is not where Claude Code puts it.
        let mut first = Message::user("");
        first.set_content_json(&serde_json::json!([
            {"type": "text", "text": REQUEST},
            {"type": "text", "text": "what is this?"},
        ]));
        assert_eq!(compaction(&[first]), None);
    }
}
