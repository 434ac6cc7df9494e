//! https to the real `@orpc/server` peer (`tests/orpc-peer`, started with
//! `--tls-cert`/`--tls-key`) through the facade's `rustls` feature alone:
//! no reqwest in the host's code. The test makes a self-signed certificate
//! for `127.0.0.1` and `localhost` (rcgen), trusts it explicitly with
//! `TlsRoots::add_pem`, and checks that a client without it is refused at
//! the handshake. Needs the features `rustls` and `axum` (the backend
//! proxy): `cargo test -p agent-surface --features rustls,axum --test
//! orpc_tls` (scripts/test runs it).

mod support;

use std::path::PathBuf;

use agent_surface::bridge::{
    CallOptions, ClientLimits, HttpOrpcClient, OrpcCallError, OrpcClient, TlsError, TlsRoots,
};
use agent_surface::web::{ProxyLimits, RpcProxy};
use serde_json::{json, Value};
use support::peer::{Peer, USER_TOKEN};

/// A self-signed certificate and its key, as PEM files in a fresh
/// directory (removed on drop).
struct CertFiles {
    dir: PathBuf,
    cert_pem: String,
}

impl CertFiles {
    fn new(test: &str) -> CertFiles {
        let certified =
            rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".into()])
                .expect("rcgen makes a self-signed certificate");
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "agent-surface-orpc-tls-{test}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let cert_pem = certified.cert.pem();
        std::fs::write(dir.join("cert.pem"), &cert_pem).unwrap();
        std::fs::write(dir.join("key.pem"), certified.signing_key.serialize_pem()).unwrap();
        CertFiles { dir, cert_pem }
    }

    fn start_peer(&self, test: &str) -> Option<Peer> {
        Peer::start_tls(test, &self.dir.join("cert.pem"), &self.dir.join("key.pem"))
    }
}

impl Drop for CertFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The peer's seed devices (tests/orpc-peer/README.md), `devices.list {}`.
fn seed_devices() -> Value {
    json!({"devices": [
        {"id": "dev-1", "name": "Lobby camera", "status": "active"},
        {"id": "dev-2", "name": "Door sensor", "status": "active"},
        {"id": "dev-3", "name": "Old router", "status": "disabled"},
        {"id": "dev-locked", "name": "Core switch", "status": "active"},
    ]})
}

fn list(
    client: &HttpOrpcClient,
) -> impl std::future::Future<Output = Result<Value, OrpcCallError>> + '_ {
    client.call("devices.list", Some(json!({})), CallOptions::default())
}

/// A refused handshake: a `Connect` error (nothing sent) whose message
/// ends in rustls' "invalid peer certificate: <reason>".
fn assert_refused_certificate(err: &OrpcCallError, reason: &str) {
    match err {
        OrpcCallError::Connect { message } => assert!(
            message.ends_with(&format!("invalid peer certificate: {reason}")),
            "{message}"
        ),
        other => panic!("expected a Connect error (handshake refused), got {other:?}"),
    }
    assert!(!err.may_have_executed());
}

