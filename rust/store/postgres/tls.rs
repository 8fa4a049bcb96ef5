//! TLS to the server with rustls (ring, pure Rust apart from ring's own
//! assembly, no system OpenSSL), in libpq's `sslmode` meanings:
//!
//! | sslmode | TLS | certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (default) | when the server offers it | not checked |
//! | `require` | always | not checked, unless `sslrootcert` is given: then its chain |
//! | `verify-ca` | always | its chain, against `sslrootcert` or the public roots |
//! | `verify-full` | always | its chain and the host name |
//!
//! An unchecked certificate still encrypts, and SCRAM channel binding
//! (which `tokio-postgres` uses when the server offers it) still detects a
//! man in the middle of a password login.

use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::address::TlsMode;

/// The connector for `mode`; `Err` says why it cannot be made.
pub(crate) fn connector(
    mode: TlsMode,
    root_file: Option<&Path>,
) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let checks_chain = matches!(mode, TlsMode::VerifyCa | TlsMode::VerifyFull)
        || (mode == TlsMode::Require && root_file.is_some());
    let verifier: Arc<dyn ServerCertVerifier> = if checks_chain {
        let roots = Arc::new(root_store(root_file)?);
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| format!("cannot use the root certificates: {e}"))?;
        if mode == TlsMode::VerifyFull {
            webpki
        } else {
            Arc::new(ChainOnly(webpki))
        }
    } else {
        Arc::new(Unchecked(provider.clone()))
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

fn root_store(root_file: Option<&Path>) -> Result<RootCertStore, String> {
    let Some(path) = root_file else {
        return Ok(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        });
    };
    let mut roots = RootCertStore::empty();
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read sslrootcert {}: {e}", path.display()))?;
    for certificate in certificates {
        let certificate =
            certificate.map_err(|e| format!("sslrootcert {} is not PEM: {e}", path.display()))?;
        roots.add(certificate).map_err(|e| {
            format!(
                "sslrootcert {} holds a bad certificate: {e}",
                path.display()
            )
        })?;
    }
    if roots.is_empty() {
        return Err(format!(
            "sslrootcert {} holds no certificate",
            path.display()
        ));
    }
    Ok(roots)
}

/// `verify-ca`: the chain must lead to a trusted root; the name may differ.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
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
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer`, and `require` without roots: any certificate, but the
/// handshake's signatures are still checked (the key is the certificate's).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
