//! Where a history keeps a handoff of the gateway's: the marker line a handoff text ends with,
//! and the shape and place each agent keeps the text in its compacted history (each profile
//! says its own: [`Agent::kept_handoffs`](crate::Agent)), never a marker line quoted inside
//! someone's words ([`generic`] for a client no profile tells).

use ctxhost_sdk::{Content, Message};

use crate::compaction::{block_text, parts};

/// How a handoff text carries its reference: the last line of the gateway's text.
const MARKER: &str = "[ctxhost handoff: ";

/// The line a handoff text ends with.
pub fn marker_line(reference: &str) -> String {
    format!("{MARKER}{reference}]")
}

/// The reference a line holds when the line is a marker line, whole.
fn marker_in(line: &str) -> Option<&str> {
    let reference = line.trim().strip_prefix(MARKER)?.strip_suffix(']')?;
    let token =
        !reference.is_empty() && !reference.contains(|c: char| c.is_whitespace() || c == ']');
    token.then_some(reference)
}

/// A text handoff of the gateway's, where a history keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The message holding it.
    pub message: usize,
    /// The content block holding it, when the message has blocks.
    pub block: Option<usize>,
    /// The reference its marker line holds (verified by the caller).
    pub reference: String,
    /// For a handoff only its rendering tells ([`generic`]: a text anyone could type, where
    /// no agent's shape places it), the text, trimmed: it is the gateway's only if it is the
    /// very text the gateway handed out for the view its reference names (the caller checks
    /// it against what it rendered). `None` where the agent's own shape places it.
    pub rendered: Option<String>,
}

/// The reference of a handoff `text` keeps as its last marker line, when what follows that
/// line is the agent's own `trailer` (checked on the rest of the text, trimmed).
pub(crate) fn ends_with_marker(text: &str, trailer: impl Fn(&str) -> bool) -> Option<String> {
    let mut end = text.len();
    loop {
        let start = text[..end].rfind('\n').map_or(0, |newline| newline + 1);
        if let Some(reference) = marker_in(&text[start..end]) {
            return trailer(text[end..].trim()).then(|| reference.to_string());
        }
        if start == 0 {
            return None;
        }
        end = start - 1;
    }
}

/// The texts a handoff may be kept as in `message`: its whole text, or each text block.
pub(crate) fn texts(message: &Message) -> Vec<(Option<usize>, String)> {
    match message.content() {
        Content::Text(text) => vec![(None, text.to_string())],
        Content::Json(_) => parts(message)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter_map(|(index, block)| block_text(block).map(|t| (Some(index), t.to_string())))
            .collect(),
        Content::Absent | Content::Null => Vec::new(),
    }
}

/// Whether only instructions (the system prompt, Codex's `developer` messages) and the
/// agent's own (user) messages stand before `index`: where a compacted history starts over,
/// with no answer of the model's before it.
pub(crate) fn at_the_head(history: &[Message], index: usize) -> bool {
    history[..index].iter().all(|m| {
        m.is_system() || m.role() == "developer" || (m.is_user() && m.tool_calls().is_empty())
    })
}

/// The handoffs `history` keeps in `shape`: each message's texts with the handoff, where
/// `place` allows one (by the message's index).
pub(crate) fn kept_in(
    history: &[Message],
    place: impl Fn(usize) -> bool,
    shape: impl Fn(&str) -> Option<String>,
) -> Vec<Kept> {
    let mut kept = Vec::new();
    for (index, message) in history.iter().enumerate() {
        if message.is_tool_result() || message.is_system() || !place(index) {
            continue;
        }
        for (block, text) in texts(message) {
            if !text.contains(MARKER) {
                continue;
            }
            if let Some(reference) = shape(&text) {
                kept.push(Kept {
                    message: index,
                    block,
                    reference,
                    rendered: None,
                });
            }
        }
    }
    kept
}

/// A client no profile tells: the handoff text exactly as the gateway rendered it, a whole
/// message or a whole text block (its marker line last, after a blank line, or Claude Code's
/// `<summary>` block whole), at the head of the history where a compacted history puts it,
/// with the client's next words after it. Anyone can type that shape (a user's own words
/// ending with a pasted marker line), so each is kept with its text ([`Kept::rendered`]): the
/// caller takes it up only if it is the text the gateway handed out.
pub mod generic {
    use ctxhost_sdk::Message;

    use super::{at_the_head, ends_with_marker, kept_in, texts, Kept};

    pub(crate) fn kept(history: &[Message]) -> Vec<Kept> {
        // The client's next words come after it: a later message, or a later block.
        let followed = |index: usize, block: Option<usize>| {
            index + 1 < history.len()
                || block.is_some_and(|block| {
                    texts(&history[index])
                        .iter()
                        .any(|(other, _)| other.is_some_and(|other| other > block))
                })
        };
        kept_in(history, |index| at_the_head(history, index), rendered)
            .into_iter()
            .filter(|kept| followed(kept.message, kept.block))
            .map(|kept| Kept {
                rendered: texts(&history[kept.message])
                    .into_iter()
                    .find(|(block, _)| *block == kept.block)
                    .map(|(_, text)| text.trim().to_string()),
                ..kept
            })
            .collect()
    }

    /// The reference of a text that is a whole handoff as rendered: its marker line last
    /// after a blank line (inside Claude Code's `<summary>` block, when it is one).
    fn rendered(text: &str) -> Option<String> {
        let text = text.trim();
        let text = match text.strip_prefix("<summary>") {
            Some(inner) => inner.strip_suffix("</summary>")?.trim_end(),
            None => text,
        };
        let reference = ends_with_marker(text, str::is_empty)?;
        let (body, _) = text.rsplit_once('\n')?;
        body.ends_with('\n').then_some(reference)
    }
}
