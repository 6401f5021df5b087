//! `lcm_grep`: full-text or regex search over messages and summaries (FTS5 on SQLite;
//! `tsvector`, trigrams and `~` on PostgreSQL).

use std::cmp::Ordering;

use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{parse_args, ToolContext, ToolError, ToolResult};
use super::{snippet, standing};
use ctxhost_lcm_store::{message_id, FullTextQuery, Hit, Term};

pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
enum Mode {
    #[default]
    FullText,
    Regex,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
enum Scope {
    Messages,
    Summaries,
    #[default]
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
enum Sort {
    #[default]
    Recency,
    Relevance,
}

#[derive(Debug, Deserialize)]
struct Args {
    pattern: String,
    #[serde(default)]
    mode: Mode,
    #[serde(default)]
    scope: Scope,
    since_seq: Option<i64>,
    before_seq: Option<i64>,
    limit: Option<usize>,
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    sort: Sort,
}

pub fn run(ctx: &ToolContext<'_>, args: &Value) -> ToolResult {
    let args: Args = match parse_args(args) {
        Ok(args) => args,
        Err(error) => return Ok(Err(error)),
    };
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let range = (
        args.since_seq.unwrap_or(i64::MIN),
        args.before_seq.unwrap_or(i64::MAX),
    );
    // One more than the page, to know whether another page follows.
    let wanted = args.offset.saturating_add(limit).saturating_add(1);
    let relevance = args.sort == Sort::Relevance;
    let want_messages = args.scope != Scope::Summaries;
    let want_summaries = args.scope != Scope::Messages;

    let (mut hits, terms, regex) = match args.mode {
        Mode::FullText => {
            let (query, terms) = match fts_query(&args.pattern) {
                Ok(parsed) => parsed,
                Err(error) => return Ok(Err(error)),
            };
            let mut hits = Vec::new();
            if want_messages {
                hits.extend(
                    ctx.store
                        .fts_messages(ctx.conv, &query, range, relevance, wanted)?,
                );
            }
            if want_summaries {
                hits.extend(
                    ctx.store
                        .fts_summaries(ctx.conv, &query, range, relevance, wanted)?,
                );
            }
            (hits, terms, None)
        }
        Mode::Regex => {
            let regex = match RegexBuilder::new(&args.pattern).size_limit(1 << 22).build() {
                Ok(regex) => regex,
                Err(error) => return Ok(Err(ToolError(format!("bad regex: {error}")))),
            };
            let mut hits = Vec::new();
            if want_messages {
                regex_messages(ctx, &regex, range, relevance, wanted, &mut hits)?;
            }
            if want_summaries {
                regex_summaries(ctx, &regex, range, relevance, wanted, &mut hits)?;
            }
            (hits, Vec::new(), Some(regex))
        }
    };
    hits.sort_by(|a, b| order(a, b, relevance));
    let has_more = hits.len() > args.offset + limit;
    let page: Vec<Hit> = hits.into_iter().skip(args.offset).take(limit).collect();

    let locate = |text: &str| match &regex {
        Some(regex) => regex.find(text).map_or(0, |m| m.start()),
        None => snippet::first_term(text, &terms),
    };
    let mut matches = Vec::with_capacity(page.len());
    for hit in &page {
        matches.push(match hit {
            Hit::Message {
                rowid,
                seq,
                role,
                text,
                ..
            } => {
                let covering = ctx.store.covering(*rowid)?;
                json!({
                    "id": message_id(*seq),
                    "type": "message",
                    "seq": seq,
                    "role": role,
                    "snippet": snippet::around(text, locate(text)),
                    "covered_by": covering.as_ref().map(|(_, top)| top),
                    "leaf_summary": covering.as_ref().map(|(leaf, _)| leaf),
                })
            }
            Hit::Summary { summary, .. } => json!({
                "id": summary.id,
                "type": "summary",
                "kind": summary.kind.as_str(),
                "depth": summary.depth,
                "seq_range": [summary.seq_start, summary.seq_end],
                "snippet": snippet::around(&summary.text, locate(&summary.text)),
                "in_context": ctx.store.summary_in_context(ctx.conv, &summary.id)?,
            }),
        });
    }
    let lower_terms: Vec<String> = terms.iter().map(|t| t.to_lowercase()).collect();
    let standing = standing::touched(ctx, &page, |text| match &regex {
        Some(regex) => regex.is_match(text),
        // Every word of the search in the subject or the value.
        None => {
            let text = text.to_lowercase();
            lower_terms.iter().all(|term| text.contains(term.as_str()))
        }
    })?;
    let mut answer = json!({
        "pattern": args.pattern,
        "mode": match args.mode { Mode::FullText => "full_text", Mode::Regex => "regex" },
        "scope": match args.scope { Scope::Messages => "messages", Scope::Summaries => "summaries", Scope::Both => "both" },
        "sort": if relevance { "relevance" } else { "recency" },
        "offset": args.offset,
        "limit": limit,
        "returned": matches.len(),
        "next_offset": if has_more { Some(args.offset + limit) } else { None },
        "matches": matches,
    });
    if !standing.is_empty() {
        answer["standing"] = Value::Array(standing);
    }
    Ok(Ok(answer))
}

/// Best first: by rank (lower is better) for relevance, then newest first.
fn order(a: &Hit, b: &Hit, relevance: bool) -> Ordering {
    let by_rank = if relevance {
        a.rank().partial_cmp(&b.rank()).unwrap_or(Ordering::Equal)
    } else {
        Ordering::Equal
    };
    by_rank.then_with(|| b.recency().cmp(&a.recency()))
}

/// The pattern as a full-text query: each whitespace-separated word a term matched as a
/// phrase (punctuation and operators in it are literal), all required; a trailing `*` keeps
/// prefix search. Also the terms, for placing snippets.
fn fts_query(pattern: &str) -> Result<(FullTextQuery, Vec<String>), ToolError> {
    let mut query = FullTextQuery {
        terms: Vec::new(),
        any: false,
    };
    let mut terms = Vec::new();
    for word in pattern.split_whitespace() {
        let (word, prefix) = match word.strip_suffix('*') {
            Some(stem) => (stem, true),
            None => (word, false),
        };
        let word = word.replace('"', "");
        if !word.chars().any(char::is_alphanumeric) {
            continue;
        }
        query.terms.push(Term {
            text: word.clone(),
            prefix,
        });
        terms.push(word);
    }
    if query.terms.is_empty() {
        return Err(ToolError(format!(
            "pattern `{pattern}` has no words to search for (use mode \"regex\" for symbols)"
        )));
    }
    Ok((query, terms))
}

/// The pattern itself when PostgreSQL's `~` matches at least what Rust's `regex` does with it,
/// so the database may skip the rows that cannot match (the engine still decides with
/// `regex`). Only a conservative common subset qualifies: no escapes of letters or digits
/// (`\b` is a backspace to PostgreSQL), no `(?` flags or groups, no nested classes.
fn posix_prefilter(pattern: &str) -> Option<&str> {
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next) if next.is_ascii_punctuation() => {}
                _ => return None,
            },
            '(' if chars.peek() == Some(&'?') => return None,
            '[' if matches!(chars.peek(), Some('[') | Some(':')) => return None,
            '&' | '~' | '{' | '}' => return None,
            _ => {}
        }
    }
    Some(pattern)
}