#[tokio::test]
async fn a_client_trusting_the_certificate_calls_a_procedure_over_https() {
    let certs = CertFiles::new("trusted");
    let Some(peer) = certs.start_peer("orpc_tls::trusted") else {
        return;
    };
    assert!(peer.rpc_url().starts_with("https://127.0.0.1:"));
    // Only the test's certificate: no public root could vouch for it.
    let roots = TlsRoots::empty()
        .add_pem(certs.cert_pem.as_bytes())
        .expect("rcgen's PEM");
    assert_eq!(roots.added(), 1);
    let client = HttpOrpcClient::with_tls(peer.rpc_url(), ClientLimits::default(), &roots)
        .expect("an https client")
        .with_header("authorization", USER_TOKEN);
    assert_eq!(list(&client).await.unwrap(), seed_devices());
    // The webpki roots plus the test's certificate: trusted too.
    let roots = TlsRoots::webpki()
        .add_pem(certs.cert_pem.as_bytes())
        .unwrap();
    let client = HttpOrpcClient::with_tls(peer.rpc_url(), ClientLimits::default(), &roots)
        .unwrap()
        .with_header("authorization", USER_TOKEN);
    assert_eq!(list(&client).await.unwrap(), seed_devices());
    // The name check holds: `localhost` is in the certificate too.
    let client = HttpOrpcClient::with_tls(
        format!("https://localhost:{}/rpc", peer.port),
        ClientLimits::default(),
        &roots,
    )
    .unwrap()
    .with_header("authorization", USER_TOKEN);
    assert_eq!(list(&client).await.unwrap(), seed_devices());
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_is_refused_at_the_handshake() {
    let certs = CertFiles::new("untrusted");
    let Some(peer) = certs.start_peer("orpc_tls::untrusted") else {
        return;
    };
    // `new`: the webpki roots only.
    let err = list(&HttpOrpcClient::new(peer.rpc_url()).with_header("authorization", USER_TOKEN))
        .await
        .unwrap_err();
    assert_refused_certificate(&err, "UnknownIssuer");
    // Another self-signed certificate is no substitute: same issuer name
    // (rcgen's default), another key.
    let other = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])
        .unwrap()
        .cert
        .pem();
    let roots = TlsRoots::empty().add_pem(other.as_bytes()).unwrap();
    let client = HttpOrpcClient::with_tls(peer.rpc_url(), ClientLimits::default(), &roots).unwrap();
    assert_refused_certificate(&list(&client).await.unwrap_err(), "BadSignature");
    // Plain http to the TLS port: the request goes out in clear, the
    // server closes the connection without an answer.
    let plain = HttpOrpcClient::new(format!("http://127.0.0.1:{}/rpc", peer.port));
    let err = list(&plain).await.unwrap_err();
    assert!(
        matches!(&err, OrpcCallError::Transport { message } if message.contains("connection closed before message completed")),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_limits_hold_over_https() {
    let certs = CertFiles::new("limits");
    let Some(peer) = certs.start_peer("orpc_tls::limits") else {
        return;
    };
    let roots = TlsRoots::empty()
        .add_pem(certs.cert_pem.as_bytes())
        .unwrap();
    let limits = ClientLimits::default().with_max_response_bytes(64);
    let client = HttpOrpcClient::with_tls(peer.rpc_url(), limits, &roots)
        .unwrap()
        .with_header("authorization", USER_TOKEN);
    assert_eq!(client.limits(), &limits);
    let err = list(&client).await.unwrap_err();
    assert!(
        matches!(
            err,
            OrpcCallError::ResponseTooLarge {
                status: 200,
                limit: 64,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_pem_without_a_certificate_is_a_clear_error() {
    let key = rcgen::KeyPair::generate().unwrap().serialize_pem();
    let err = TlsRoots::webpki().add_pem(key.as_bytes()).unwrap_err();
    assert_eq!(err, TlsError::NoCertificate);
    assert_eq!(
        err.to_string(),
        "the PEM document holds no CERTIFICATE block"
    );
}

/// The page host's backend proxy (`web::RpcProxy`) to an https backend.
#[tokio::test]
async fn the_backend_proxy_forwards_over_https() {
    let certs = CertFiles::new("proxy");
    let Some(peer) = certs.start_peer("orpc_tls::proxy") else {
        return;
    };
    let roots = TlsRoots::empty()
        .add_pem(certs.cert_pem.as_bytes())
        .unwrap();
    let request = || {
        axum::http::Request::builder()
            .method("POST")
            .uri("/rpc/devices/list")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(r#"{"json":{}}"#))
            .unwrap()
    };
    let proxy = RpcProxy::with_tls(
        &peer.rpc_url(),
        USER_TOKEN,
        ["devices.list"],
        ProxyLimits::default(),
        &roots,
    )
    .unwrap();
    let response = proxy.forward("devices/list", request()).await;
    assert_eq!(response.status(), 200);
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body, json!({ "json": seed_devices() }));
    // `new` trusts the webpki roots only: the backend is unreachable (502).
    let proxy = RpcProxy::new(
        &peer.rpc_url(),
        USER_TOKEN,
        ["devices.list"],
        ProxyLimits::default(),
    )
    .unwrap();
    let response = proxy.forward("devices/list", request()).await;
    assert_eq!(response.status(), 502);
}
