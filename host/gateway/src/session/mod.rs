//! A gateway session's state, by concern: the session itself ([`live`]), the sessions held in
//! memory ([`cache`]), the turn lease among gateways on one database ([`lease`]), and saving
//! and reloading ([`persist`]). What a turn does with it is the turn's compression policy
//! (`turn::policy`); the compressions prepared in the background are `background`.

pub mod cache;
pub mod lease;
pub mod live;
pub mod persist;

pub use cache::SessionGuard;

use ctxhost_gateway_state::store::StoreError;
use ctxhost_gateway_wire::error::{ErrorKind, GatewayError};

/// A store failure as the client sees it: the request can be retried.
pub fn store_unavailable(error: &StoreError) -> GatewayError {
    GatewayError::new(
        ErrorKind::StoreUnavailable,
        format!("{error}: retry the request"),
    )
}
