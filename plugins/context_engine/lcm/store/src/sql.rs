//! The small SQL interface the store's algorithms are written against: run one of the
//! store's statements ([`Stmt`]) with parameters, read its rows, in a read or in a write
//! transaction. SQLite and PostgreSQL each implement it and hold the SQL text of every
//! statement; the algorithms (`queries.rs`, `chain.rs`, `sessions.rs`, `checks.rs`) exist once.
//!
//! The transaction policy, the same on both databases: a read runs on the connection as it is
//! (no transaction of its own); every change runs in one transaction that is begun before its
//! first statement, committed whole, and rolled back whole when any statement fails (SQLite
//! begins it `IMMEDIATE`, so a concurrent writer waits up to the busy timeout instead of
//! failing halfway; PostgreSQL's row locks and the session's advisory lock order its writers).
//! Ingest stores at most [`APPEND_BATCH`](super::chain::APPEND_BATCH) messages per
//! transaction on both, so one huge import never holds one huge transaction.

use ctxhost_sdk::EngineError;

pub use super::statement::{Check, Stmt};
use super::StoreError;

/// A value bound to a statement's parameter.
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    Int(i64),
    OptInt(Option<i64>),
    Text(&'a str),
    OptText(Option<&'a str>),
    Bool(bool),
    /// A message's original JSON (SQLite keeps a large one compressed).
    Json(&'a str),
    /// Row ids, in order (PostgreSQL: an array; SQLite: a JSON array read with `json_each`).
    Ints(&'a [i64]),
    /// Texts (as [`Ints`](Self::Ints)).
    Texts(&'a [&'a str]),
}

/// A count or size the rows carry unsigned, as the signed integer both databases store.
pub fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// One row of a statement's result, read by column position.
pub trait Row {
    /// An integer column (any width); `None` for NULL.
    fn opt_i64(&self, at: usize) -> Result<Option<i64>, StoreError>;
    /// A text column; `None` for NULL.
    fn opt_text(&self, at: usize) -> Result<Option<String>, StoreError>;
    /// A boolean (SQLite: an integer, 0 false).
    fn bool(&self, at: usize) -> Result<bool, StoreError>;
    /// A message's original JSON, decompressed where it was stored compressed.
    fn json(&self, at: usize) -> Result<String, StoreError>;

    fn i64(&self, at: usize) -> Result<i64, StoreError> {
        self.opt_i64(at)?
            .ok_or_else(|| StoreError::Corrupt(format!("NULL in integer column {at}")))
    }

    /// A count or size, never negative.
    fn u64(&self, at: usize) -> Result<u64, StoreError> {
        let value = self.i64(at)?;
        u64::try_from(value)
            .map_err(|_| StoreError::Corrupt(format!("negative count {value} in column {at}")))
    }

    fn text(&self, at: usize) -> Result<String, StoreError> {
        self.opt_text(at)?
            .ok_or_else(|| StoreError::Corrupt(format!("NULL in text column {at}")))
    }
}

/// A connection or a transaction of either database.
pub trait Sql {
    /// Runs `stmt`, calling `each` with every row until it returns false.
    fn query(
        &mut self,
        stmt: Stmt,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError>;

    /// Runs `stmt` (each of its statements, in order); the rows the last one changed.
    fn execute(&mut self, stmt: Stmt, params: &[Param<'_>]) -> Result<u64, StoreError>;

    /// Runs `stmt` once for every parameter row (PostgreSQL sends them as arrays, a few
    /// thousand rows a statement).
    fn execute_rows(&mut self, stmt: Stmt, rows: &[Vec<Param<'_>>]) -> Result<(), StoreError>;
}

impl dyn Sql + '_ {
    /// Every row of `stmt`, mapped.
    pub fn rows<T>(
        &mut self,
        stmt: Stmt,
        params: &[Param<'_>],
        map: impl Fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut out = Vec::new();
        self.query(stmt, params, &mut |row| {
            out.push(map(row)?);
            Ok(true)
        })?;
        Ok(out)
    }

    /// The first row of `stmt`, mapped, if there is one.
    pub fn opt<T>(
        &mut self,
        stmt: Stmt,
        params: &[Param<'_>],
        map: impl Fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        let mut out = None;
        self.query(stmt, params, &mut |row| {
            out = Some(map(row)?);
            Ok(false)
        })?;
        Ok(out)
    }

    /// The row `stmt` always returns (a count, an id), mapped.
    pub fn one<T>(
        &mut self,
        stmt: Stmt,
        params: &[Param<'_>],
        map: impl Fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.opt(stmt, params, map)?
            .ok_or_else(|| StoreError::Schema(format!("{stmt:?} returned no row")))
    }
}

/// An open store of either database, as the algorithms use it.
pub trait Backend {
    /// Runs `body` on the connection, for reads.
    fn read<T>(
        &self,
        body: impl FnOnce(&mut dyn Sql) -> Result<T, StoreError>,
    ) -> Result<T, EngineError>;

    /// Runs `body` in one write transaction (the policy above).
    fn write<T>(
        &mut self,
        body: impl FnOnce(&mut dyn Sql) -> Result<T, StoreError>,
    ) -> Result<T, EngineError>;

    /// Attaches the store's location to a failure.
    fn error(&self, error: StoreError) -> EngineError;

    /// `count` messages were stored: what the database keeps up after writes (PostgreSQL:
    /// `postgres/upkeep.rs`).
    fn wrote_messages(&self, _count: usize) {}

    /// Runs `stmt`, a write that changes `expected` rows when it applies, atomically; when it
    /// changes another number, nothing of it stays and `otherwise` is the error. A database
    /// that runs it as one statement, which changes nothing unless it applies, runs it without
    /// a transaction around it.
    fn write_one(
        &mut self,
        stmt: Stmt,
        params: &[Param<'_>],
        expected: u64,
        otherwise: impl FnOnce() -> StoreError,
    ) -> Result<(), EngineError> {
        self.write(|tx| expect_changed(tx.execute(stmt, params)?, expected, otherwise))
    }
}

/// `Ok` when `changed` rows are the `expected` ones, else the error `otherwise` makes.
pub fn expect_changed(
    changed: u64,
    expected: u64,
    otherwise: impl FnOnce() -> StoreError,
) -> Result<(), StoreError> {
    if changed == expected {
        Ok(())
    } else {
        Err(otherwise())
    }
}

/// A boxed store (PostgreSQL's is: its connection is large) is the store.
impl<B: Backend> Backend for Box<B> {
    fn read<T>(
        &self,
        body: impl FnOnce(&mut dyn Sql) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        (**self).read(body)
    }

    fn write<T>(
        &mut self,
        body: impl FnOnce(&mut dyn Sql) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        (**self).write(body)
    }

    fn error(&self, error: StoreError) -> EngineError {
        (**self).error(error)
    }

    fn wrote_messages(&self, count: usize) {
        (**self).wrote_messages(count)
    }

    fn write_one(
        &mut self,
        stmt: Stmt,
        params: &[Param<'_>],
        expected: u64,
        otherwise: impl FnOnce() -> StoreError,
    ) -> Result<(), EngineError> {
        (**self).write_one(stmt, params, expected, otherwise)
    }
}
