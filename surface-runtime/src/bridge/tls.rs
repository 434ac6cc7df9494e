//! [`TlsRoots`]: the root certificates an https transport trusts (cargo
//! feature `rustls`; native only).
//!
//! The feature enables reqwest's own `rustls` feature (rustls on the
//! aws-lc-rs provider). Verification is rustls' webpki verifier over a
//! fixed set of roots: the webpki roots (Mozilla's CA list, compiled in
//! from the `webpki-root-certs` crate: no certificate store of the machine
//! is read) plus the roots a host adds with [`TlsRoots::add_pem`] (a
//! private CA, a self-signed backend). reqwest's platform verifier is never
//! used, so a connection is trusted the same way on every machine.
//!
//! [`HttpOrpcClient::new`](super::http::HttpOrpcClient::new) and
//! [`HttpOrpcClient::client_builder`](super::http::HttpOrpcClient::client_builder)
//! trust [`TlsRoots::webpki`];
//! [`HttpOrpcClient::with_tls`](super::http::HttpOrpcClient::with_tls)
//! takes other roots. A certificate that does not chain to one of the roots
//! (or names another host) fails the call at the handshake, as
//! [`OrpcCallError::Connect`](super::OrpcCallError::Connect): nothing was
//! sent.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

/// The root certificates an https client trusts.
///
/// ```no_run
/// # use surface_runtime::bridge::{http::HttpOrpcClient, tls::TlsRoots, ClientLimits};
/// let pem = std::fs::read("backend-ca.pem")?;
/// // The webpki roots and the backend's own CA.
/// let roots = TlsRoots::webpki().add_pem(&pem)?;
/// let client = HttpOrpcClient::with_tls(
///     "https://backend.internal:3000/rpc",
///     ClientLimits::default(),
///     &roots,
/// )?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct TlsRoots {
    webpki: bool,
    added: Vec<CertificateDer<'static>>,
}

impl Default for TlsRoots {
    /// [`TlsRoots::webpki`].
    fn default() -> Self {
        Self::webpki()
    }
}

/// Why a certificate could not be trusted or an https client not built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The PEM document has no `-----BEGIN CERTIFICATE-----` block (a key
    /// alone, an empty file, DER instead of PEM).
    #[error("the PEM document holds no CERTIFICATE block")]
    NoCertificate,
    /// A PEM block is malformed (bad base64, no END line).
    #[error("the PEM document is malformed: {message}")]
    Pem {
        /// The PEM parser's message.
        message: String,
    },
    /// A CERTIFICATE block is not an X.509 certificate usable as a trust
    /// anchor.
    #[error("the PEM document's certificates cannot be trusted: {message}")]
    Certificate {
        /// rustls' message (through reqwest).
        message: String,
    },
    /// The HTTP client could not be built with these roots.
    #[error("the https client could not be built: {message}")]
    Client {
        /// reqwest's message.
        message: String,
    },
}

impl TlsRoots {
    /// The webpki roots alone (Mozilla's CA list, as compiled into
    /// `webpki-root-certs`): what a public https backend needs.
    pub fn webpki() -> Self {
        Self {
            webpki: true,
            added: Vec::new(),
        }
    }

    /// No root at all: only what [`Self::add_pem`] adds is trusted (a
    /// backend behind a private CA, and nothing else).
    pub fn empty() -> Self {
        Self {
            webpki: false,
            added: Vec::new(),
        }
    }

    /// Adds every certificate of the PEM document `pem` (one or more
    /// `-----BEGIN CERTIFICATE-----` blocks; other blocks such as a private
    /// key are ignored) as a trusted root.
    ///
    /// # Errors
    /// [`TlsError::NoCertificate`] (no certificate block),
    /// [`TlsError::Pem`] (a malformed block), [`TlsError::Certificate`] (a
    /// block that is not a usable X.509 certificate). `self` is consumed
    /// either way: an error leaves nothing half-added to keep.
    pub fn add_pem(mut self, pem: &[u8]) -> Result<Self, TlsError> {
        let mut certs = Vec::new();
        for cert in CertificateDer::pem_slice_iter(pem) {
            certs.push(cert.map_err(|e| TlsError::Pem {
                message: e.to_string(),
            })?);
        }
        if certs.is_empty() {
            return Err(TlsError::NoCertificate);
        }
        // rustls parses trust anchors when a client is built: a trial
        // client with these roots alone reports a bad one now, here.
        reqwest::Client::builder()
            .tls_certs_only(certs.iter().map(der_certificate))
            .build()
            .map_err(|e| TlsError::Certificate {
                message: super::client::error_chain(&e),
            })?;
        self.added.extend(certs);
        Ok(self)
    }

    /// Whether the webpki roots are trusted.
    pub fn includes_webpki(&self) -> bool {
        self.webpki
    }

    /// How many roots [`Self::add_pem`] added.
    pub fn added(&self) -> usize {
        self.added.len()
    }

    /// `builder` trusting exactly these roots (reqwest's `tls_certs_only`:
    /// the webpki verifier, never the platform's). For transports built
    /// on reqwest, such as the page host's backend proxy.
    pub fn configure(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        let webpki = if self.webpki {
            webpki_root_certs::TLS_SERVER_ROOT_CERTS
        } else {
            &[]
        };
        builder.tls_certs_only(webpki.iter().chain(&self.added).map(der_certificate))
    }
}

fn der_certificate(der: &CertificateDer<'_>) -> reqwest::Certificate {
    // With rustls, `from_der` only copies the bytes: it cannot fail.
    reqwest::Certificate::from_der(der).expect("reqwest's rustls backend copies a DER certificate")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pem_without_a_certificate_is_refused() {
        let key =
            b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n";
        assert_eq!(
            TlsRoots::webpki().add_pem(key).unwrap_err(),
            TlsError::NoCertificate
        );
        assert_eq!(
            TlsRoots::empty().add_pem(b"").unwrap_err(),
            TlsError::NoCertificate
        );
    }

    #[test]
    fn a_malformed_block_is_a_pem_error() {
        let bad = b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        let err = TlsRoots::webpki().add_pem(bad).unwrap_err();
        assert!(matches!(err, TlsError::Pem { .. }), "{err:?}");
    }

    #[test]
    fn a_block_that_is_not_a_certificate_is_refused() {
        // Valid base64, not DER.
        let bad = b"-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n";
        let err = TlsRoots::webpki().add_pem(bad).unwrap_err();
        assert!(matches!(err, TlsError::Certificate { .. }), "{err:?}");
    }

    #[test]
    fn webpki_and_empty() {
        assert!(TlsRoots::webpki().includes_webpki());
        assert!(!TlsRoots::empty().includes_webpki());
        assert_eq!(TlsRoots::default().added(), 0);
        assert!(!webpki_root_certs::TLS_SERVER_ROOT_CERTS.is_empty());
    }
}
