//! Search on PostgreSQL: full-text through each row's `tsvector` (a message's found through
//! the GIN-indexed words of its span, `lcm_message_spans`), ranked with `ts_rank`; terms full-text does not serve (CJK text, which has no spaces between words, and
//! identifiers such as `foo_bar.baz`, which the parser splits its own way) as substrings
//! as `ILIKE` (CJK terms through the trigram index of the messages holding CJK text, and of the
//! summaries); regular expressions prefiltered by `~` on the server (trigram-indexed on the
//! summaries) when the pattern reads the same in both dialects, and decided by the engine's own
//! `regex` either way.

use postgres::types::ToSql;

use super::sql::PgRow;
use super::{get, PostgresStore};
use crate::queries::summary_from_row;
use crate::{FullTextQuery, Hit, StoreError, SummaryRow, Term};
use ctxhost_lcm_words::{cjk, tsquery_term, without_phrases, SPAN_MESSAGES};

/// The summary columns, for the statements written here.
const SUMMARY_COLUMNS: &str = summary_columns!();
use ctxhost_sdk::EngineError;

/// Rows read per round trip while scanning for a regular expression.
const SCAN_PAGE: i64 = 500;

/// SQLSTATE of an invalid regular expression: the prefilter is dropped, the scan goes on.
const INVALID_REGEX: &str = "2201B";

/// A full-text query in SQL: the condition a row must meet and its rank (higher is better),
/// with their parameters, numbered from `$first`.
pub(super) struct Rendered {
    condition: String,
    rank: String,
    /// The condition a message's span meets whenever the message meets `condition`: its words
    /// decide (no substring may match instead of them).
    span: Option<String>,
    params: Vec<String>,
}

/// Whether `term` is searched as a substring: it holds CJK characters, or punctuation other
/// than `-` between its letters, or no word at all.
fn substring_term(term: &Term) -> bool {
    term.text
        .chars()
        .any(|c| cjk(c) || (!c.is_alphanumeric() && c != '-'))
        || tsquery_term(&term.text, term.prefix).is_none()
}

/// `text` as an `ILIKE` pattern matching it anywhere (`%`, `_` and `\` taken literally).
fn like_anywhere(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

impl Rendered {
    /// The query's parameters: `first` ones, then the rendered ones.
    pub(super) fn after<'a>(
        &'a self,
        first: [&'a (dyn ToSql + Sync); 4],
    ) -> Vec<&'a (dyn ToSql + Sync)> {
        let mut params = first.to_vec();
        params.extend(self.params.iter().map(|p| p as &(dyn ToSql + Sync)));
        params
    }
}

/// The table a query searches: messages mark those holding CJK text (only they are
/// trigram-indexed), summaries are all trigram-indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    Messages,
    Summaries,
}

impl Table {
    /// The name the statements give the table's rows.
    fn alias(self) -> &'static str {
        match self {
            Table::Messages => "m",
            Table::Summaries => "s",
        }
    }
}

fn render(query: &FullTextQuery, first: usize, table: Table) -> Rendered {
    let mut params = Vec::new();
    let mut param = |value: String| {
        params.push(value);
        format!("${}", first + params.len() - 1)
    };
    let row = table.alias();
    let (mut words, mut substrings) = (Vec::new(), Vec::new());
    for term in &query.terms {
        if substring_term(term) {
            let like = format!("{row}.text ILIKE {}", param(like_anywhere(&term.text)));
            // Only messages holding CJK text are trigram-indexed: a CJK term says it looks
            // there (as the index's predicate says it), and the index serves it. Other
            // substrings are read from the conversation's rows.
            substrings.push(if table == Table::Messages && term.text.chars().any(cjk) {
                format!("({like} AND {row}.cjk)")
            } else {
                like
            });
        } else if let Some(words_of_term) = tsquery_term(&term.text, term.prefix) {
            words.push(format!("({words_of_term})"));
        }
    }
    let (and_or, joiner) = if query.any {
        (" OR ", " | ")
    } else {
        (" AND ", " & ")
    };
    let words_decide = !words.is_empty() && (!query.any || substrings.is_empty());
    let mut conditions = substrings;
    let mut span = None;
    let rank = if words.is_empty() {
        "0::real".to_string()
    } else {
        // Sent as text, read as a `tsquery` (its words are those `ctxhost-lcm-words` wrote).
        let words = words.join(joiner);
        if table == Table::Messages && words_decide {
            let relaxed = param(without_phrases(&words));
            span = Some(format!("w.words @@ {relaxed}::text::tsquery"));
        }
        let tsquery = format!("{}::text::tsquery", param(words));
        conditions.insert(0, format!("{row}.tsv @@ {tsquery}"));
        format!("ts_rank({row}.tsv, {tsquery})")
    };
    Rendered {
        condition: format!("({})", conditions.join(and_or)),
        rank,
        span,
        params,
    }
}

