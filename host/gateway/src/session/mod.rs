//! A gateway session's state, by concern: the session itself ([`live`]), the sessions held in
//! memory ([`cache`]), the turn lease among gateways on one database ([`lease`]), and saving
//! and reloading ([`persist`]). What a turn does with it is the turn's compression policy
//! (`turn::policy`); the compressions prepared in the background are `background`.

pub mod cache;
pub mod lease;
pub mod live;
pub mod persist;

pub use cache::SessionGuard;
