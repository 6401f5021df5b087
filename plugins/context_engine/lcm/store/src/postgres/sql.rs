//! The store's SQL interface ([`Sql`], [`Backend`]) on a PostgreSQL connection.

use std::error::Error;

use ctxhost_sdk::EngineError;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::private::BytesMut;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use postgres::{GenericClient, Statement};

use super::pool::Statements;
use super::statements::{copy, sql, INSERT_SPANS};
use super::{PostgresStore, StoreError};
use crate::sql::{expect_changed, Backend, Param, Row, Sql, Stmt};
use ctxhost_lcm_words::{has_cjk, spans, words, Words, SPAN_MESSAGES};

type BoxError = Box<dyn Error + Sync + Send>;

/// Rows a write sends as arrays in one statement: more go by `COPY` where the statement has
/// one (messages, context items), else in statements of this many.
pub const ROWS_PER_STATEMENT: usize = 2_000;

/// A client or a transaction, and the statements prepared on its connection when it keeps
/// them (each of the store's statements is then parsed once per connection).
pub struct Pg<'c, C: GenericClient> {
    client: &'c mut C,
    statements: Option<&'c mut Statements>,
}

impl<'c, C: GenericClient> Pg<'c, C> {
    /// Statements parsed at each run.
    pub fn new(client: &'c mut C) -> Self {
        Pg {
            client,
            statements: None,
        }
    }

    /// Statements prepared once, kept in `statements` (those of `client`'s connection).
    pub(super) fn cached(client: &'c mut C, statements: &'c mut Statements) -> Self {
        Pg {
            client,
            statements: Some(statements),
        }
    }

    fn statement(&mut self, text: &'static str) -> Result<Statement, StoreError> {
        match &mut self.statements {
            Some(statements) => statements.get(&mut *self.client, text),
            None => Ok(self.client.prepare(text)?),
        }
    }
}

/// An integer bound at the width the statement wants.
fn int_to_sql(value: i64, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
    match *ty {
        Type::INT2 => i16::try_from(value)?.to_sql(ty, out),
        Type::INT4 => i32::try_from(value)?.to_sql(ty, out),
        _ => value.to_sql(ty, out),
    }
}

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self {
            Param::Int(value) => int_to_sql(*value, ty, out),
            Param::OptInt(None) | Param::OptText(None) => Ok(IsNull::Yes),
            Param::OptInt(Some(value)) => int_to_sql(*value, ty, out),
            Param::Text(text) | Param::OptText(Some(text)) | Param::Json(text) => {
                text.to_sql(ty, out)
            }
            Param::Bool(value) => value.to_sql(ty, out),
            Param::Ints(ids) => ids.to_sql(ty, out),
            Param::Texts(texts) => texts.to_sql(ty, out),
        }
    }

    // Each value checks its own type in `to_sql`.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// One parameter of a many-row statement: the rows' values as an array.
#[derive(Debug)]
enum Column<'a> {
    Ints(Vec<Option<i64>>),
    Texts(Vec<Option<&'a str>>),
    Bools(Vec<bool>),
    Words(Vec<Words>),
}

impl ToSql for Column<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self {
            Column::Ints(values) => values.to_sql(ty, out),
            Column::Texts(values) => values.to_sql(ty, out),
            Column::Bools(values) => values.to_sql(ty, out),
            Column::Words(values) => values.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// `rows` as one array per parameter.
fn columns<'a>(rows: &[Vec<Param<'a>>]) -> Result<Vec<Column<'a>>, StoreError> {
    let width = rows.first().map_or(0, Vec::len);
    let mut out = Vec::with_capacity(width);
    for at in 0..width {
        let mut column = match rows[0].get(at) {
            Some(Param::Bool(_)) => Column::Bools(Vec::with_capacity(rows.len())),
            Some(Param::Int(_) | Param::OptInt(_)) => Column::Ints(Vec::with_capacity(rows.len())),
            _ => Column::Texts(Vec::with_capacity(rows.len())),
        };
        for row in rows {
            match (&mut column, row.get(at)) {
                (Column::Ints(values), Some(Param::Int(v))) => values.push(Some(*v)),
                (Column::Ints(values), Some(Param::OptInt(v))) => values.push(*v),
                (Column::Texts(values), Some(Param::Text(v) | Param::Json(v))) => {
                    values.push(Some(v))
                }
                (Column::Texts(values), Some(Param::OptText(v))) => values.push(*v),
                (Column::Bools(values), Some(Param::Bool(v))) => values.push(*v),
                (_, other) => {
                    return Err(StoreError::Schema(format!(
                        "parameter {at} of a many-row statement: {other:?} does not fit {column:?}"
                    )))
                }
            }
        }
        out.push(column);
    }
    Ok(out)
}

