//! The page's own location: the session socket's URL on the page's
//! origin, and a fresh tab id.

/// `ws://` (or `wss://` on an `https:` page) + the page's host + `path`:
/// the session socket of a host that serves the page itself. Outside a
/// window (a worker) the host is `127.0.0.1`.
pub fn same_origin_socket_url(path: &str) -> String {
    let location = web_sys::window().map(|w| w.location());
    let host = location
        .as_ref()
        .and_then(|l| l.host().ok())
        .unwrap_or_else(|| "127.0.0.1".to_string());
    let scheme = match location.and_then(|l| l.protocol().ok()).as_deref() {
        Some("https:") => "wss",
        _ => "ws",
    };
    format!("{scheme}://{host}{path}")
}

/// A fresh tab id: `tab-` + `crypto.randomUUID()` (a secure context:
/// https or loopback), else `tab-` + 64 random bits from `getrandom`.
pub fn new_tab_id() -> String {
    if let Some(uuid) = web_sys::window()
        .and_then(|w| w.crypto().ok())
        .map(|c| c.random_uuid())
    {
        return format!("tab-{uuid}");
    }
    let mut bytes = [0u8; 8];
    // On wasm32 getrandom uses crypto.getRandomValues; all zeros if even
    // that is missing (the host still refuses a second tab with the id).
    let _ = getrandom::fill(&mut bytes);
    format!("tab-{}", hex::encode(bytes))
}
