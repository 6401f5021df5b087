//! Who a client is (its credential, hashed: sessions are scoped by it) and whether it may use
//! the gateway at all (gateway tokens, required off loopback).

use axum::http::HeaderMap;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;

/// The header a client presents a gateway token in.
pub const TOKEN_HEADER: &str = "x-ctxhost-token";

/// A hash of what identifies the client (`Authorization`, else `x-api-key`, and its gateway
/// token): sessions are keyed by it, and it never leaves the gateway. The gateway token counts
/// because, when the gateway holds the upstream key, clients may send no key of their own.
pub fn credential_of(headers: &HeaderMap) -> String {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)
        .or_else(|| headers.get("x-api-key"))
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(b"ctxhost-credential\0");
    hasher.update(value);
    // Only when present, so a client without one keeps the sessions it already has.
    if let Some(token) = headers.get(TOKEN_HEADER) {
        hasher.update(b"\0ctxhost-token\0");
        hasher.update(token.as_bytes());
    }
    hasher.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The gateway tokens clients must present; empty means none are required.
#[derive(Clone, Default)]
pub struct GatewayTokens {
    digests: Vec<[u8; 32]>,
}

impl std::fmt::Debug for GatewayTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GatewayTokens({} configured)", self.digests.len())
    }
}

impl GatewayTokens {
    pub fn new<'a>(tokens: impl IntoIterator<Item = &'a str>) -> Self {
        GatewayTokens {
            digests: tokens
                .into_iter()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(digest)
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// Whether the request carries a valid token: in `x-ctxhost-token`, or as its bearer token
    /// when `bearer_allowed` (the gateway then holds the upstream key, so the client's
    /// `Authorization` is not a provider key). Compared in constant time.
    pub fn admits(&self, headers: &HeaderMap, bearer_allowed: bool) -> bool {
        if self.digests.is_empty() {
            return true;
        }
        let mut presented: Vec<&[u8]> = Vec::new();
        if let Some(token) = headers.get(TOKEN_HEADER) {
            presented.push(token.as_bytes());
        }
        if bearer_allowed {
            if let Some(token) = headers
                .get(axum::http::header::AUTHORIZATION)
                .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            {
                presented.push(token);
            }
        }
        let mut admitted = subtle::Choice::from(0);
        for token in presented {
            let candidate = digest_bytes(token);
            for known in &self.digests {
                admitted |= candidate.ct_eq(known);
            }
        }
        admitted.into()
    }
}

fn digest(token: &str) -> [u8; 32] {
    digest_bytes(token.as_bytes())
}

fn digest_bytes(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn credentials_differ_and_never_show_the_key() {
        let a = credential_of(&headers(&[("authorization", "Bearer sk-a")]));
        let b = credential_of(&headers(&[("authorization", "Bearer sk-b")]));
        assert_ne!(a, b);
        assert!(!a.contains("sk-a"));
        assert_eq!(
            a,
            credential_of(&headers(&[("authorization", "Bearer sk-a")]))
        );
    }

    #[test]
    fn a_gateway_token_tells_clients_apart() {
        let t1 = credential_of(&headers(&[(TOKEN_HEADER, "t1")]));
        let t2 = credential_of(&headers(&[(TOKEN_HEADER, "t2")]));
        assert_ne!(t1, t2);
        assert_ne!(t1, credential_of(&HeaderMap::new()));
        let keyed = |token| {
            credential_of(&headers(&[
                ("authorization", "Bearer sk-a"),
                (TOKEN_HEADER, token),
            ]))
        };
        assert_ne!(keyed("t1"), keyed("t2"));
    }

    #[test]
    fn tokens_are_checked() {
        let tokens = GatewayTokens::new(["t1", " t2 "]);
        assert!(tokens.admits(&headers(&[(TOKEN_HEADER, "t2")]), false));
        assert!(!tokens.admits(&headers(&[(TOKEN_HEADER, "t3")]), false));
        assert!(!tokens.admits(&headers(&[("authorization", "Bearer t1")]), false));
        assert!(tokens.admits(&headers(&[("authorization", "Bearer t1")]), true));
        assert!(GatewayTokens::default().admits(&HeaderMap::new(), false));
    }
}
