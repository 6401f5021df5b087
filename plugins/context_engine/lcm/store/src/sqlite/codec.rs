//! How a message's original JSON is kept: as text when it is small, zstd-compressed (a blob)
//! when that saves at least a tenth. SQLite's own type tells which, so stores written before
//! compression existed read unchanged.

use std::cell::RefCell;

use rusqlite::types::{ToSqlOutput, Value, ValueRef};

use super::StoreError;

thread_local! {
    // zstd contexts are costly to make (allocations of hundreds of KiB): one of each per
    // thread, reused for every message.
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> =
        RefCell::new(zstd::bulk::Compressor::new(LEVEL).ok());
    // The output buffer, kept: a fresh one per large message costs the kernel zeroing pages.
    static PACKED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        RefCell::new(zstd::bulk::Decompressor::new().ok());
}

/// Shorter JSON stays text: compressing it saves little and costs every read.
const COMPRESS_FROM: usize = 512;
/// Larger than any message is (a damaged frame must not make us allocate what it claims).
const MAX_MESSAGE_BYTES: usize = 1 << 30;
/// zstd's level: the fastest to write; chat text compresses well at any level.
const LEVEL: i32 = 1;

/// The column value for `json`.
pub fn encode(json: &str) -> ToSqlOutput<'_> {
    if json.len() >= COMPRESS_FROM {
        let packed = COMPRESSOR.with_borrow_mut(|compressor| {
            let compressor = compressor.as_mut()?;
            PACKED.with_borrow_mut(|buffer| {
                buffer.clear();
                buffer.reserve(zstd::zstd_safe::compress_bound(json.len()));
                let written = compressor
                    .compress_to_buffer(json.as_bytes(), buffer)
                    .ok()?;
                // Worth keeping only when it saves a tenth.
                (written * 10 <= json.len() * 9).then(|| buffer[..written].to_vec())
            })
        });
        if let Some(packed) = packed {
            return ToSqlOutput::Owned(Value::Blob(packed));
        }
    }
    ToSqlOutput::Borrowed(ValueRef::Text(json.as_bytes()))
}

/// The JSON back from the column value.
pub fn decode(value: ValueRef<'_>) -> Result<String, StoreError> {
    match value {
        ValueRef::Text(bytes) => String::from_utf8(bytes.to_vec())
            .map_err(|e| StoreError::Corrupt(format!("message JSON is not UTF-8: {e}"))),
        ValueRef::Blob(packed) => {
            let corrupt =
                |e: &dyn std::fmt::Display| StoreError::Corrupt(format!("compressed message: {e}"));
            // Frames written here record their size; a frame that does not is refused.
            let size = zstd::zstd_safe::get_frame_content_size(packed)
                .map_err(|_| corrupt(&"not a zstd frame"))?
                .ok_or_else(|| corrupt(&"no content size"))?;
            let size = usize::try_from(size)
                .ok()
                .filter(|size| *size <= MAX_MESSAGE_BYTES)
                .ok_or_else(|| corrupt(&format!("claims {size} bytes")))?;
            let bytes = DECOMPRESSOR
                .with_borrow_mut(|decompressor| match decompressor.as_mut() {
                    Some(d) => d.decompress(packed, size),
                    None => zstd::bulk::decompress(packed, size),
                })
                .map_err(|e| corrupt(&e))?;
            String::from_utf8(bytes)
                .map_err(|e| StoreError::Corrupt(format!("message JSON is not UTF-8: {e}")))
        }
        other => Err(StoreError::Corrupt(format!(
            "message JSON has type {:?}",
            other.data_type()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(json: &str) -> (bool, String) {
        let encoded = encode(json);
        let value = match &encoded {
            ToSqlOutput::Borrowed(v) => *v,
            ToSqlOutput::Owned(v) => ValueRef::from(v),
            _ => unreachable!("encode makes text or a blob"),
        };
        (
            matches!(value, ValueRef::Blob(_)),
            decode(value).expect("decodes"),
        )
    }

    #[test]
    fn large_json_is_compressed_and_everything_comes_back_byte_for_byte() {
        let small = r#"{"role":"user","content":"ok"}"#;
        assert_eq!(round_trip(small), (false, small.to_string()));
        let large = format!(
            r#"{{"role":"tool","content":"{}"}}"#,
            "line of output\\n".repeat(200)
        );
        assert_eq!(round_trip(&large), (true, large.clone()));
    }
}
