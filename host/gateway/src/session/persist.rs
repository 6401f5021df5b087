//! Sessions saved to the store: a new view before it is used, the rest once the answer is on
//! its way (in order per session, and waited for at shutdown); read again when another gateway
//! saved them since.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cache::SessionGuard;
use super::live::Live;
use super::store_unavailable;
use crate::record::SessionRecord;
use crate::store::StoreError;
use crate::Gateway;
use ctxhost_gateway_wire::error::{ErrorKind, GatewayError};
use ctxhost_metrics::Metric;

impl Gateway {
    /// Takes in the record another gateway saved since this one last read or wrote it; a
    /// compression this gateway was preparing is kept only if the record still names it.
    pub(super) async fn reload(&self, live: &mut Live) -> Result<(), GatewayError> {
        let stored = self
            .store
            .load(&live.record.key)
            .await
            .map_err(|e| store_unavailable(&e))?;
        let Some(stored) = stored else {
            return Ok(());
        };
        if stored.pending.is_none() || stored.pending != live.record.pending {
            live.pending = None;
        }
        live.record = stored;
        live.session
            .recognize_written(live.record.conversation.unsent());
        self.metrics.add(Metric::SessionReloads, &[], 1);
        Ok(())
    }

    /// Saves a session's record once its answer is on its way: a failure is logged and counted,
    /// never put in place of the answer.
    pub async fn save(&self, record: &mut SessionRecord) {
        let published = self.publish(record);
        if !self.save_published(published).await {
            record.revision = 0;
        }
    }

    /// Saves the session's record after its answer has gone out, then releases the session:
    /// its next request waits for the save, so saves of one session land in order and a
    /// session leaves memory only once saved. The sessions endpoints see the record at once;
    /// shutdown waits for these saves.
    pub fn save_then_release(self: &Arc<Self>, mut guard: SessionGuard) {
        let record = self.publish(&mut guard.record);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let gateway = self.clone();
                let save = async move {
                    if !gateway.save_published(record).await {
                        // Read again from the store on its next request.
                        guard.record.revision = 0;
                    }
                    drop(guard);
                };
                self.saves.spawn_on(save, &runtime);
            }
            // Released outside the runtime (it has gone away): nothing can write it now. The
            // sessions endpoints had it; the store keeps the one before.
            Err(_) => {
                tracing::error!(session = %record.key.name, "cannot save the session: released after the gateway's runtime stopped");
                self.metrics.add(Metric::StoreErrors, &[], 1);
            }
        }
    }

    /// Saves a session's record; the sessions endpoints see it at once.
    pub async fn persist(&self, record: &mut SessionRecord) -> Result<(), GatewayError> {
        let published = self.publish(record);
        let written = self.write(published).await;
        if written.is_err() {
            record.revision = 0;
        }
        written
    }

    /// The record as it is about to be saved, at its next revision.
    fn publish(&self, record: &mut SessionRecord) -> Arc<SessionRecord> {
        record.revision += 1;
        let record = Arc::new(record.clone());
        self.live.publish(record.clone());
        record
    }

    /// Writes a record whose answer has gone out, logging and counting a failure; false when it
    /// was not written. A database that is away is tried again, for up to
    /// `serve.database.retry_seconds`: the client already has its answer, so the turn is not
    /// given up at the first failure.
    async fn save_published(&self, record: Arc<SessionRecord>) -> bool {
        let name = record.key.name.clone();
        let bound = Duration::from_secs_f64(self.settings.database.retry_seconds);
        let started = Instant::now();
        let mut pause = Duration::from_millis(25);
        loop {
            match self.write(record.clone()).await {
                Ok(()) => return true,
                Err(error)
                    if error.kind == ErrorKind::StoreUnavailable
                        && self.coordination.is_some()
                        && started.elapsed() + pause < bound =>
                {
                    tracing::warn!(session = %name, "cannot save the session yet, trying again: {error}");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                Err(error) => {
                    tracing::error!(session = %name, "cannot save the session: {error}");
                    self.metrics.add(Metric::StoreErrors, &[], 1);
                    return false;
                }
            }
        }
    }

    async fn write(&self, record: Arc<SessionRecord>) -> Result<(), GatewayError> {
        match self.store.save(&record).await {
            Ok(()) => Ok(()),
            Err(error @ StoreError::Conflict { .. }) => {
                self.metrics.add(Metric::StoreConflicts, &[], 1);
                Err(GatewayError::new(ErrorKind::SessionBusy, error.to_string()))
            }
            Err(error) => Err(store_unavailable(&error)),
        }
    }
}
