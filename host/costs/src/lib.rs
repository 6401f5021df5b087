//! What a session costs: each provider's prices per model ([`price`]), a simulation of its
//! prompt cache ([`cache`]), tokens into dollars ([`bill`]), a prompt priced call by call ([`priced`]), and when a compression is worth
//! its rewrite of the cache ([`policy`]); a live session's running cost against no engine
//! ([`session`]).
//!
//! Providers bill a prompt's input three ways: read from no cache, written to the cache, read
//! from it. A compression rewrites the prompt's prefix, so the call after it writes the new
//! view again; what an engine saves is only known with the cache counted. The rules each
//! provider publishes are cited where they are encoded; see this crate's README.

pub mod bill;
pub mod cache;
pub mod policy;
pub mod price;
pub mod priced;
pub mod session;
