//! `lcm_expand`: the original messages under a summary, verbatim, a token budget at a time.

use serde::Deserialize;
use serde_json::{json, Value};

use super::{parse_args, ToolContext, ToolError, ToolResult};
use ctxhost_lcm_store::{message_id, parse_message_id};

#[derive(Debug, Deserialize)]
struct Args {
    id: String,
    max_tokens: Option<u64>,
    #[serde(default)]
    offset: usize,
}

pub fn run(ctx: &ToolContext<'_>, args: &Value) -> ToolResult {
    let args: Args = match parse_args(args) {
        Ok(args) => args,
        Err(error) => return Ok(Err(error)),
    };
    let id = args.id.trim();
    let budget = args
        .max_tokens
        .unwrap_or(ctx.settings.expand_max_tokens)
        .max(1);

    // A message id expands to that one message.
    if let Some(seq) = parse_message_id(id) {
        let Some(stored) = ctx.store.message_by_seq(ctx.conv, seq)? else {
            return Ok(Err(ToolError(format!(
                "no message {} in this conversation",
                message_id(seq)
            ))));
        };
        let value = stored.value().map_err(|e| ctx.store.error(e))?;
        let messages = if args.offset == 0 {
            vec![json!({"id": stored.public_id(), "seq": stored.seq, "message": value})]
        } else {
            Vec::new()
        };
        return Ok(Ok(json!({
            "id": stored.public_id(),
            "type": "message",
            "total_messages": 1,
            "offset": args.offset,
            "returned": messages.len(),
            "tokens": if messages.is_empty() { 0 } else { stored.tokens },
            "next_offset": Value::Null,
            "messages": messages,
        })));
    }

    let Some(summary) = ctx.store.summary(ctx.conv, id)? else {
        return Ok(Err(ToolError(format!(
            "no summary or message with id `{id}` in this conversation"
        ))));
    };
    let all = ctx.store.messages_under(&summary.id)?;
    // The page: from `offset`, messages while they fit the budget (always at least one, so
    // a message larger than the budget is still reachable).
    let mut end = args.offset.min(all.len());
    let mut tokens = 0u64;
    while end < all.len() {
        let cost = all[end].2;
        if end > args.offset && tokens + cost > budget {
            break;
        }
        tokens += cost;
        end += 1;
    }
    let start = args.offset.min(all.len());
    let rowids: Vec<i64> = all[start..end].iter().map(|(rowid, _, _)| *rowid).collect();
    let mut messages = Vec::with_capacity(rowids.len());
    for stored in ctx.store.messages_by_rowid(&rowids)? {
        let value = stored.value().map_err(|e| ctx.store.error(e))?;
        messages.push(json!({"id": stored.public_id(), "seq": stored.seq, "message": value}));
    }
    Ok(Ok(json!({
        "id": summary.id,
        "type": "summary",
        "kind": summary.kind.as_str(),
        "depth": summary.depth,
        "seq_range": [summary.seq_start, summary.seq_end],
        "total_messages": all.len(),
        "offset": start,
        "returned": messages.len(),
        "tokens": tokens,
        "next_offset": if end < all.len() { Some(end) } else { None },
        "messages": messages,
    })))
}