fn regex_messages(
    ctx: &ToolContext<'_>,
    regex: &Regex,
    range: (i64, i64),
    relevance: bool,
    wanted: usize,
    hits: &mut Vec<Hit>,
) -> Result<(), ctxhost_sdk::EngineError> {
    let mut found = 0;
    ctx.store.scan_messages(
        ctx.conv,
        range,
        posix_prefilter(regex.as_str()),
        |rowid, seq, role, text| {
            let count = if relevance {
                regex.find_iter(text).count()
            } else {
                usize::from(regex.is_match(text))
            };
            if count > 0 {
                hits.push(Hit::Message {
                    rowid,
                    seq,
                    role: role.to_string(),
                    text: text.to_string(),
                    rank: -(count as f64),
                });
                found += 1;
            }
            // Newest first: for recency order the first `wanted` matches are the page.
            relevance || found < wanted
        },
    )
}

fn regex_summaries(
    ctx: &ToolContext<'_>,
    regex: &Regex,
    range: (i64, i64),
    relevance: bool,
    wanted: usize,
    hits: &mut Vec<Hit>,
) -> Result<(), ctxhost_sdk::EngineError> {
    let mut found = 0;
    let prefilter = posix_prefilter(regex.as_str());
    ctx.store
        .scan_summaries(ctx.conv, range, prefilter, |summary| {
            let count = regex.find_iter(&summary.text).count();
            if count > 0 {
                hits.push(Hit::Summary {
                    summary,
                    rank: -(count as f64),
                });
                found += 1;
            }
            relevance || found < wanted
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_text_queries_keep_every_word_literal() {
        let (query, terms) = fts_query("ZEBRA-42 \"x\" pref* -- AND").unwrap();
        let term = |text: &str, prefix| Term {
            text: text.to_string(),
            prefix,
        };
        assert_eq!(
            query.terms,
            [
                term("ZEBRA-42", false),
                term("x", false),
                term("pref", true),
                term("AND", false)
            ]
        );
        assert_eq!(terms, ["ZEBRA-42", "x", "pref", "AND"]);
        assert!(fts_query(" -- ").is_err());
    }

    #[test]
    fn only_patterns_both_dialects_read_alike_go_to_the_database() {
        assert_eq!(
            posix_prefilter("err(or)? \\(x\\)"),
            Some("err(or)? \\(x\\)")
        );
        assert_eq!(posix_prefilter("[a-z]+_id"), Some("[a-z]+_id"));
        assert_eq!(posix_prefilter("\\bword\\b"), None);
        assert_eq!(posix_prefilter("(?i)word"), None);
        assert_eq!(posix_prefilter("[[:alpha:]]"), None);
        assert_eq!(posix_prefilter("a{2}"), None);
    }
}
