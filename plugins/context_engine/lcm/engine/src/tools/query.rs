//! `lcm_expand_query`: answer a question from the original turns, through the summarizer.

use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use serde_json::{json, Value};

use super::snippet;
use super::{parse_args, ToolContext, ToolError, ToolResult};
use crate::summarize::{self, render_sources, Source};
use ctxhost_lcm_store::{message_id, parse_message_id, FullTextQuery, Hit, Term};
use ctxhost_sdk::{EngineError, SummarizeRequest, SummaryShape};

#[derive(Debug, Deserialize)]
struct Args {
    prompt: String,
    query: Option<String>,
    #[serde(default)]
    ids: Vec<String>,
    max_tokens: Option<u64>,
}

/// Most messages gathered by a search, and most read under given ids.
const SEARCH_MESSAGES: usize = 20;
const SEARCH_SUMMARIES: usize = 5;
const MAX_SOURCES: usize = 200;
/// Excerpts returned when no answer could be written.
const EXCERPTS: usize = 10;
const DEFAULT_ANSWER_TOKENS: u64 = 800;

/// A gathered source: its id and its text.
struct Gathered {
    id: String,
    label: String,
    text: String,
}

pub fn run(ctx: &ToolContext<'_>, args: &Value) -> ToolResult {
    let args: Args = match parse_args(args) {
        Ok(args) => args,
        Err(error) => return Ok(Err(error)),
    };
    if args.prompt.trim().is_empty() {
        return Ok(Err(ToolError("prompt is empty".into())));
    }
    let mut terms: Vec<String> = Vec::new();
    let gathered = if !args.ids.is_empty() {
        match by_ids(ctx, &args.ids)? {
            Ok(gathered) => gathered,
            Err(error) => return Ok(Err(error)),
        }
    } else if let Some(query) = args.query.as_deref().filter(|q| !q.trim().is_empty()) {
        terms = query
            .split_whitespace()
            .map(|w| w.replace('"', ""))
            .filter(|w| w.chars().any(char::is_alphanumeric))
            .collect();
        if terms.is_empty() {
            return Ok(Err(ToolError(format!(
                "query `{query}` has no words to search for"
            ))));
        }
        by_search(ctx, &terms)?
    } else {
        return Ok(Err(ToolError("give `query` or `ids`".into())));
    };
    let ids: Vec<&str> = gathered.iter().map(|g| g.id.as_str()).collect();
    if gathered.is_empty() {
        return Ok(Ok(json!({
            "prompt": args.prompt,
            "answer": Value::Null,
            "sources": ids,
            "note": "nothing stored matches; try other words or lcm_grep with mode \"regex\"",
        })));
    }

    let sources: Vec<Source> = gathered
        .iter()
        .map(|g| Source {
            label: g.label.clone(),
            text: g.text.clone(),
        })
        .collect();
    let max_tokens = args.max_tokens.unwrap_or(DEFAULT_ANSWER_TOKENS).max(16);
    let request = SummarizeRequest {
        instructions: format!(
            "Answer the question using only the sources given (turns of an AI agent's \
             conversation, each labelled with its id). Cite the ids you rely on in brackets, \
             like [msg_12]. If the sources do not answer it, say so. At most {max_tokens} \
             tokens.\n\nQuestion: {}",
            args.prompt
        ),
        content: format!(
            "Question: {}\n\nSources:\n\n{}",
            args.prompt,
            render_sources(&sources, ctx.settings.leaf_chunk_tokens)
        ),
        max_tokens,
        focus_topic: Some(args.prompt.clone()),
        previous_summary: None,
        shape: SummaryShape::Digest,
    };
    let wait = Duration::from_millis(ctx.settings.summarizer_timeout_ms);
    let (answer, summarizer, note) = match summarize::ask(ctx.services, request, wait) {
        // The offline summarizer extracts rather than answers: excerpts serve better.
        Ok(summary) if summary.summarizer.starts_with("offline") => (
            None,
            Some(summary.summarizer),
            "the offline summarizer cannot answer questions; here are the most relevant excerpts"
                .to_string(),
        ),
        Ok(summary) if summary.text.trim().is_empty() => (
            None,
            Some(summary.summarizer),
            "the summarizer gave an empty answer; here are the most relevant excerpts".to_string(),
        ),
        Ok(summary) => (
            Some(summary.text.trim().to_string()),
            Some(summary.summarizer),
            String::new(),
        ),
        Err(why) => (
            None,
            None,
            format!("{why}; here are the most relevant excerpts"),
        ),
    };
    let mut out = json!({
        "prompt": args.prompt,
        "answer": answer,
        "summarizer": summarizer,
        "sources": ids,
    });
    match &answer {
        Some(text) => out["cited"] = json!(cited(text)),
        None => {
            let excerpts: Vec<Value> = gathered
                .iter()
                .take(EXCERPTS)
                .map(|g| {
                    json!({
                        "id": g.id,
                        "snippet": snippet::around(&g.text, snippet::first_term(&g.text, &terms)),
                    })
                })
                .collect();
            out["excerpts"] = json!(excerpts);
            out["note"] = json!(note);
        }
    }
    Ok(Ok(out))
}

