//! The throwaway PostgreSQL server, from its own crate (`tests/postgres`) so that crates the
//! suite depends on (lcm's tests) can start one too.

pub use ctxhost_test_postgres::*;
