//! Requests in flight, so that one request delivered twice runs once
//! (docs/agents.md, "The MCP server"): a legacy-session request whose
//! JSON-RPC id is already in flight in its session, and a 2026-07-28
//! (stateless) request whose id and body the same token's run already has
//! in flight, are refused at once with JSON-RPC `-32600` (HTTP 409). The
//! mark lives in the memory of the replica serving the request and ends
//! with the request's response body (answered, or dropped with the
//! client's connection). A `tools/call` is also claimed in the store
//! ([`StoreClaim`]), so a copy that reached another replica is refused
//! there too; in a legacy session the claim outlives the answer by
//! [`ANSWERED_CALL_WINDOW_MS`] (a retrying proxy's late copy is refused,
//! never run again).

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use surface_store::{McpStore, RequestClaim};

use bytes::Bytes;
use http::{header, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use serde_json::{json, Value};

use super::jsonrpc::INVALID_REQUEST;

type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// The requests in flight on this replica: `(scope, id)` where the scope
/// is `session:<Mcp-Session-Id>` or `run:<run>:<SHA-256 of the body>`.
#[derive(Clone, Default)]
pub(super) struct InFlight(
    Arc<Mutex<HashSet<(String, String)>>>,
    /// Store claims of this replica whose settling (after their answer)
    /// has not reached the store yet, by key.
    Arc<Mutex<HashSet<String>>>,
);

/// Longest wait, when claiming, for this replica's own settling of the same
/// key to reach the store: a client that got its answer and sends the same
/// request again at once is not refused for a claim this replica is
/// releasing.
const SETTLING_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A request's mark; dropping it ends the mark.
pub(super) struct Mark {
    set: InFlight,
    key: (String, String),
}

impl Drop for Mark {
    fn drop(&mut self) {
        self.set.lock().remove(&self.key);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<(String, String)>> {
        lock(&self.0)
    }

    /// Marks the request `body` in flight in `scope`: `Ok(None)` for a
    /// message without an id (a notification or a response: nothing
    /// answers it), `Err` with the id when it is in flight there (answer
    /// [`already_in_flight`]).
    pub(super) fn mark(&self, scope: String, body: &[u8]) -> Result<Option<Mark>, Value> {
        let Some(id) = request_id(body) else {
            return Ok(None);
        };
        let key = (scope, id.to_string());
        if !self.lock().insert(key.clone()) {
            return Err(id);
        }
        Ok(Some(Mark {
            set: self.clone(),
            key,
        }))
    }

    /// How many requests are in flight.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// The `id` of a JSON-RPC request (a message with a `method` and an id).
fn request_id(body: &[u8]) -> Option<Value> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let object = value.as_object()?;
    object.get("method")?;
    match object.get("id")? {
        Value::Null => None,
        id => Some(id.clone()),
    }
}

/// How long a legacy session's `tools/call` stays refused after it was
/// answered: 10 s (JSON-RPC ids are not reused within a session, so a copy
/// arriving after the answer — a retrying proxy, a replay — is one). A
/// stateless (2026-07-28) call is refused only while it runs: SDK clients
/// number their requests from 0 again in each instance, so the same id
/// and body from the same token after an answer may be a new call.
pub const ANSWERED_CALL_WINDOW_MS: i64 = 10_000;

/// A `tools/call`'s claim in the store, seen by every replica; dropping
/// it (the answer ended or the client left) settles it: deleted, or kept
/// answered for `keep_ms` more.
pub(super) struct StoreClaim {
    store: Arc<dyn McpStore>,
    key: String,
    keep_ms: Option<i64>,
    settling: Arc<Mutex<HashSet<String>>>,
}

impl Drop for StoreClaim {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // The row expires by itself.
        };
        let (store, key, keep, settling) = (
            self.store.clone(),
            std::mem::take(&mut self.key),
            self.keep_ms,
            self.settling.clone(),
        );
        lock(&settling).insert(key.clone());
        runtime.spawn(async move {
            let now = super::clock::now_ms();
            if let Err(error) = store
                .settle_request(&key, now, keep.map(|ms| now.saturating_add(ms)))
                .await
            {
                tracing::warn!(error = ?error, "MCP: a request's claim is not settled; it expires");
            }
            lock(&settling).remove(&key);
        });
    }
}

