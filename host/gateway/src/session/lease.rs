//! A session's turn lease among gateways on one database: one gateway at a time serves a
//! session's turn; the lease is let go when the turn is done with the session.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::store_unavailable;
use crate::record::SessionKey;
use crate::store::{Claim, Coordination, Lease, LeaseKind};
use ctxhost_gateway_wire::error::{ErrorKind, GatewayError};

/// A turn lease held: released when dropped.
pub struct TurnLease {
    coordination: Arc<Coordination>,
    lease: Option<Lease>,
    key: SessionKey,
    /// The session was opened under it (else it is only forgotten: it lapses on its own).
    opened: bool,
}

impl TurnLease {
    /// Waits for the turn lease of `key`, up to `wait`; with it, the revision of the session
    /// the database holds.
    pub async fn claim(
        coordination: &Arc<Coordination>,
        key: &SessionKey,
        wait: Duration,
    ) -> Result<(TurnLease, Option<u64>), GatewayError> {
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(5);
        loop {
            match coordination.claim(key, LeaseKind::Turn).await {
                Ok(Claim::Granted {
                    lease,
                    stored_revision,
                }) => {
                    let held = TurnLease {
                        coordination: coordination.clone(),
                        lease: Some(lease),
                        key: key.clone(),
                        opened: false,
                    };
                    return Ok((held, stored_revision));
                }
                Ok(Claim::Held { holder }) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(GatewayError::new(
                            ErrorKind::SessionBusy,
                            format!(
                                "session {} is held by gateway {holder} for longer than \
                                 serve.database.lease_wait_seconds ({}s): try again",
                                key.name,
                                wait.as_secs_f64()
                            ),
                        ));
                    }
                    tokio::time::sleep(pause.min(left)).await;
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                Err(error) => return Err(store_unavailable(&error)),
            }
        }
    }

    /// The session is open under the lease: it is released, not only forgotten, when dropped.
    pub fn opened(&mut self) {
        self.opened = true;
    }
}

impl Drop for TurnLease {
    fn drop(&mut self) {
        let Some(lease) = self.lease.take() else {
            return;
        };
        if !self.opened {
            return self.coordination.forget(lease);
        }
        let (coordination, key) = (self.coordination.clone(), self.key.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(error) = coordination.release(&key, &lease).await {
                        // It lapses on its own once the heartbeat stops renewing it.
                        tracing::warn!(session = %key.name, "cannot let go of the session's lease: {error}");
                    }
                });
            }
            Err(_) => coordination.forget(lease),
        }
    }
}
