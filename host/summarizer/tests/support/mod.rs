//! The loopback provider lives in the shared test support; the runtime is like the host's.

#![allow(dead_code, unused_imports)]

pub use ctxhost_tests::fake_provider::*;

/// A multi-thread runtime like the host's.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}
