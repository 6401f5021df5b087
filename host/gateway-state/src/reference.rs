//! The gateway's own reference to a session's view, as it hands it to an agent: the
//! `encrypted_content` of a `compaction` item, or the marker line ending a handoff summary
//! (its form and where an agent keeps it are the agent profiles', `ctxhost-agents`). It
//! names the session and the view's version and is signed (HMAC-SHA256 under the state's
//! secret, bound to the client's credential), so the gateway knows its own; one that does not
//! verify resumes nothing. It carries no conversation text: it only points at what the store holds.
//!
//! Form: `ctxhost.v1.<session name, hex>.<view version>.<tag, hex>`.

use hmac::{KeyInit, Mac};
use hmac_sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

/// What every reference starts with: a text holding it is the gateway's, or unverifiable.
pub const PREFIX: &str = "ctxhost.v1.";

/// A session's view, as a reference names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub session: String,
    pub view_version: u64,
}

/// Why a text in the form of the gateway's reference is not one of this state's for this
/// credential. Not a fault of the request: the key or token it was bound to may have been
/// rotated or refreshed, the store lost or replaced, or a model may have echoed a log; the
/// text is then only text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unverified {
    #[error("it is malformed")]
    Malformed,
    #[error("its signature does not match: it was altered, or made by another ctxhost state or for another credential (a rotated key, a refreshed token, a replaced store)")]
    Signature,
}

/// Signs and checks references with the state's secret.
#[derive(Clone)]
pub struct Signer {
    secret: [u8; 32],
}

impl Signer {
    pub fn new(secret: [u8; 32]) -> Self {
        Signer { secret }
    }

    /// `reference` signed for `credential`.
    pub fn sign(&self, credential: &str, reference: &Reference) -> String {
        let session = hex(reference.session.as_bytes());
        let body = format!("{PREFIX}{session}.{}", reference.view_version);
        let tag = self.tag(credential, &body).finalize().into_bytes();
        format!("{body}.{}", hex(&tag))
    }

    /// The reference `text` holds, if it is one: `Ok(None)` for a text that is not in the
    /// gateway's form at all (a provider's own compaction item), an error for one in its form
    /// that does not verify here.
    pub fn verify(&self, credential: &str, text: &str) -> Result<Option<Reference>, Unverified> {
        let Some(rest) = text.strip_prefix(PREFIX) else {
            return Ok(None);
        };
        let mut parts = rest.split('.');
        let (Some(session), Some(version), Some(tag), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Unverified::Malformed);
        };
        let body = &text[..PREFIX.len() + session.len() + 1 + version.len()];
        let tag = unhex(tag).ok_or(Unverified::Malformed)?;
        self.tag(credential, body)
            .verify_slice(&tag)
            .map_err(|_| Unverified::Signature)?;
        let session = unhex(session)
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or(Unverified::Malformed)?;
        let view_version = version.parse().map_err(|_| Unverified::Malformed)?;
        Ok(Some(Reference {
            session,
            view_version,
        }))
    }

    fn tag(&self, credential: &str, body: &str) -> HmacSha256 {
        let mut mac =
            HmacSha256::new_from_slice(&self.secret).expect("HMAC takes a key of any length");
        mac.update(credential.as_bytes());
        mac.update(&[0]);
        mac.update(body.as_bytes());
        mac
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> Reference {
        Reference {
            session: "codex.run-1".into(),
            view_version: 7,
        }
    }

    #[test]
    fn a_signed_reference_verifies_for_its_credential_only() {
        let signer = Signer::new([3; 32]);
        let text = signer.sign("alice", &reference());
        assert_eq!(signer.verify("alice", &text), Ok(Some(reference())));
        assert!(signer.verify("bob", &text).is_err());
        assert!(Signer::new([4; 32]).verify("alice", &text).is_err());
    }

    #[test]
    fn an_altered_reference_does_not_verify_and_a_foreign_one_is_not_ours() {
        let signer = Signer::new([3; 32]);
        let text = signer.sign("alice", &reference());
        let other = signer.sign(
            "alice",
            &Reference {
                view_version: 8,
                ..reference()
            },
        );
        // Another version with this one's tag.
        let (body, _) = other.rsplit_once('.').unwrap();
        let (_, tag) = text.rsplit_once('.').unwrap();
        assert_eq!(
            signer.verify("alice", &format!("{body}.{tag}")),
            Err(Unverified::Signature)
        );
        assert_eq!(
            signer.verify("alice", "ctxhost.v1.zz"),
            Err(Unverified::Malformed)
        );
        assert_eq!(signer.verify("alice", "gAAAAABo-opaque"), Ok(None));
    }
}