/// Why a request was refused before it ran.
pub(super) enum Duplicate {
    /// The same request is being served (here or on another replica).
    InFlight(Value),
    /// The same stateless request was answered moments ago.
    Answered(Value),
}

impl Duplicate {
    /// HTTP 409 with the JSON-RPC error `-32600`.
    pub(super) fn response(&self) -> HttpResponse {
        match self {
            Duplicate::InFlight(id) => already_in_flight(id),
            Duplicate::Answered(id) => refusal(
                id,
                "request already answered: this request id was answered moments ago and is not run again; send a new request with a new id",
            ),
        }
    }
}

/// Claims the `tools/call` `body` of `scope` in `store` until
/// `expires_at_ms` (a call lasts less); a legacy session's (`in_session`)
/// stays claimed for [`ANSWERED_CALL_WINDOW_MS`] after its answer. `Ok(None)` for any
/// other message, and when the store cannot be written (this replica's
/// own mark still holds; logged).
pub(super) async fn claim_call(
    in_flight: &InFlight,
    store: &Arc<dyn McpStore>,
    scope: &str,
    body: &[u8],
    in_session: bool,
    expires_in_ms: i64,
) -> Result<Option<StoreClaim>, Duplicate> {
    let Some(id) = call_id(body) else {
        return Ok(None);
    };
    let key = hex::encode(surface_runtime::hash::sha256(
        format!("{scope}\n{id}").as_bytes(),
    ));
    let waited = tokio::time::Instant::now();
    while lock(&in_flight.1).contains(&key) && waited.elapsed() < SETTLING_WAIT {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let now = super::clock::now_ms();
    match store
        .claim_request(&key, now, now.saturating_add(expires_in_ms))
        .await
    {
        Ok(RequestClaim::Claimed) => Ok(Some(StoreClaim {
            store: store.clone(),
            key,
            keep_ms: in_session.then_some(ANSWERED_CALL_WINDOW_MS),
            settling: in_flight.1.clone(),
        })),
        Ok(RequestClaim::InFlight) => Err(Duplicate::InFlight(id)),
        Ok(RequestClaim::Answered) => Err(Duplicate::Answered(id)),
        Err(error) => {
            tracing::warn!(error = ?error, "MCP: a call's claim cannot be written; served on this replica's mark");
            Ok(None)
        }
    }
}

/// The id of a `tools/call` request.
fn call_id(body: &[u8]) -> Option<Value> {
    let value: Value = serde_json::from_slice(body).ok()?;
    (value.get("method")?.as_str()? == "tools/call").then_some(())?;
    match value.get("id")? {
        Value::Null => None,
        id => Some(id.clone()),
    }
}

/// HTTP 409 with the JSON-RPC error `-32600` naming the request's id.
pub(super) fn already_in_flight(id: &Value) -> HttpResponse {
    refusal(
        id,
        "request id already in flight: this request is being served; wait for its answer (a new request needs a new id)",
    )
}

/// HTTP 409 with the JSON-RPC error `-32600`, `message`, naming `id`.
fn refusal(id: &Value, message: &str) -> HttpResponse {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": INVALID_REQUEST,
            "message": message,
        },
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = StatusCode::CONFLICT;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// `response` whose body holds `mark` (and the call's store claim) until
/// it ends or is dropped.
pub(super) fn held_until_answered(
    response: HttpResponse,
    mark: Option<Mark>,
    claim: Option<StoreClaim>,
) -> HttpResponse {
    if mark.is_none() && claim.is_none() {
        return response;
    }
    let mark = (mark, claim);
    response.map(|body| {
        body.map_frame(move |frame| {
            let _held = &mark;
            frame
        })
        .boxed()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_refused_while_its_request_is_in_flight_in_its_scope() {
        let set = InFlight::default();
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#;
        let first = set.mark("session:s".into(), call).unwrap();
        assert!(first.is_some());
        let refused = set.mark("session:s".into(), call).err().unwrap();
        assert_eq!(refused, json!(7));
        assert_eq!(already_in_flight(&refused).status(), StatusCode::CONFLICT);
        let other = set.mark("session:t".into(), call).unwrap();
        assert!(other.is_some(), "another session's id 7 is its own");
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(set.mark("session:s".into(), note).unwrap().is_none());
        assert_eq!(set.len(), 2);
        drop(first);
        drop(other);
        assert_eq!(set.len(), 0);
        assert!(set.mark("session:s".into(), call).unwrap().is_some());
    }
}
