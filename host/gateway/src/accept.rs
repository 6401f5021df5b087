//! The accept loop: connections are counted by client address and in all before any byte of
//! theirs is read (over `serve.limits.max_connections_per_ip` or `max_connections`, one is
//! closed at once), and each is served by hyper with a bound on the time its request headers
//! may take (`serve.limits.header_timeout_seconds`), so slow or half-open connections cannot
//! pile up until the process runs out of file descriptors.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;

/// How many connections are open, by client address and in all.
#[derive(Debug)]
struct Open {
    per_ip: HashMap<IpAddr, usize>,
    total: usize,
}

/// The connection caps, shared by the accept loop and every connection's guard.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    per_ip: usize,
    total: usize,
    open: Arc<Mutex<Open>>,
}

/// One admitted connection; it is counted until dropped.
#[derive(Debug)]
pub struct Admitted {
    ip: IpAddr,
    open: Arc<Mutex<Open>>,
}

impl ConnectionLimits {
    pub fn new(per_ip: usize, total: usize) -> Self {
        ConnectionLimits {
            per_ip,
            total,
            open: Arc::new(Mutex::new(Open {
                per_ip: HashMap::new(),
                total: 0,
            })),
        }
    }

    /// Counts a connection from `ip`, or `None` when a cap is reached.
    pub fn admit(&self, ip: IpAddr) -> Option<Admitted> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let from_ip = open.per_ip.get(&ip).copied().unwrap_or(0);
        if open.total >= self.total || from_ip >= self.per_ip {
            return None;
        }
        open.total += 1;
        open.per_ip.insert(ip, from_ip + 1);
        Some(Admitted {
            ip,
            open: self.open.clone(),
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.per_ip.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.per_ip.remove(&self.ip);
            }
        }
    }
}

/// Serves `router` on `listener` until `stopping` turns true; then stops accepting, asks every
/// open connection to finish its request in flight and close, and returns once all are closed
/// (the caller bounds that wait).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    header_timeout: Duration,
    mut stopping: watch::Receiver<bool>,
) {
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopping.wait_for(|stop| *stop) => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors, or a connection reset before it was accepted: wait a
                // moment instead of spinning, as a busy server must.
                tracing::debug!("accepting a connection failed: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(admitted) = limits.admit(peer.ip()) else {
            tracing::debug!("connection from {} refused: too many open", peer.ip());
            drop(stream);
            continue;
        };
        // Answers (and every streamed chunk) go out at once: Nagle's algorithm would hold
        // small writes back until the client acknowledges the previous ones.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on a connection: {error}");
        }
        let service = TowerToHyperService::new(router.clone());
        let mut stopping = stopping.clone();
        connections.spawn(async move {
            let _admitted = admitted;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let connection = builder
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!("connection from {peer} ended: {error}");
                    }
                    return;
                }
                _ = stopping.wait_for(|stop| *stop) => {}
            }
            connection.as_mut().graceful_shutdown();
            if let Err(error) = connection.await {
                tracing::debug!("connection from {peer} ended: {error}");
            }
        });
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

#[cfg(test)]
mod tests {
    use super::ConnectionLimits;
    use std::net::{IpAddr, Ipv4Addr};

    #[test]
    fn caps_count_by_address_and_in_all_and_free_on_drop() {
        let limits = ConnectionLimits::new(2, 3);
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
        let b = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let first = limits.admit(a).unwrap();
        let _second = limits.admit(a).unwrap();
        assert!(limits.admit(a).is_none(), "per address");
        let _third = limits.admit(b).unwrap();
        assert!(limits.admit(b).is_none(), "in all");
        drop(first);
        assert!(
            limits.admit(b).is_some(),
            "a closed connection frees its place"
        );
    }
}
