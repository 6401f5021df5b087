//! The store's SQL interface ([`Sql`], [`Backend`]) on a SQLite connection.

use ctxhost_sdk::EngineError;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, ToSql};

use super::statements::sql;
use super::{codec, SqliteStore, StoreError};
use crate::sql::{Backend, Param, Row, Sql, Stmt};

/// A connection (or a transaction, which derefs to one).
pub struct Lite<'c>(pub &'c Connection);

impl ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Int(value) => ToSqlOutput::Owned(Value::Integer(*value)),
            Param::OptInt(value) => value.map_or(ToSqlOutput::Owned(Value::Null), |v| {
                ToSqlOutput::Owned(Value::Integer(v))
            }),
            Param::Text(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
            Param::OptText(text) => text.map_or(ToSqlOutput::Owned(Value::Null), |t| {
                ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes()))
            }),
            Param::Bool(value) => ToSqlOutput::Owned(Value::Integer(i64::from(*value))),
            Param::Json(json) => codec::encode(json),
            // Read back with `json_each`: SQLite has no arrays.
            Param::Ints(ids) => ToSqlOutput::Owned(Value::Text(
                serde_json::to_string(ids).expect("integers serialize"),
            )),
            Param::Texts(texts) => ToSqlOutput::Owned(Value::Text(
                serde_json::to_string(texts).expect("strings serialize"),
            )),
        })
    }
}

/// Prepares `text` (cached) with `params` bound. A statement may use fewer of them than its
/// step passes (a step's second statement often needs a few only): those past its last
/// parameter are not bound.
fn prepare<'c>(
    conn: &'c Connection,
    text: &str,
    params: &[Param<'_>],
) -> Result<rusqlite::CachedStatement<'c>, StoreError> {
    let mut stmt = conn.prepare_cached(text)?;
    let wanted = stmt.parameter_count();
    if wanted > params.len() {
        return Err(StoreError::Schema(format!(
            "a statement wants {wanted} parameters, {} given: {text}",
            params.len()
        )));
    }
    for (at, param) in params[..wanted].iter().enumerate() {
        stmt.raw_bind_parameter(at + 1, param)?;
    }
    Ok(stmt)
}

impl Sql for Lite<'_> {
    fn query(
        &mut self,
        stmt: Stmt,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let Some((last, before)) = sql(stmt).split_last() else {
            return Ok(());
        };
        for text in before {
            prepare(self.0, text, params)?.raw_execute()?;
        }
        let mut prepared = prepare(self.0, last, params)?;
        let mut rows = prepared.raw_query();
        while let Some(row) = rows.next()? {
            if !each(&LiteRow(row))? {
                break;
            }
        }
        Ok(())
    }

    fn execute(&mut self, stmt: Stmt, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let mut changed = 0;
        for text in sql(stmt) {
            changed = prepare(self.0, text, params)?.raw_execute()? as u64;
        }
        Ok(changed)
    }

    fn execute_rows(&mut self, stmt: Stmt, rows: &[Vec<Param<'_>>]) -> Result<(), StoreError> {
        for params in rows {
            self.execute(stmt, params)?;
        }
        Ok(())
    }
}

/// One row of a SQLite result.
pub(super) struct LiteRow<'r, 's>(pub(super) &'r rusqlite::Row<'s>);

impl Row for LiteRow<'_, '_> {
    fn opt_i64(&self, at: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.0.get(at)?)
    }

    fn opt_text(&self, at: usize) -> Result<Option<String>, StoreError> {
        Ok(self.0.get(at)?)
    }

    fn bool(&self, at: usize) -> Result<bool, StoreError> {
        Ok(self.0.get(at)?)
    }

    fn json(&self, at: usize) -> Result<String, StoreError> {
        codec::decode(self.0.get_ref(at)?)
    }
}

impl Backend for SqliteStore {
    fn read<T>(
        &self,
        body: impl FnOnce(&mut dyn Sql) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        self.with_connection(|c| body(&mut Lite(c)))
    }

    fn write<T>(
        &mut self,
        body: impl FnOnce(&mut dyn Sql) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        self.with_transaction(|tx| body(&mut Lite(tx)))
    }

    fn error(&self, error: StoreError) -> EngineError {
        SqliteStore::error(self, error)
    }
}