/// Where a message's conversation, `seq` and text are among the parameters of
/// [`Stmt::InsertMessages`].
const MESSAGE_CONVERSATION: usize = 1;
const MESSAGE_SEQ: usize = 2;
const MESSAGE_TEXT: usize = 6;

/// What messages' rows take here beyond their own parameters, derived from their texts: each
/// one's words and whether it holds CJK text, and the rows of their spans (`spans.rs` in
/// `ctxhost-lcm-words`).
struct Derived {
    words: Vec<Words>,
    cjk: Vec<bool>,
    spans: Vec<SpanRow>,
}

/// A row of `lcm_message_spans`: the words of a conversation's messages `first..=last`.
struct SpanRow {
    conversation: i64,
    first: i64,
    last: i64,
    words: Words,
}

/// What the rows of `stmt` derive: nothing unless it stores messages. The rows are
/// consecutive messages of one conversation (as `chain.rs` writes them), cut into spans here.
fn derive(stmt: Stmt, rows: &[Vec<Param<'_>>]) -> Result<Option<Derived>, StoreError> {
    if stmt != Stmt::InsertMessages {
        return Ok(None);
    }
    let mut keys = Vec::with_capacity(rows.len());
    let mut texts = Vec::with_capacity(rows.len());
    for row in rows {
        match (
            row.get(MESSAGE_CONVERSATION),
            row.get(MESSAGE_SEQ),
            row.get(MESSAGE_TEXT),
        ) {
            (Some(Param::Int(conversation)), Some(Param::Int(seq)), Some(Param::Text(text))) => {
                keys.push((*conversation, *seq));
                texts.push(*text);
            }
            other => {
                return Err(StoreError::Schema(format!(
                    "{stmt:?}: a row without its conversation, seq and text: {other:?}"
                )))
            }
        }
    }
    let found: Vec<Words> = texts.iter().map(|text| words(text)).collect();
    let spans = spans(&found)
        .into_iter()
        .map(|span| {
            let (conversation, first) = keys[span.messages.start];
            SpanRow {
                conversation,
                first,
                last: keys[span.messages.end - 1].1,
                words: span.words,
            }
        })
        .collect();
    Ok(Some(Derived {
        words: found,
        cjk: texts.iter().map(|text| has_cjk(text)).collect(),
        spans,
    }))
}

/// `rows` as the arrays `stmt` takes: one per parameter, then those derived from them (for
/// messages, their spans' rows too).
fn prepare<'a>(stmt: Stmt, rows: &[Vec<Param<'a>>]) -> Result<Vec<Column<'a>>, StoreError> {
    let mut columns = columns(rows)?;
    let Some(derived) = derive(stmt, rows)? else {
        return Ok(columns);
    };
    columns.push(Column::Words(derived.words));
    columns.push(Column::Bools(derived.cjk));
    columns.extend(span_columns(derived.spans));
    Ok(columns)
}

/// The rows of spans as the arrays their insert takes: conversations, first and last `seq`s,
/// words.
fn span_columns<'a>(spans: Vec<SpanRow>) -> [Column<'a>; 4] {
    [
        Column::Ints(spans.iter().map(|s| Some(s.conversation)).collect()),
        Column::Ints(spans.iter().map(|s| Some(s.first)).collect()),
        Column::Ints(spans.iter().map(|s| Some(s.last)).collect()),
        Column::Words(spans.into_iter().map(|s| s.words).collect()),
    ]
}

impl<C: GenericClient> Pg<'_, C> {
    /// Runs `stmt` once for the rows whose values `columns` holds.
    fn execute_columns(&mut self, stmt: Stmt, columns: Vec<Column<'_>>) -> Result<(), StoreError> {
        let params: Vec<&(dyn ToSql + Sync)> = columns.iter().map(|c| c as _).collect();
        for text in sql(stmt) {
            let statement = self.statement(text)?;
            self.client.execute(&statement, &params)?;
        }
        Ok(())
    }

    /// Stores the rows of the spans of messages just written by `COPY`, in one statement.
    fn insert_spans(&mut self, spans: Vec<SpanRow>) -> Result<(), StoreError> {
        if spans.is_empty() {
            return Ok(());
        }
        let [conversations, firsts, lasts, words] = span_columns(spans);
        let statement = self.statement(INSERT_SPANS)?;
        self.client
            .execute(&statement, &[&conversations, &firsts, &lasts, &words])?;
        Ok(())
    }

    /// Writes `rows` with `copy` (its statement and column types), deriving what they derive
    /// as they go.
    fn copy_rows(
        &mut self,
        stmt: Stmt,
        (copy, types): (&str, &[Type]),
        rows: &[Vec<Param<'_>>],
    ) -> Result<(), StoreError> {
        let mut writer = BinaryCopyInWriter::new(self.client.copy_in(copy)?, types);
        let mut spans = Vec::new();
        // A span's worth of rows at a time.
        for block in rows.chunks(SPAN_MESSAGES) {
            let derived = derive(stmt, block)?;
            for (at, row) in block.iter().enumerate() {
                let mut values: Vec<&(dyn ToSql + Sync)> = row.iter().map(|p| p as _).collect();
                if let Some(derived) = &derived {
                    values.push(&derived.words[at]);
                    values.push(&derived.cjk[at]);
                }
                if values.len() != types.len() {
                    return Err(StoreError::Schema(format!(
                        "{stmt:?}: a row of {} values for {} columns",
                        values.len(),
                        types.len()
                    )));
                }
                writer.write(&values)?;
            }
            spans.extend(derived.into_iter().flat_map(|d| d.spans));
        }
        writer.finish()?;
        self.insert_spans(spans)?;
        Ok(())
    }
}

