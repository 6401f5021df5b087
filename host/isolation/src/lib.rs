//! # ctxhost-isolation
//!
//! Engines that cannot hurt the host: a plugin engine runs in child processes (the `ctxhost`
//! binary in a hidden mode, loading the cdylib once), a few per plugin ([`pool`]), each
//! holding many sessions' engine instances. The host talks to one over pipes with the SDK's
//! engine-call protocol, the same calls as the ABI's, each naming its session and call
//! ([`protocol`] is the pipe's form of them), many in flight at once ([`connection`]). The
//! host's side of a session is the SDK's remote engine over [`parent::ChildProcess`]; the
//! child ([`child`]) serves each session's calls in order, different sessions' at once, with
//! the SDK's one `dispatch`. A crash, an abort, an exit, a hang past its deadline (a short one
//! for the per-turn checks, [`is_check`]), an allocation past its memory limit or a reply for
//! a call nobody waits on (forged: call numbers cannot be guessed) becomes an engine error
//! naming the plugin and the cause for the calls in flight; the child is started
//! again on the next call, its sessions reopened from their stores, until the [`breaker`]
//! opens. A child dies with the host, and takes what it started with it when killed
//! ([`spawn`]).

pub mod breaker;
pub mod child;
pub mod connection;
pub mod lists;
pub mod parent;
pub mod pool;
pub mod protocol;
mod replies;
pub mod spawn;
pub mod wait;

use ctxhost_protocol::Op;

/// The calls made on every turn, which must be quick: an isolated engine gets
/// `plugins.<name>.check_timeout` for them instead of `timeout`, and a session whose engine
/// let one time out moves to the built-in compressor.
pub fn is_check(op: Op) -> bool {
    matches!(
        op,
        Op::ShouldCompress | Op::ShouldCompressPreflight | Op::UpdateFromResponse
    )
}
