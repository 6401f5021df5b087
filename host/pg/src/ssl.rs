//! `sslmode` as libpq reads it, and the TLS connector for each mode.
//!
//! With no root certificate given, libpq encrypts without verifying for `prefer` and
//! `require`, checks the chain for `verify-ca` and the chain and the host name for
//! `verify-full`. The same here, with Mozilla's roots (webpki-roots) as the trusted ones.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// Whether and how a connection uses TLS (`sslmode` in the URL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// TLS when the server insists, not verified. The driver cannot try plain text first, as
    /// libpq does: it asks for TLS and takes plain text when the server has none, which
    /// reaches the same servers.
    Allow,
    /// TLS when the server offers it, not verified (libpq's default).
    #[default]
    Prefer,
    /// TLS always, not verified: encrypted, but open to a man in the middle.
    Require,
    /// TLS always, the server's certificate chain checked against the trusted roots.
    VerifyCa,
    /// As `VerifyCa`, and the certificate names the host connected to.
    VerifyFull,
}

impl SslMode {
    /// Every mode, as `sslmode` spells it.
    pub const ALL: [SslMode; 6] = [
        SslMode::Disable,
        SslMode::Allow,
        SslMode::Prefer,
        SslMode::Require,
        SslMode::VerifyCa,
        SslMode::VerifyFull,
    ];

    /// The name `sslmode` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// What the driver is told: it knows only disable, prefer and require; verification is
    /// the connector's ([`connector`]).
    pub fn driver_mode(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as Driver;
        match self {
            SslMode::Disable => Driver::Disable,
            SslMode::Allow | SslMode::Prefer => Driver::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => Driver::Require,
        }
    }

    /// Whether the server's certificate is checked at all.
    pub fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyFull)
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An `sslmode` libpq does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sslmode `{0}` is not one of disable, allow, prefer, require, verify-ca, verify-full")]
pub struct UnknownSslMode(pub String);

impl FromStr for SslMode {
    type Err = UnknownSslMode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        SslMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text)
            .ok_or_else(|| UnknownSslMode(text.to_string()))
    }
}

/// The TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("TLS setup: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("TLS setup: {0}")]
    Verifier(#[from] rustls::client::VerifierBuilderError),
}

/// The TLS connector both drivers take for `mode` (for `disable` it is never used).
pub fn connector(mode: SslMode) -> Result<MakeRustlsConnect, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = Arc::new(RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    });
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let config = match mode {
        SslMode::Disable | SslMode::Allow | SslMode::Prefer | SslMode::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly { provider }))
            .with_no_client_auth(),
        SslMode::VerifyCa => {
            let chain = WebPkiServerVerifier::builder_with_provider(roots, provider).build()?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly { chain }))
                .with_no_client_auth()
        }
        SslMode::VerifyFull => builder.with_root_certificates(roots).with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

/// Accepts any certificate (libpq's `require` without a root certificate), but still checks
/// that the server holds the key of the certificate it sent.
#[derive(Debug)]
struct EncryptOnly {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The chain checked, the name not (libpq's `verify-ca`). webpki checks the name only after
/// the chain, so a name mismatch means the chain held.
#[derive(Debug)]
struct ChainOnly {
    chain: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.chain.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_libpq_mode_parses_and_prints_back() {
        for mode in SslMode::ALL {
            assert_eq!(mode.as_str().parse::<SslMode>(), Ok(mode));
            assert_eq!(mode.to_string(), mode.as_str());
        }
        assert_eq!(SslMode::default(), SslMode::Prefer);
        let error = "verify_full".parse::<SslMode>().unwrap_err();
        assert!(error.to_string().contains("verify-full"), "{error}");
        assert!(
            "Require".parse::<SslMode>().is_err(),
            "libpq's names are lower case"
        );
    }

    #[test]
    fn the_driver_is_told_whether_tls_is_required() {
        use tokio_postgres::config::SslMode as Driver;
        let told: Vec<Driver> = SslMode::ALL.iter().map(|m| m.driver_mode()).collect();
        assert_eq!(
            told,
            [
                Driver::Disable,
                Driver::Prefer,
                Driver::Prefer,
                Driver::Require,
                Driver::Require,
                Driver::Require
            ]
        );
        let verifying: Vec<SslMode> = SslMode::ALL.into_iter().filter(|m| m.verifies()).collect();
        assert_eq!(verifying, [SslMode::VerifyCa, SslMode::VerifyFull]);
    }

    #[test]
    fn a_connector_is_built_for_every_mode() {
        for mode in SslMode::ALL {
            connector(mode).unwrap_or_else(|e| panic!("{mode}: {e}"));
        }
    }
}
