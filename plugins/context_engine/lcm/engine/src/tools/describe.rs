//! `lcm_describe`: a summary's full text, its standing facts and its place in the DAG, or a
//! message's metadata.

use ctxhost_offline_summary::carry;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{parse_args, ToolContext, ToolError, ToolResult};
use crate::summarize::prefix;
use ctxhost_lcm_store::{message_id, parse_message_id, SummaryKind};

#[derive(Debug, Deserialize)]
struct Args {
    id: String,
}

/// Bytes of a message's text shown by `lcm_describe` (the whole of it is `lcm_expand`'s job).
const PREVIEW_BYTES: usize = 400;

pub fn run(ctx: &ToolContext<'_>, args: &Value) -> ToolResult {
    let args: Args = match parse_args(args) {
        Ok(args) => args,
        Err(error) => return Ok(Err(error)),
    };
    let id = args.id.trim();
    if let Some(seq) = parse_message_id(id) {
        return describe_message(ctx, seq);
    }
    let Some(summary) = ctx.store.summary(ctx.conv, id)? else {
        return Ok(Err(ToolError(format!(
            "no summary or message with id `{id}` in this conversation"
        ))));
    };
    let mut out = json!({
        "id": summary.id,
        "type": "summary",
        "kind": summary.kind.as_str(),
        "depth": summary.depth,
        "tokens": summary.tokens,
        "source_tokens": summary.source_tokens,
        "message_count": summary.message_count,
        "seq_range": [summary.seq_start, summary.seq_end],
        "time_range_ms": [summary.time_start, summary.time_end],
        "created_at_ms": summary.created_at,
        "summarizer": summary.summarizer,
        "escalation": summary.escalation,
        "in_context": ctx.store.summary_in_context(ctx.conv, &summary.id)?,
        "parents": ctx.store.summary_parents(&summary.id)?,
    });
    match summary.kind {
        SummaryKind::Leaf => {
            let sources: Vec<String> = ctx
                .store
                .summary_source_seqs(&summary.id)?
                .into_iter()
                .map(message_id)
                .collect();
            out["sources"] = json!(sources);
        }
        SummaryKind::Condensed => {
            out["children"] = json!(ctx.store.summary_children(&summary.id)?);
        }
    }
    // The standing facts it carries, one by one: kind, subject and value.
    let standing: Vec<Value> = carry::standing_in(&summary.text)
        .items()
        .iter()
        .map(|item| {
            json!({
                "kind": item.kind.label(),
                "subject": item.subject,
                "value": item.value,
                "text": item.text,
            })
        })
        .collect();
    if !standing.is_empty() {
        out["standing"] = json!(standing);
    }
    out["text"] = json!(summary.text);
    Ok(Ok(out))
}

fn describe_message(ctx: &ToolContext<'_>, seq: i64) -> ToolResult {
    let Some(stored) = ctx.store.message_by_seq(ctx.conv, seq)? else {
        return Ok(Err(ToolError(format!(
            "no message {} in this conversation",
            message_id(seq)
        ))));
    };
    let message = stored.message().map_err(|e| ctx.store.error(e))?;
    let covering = ctx.store.covering(stored.rowid)?;
    let text = message.searchable_text();
    Ok(Ok(json!({
        "id": stored.public_id(),
        "type": "message",
        "seq": stored.seq,
        "role": stored.role,
        "tokens": stored.tokens,
        "head": stored.head,
        "stored_at_ms": stored.created_at,
        "covered_by": covering.as_ref().map(|(_, top)| top),
        "leaf_summary": covering.as_ref().map(|(leaf, _)| leaf),
        "preview": prefix(&text, PREVIEW_BYTES),
        "truncated": text.len() > PREVIEW_BYTES,
    })))
}
