//! The loopback provider is the suite's fake upstream; the runtime is like the host's.

#![allow(dead_code, unused_imports)]

pub use ctxhost_tests::anthropic_upstream::messages_reply;
pub use ctxhost_tests::upstream::{chat_reply, closed_port, Answer, FakeUpstream};

/// A multi-thread runtime like the host's.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}
