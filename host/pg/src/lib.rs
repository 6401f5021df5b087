//! PostgreSQL plumbing shared by the gateway's store and the engines' stores, so that every one
//! of them connects, reports and migrates alike:
//!
//! - [`PostgresUrl`] on ctxhost-redacted-url's `RedactedUrl`: a connection URL that shows itself (Display, Debug) with every password
//!   masked; the URL as written is reached only to connect.
//! - [`SslMode`] and [`connector`]: `sslmode` as libpq reads it, and the rustls connector for a
//!   mode (Mozilla's roots); both drivers (async `tokio-postgres`, sync `postgres`) take it.
//! - [`describe`]: a driver error in one line, down to its cause.
//! - [`migrate`]: versioned schema migrations applied once each, in order, under an advisory
//!   lock, from either driver.
//!
//! It depends on no other ctxhost crate: engines (cdylib plugins) may use it.

mod describe;
pub mod migrate;
mod ssl;
mod url;

pub use describe::describe;
pub use ssl::{connector, SslMode, TlsError};
pub use url::{PostgresUrl, UrlError};