/// The search of a conversation's messages for `query`: its SQL (parameters: conversation,
/// since, before, limit, then the rendered ones) and its rendered terms.
///
/// Where the words decide, the spans holding them are found first (`w`, through their index
/// or newest first), then the matching messages of each (`m`, at most a span's worth: which
/// keeps the planner from reading the conversation's messages to join them). Newest first
/// follows `seq` (as the row id does).
pub(super) fn messages_search(query: &FullTextQuery, relevance: bool) -> (String, Rendered) {
    let rendered = render(query, 5, Table::Messages);
    let matching = format!(
        "SELECT m.id, m.seq, m.role, m.text, {} AS rank FROM lcm_messages m \
         WHERE m.conversation_id = $1 AND m.seq >= $2 AND m.seq < $3 AND {}",
        rendered.rank, rendered.condition
    );
    let sql = match (&rendered.span, relevance) {
        (Some(span), relevance) => format!(
            "SELECT m.id, m.seq, m.role, m.text, m.rank FROM lcm_message_spans w \
             CROSS JOIN LATERAL ({matching} AND m.seq BETWEEN w.seq_start AND w.seq_end \
               ORDER BY m.seq DESC LIMIT {SPAN_MESSAGES}) m \
             WHERE w.conversation_id = $1 AND {span} AND w.seq_end >= $2 AND w.seq_start < $3 \
             ORDER BY {} LIMIT $4",
            if relevance {
                "m.rank DESC, m.seq DESC"
            } else {
                "w.seq_start DESC, m.seq DESC"
            }
        ),
        (None, true) => format!("{matching} ORDER BY rank DESC, m.seq DESC LIMIT $4"),
        (None, false) => format!("{matching} ORDER BY m.seq DESC LIMIT $4"),
    };
    (sql, rendered)
}

impl PostgresStore {
    /// Full-text matches among a conversation's messages with `since <= seq < before`,
    /// newest first or best first.
    pub fn fts_messages(
        &self,
        conv: i64,
        query: &FullTextQuery,
        (since, before): (i64, i64),
        relevance: bool,
        limit: usize,
    ) -> Result<Vec<Hit>, EngineError> {
        let (sql, rendered) = messages_search(query, relevance);
        let limit = limit as i64;
        let params = rendered.after([&conv, &since, &before, &limit]);
        self.with_client(|c| {
            c.query(&sql, &params)?
                .iter()
                .map(|row| {
                    let rank: f32 = get(row, 4)?;
                    Ok(Hit::Message {
                        rowid: get(row, 0)?,
                        seq: get(row, 1)?,
                        role: get(row, 2)?,
                        text: get(row, 3)?,
                        // Lower is better, as the other backend's bm25.
                        rank: -f64::from(rank),
                    })
                })
                .collect()
        })
    }

