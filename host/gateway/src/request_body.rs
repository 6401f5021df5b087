//! Reading a client's request body under the size limit. A body over the limit is answered 413,
//! but only after the rest of it has been read and thrown away (bounded in bytes and time, as
//! web servers' "lingering close" does): a server that answers and closes while the client is
//! still writing leaves the client with a broken pipe instead of the 413 that says what to do.

use std::time::Duration;

use axum::body::Body;
use axum::http::HeaderMap;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use ctxhost_gateway_wire::error::{ErrorKind, GatewayError};

/// At most this much of an oversized body is read and discarded before the 413 goes out.
const DRAIN_BYTES: u64 = 256 * 1024 * 1024;
/// And for at most this long.
const DRAIN_TIME: Duration = Duration::from_secs(10);

/// The whole body, or `TooLarge` once it is known to be over `limit` bytes (from its declared
/// length or from what arrived).
pub async fn read_limited(
    headers: &HeaderMap,
    body: Body,
    limit: u64,
) -> Result<Bytes, GatewayError> {
    let too_large = || {
        GatewayError::new(
            ErrorKind::TooLarge,
            format!("the request body is over serve.limits.max_request_bytes ({limit} bytes)"),
        )
    };
    let unreadable = |error: axum::Error| {
        GatewayError::new(
            ErrorKind::BadRequest,
            format!("cannot read the request body: {error}"),
        )
    };
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut chunks = body.into_data_stream();
    if declared.is_none_or(|length| length <= limit) {
        let capacity = declared.unwrap_or(0).min(limit);
        let mut collected = BytesMut::with_capacity(usize::try_from(capacity).unwrap_or(0));
        loop {
            match chunks.next().await {
                None => return Ok(collected.freeze()),
                Some(chunk) => {
                    let chunk = chunk.map_err(unreadable)?;
                    if (collected.len() + chunk.len()) as u64 > limit {
                        break;
                    }
                    collected.extend_from_slice(&chunk);
                }
            }
        }
    }
    let drain = async {
        let mut drained = 0u64;
        while let Some(Ok(chunk)) = chunks.next().await {
            drained += chunk.len() as u64;
            if drained > DRAIN_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
    Err(too_large())
}