impl<C: GenericClient> Sql for Pg<'_, C> {
    fn query(
        &mut self,
        stmt: Stmt,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let Some((last, before)) = sql(stmt).split_last() else {
            return Ok(());
        };
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        for text in before {
            let statement = self.statement(text)?;
            self.client.execute(&statement, &params)?;
        }
        let statement = self.statement(last)?;
        let mut rows = self.client.query_raw(&statement, params.iter().copied())?;
        let mut wanted = true;
        // Read to the end even when `each` has seen enough: the connection then stays in step.
        while let Some(row) = rows.next()? {
            if wanted {
                wanted = each(&PgRow(&row))?;
            }
        }
        Ok(())
    }

    fn execute(&mut self, stmt: Stmt, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        let mut changed = 0;
        for text in sql(stmt) {
            let statement = self.statement(text)?;
            changed = self.client.execute(&statement, &params)?;
        }
        Ok(changed)
    }

    fn execute_rows(&mut self, stmt: Stmt, rows: &[Vec<Param<'_>>]) -> Result<(), StoreError> {
        match copy(stmt) {
            Some(copy) if rows.len() > ROWS_PER_STATEMENT => self.copy_rows(stmt, copy, rows),
            _ => {
                for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                    self.execute_columns(stmt, prepare(stmt, chunk)?)?;
                }
                Ok(())
            }
        }
    }
}

/// One row of a PostgreSQL result.
pub(super) struct PgRow<'r>(pub(super) &'r postgres::Row);

impl Row for PgRow<'_> {
    fn opt_i64(&self, at: usize) -> Result<Option<i64>, StoreError> {
        let column = self.0.columns().get(at);
        Ok(match column.map(|c| c.type_().clone()) {
            Some(Type::INT2) => self.0.try_get::<_, Option<i16>>(at)?.map(i64::from),
            Some(Type::INT4) => self.0.try_get::<_, Option<i32>>(at)?.map(i64::from),
            _ => self.0.try_get(at)?,
        })
    }

    fn opt_text(&self, at: usize) -> Result<Option<String>, StoreError> {
        Ok(self.0.try_get(at)?)
    }

    fn bool(&self, at: usize) -> Result<bool, StoreError> {
        Ok(self.0.try_get(at)?)
    }

    fn json(&self, at: usize) -> Result<String, StoreError> {
        Ok(self.0.try_get(at)?)
    }
}

impl Backend for PostgresStore {
    fn read<T>(
        &self,
        body: impl FnOnce(&mut dyn Sql) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        self.with_statements(|c, statements| body(&mut Pg::cached(c, statements)))
    }

    fn write<T>(
        &mut self,
        body: impl FnOnce(&mut dyn Sql) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        self.with_transaction(|tx, statements| body(&mut Pg::cached(tx, statements)))
    }

    fn error(&self, error: StoreError) -> EngineError {
        PostgresStore::error(self, error)
    }

    /// Without a transaction: here such a write is one statement that changes nothing unless
    /// it applies (`statements.rs`, `WriteSummary`).
    fn write_one(
        &mut self,
        stmt: Stmt,
        params: &[Param<'_>],
        expected: u64,
        otherwise: impl FnOnce() -> StoreError,
    ) -> Result<(), EngineError> {
        debug_assert_eq!(sql(stmt).len(), 1, "{stmt:?} is one statement");
        self.with_statements(|client, statements| {
            let changed = Pg::cached(client, statements).execute(stmt, params)?;
            expect_changed(changed, expected, otherwise)
        })
    }

    fn wrote_messages(&self, count: usize) {
        if let Some(pool) = self.shared_pool() {
            pool.wrote_messages(count);
        }
    }
}
