//! Peak memory of a call whose server streams a 1 GiB JSON string: the
//! client reads at most the response cap (8 MiB by default) and the
//! process's peak resident set (`VmHWM` in `/proc/self/status`) stays near
//! it. One test in its own binary, so the peak is this test's alone.
//! Linux only (elsewhere the test only checks the error).
//!
//! `cargo test --test response_memory -- --nocapture` prints the figures.

use std::sync::Arc;

use serde_json::json;
use surface_runtime::bridge::{create_orpc_agent_bridge, HttpOrpcClient, OrpcAgentBridgeOptions};
use surface_runtime::{
    AgentConsumer, AgentManifest, Cancellation, ErrorCode, ExecuteRequest, ProcedureCallInfo,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const GIB: u64 = 1 << 30;

/// `VmRSS` and `VmHWM` of this process, in KiB.
fn memory_kib() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status.lines().find_map(|l| {
            l.strip_prefix(name)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse::<u64>()
                .ok()
        })
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Serves one call: a chunked `{"json":"AAAA…"}` of `total` bytes,
/// generated chunk by chunk (the server holds 64 KiB at a time). Returns
/// how many body bytes it could write before the client hung up.
async fn serve_string(listener: TcpListener, total: u64) -> u64 {
    let (mut socket, _) = listener.accept().await.unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let mut raw = Vec::new();
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = socket.read(&mut buf).await.unwrap();
        assert!(n > 0, "the client sent no request");
        raw.extend_from_slice(&buf[..n]);
    }
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    if socket.write_all(head).await.is_err()
        || socket.write_all(b"9\r\n{\"json\":\"\r\n").await.is_err()
    {
        return 0;
    }
    let mut chunk = format!("{:x}\r\n", buf.len()).into_bytes();
    chunk.extend(std::iter::repeat_n(b'A', buf.len()));
    chunk.extend_from_slice(b"\r\n");
    let mut written = 0;
    while written < total {
        if socket.write_all(&chunk).await.is_err() {
            return written;
        }
        written += buf.len() as u64;
    }
    let _ = socket.write_all(b"2\r\n\"}\r\n0\r\n\r\n").await;
    written
}

#[tokio::test]
async fn response_body_over_cap_keeps_peak_memory_near_the_cap() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/rpc", listener.local_addr().unwrap());
    let server = tokio::spawn(serve_string(listener, GIB));
    let manifest = AgentManifest::from_json_str(
        r#"{"tools": {"devices.list": {"description": "List", "inputSchema": {"type": "object"}, "effect": "server-query"}}}"#,
    )
    .unwrap();
    let bridge = create_orpc_agent_bridge(OrpcAgentBridgeOptions::new(
        Arc::new(HttpOrpcClient::new(base)),
        manifest,
    ));
    let before = memory_kib();
    let result = bridge
        .executor
        .execute(ExecuteRequest {
            path: "devices.list".into(),
            capability_id: "domain:devices.list".into(),
            contract_digest: None,
            input: json!({}),
            info: ProcedureCallInfo {
                invocation_id: "inv-1".into(),
                consumer: AgentConsumer::embedded("user-1"),
                cancellation: Cancellation::new(),
                confirmation: None,
            },
        })
        .await;
    let after = memory_kib();
    let written = server.await.unwrap();
    let growth_mib = match (before, after) {
        (Some((rss_before, hwm_before)), Some((_, hwm_after))) => {
            let growth = hwm_after.saturating_sub(rss_before) / 1024;
            eprintln!(
                "1 GiB body: RSS before {} MiB, peak before {} MiB, peak after {} MiB (+{growth} MiB over the RSS before the call); the server wrote {} MiB before the client hung up",
                rss_before / 1024,
                hwm_before / 1024,
                hwm_after / 1024,
                written >> 20
            );
            Some(growth)
        }
        _ => None,
    };
    let err = match result {
        Ok(output) => panic!(
            "a 1 GiB body was accepted (an output string of {} bytes)",
            output.as_str().map_or(0, str::len)
        ),
        Err(err) => err,
    };
    assert_eq!(err.code, ErrorCode::ExecutionFailed);
    assert_eq!(
        err.internal.as_ref().unwrap()["kind"],
        "response-too-large",
        "{:?}",
        err.internal
    );
    assert!(written < GIB, "the client read the whole body");
    if let Some(growth_mib) = growth_mib {
        assert!(
            growth_mib < 48,
            "peak memory grew by {growth_mib} MiB for an 8 MiB cap"
        );
    }
}
