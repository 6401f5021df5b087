//! How a message's original JSON is kept: as text when it is small, zstd-compressed (a blob)
//! when that saves at least a tenth. SQLite's own type tells which, so stores written before
//! compression existed read unchanged.

use rusqlite::types::{ToSqlOutput, Value, ValueRef};

use super::StoreError;

/// Shorter JSON stays text: compressing it saves little and costs every read.
const COMPRESS_FROM: usize = 512;
/// zstd's level: fast to write, and most of the gain of higher levels on chat text.
const LEVEL: i32 = 3;

/// The column value for `json`.
pub fn encode(json: &str) -> ToSqlOutput<'_> {
    if json.len() >= COMPRESS_FROM {
        if let Ok(packed) = zstd::bulk::compress(json.as_bytes(), LEVEL) {
            if packed.len() * 10 <= json.len() * 9 {
                return ToSqlOutput::Owned(Value::Blob(packed));
            }
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
            let bytes = zstd::stream::decode_all(packed)
                .map_err(|e| StoreError::Corrupt(format!("compressed message: {e}")))?;
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