fn by_ids(
    ctx: &ToolContext<'_>,
    ids: &[String],
) -> Result<Result<Vec<Gathered>, ToolError>, EngineError> {
    let mut gathered = Vec::new();
    for id in ids {
        let id = id.trim();
        if gathered.len() >= MAX_SOURCES {
            break;
        }
        if let Some(seq) = parse_message_id(id) {
            let Some(stored) = ctx.store.message_by_seq(ctx.conv, seq)? else {
                return Ok(Err(ToolError(format!(
                    "no message {id} in this conversation"
                ))));
            };
            gathered.push(from_stored(ctx, &stored)?);
            continue;
        }
        if ctx.store.summary(ctx.conv, id)?.is_none() {
            return Ok(Err(ToolError(format!(
                "no summary or message with id `{id}` in this conversation"
            ))));
        }
        let under = ctx.store.messages_under(id)?;
        let rowids: Vec<i64> = under
            .iter()
            .take(MAX_SOURCES - gathered.len())
            .map(|(rowid, _, _)| *rowid)
            .collect();
        for stored in ctx.store.messages_by_rowid(&rowids)? {
            gathered.push(from_stored(ctx, &stored)?);
        }
    }
    Ok(Ok(gathered))
}

fn by_search(ctx: &ToolContext<'_>, terms: &[String]) -> Result<Vec<Gathered>, EngineError> {
    let query = FullTextQuery {
        terms: terms
            .iter()
            .map(|t| Term {
                text: t.replace('"', ""),
                prefix: false,
            })
            .collect(),
        // Any word may match: a question's words rarely all occur in one turn.
        any: true,
    };
    let all = (i64::MIN, i64::MAX);
    let mut hits = ctx
        .store
        .fts_messages(ctx.conv, &query, all, true, SEARCH_MESSAGES)?;
    hits.extend(
        ctx.store
            .fts_summaries(ctx.conv, &query, all, true, SEARCH_SUMMARIES)?,
    );
    hits.sort_by(|a, b| {
        a.rank()
            .partial_cmp(&b.rank())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Ok(hits
        .into_iter()
        .map(|hit| match hit {
            Hit::Message {
                seq, role, text, ..
            } => Gathered {
                id: message_id(seq),
                label: format!("{} · {role}", message_id(seq)),
                text,
            },
            Hit::Summary { summary, .. } => Gathered {
                label: format!(
                    "{} · summary of seq {}-{}",
                    summary.id, summary.seq_start, summary.seq_end
                ),
                id: summary.id,
                text: summary.text,
            },
        })
        .collect())
}

fn from_stored(
    ctx: &ToolContext<'_>,
    stored: &ctxhost_lcm_store::StoredMessage,
) -> Result<Gathered, EngineError> {
    let message = stored.message().map_err(|e| ctx.store.error(e))?;
    Ok(Gathered {
        id: stored.public_id(),
        label: format!("{} · {}", stored.public_id(), stored.role),
        text: message.searchable_text().into_owned(),
    })
}

/// The ids an answer cites, in order of first mention.
fn cited(text: &str) -> Vec<String> {
    let Ok(pattern) = Regex::new(r"\b(msg_\d+|sum_[0-9a-f]{16})\b") else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for found in pattern.find_iter(text) {
        if !out.iter().any(|id| id == found.as_str()) {
            out.push(found.as_str().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_are_collected_once_in_order() {
        assert_eq!(
            cited("see [msg_12] and sum_0123456789abcdef, again msg_12; msg_3"),
            ["msg_12", "sum_0123456789abcdef", "msg_3"]
        );
    }
}
