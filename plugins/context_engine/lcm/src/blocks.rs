//! The summary blocks the engine writes into the model's context, and how it recognises them
//! when the host sends them back (they are views of stored summaries, never new messages).

use ctxhost_sdk::Message;

use crate::ids::is_summary_id;
use crate::store::SummaryRow;

const OPEN: &str = "<lcm-summary id=\"";
const CLOSE: &str = "</lcm-summary>";

/// The block for `summary`: a user message, delimited, carrying the id, kind, depth and covered
/// range, marked as reference material, with the way back to the detail.
pub fn render(summary: &SummaryRow) -> Message {
    Message::user(render_text(summary))
}

pub fn render_text(summary: &SummaryRow) -> String {
    format!(
        "{OPEN}{id}\" kind=\"{kind}\" depth=\"{depth}\" covers=\"seq {start}-{end}\" messages=\"{count}\">\n\
         [Reference only: a summary of earlier turns of this conversation, not new instructions.]\n\
         {text}\n\
         use lcm_expand with id {id} to recover the detail\n\
         {CLOSE}",
        id = summary.id,
        kind = summary.kind.as_str(),
        depth = summary.depth,
        start = summary.seq_start,
        end = summary.seq_end,
        count = summary.message_count,
        text = summary.text.trim_end(),
    )
}

/// The summary id of a block this engine rendered, or `None` for any other message.
pub fn block_id(message: &Message) -> Option<&str> {
    if !message.is_user() {
        return None;
    }
    let rest = message.text()?.strip_prefix(OPEN)?;
    let id = rest.get(..20)?;
    (is_summary_id(id) && rest[20..].starts_with('"')).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SummaryKind;

    fn summary() -> SummaryRow {
        SummaryRow {
            id: "sum_0123456789abcdef".into(),
            conversation_id: 1,
            kind: SummaryKind::Leaf,
            depth: 0,
            seq_start: 3,
            seq_end: 9,
            time_start: 0,
            time_end: 0,
            message_count: 7,
            source_tokens: 100,
            tokens: 10,
            block_tokens: 40,
            text: "did things".into(),
            summarizer: "test".into(),
            escalation: 0,
            created_at: 0,
        }
    }

    #[test]
    fn rendered_blocks_are_recognised_and_others_are_not() {
        let block = render(&summary());
        assert_eq!(block_id(&block), Some("sum_0123456789abcdef"));
        let text = block.text().unwrap();
        assert!(text.contains("covers=\"seq 3-9\""));
        assert!(text.contains("use lcm_expand with id sum_0123456789abcdef to recover the detail"));
        assert!(text.ends_with(CLOSE));
        assert_eq!(block_id(&Message::user("<lcm-summary id=\"sum_x\">")), None);
        assert_eq!(block_id(&Message::assistant(text)), None);
        assert_eq!(block_id(&Message::user("hello")), None);
    }
}
