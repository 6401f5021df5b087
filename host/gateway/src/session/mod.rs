//! A gateway session's state, by concern: the sessions held in memory ([`cache`]), the turn
//! lease among gateways on one database ([`lease`]), saving and reloading ([`persist`]), and
//! the compaction policy of each turn ([`policy`]). The session itself is [`super::live`]; the
//! compressions prepared in the background are [`super::background`].

pub mod cache;
pub mod lease;
pub mod persist;
pub mod policy;

pub use cache::{LiveSessions, SessionGuard, Slot};