    /// Full-text matches among a conversation's summaries overlapping `since <= seq < before`.
    pub fn fts_summaries(
        &self,
        conv: i64,
        query: &FullTextQuery,
        (since, before): (i64, i64),
        relevance: bool,
        limit: usize,
    ) -> Result<Vec<Hit>, EngineError> {
        let rendered = render(query, 5, Table::Summaries);
        let order = if relevance {
            "rank DESC, s.seq_end DESC"
        } else {
            "s.seq_end DESC"
        };
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS}, {} AS rank FROM lcm_summaries s \
             WHERE s.conversation_id = $1 AND s.seq_end >= $2 AND s.seq_start < $3 AND {} \
             ORDER BY {order} LIMIT $4",
            rendered.rank, rendered.condition
        );
        let limit = limit as i64;
        let params = rendered.after([&conv, &since, &before, &limit]);
        self.with_client(|c| {
            c.query(&sql, &params)?
                .iter()
                .map(|row| {
                    let rank: f32 = get(row, 16)?;
                    Ok(Hit::Summary {
                        summary: summary_from_row(&PgRow(row), 0)?,
                        rank: -f64::from(rank),
                    })
                })
                .collect()
        })
    }

    /// Calls `visit(rowid, seq, role, text)` for each message in range, newest first, until it
    /// returns false; with `prefilter`, only for those matching it (`~`).
    pub fn scan_messages(
        &self,
        conv: i64,
        (since, before): (i64, i64),
        prefilter: Option<&str>,
        mut visit: impl FnMut(i64, i64, &str, &str) -> bool,
    ) -> Result<(), EngineError> {
        let mut prefilter = prefilter.map(str::to_string);
        let mut below = before;
        loop {
            let filter = if prefilter.is_some() {
                "AND text ~ $5"
            } else {
                "AND $5::text IS NULL"
            };
            let sql = format!(
                "SELECT id, seq, role, text FROM lcm_messages \
                 WHERE conversation_id = $1 AND seq >= $2 AND seq < $3 {filter} \
                 ORDER BY seq DESC LIMIT $4"
            );
            let page = self.with_client(|c| {
                match c.query(&sql, &[&conv, &since, &below, &SCAN_PAGE, &prefilter]) {
                    Err(e) if is_invalid_regex(&e) => Ok(None),
                    Err(e) => Err(e.into()),
                    Ok(rows) => rows
                        .iter()
                        .map(|row| -> Result<_, StoreError> {
                            Ok((get(row, 0)?, get(row, 1)?, get(row, 2)?, get(row, 3)?))
                        })
                        .collect::<Result<Vec<(i64, i64, String, String)>, _>>()
                        .map(Some),
                }
            })?;
            let Some(page) = page else {
                // PostgreSQL reads the pattern differently: scan everything instead.
                prefilter = None;
                continue;
            };
            for (rowid, seq, role, text) in &page {
                if !visit(*rowid, *seq, role, text) {
                    return Ok(());
                }
            }
            match page.last() {
                Some((_, seq, ..)) if page.len() as i64 == SCAN_PAGE => below = *seq,
                _ => return Ok(()),
            }
        }
    }

    /// Calls `visit` for each summary overlapping the range, newest first, until it returns
    /// false; with `prefilter`, only for those matching it.
    pub fn scan_summaries(
        &self,
        conv: i64,
        (since, before): (i64, i64),
        prefilter: Option<&str>,
        mut visit: impl FnMut(SummaryRow) -> bool,
    ) -> Result<(), EngineError> {
        // A conversation holds few summaries: one query, no pages.
        let run = |prefilter: Option<&str>| {
            let filter = if prefilter.is_some() {
                "AND s.text ~ $4"
            } else {
                "AND $4::text IS NULL"
            };
            let sql = format!(
                "SELECT {SUMMARY_COLUMNS} FROM lcm_summaries s WHERE s.conversation_id = $1 \
                 AND s.seq_end >= $2 AND s.seq_start < $3 {filter} \
                 ORDER BY s.seq_end DESC, s.depth DESC"
            );
            self.with_client(
                |c| match c.query(&sql, &[&conv, &since, &before, &prefilter]) {
                    Err(e) if is_invalid_regex(&e) => Ok(None),
                    Err(e) => Err(e.into()),
                    Ok(rows) => rows
                        .iter()
                        .map(|row| summary_from_row(&PgRow(row), 0))
                        .collect::<Result<Vec<_>, _>>()
                        .map(Some),
                },
            )
        };
        let rows = match run(prefilter)? {
            Some(rows) => rows,
            None => run(None)?.unwrap_or_default(),
        };
        for summary in rows {
            if !visit(summary) {
                break;
            }
        }
        Ok(())
    }
}

fn is_invalid_regex(error: &postgres::Error) -> bool {
    error
        .code()
        .is_some_and(|code| code.code() == INVALID_REGEX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(text: &str, prefix: bool) -> Term {
        Term {
            text: text.to_string(),
            prefix,
        }
    }

    #[test]
    fn words_go_to_full_text_and_identifiers_and_cjk_to_substrings() {
        let query = FullTextQuery {
            terms: vec![
                term("ZEBRA-42", false),
                term("foo_bar.baz", false),
                term("検索", false),
                term("pref", true),
            ],
            any: false,
        };
        let rendered = render(&query, 5, Table::Messages);
        assert_eq!(
            rendered.params,
            [
                "%foo\\_bar.baz%",
                "%検索%",
                "('zebra' & '42') & ('pref':*)",
                "('zebra' <-> '42') & ('pref':*)"
            ]
        );
        assert_eq!(
            rendered.condition,
            "(m.tsv @@ $8::text::tsquery AND m.text ILIKE $5 AND (m.text ILIKE $6 AND m.cjk))"
        );
        assert_eq!(
            rendered.span.as_deref(),
            Some("w.words @@ $7::text::tsquery")
        );
        let summaries = render(&query, 5, Table::Summaries);
        assert_eq!(
            summaries.condition,
            "(s.tsv @@ $7::text::tsquery AND s.text ILIKE $5 AND s.text ILIKE $6)"
        );
        assert_eq!(summaries.span, None);
        // Any term may match: a substring may match where the words do not.
        let any = FullTextQuery { any: true, ..query };
        assert_eq!(render(&any, 5, Table::Messages).span, None);
    }
}
