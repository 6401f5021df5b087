//! Content hashes and summary ids.

use sha2::{Digest, Sha256};

/// Hash of a message's stored JSON: how a re-sent message is recognised as already stored.
pub fn message_hash(json: &str) -> String {
    hex(&Sha256::digest(json.as_bytes())[..16])
}

/// `sum_<16 hex>`, derived from what the summary covers, so the same sources in the same
/// conversation always get the same id (and two different summaries never share one).
pub fn summary_id(conversation: i64, kind: &str, sources: &[String]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(conversation.to_le_bytes());
    hasher.update(kind.as_bytes());
    for source in sources {
        hasher.update([0u8]);
        hasher.update(source.as_bytes());
    }
    format!("sum_{}", hex(&hasher.finalize()[..8]))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[(byte >> 4) as usize] as char);
        out.push(DIGITS[(byte & 15) as usize] as char);
    }
    out
}

/// Whether `text` has the shape of a summary id.
pub fn is_summary_id(text: &str) -> bool {
    text.strip_prefix("sum_")
        .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_ids_have_the_documented_shape() {
        let id = summary_id(1, "leaf", &["1".into(), "2".into()]);
        assert!(is_summary_id(&id), "{id}");
        assert_ne!(id, summary_id(1, "leaf", &["12".into()]));
        assert_ne!(id, summary_id(2, "leaf", &["1".into(), "2".into()]));
        assert_eq!(message_hash("x").len(), 32);
    }
}
