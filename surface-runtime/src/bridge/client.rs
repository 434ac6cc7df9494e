//! The oRPC client seam and the RPC wire codec (`docs/bridges.md`).
//!
//! [`OrpcClient`] is what both bridges call: one oRPC procedure by dotted
//! router path, with optional input and per-call [`CallOptions`]. Any
//! transport can implement it (the `http` feature ships
//! [`crate::bridge::http::HttpOrpcClient`]; a browser app can wrap `fetch`);
//! the functions of this module do the transport-independent part of oRPC's
//! RPC protocol so every transport speaks it the same way:
//!
//! * [`rpc_url`] / [`rpc_get_url`] — `devices.disable` →
//!   `{base}/devices/disable` (each segment percent-encoded like
//!   `encodeURIComponent`), GET input as `?data=<{"json":…}>`;
//! * [`encode_request_body`] — `{"json": input}`, or `{}` when the input is
//!   absent;
//! * [`decode_response`] — a success envelope `{"json", "meta"}` into plain
//!   JSON, an error envelope into [`OrpcError`], anything else into
//!   [`OrpcCallError::UnexpectedResponse`].
//!
//! # Absent optional fields
//!
//! The codec sends the input JSON exactly as given and never adds or strips
//! `null`s: an absent optional field is a missing key (oRPC rejects `null`
//! for a zod `.optional()` field with 400), while `null` stays `null` for
//! nullable fields. Generated input types skip `None` fields when
//! serializing; agent JSON is validated against the manifest schema (which
//! rejects `null` for a non-nullable optional field) before it gets here.
//!
//! # `meta` decoding
//!
//! oRPC writes values JSON cannot carry as a stand-in in `json` plus a
//! `meta` entry `[typeCode, ...path]`. [`decode_payload`] turns them into
//! the following plain JSON, chosen so a decoded value is valid against the
//! JSON Schema oRPC's converter publishes for the same zod type (BigInt as a
//! numeric string, Date as a `date-time` string, Set and Map as arrays):
//!
//! | code | JS type | decoded JSON |
//! |---|---|---|
//! | 0 | BigInt | decimal string, unchanged (`"12345678901234567890"`): lossless, no `f64` rounding |
//! | 1 | Date | ISO-8601 string, unchanged (`"2026-01-02T03:04:05.000Z"`); `null` for an invalid date |
//! | 2 | NaN | `null` |
//! | 3 | undefined | object property: the key is **removed** (undefined = absent); array item: `null` |
//! | 4 | URL | the URL string, unchanged |
//! | 5 | RegExp | `"/pattern/flags"`, unchanged |
//! | 6 | Set | array of the items, unchanged |
//! | 7 | Map | array of `[key, value]` pairs, unchanged (keys may be any JSON value, so never an object) |
//!
//! Unknown codes and paths that do not resolve are ignored (as oRPC's own
//! deserializer does); the typed list is available from [`parse_meta`].

use std::fmt;
use std::sync::Arc;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::cancellation::Cancellation;
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

/// HTTP header pairs `(name, value)`, in sending order. Names are
/// case-insensitive on the wire.
pub type Headers = Vec<(String, String)>;

/// HTTP method of one call. oRPC routes every RPC procedure on POST; GET is
/// accepted only for procedures declared `route({ method: 'GET' })` and
/// carries the input in `?data=`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CallMethod {
    /// `POST {base}/{segments}` with a JSON body (always works).
    #[default]
    Post,
    /// `GET {base}/{segments}?data=…`; transports fall back to POST when the
    /// URL would exceed [`MAX_GET_URL_LENGTH`], as oRPC's `RPCLink` does.
    Get,
}

/// Longest GET URL, in bytes, before a transport falls back to POST (the
/// `maxUrlLength` default of oRPC's `RPCLink`).
pub const MAX_GET_URL_LENGTH: usize = 2083;

/// Per-call options of [`OrpcClient::call`].
#[derive(Clone, Debug, Default)]
pub struct CallOptions {
    /// Extra request headers (for example `x-agent-invocation-id` from the
    /// bridge's `call_context`), sent after the client's own headers.
    pub headers: Headers,
    /// HTTP method; POST unless the procedure is declared GET.
    pub method: CallMethod,
    /// When fired, the transport stops waiting and returns
    /// [`OrpcCallError::Cancelled`]; a request already sent may still take
    /// effect on the server.
    pub cancellation: Option<Cancellation>,
}

/// An oRPC client: calls one procedure of a router by its dotted path
/// (`"devices.disable"`) and returns the decoded output (`null` for a void
/// output).
///
/// The future is `Send` on native targets and not on `wasm32`
/// ([`crate::sync`]), so browser transports can implement it.
pub trait OrpcClient: MaybeSend + MaybeSync {
    /// Calls the procedure at `path` with `input` (`None` sends no `json`
    /// field, oRPC's `undefined` input).
    ///
    /// # Errors
    /// [`OrpcCallError`]: an oRPC error body, a non-oRPC response, a
    /// transport failure before or after sending, or cancellation.
    fn call<'a>(
        &'a self,
        path: &'a str,
        input: Option<Value>,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<Value, OrpcCallError>>;
}

/// `Arc<C>` and `Box<C>` are clients when `C` is.
macro_rules! forward_orpc_client {
    ($($pointer:ident),*) => {$(
        impl<T: OrpcClient + ?Sized> OrpcClient for $pointer<T> {
            fn call<'a>(
                &'a self,
                path: &'a str,
                input: Option<Value>,
                options: CallOptions,
            ) -> BoxFuture<'a, Result<Value, OrpcCallError>> {
                (**self).call(path, input, options)
            }
        }
    )*};
}

forward_orpc_client!(Arc, Box);

/// An error an oRPC server returned: the body
/// `{"json": {"defined", "code", "status", "message", "data"?}}`
/// Classify by [`OrpcError::code`], not by the
/// status alone.
///
/// `message` is server text: it goes to logs and audit, never to the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("oRPC error {code} (HTTP {status}): {message}")]
pub struct OrpcError {
    /// `true` only for errors the procedure declared with `.errors({...})`.
    pub defined: bool,
    /// The error code (`UNAUTHORIZED`, `BAD_REQUEST`, `NOT_FOUND`, a custom
    /// code such as `APPROVAL_REQUIRED`).
    pub code: String,
    /// The HTTP status the server chose for it (400–599).
    pub status: u16,
    /// The server's message (validation: `Input validation failed`; a plain
    /// thrown `Error`: `Internal server error`).
    pub message: String,
    /// Structured data (`issues[]` for validation, `approvalId`, …), with
    /// `meta` stand-ins decoded like a success payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// Why [`OrpcClient::call`] failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum OrpcCallError {
    /// The server answered with an oRPC error body.
    #[error(transparent)]
    Orpc(OrpcError),
    /// The server answered, but not in oRPC's format: an unmatched path
    /// (the host server's `404 text/plain`), a proxy's HTML page, or a
    /// malformed envelope. `body` holds at most [`BODY_EXCERPT_CHARS`]
    /// characters of the body.
    #[error("unexpected response (HTTP {status}): {reason}")]
    UnexpectedResponse {
        /// HTTP status.
        status: u16,
        /// The `content-type` header, if any.
        content_type: Option<String>,
        /// Beginning of the body (lossy UTF-8).
        body: String,
        /// What was wrong with it.
        reason: UnexpectedReason,
    },
    /// The connection could not be established; the request was **not**
    /// sent, so the procedure did not run.
    #[error("could not connect to the oRPC server: {message}")]
    Connect {
        /// Transport description (audit only).
        message: String,
    },
    /// The request may have been sent but no complete response arrived
    /// (connection reset, timeout, truncated body): the procedure may have
    /// run.
    #[error("the oRPC response was lost after the request was sent: {message}")]
    Transport {
        /// Transport description (audit only).
        message: String,
    },
    /// The server answered with a redirect (any 3xx status), which is never
    /// followed: following one would hand the request body and the
    /// credentials to another URL and repeat a mutation. The request was
    /// sent, so the procedure may have run (a 303 after a POST says it
    /// did).
    #[error("the oRPC server answered HTTP {status} (a redirect), which is never followed")]
    Redirect {
        /// HTTP status (300–399).
        status: u16,
        /// The `location` header (at most [`BODY_EXCERPT_CHARS`]
        /// characters), or the URL a custom client already followed the
        /// redirect to; audit only.
        location: Option<String>,
    },
    /// The response body is larger than the transport's
    /// [`crate::bridge::ClientLimits::max_response_bytes`]; reading stopped
    /// at the cap (or before the first byte, for a `Content-Length` over
    /// it).
    #[error("the oRPC response (HTTP {status}) exceeds the limit of {limit} bytes")]
    ResponseTooLarge {
        /// HTTP status.
        status: u16,
        /// The cap, in bytes.
        limit: usize,
        /// The `Content-Length` the server declared, if any.
        declared_length: Option<u64>,
    },
    /// No complete response within the transport's total timeout
    /// ([`crate::bridge::ClientLimits::timeout`]: connect, send, head and
    /// body): the request may have been sent and may have taken effect.
    #[error("no complete oRPC response within {timeout:?}")]
    Timeout {
        /// The timeout that elapsed.
        timeout: std::time::Duration,
    },
    /// [`CallOptions::cancellation`] fired; a request already sent may
    /// still take effect.
    #[error("the oRPC call was cancelled")]
    Cancelled,
    /// The request could not be built (an empty path segment, an invalid
    /// header); nothing was sent.
    #[error("invalid oRPC request: {message}")]
    InvalidRequest {
        /// What was wrong.
        message: String,
    },
}

/// How many characters of a non-oRPC body [`OrpcCallError::UnexpectedResponse`]
/// keeps.
pub const BODY_EXCERPT_CHARS: usize = 2048;

impl OrpcCallError {
    /// The oRPC error code, when the server answered with an oRPC error.
    pub fn orpc_code(&self) -> Option<&str> {
        match self {
            OrpcCallError::Orpc(e) => Some(&e.code),
            _ => None,
        }
    }

    /// Whether the server may have run the procedure although no usable
    /// answer came back: a transport failure or timeout after sending, a
    /// cancellation, a redirect, a 5xx error (an oRPC body or not), or a 2xx
    /// body that is not an oRPC envelope or is over the size limit. `false`
    /// for definitive refusals (4xx) and for failures before sending.
    pub fn may_have_executed(&self) -> bool {
        match self {
            OrpcCallError::Transport { .. }
            | OrpcCallError::Timeout { .. }
            | OrpcCallError::Redirect { .. }
            | OrpcCallError::Cancelled => true,
            OrpcCallError::Orpc(e) => e.status >= 500,
            OrpcCallError::UnexpectedResponse { status, .. }
            | OrpcCallError::ResponseTooLarge { status, .. } => *status >= 500 || *status < 400,
            OrpcCallError::Connect { .. } | OrpcCallError::InvalidRequest { .. } => false,
        }
    }

    /// The full error as JSON, for audit records and logs only (it contains
    /// server and transport text): `{"kind": "orpc", "defined", "code",
    /// "status", "message", "data"?}`, `{"kind": "unexpected-response",
    /// "status", "contentType", "body", "reason"}`, `{"kind": "redirect",
    /// "status", "location"}`, `{"kind": "response-too-large", "status",
    /// "limitBytes", "declaredLength"}`, `{"kind": "timeout", "timeoutMs"}`,
    /// `{"kind": "connect" | "transport" | "invalid-request", "message"}` or
    /// `{"kind": "cancelled"}`.
    pub fn to_internal(&self) -> Value {
        match self {
            OrpcCallError::Orpc(e) => {
                let mut v = json!({
                    "kind": "orpc",
                    "defined": e.defined,
                    "code": e.code,
                    "status": e.status,
                    "message": e.message,
                });
                if let Some(data) = &e.data {
                    v["data"] = data.clone();
                }
                v
            }
            OrpcCallError::UnexpectedResponse {
                status,
                content_type,
                body,
                reason,
            } => json!({
                "kind": "unexpected-response",
                "status": status,
                "contentType": content_type,
                "body": body,
                "reason": reason.to_string(),
            }),
            OrpcCallError::Connect { message } => json!({"kind": "connect", "message": message}),
            OrpcCallError::Transport { message } => {
                json!({"kind": "transport", "message": message})
            }
            OrpcCallError::Redirect { status, location } => {
                json!({"kind": "redirect", "status": status, "location": location})
            }
            OrpcCallError::ResponseTooLarge {
                status,
                limit,
                declared_length,
            } => json!({
                "kind": "response-too-large",
                "status": status,
                "limitBytes": limit,
                "declaredLength": declared_length,
            }),
            OrpcCallError::Timeout { timeout } => {
                json!({"kind": "timeout", "timeoutMs": duration_ms(*timeout)})
            }
            OrpcCallError::Cancelled => json!({"kind": "cancelled"}),
            OrpcCallError::InvalidRequest { message } => {
                json!({"kind": "invalid-request", "message": message})
            }
        }
    }
}

/// `encodeURIComponent`'s set: everything but `A–Z a–z 0–9 - _ . ! ~ * ' ( )`.
const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// The URL path of a procedure relative to the handler prefix:
/// `"devices.disable"` → `"devices/disable"`, each segment percent-encoded
/// like `encodeURIComponent` (oRPC does not match `/rpc/devices.disable`).
///
/// # Errors
/// [`OrpcCallError::InvalidRequest`] when the path is empty or has an empty
/// segment.
pub fn encode_rpc_path(path: &str) -> Result<String, OrpcCallError> {
    let mut out = String::with_capacity(path.len());
    for (i, segment) in path.split('.').enumerate() {
        if segment.is_empty() {
            return Err(OrpcCallError::InvalidRequest {
                message: format!("procedure path `{path}` has an empty segment"),
            });
        }
        if i > 0 {
            out.push('/');
        }
        out.extend(utf8_percent_encode(segment, URI_COMPONENT));
    }
    Ok(out)
}

/// The POST URL of a procedure: `base` (the handler's prefix, e.g.
/// `http://127.0.0.1:3000/rpc`, trailing `/` ignored) + `/` +
/// [`encode_rpc_path`].
///
/// # Errors
/// As [`encode_rpc_path`].
pub fn rpc_url(base: &str, path: &str) -> Result<String, OrpcCallError> {
    Ok(format!(
        "{}/{}",
        base.trim_end_matches('/'),
        encode_rpc_path(path)?
    ))
}

/// The GET URL of a procedure: [`rpc_url`] + `?data=` + the percent-encoded
/// envelope `{"json": input}` (`{}` for no input).
///
/// # Errors
/// As [`encode_rpc_path`].
pub fn rpc_get_url(base: &str, path: &str, input: Option<&Value>) -> Result<String, OrpcCallError> {
    let url = rpc_url(base, path)?;
    let data = encode_request_body(input);
    Ok(format!(
        "{url}?data={}",
        utf8_percent_encode(&data, URI_COMPONENT)
    ))
}

/// The request body of a POST call: `{"json": input}`, or `{}` when `input`
/// is `None` (oRPC's `undefined`). No `meta` is sent: plain JSON has no
/// special values. The input is written as given (see the module docs on
/// absent optional fields).
pub fn encode_request_body(input: Option<&Value>) -> String {
    match input {
        Some(value) => {
            let mut envelope = Map::with_capacity(1);
            envelope.insert("json".into(), value.clone());
            Value::Object(envelope).to_string()
        }
        None => "{}".to_string(),
    }
}

/// One type code of oRPC's `meta`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaType {
    /// 0 — BigInt (decimal string).
    BigInt,
    /// 1 — Date (ISO-8601 string or `null`).
    Date,
    /// 2 — NaN (`null`).
    NaN,
    /// 3 — undefined (`null`).
    Undefined,
    /// 4 — URL (string).
    Url,
    /// 5 — RegExp (`"/pattern/flags"`).
    RegExp,
    /// 6 — Set (array).
    Set,
    /// 7 — Map (array of `[key, value]`).
    Map,
}

impl MetaType {
    /// The type for a wire code, `None` for codes this version does not know.
    pub fn from_code(code: u64) -> Option<Self> {
        Some(match code {
            0 => MetaType::BigInt,
            1 => MetaType::Date,
            2 => MetaType::NaN,
            3 => MetaType::Undefined,
            4 => MetaType::Url,
            5 => MetaType::RegExp,
            6 => MetaType::Set,
            7 => MetaType::Map,
            _ => return None,
        })
    }
}

/// One step of a `meta` path: an object key or an array index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MetaPathItem {
    /// Object property name.
    Key(String),
    /// Array index.
    Index(usize),
}

impl fmt::Display for MetaPathItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaPathItem::Key(k) => write!(f, ".{k}"),
            MetaPathItem::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// One `meta` entry: the special type of the value at `path` inside `json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaEntry {
    /// The type.
    pub kind: MetaType,
    /// Where the stand-in is (empty: the whole payload).
    pub path: Vec<MetaPathItem>,
}

/// Parses a `meta` array into the entries that can apply.
///
/// Entries oRPC's own deserializer would not apply are skipped, never an
/// error: an unknown or non-integer type code, and a path that cannot
/// resolve because an item is neither a string key nor an array index
/// that fits `usize` (a negative, fractional, `1e30` or non-numeric
/// index). Paths that are well-formed but do not match the payload (an
/// index past the end, a key on an array, a path through a scalar) are
/// skipped later by [`apply_meta`]. The work is linear in the size of
/// `meta`.
///
/// # Errors
/// [`PayloadError::MetaNotAnArray`] or [`PayloadError::MetaEntry`] when
/// the structure is not oRPC's: `meta` not an array, or an entry that is
/// not a non-empty array `[code, ...path]`.
pub fn parse_meta(meta: &Value) -> Result<Vec<MetaEntry>, PayloadError> {
    let entries = meta_entries(meta)?;
    let mut out = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let (code, path) = split_meta_entry(index, entry)?;
        let Some(kind) = code.as_u64().and_then(MetaType::from_code) else {
            continue;
        };
        let Some(path) = path.iter().map(meta_path_item).collect::<Option<Vec<_>>>() else {
            continue;
        };
        out.push(MetaEntry { kind, path });
    }
    Ok(out)
}

/// Why an answer is an [`OrpcCallError::UnexpectedResponse`]: what in it
/// is not oRPC's RPC protocol (`docs/bridges.md`, "Errors").
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnexpectedReason {
    /// The body is not JSON (a proxy's HTML page, the host server's
    /// `404 text/plain`, JSON nested past the parser's recursion limit).
    #[error("the body is not JSON: {message}")]
    NotJson {
        /// The JSON parser's message, with line and column.
        message: String,
    },
    /// The JSON is not an oRPC envelope (`{"json": …, "meta": […]}`).
    #[error(transparent)]
    Payload(PayloadError),
    /// A non-2xx answer whose JSON body is not an object.
    #[error("HTTP {status} with a JSON {found} body, not an oRPC error envelope")]
    ErrorBodyNotAnObject {
        /// HTTP status.
        status: u16,
        /// The JSON type found (`"array"`, `"string"`, …).
        found: &'static str,
    },
    /// A non-2xx answer whose envelope has no string `json.code` and
    /// `json.message`.
    #[error("HTTP {status} without an oRPC error envelope (`json.code`, `json.message`)")]
    NoErrorEnvelope {
        /// HTTP status.
        status: u16,
    },
    /// A 2xx answer of the capability gateway without the expected shape.
    #[error("not {expected}: {message}")]
    NotShaped {
        /// What was expected (`"a gateway outcome"`, `"a list of
        /// capability descriptors"`).
        expected: &'static str,
        /// The deserializer's message.
        message: String,
    },
}

/// Why an oRPC envelope is not in oRPC's format ([`decode_payload`],
/// [`parse_meta`]). A transport reports it as
/// [`OrpcCallError::UnexpectedResponse`]: the server (or something in
/// front of it) does not speak oRPC's RPC protocol.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// The envelope is not a JSON object.
    #[error("an oRPC envelope must be an object, found {found}")]
    EnvelopeNotAnObject {
        /// The JSON type found (`"array"`, `"string"`, …).
        found: &'static str,
    },
    /// `meta` is not an array.
    #[error("`meta` must be an array, found {found}")]
    MetaNotAnArray {
        /// The JSON type found.
        found: &'static str,
    },
    /// An entry of `meta` is not a non-empty array `[code, ...path]`.
    #[error("`meta[{index}]` must be a non-empty array")]
    MetaEntry {
        /// The entry's index in `meta`.
        index: usize,
    },
}

fn meta_entries(meta: &Value) -> Result<&Vec<Value>, PayloadError> {
    meta.as_array().ok_or(PayloadError::MetaNotAnArray {
        found: crate::json::type_name(meta),
    })
}

/// The type code and the path of entry `index` of `meta`.
fn split_meta_entry(index: usize, entry: &Value) -> Result<(&Value, &[Value]), PayloadError> {
    entry
        .as_array()
        .and_then(|items| items.split_first())
        .ok_or(PayloadError::MetaEntry { index })
}

/// One path item, `None` when it cannot name a property or an array slot.
fn meta_path_item(item: &Value) -> Option<MetaPathItem> {
    match item {
        Value::String(key) => Some(MetaPathItem::Key(key.clone())),
        Value::Number(n) => meta_index(n).map(MetaPathItem::Index),
        _ => None,
    }
}

/// Applies `meta` to `json` per the table in the module docs: only
/// `undefined` changes the value (removed from objects, `null` in arrays);
/// every other stand-in already is the decoded JSON.
pub fn apply_meta(json: &mut Value, meta: &[MetaEntry]) {
    for entry in meta {
        if entry.kind != MetaType::Undefined {
            continue;
        }
        let Some((last, parents)) = entry.path.split_last() else {
            *json = Value::Null;
            continue;
        };
        let Some(target) = resolve_mut(json, parents) else {
            continue;
        };
        match (last, target) {
            (MetaPathItem::Key(k), Value::Object(map)) => {
                map.remove(k);
            }
            (MetaPathItem::Index(i), Value::Array(items)) => {
                if let Some(slot) = items.get_mut(*i) {
                    *slot = Value::Null;
                }
            }
            _ => {}
        }
    }
}

fn resolve_mut<'v>(mut value: &'v mut Value, path: &[MetaPathItem]) -> Option<&'v mut Value> {
    for item in path {
        value = match (item, value) {
            (MetaPathItem::Key(k), Value::Object(map)) => map.get_mut(k)?,
            (MetaPathItem::Index(i), Value::Array(items)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(value)
}

/// Decodes one oRPC envelope `{"json"?: …, "meta"?: [...]}` into plain
/// JSON: `json` (absent → `null`, oRPC's `undefined`) with `meta` applied.
///
/// # Errors
/// A [`PayloadError`] when `envelope` is not an object or `meta` is
/// malformed.
pub fn decode_payload(envelope: Value) -> Result<Value, PayloadError> {
    let Value::Object(mut map) = envelope else {
        return Err(PayloadError::EnvelopeNotAnObject {
            found: crate::json::type_name(&envelope),
        });
    };
    let mut json = map.remove("json").unwrap_or(Value::Null);
    if let Some(meta) = map.get("meta") {
        apply_meta_entries(&mut json, meta)?;
    }
    Ok(json)
}

/// [`parse_meta`] + [`apply_meta`] in one pass over the borrowed entries:
/// the same errors and the same result, without copying paths (only
/// `undefined` entries are walked).
fn apply_meta_entries(json: &mut Value, meta: &Value) -> Result<(), PayloadError> {
    for (index, entry) in meta_entries(meta)?.iter().enumerate() {
        let (code, path) = split_meta_entry(index, entry)?;
        if code.as_u64().and_then(MetaType::from_code) == Some(MetaType::Undefined) {
            remove_undefined(json, path);
        }
    }
    Ok(())
}

/// Applies one `undefined` entry: removes the property or nulls the array
/// slot at `path`; does nothing when the path does not resolve.
fn remove_undefined(json: &mut Value, path: &[Value]) {
    let Some((last, parents)) = path.split_last() else {
        *json = Value::Null;
        return;
    };
    let mut target = json;
    for item in parents {
        let next = match (item, target) {
            (Value::String(key), Value::Object(map)) => map.get_mut(key),
            (Value::Number(n), Value::Array(items)) => meta_index(n).and_then(|i| items.get_mut(i)),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        target = next;
    }
    match (last, target) {
        (Value::String(key), Value::Object(map)) => {
            map.remove(key);
        }
        (Value::Number(n), Value::Array(items)) => {
            if let Some(slot) = meta_index(n).and_then(|i| items.get_mut(i)) {
                *slot = Value::Null;
            }
        }
        _ => {}
    }
}

/// An array index of a `meta` path, `None` for negative, fractional or
/// too large numbers.
fn meta_index(n: &serde_json::Number) -> Option<usize> {
    n.as_u64().and_then(|n| usize::try_from(n).ok())
}

/// Decodes an HTTP response of an oRPC RPC handler.
///
/// * 2xx with an envelope → `Ok` with the decoded output ([`decode_payload`];
///   a void output `{}` → `null`).
/// * any status with an error envelope
///   `{"json": {"code": str, "status": int, "message": str, …}}` →
///   [`OrpcCallError::Orpc`] (`defined` defaults to `false`, `status` to
///   the HTTP status when missing).
/// * a 3xx status → [`OrpcCallError::Redirect`]: redirects are never
///   followed (a transport that sees the `location` header fills it in).
/// * anything else (not JSON, JSON nested deeper than serde_json's
///   recursion limit of 128, not an envelope, a 404 `text/plain`) →
///   [`OrpcCallError::UnexpectedResponse`] with a body excerpt.
///
/// The work is linear in the size of `body`, and the body is expected to
/// be bounded already ([`crate::bridge::LimitedBody`]).
///
/// # Errors
/// As above.
pub fn decode_response(
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Value, OrpcCallError> {
    if (300..400).contains(&status) {
        return Err(OrpcCallError::Redirect {
            status,
            location: None,
        });
    }
    let unexpected = |reason: UnexpectedReason| OrpcCallError::UnexpectedResponse {
        status,
        content_type: content_type.map(str::to_string),
        body: excerpt(body),
        reason,
    };
    let parsed: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Err(unexpected(UnexpectedReason::NotJson {
                message: e.to_string(),
            }))
        }
    };
    if (200..300).contains(&status) {
        return decode_payload(parsed).map_err(|e| unexpected(UnexpectedReason::Payload(e)));
    }
    let Value::Object(_) = &parsed else {
        return Err(unexpected(UnexpectedReason::ErrorBodyNotAnObject {
            status,
            found: crate::json::type_name(&parsed),
        }));
    };
    let payload = decode_payload(parsed).map_err(|e| unexpected(UnexpectedReason::Payload(e)))?;
    match parse_error_payload(payload, status) {
        Some(error) => Err(OrpcCallError::Orpc(error)),
        None => Err(unexpected(UnexpectedReason::NoErrorEnvelope { status })),
    }
}

fn parse_error_payload(payload: Value, http_status: u16) -> Option<OrpcError> {
    let Value::Object(mut map) = payload else {
        return None;
    };
    let code = match map.remove("code") {
        Some(Value::String(code)) => code,
        _ => return None,
    };
    let message = match map.remove("message") {
        Some(Value::String(message)) => message,
        _ => return None,
    };
    let status = map
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or(http_status);
    let defined = map.get("defined").and_then(Value::as_bool).unwrap_or(false);
    let data = map.remove("data");
    Some(OrpcError {
        defined,
        code,
        status,
        message,
        data,
    })
}

/// At most [`BODY_EXCERPT_CHARS`] characters of `body` (lossy UTF-8), with
/// `…` when cut; looks only at the beginning of the body.
pub(crate) fn excerpt(body: &[u8]) -> String {
    // A character takes at most 4 bytes: this prefix holds enough of them.
    let prefix = &body[..body.len().min(BODY_EXCERPT_CHARS * 4 + 4)];
    let text = String::from_utf8_lossy(prefix);
    match text.char_indices().nth(BODY_EXCERPT_CHARS) {
        Some((idx, _)) => format!("{}…", &text[..idx]),
        None if prefix.len() < body.len() => format!("{text}…"),
        None => text.into_owned(),
    }
}

/// [`excerpt`] of a JSON value's serialization, without serializing more
/// than the excerpt needs.
pub(crate) fn json_excerpt(value: &Value) -> String {
    struct Capped(Vec<u8>);
    impl std::io::Write for Capped {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = (BODY_EXCERPT_CHARS * 4 + 8).saturating_sub(self.0.len());
            if room == 0 {
                return Err(std::io::Error::other("excerpt full"));
            }
            let n = buf.len().min(room);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Capped(Vec::new());
    // A full buffer ends serialization early; what was written is kept.
    let _ = serde_json::to_writer(&mut out, value);
    excerpt(&out.0)
}

/// Milliseconds of a duration, saturating.
pub(crate) fn duration_ms(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `error` and its sources, `: `-joined (a transport's error message).
#[cfg(feature = "http")]
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_path_is_one_url_segment_per_dotted_segment() {
        assert_eq!(
            encode_rpc_path("devices.disable").unwrap(),
            "devices/disable"
        );
        assert_eq!(
            rpc_url("http://h:1/rpc/", "devices.disable").unwrap(),
            "http://h:1/rpc/devices/disable"
        );
        assert_eq!(
            rpc_url("http://h:1/rpc", "a b.c/d.é").unwrap(),
            "http://h:1/rpc/a%20b/c%2Fd/%C3%A9"
        );
        assert_eq!(encode_rpc_path("x-y_z.a~b").unwrap(), "x-y_z/a~b");
        for bad in ["", "a..b", ".a", "a."] {
            assert!(
                matches!(
                    encode_rpc_path(bad),
                    Err(OrpcCallError::InvalidRequest { .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn wire_request_body_wraps_json_and_omits_absent_input() {
        let input = json!({"deviceIds": ["dev-1"]});
        assert_eq!(
            encode_request_body(Some(&input)),
            r#"{"json":{"deviceIds":["dev-1"]}}"#
        );
        assert_eq!(encode_request_body(None), "{}");
        // All-optional objects still need `{"json": {}}`.
        assert_eq!(encode_request_body(Some(&json!({}))), r#"{"json":{}}"#);
        // Absent optional fields stay absent; a nullable field's null stays.
        let input = json!({"deviceIds": ["d"], "note": null});
        let body: Value = serde_json::from_str(&encode_request_body(Some(&input))).unwrap();
        assert_eq!(body, json!({"json": {"deviceIds": ["d"], "note": null}}));
        assert!(!encode_request_body(Some(&json!({"deviceIds": ["d"]}))).contains("reason"));
    }

    #[test]
    fn wire_get_url_carries_percent_encoded_envelope() {
        let url = rpc_get_url(
            "http://h/rpc",
            "devices.list",
            Some(&json!({"status": "active"})),
        )
        .unwrap();
        assert_eq!(
            url,
            "http://h/rpc/devices/list?data=%7B%22json%22%3A%7B%22status%22%3A%22active%22%7D%7D"
        );
        assert_eq!(
            rpc_get_url("http://h/rpc", "devices.list", None).unwrap(),
            "http://h/rpc/devices/list?data=%7B%7D"
        );
    }

    #[test]
    fn wire_success_body_decodes_plain_output() {
        let body = br#"{"json":{"disabled":["dev-1"]}}"#;
        assert_eq!(
            decode_response(200, Some("application/json"), body).unwrap(),
            json!({"disabled": ["dev-1"]})
        );
        // A void output is `{}` → null.
        assert_eq!(decode_response(200, None, b"{}").unwrap(), Value::Null);
        // An explicit null output.
        assert_eq!(
            decode_response(200, None, br#"{"json":null}"#).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn wire_meta_codes_0_to_7_decode_per_table() {
        let body = br#"{"json":{"bytes":"12345678901234567890","lastSeen":"2026-01-02T03:04:05.000Z","bad":null,"ratio":null,"gone":null,"home":"https://example.com/x","re":"/ab+c/gi","tags":["a","b"],"ports":[["eth0",1],["eth1",2]],"list":[1,null,3]},"meta":[[0,"bytes"],[1,"lastSeen"],[1,"bad"],[2,"ratio"],[3,"gone"],[4,"home"],[5,"re"],[6,"tags"],[7,"ports"],[3,"list",1],[99,"tags"]]}"#;
        let out = decode_response(200, Some("application/json"), body).unwrap();
        assert_eq!(
            out,
            json!({
                "bytes": "12345678901234567890",
                "lastSeen": "2026-01-02T03:04:05.000Z",
                "bad": null,
                "ratio": null,
                "home": "https://example.com/x",
                "re": "/ab+c/gi",
                "tags": ["a", "b"],
                "ports": [["eth0", 1], ["eth1", 2]],
                "list": [1, null, 3]
            })
        );
        assert!(out.get("gone").is_none(), "undefined property is absent");
    }

    #[test]
    fn wire_meta_paths_nest_and_tolerate_unresolvable_entries() {
        let mut value = json!({"a": [{"b": null, "c": 1}]});
        let meta =
            parse_meta(&json!([[3, "a", 0, "b"], [3, "x", "y"], [3, "a", 5], [42]])).unwrap();
        assert_eq!(meta.len(), 3, "unknown code 42 skipped");
        assert_eq!(
            meta[0].path,
            vec![
                MetaPathItem::Key("a".into()),
                MetaPathItem::Index(0),
                MetaPathItem::Key("b".into())
            ]
        );
        apply_meta(&mut value, &meta);
        assert_eq!(value, json!({"a": [{"c": 1}]}));
        // A top-level special value (BigInt output).
        assert_eq!(
            decode_response(200, None, br#"{"json":"42","meta":[[0]]}"#).unwrap(),
            json!("42")
        );
        // Top-level undefined → null.
        assert_eq!(
            decode_response(200, None, br#"{"json":null,"meta":[[3]]}"#).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn wire_malformed_meta_structure_is_an_unexpected_response() {
        for body in [
            &br#"{"json":1,"meta":{}}"#[..],
            br#"{"json":1,"meta":"x"}"#,
            br#"{"json":1,"meta":[[]]}"#,
            br#"{"json":1,"meta":[3]}"#,
            br#"{"json":1,"meta":[{"0":3}]}"#,
        ] {
            let err = decode_response(200, None, body).unwrap_err();
            assert!(
                matches!(err, OrpcCallError::UnexpectedResponse { status: 200, .. }),
                "{err:?}"
            );
        }
    }

    /// Defect: `[3, "a", 1e30]` failed the whole response although
    /// unresolvable paths are documented as ignored.
    #[test]
    fn meta_index_1e30_and_other_unresolvable_paths_are_ignored() {
        let payload = r#"{"a":[1,2],"o":{"k":1},"s":"x","n":null}"#;
        for entry in [
            r#"[3,"a",1e30]"#,
            r#"[3,"a",-1]"#,
            r#"[3,"a",1.5]"#,
            r#"[3,"a",1.0]"#,
            r#"[3,"a",18446744073709551615]"#,
            r#"[3,"a",18446744073709551616]"#,
            r#"[3,"a",2]"#,
            r#"[3,"a",true]"#,
            r#"[3,"a",null]"#,
            r#"[3,"a",[0]]"#,
            r#"[3,"a",{"i":0}]"#,
            r#"[3,"a","0"]"#,
            r#"[3,"o",0]"#,
            r#"[3,"s","k"]"#,
            r#"[3,"s",0]"#,
            r#"[3,"n","k"]"#,
            r#"[3,"missing","k"]"#,
            r#"[3,"a",0,"deeper"]"#,
            r#"[-3,"a",0]"#,
            r#"[3.5,"a",0]"#,
            r#"["3","a",0]"#,
            r#"[null,"a",0]"#,
            r#"[1e30,"a",0]"#,
            r#"[99,"a",0]"#,
        ] {
            let body = format!(r#"{{"json":{payload},"meta":[{entry}]}}"#);
            let out = decode_response(200, None, body.as_bytes())
                .unwrap_or_else(|e| panic!("{entry}: {e:?}"));
            assert_eq!(
                out,
                serde_json::from_str::<Value>(payload).unwrap(),
                "{entry}"
            );
        }
        // A path far deeper than any payload (serde_json nests at most 128).
        let deep = format!(r#"[3{}]"#, r#","a""#.repeat(100_000));
        let body = format!(r#"{{"json":{payload},"meta":[{deep},[3,"o","k"]]}}"#);
        assert_eq!(
            decode_response(200, None, body.as_bytes()).unwrap(),
            json!({"a": [1, 2], "o": {}, "s": "x", "n": null})
        );
        // An ignored entry does not hide the valid ones next to it.
        let body = format!(r#"{{"json":{payload},"meta":[[3,"a",1e30],[3,"a",0]]}}"#);
        assert_eq!(
            decode_response(200, None, body.as_bytes()).unwrap()["a"],
            json!([null, 2])
        );
    }

    #[test]
    fn json_nested_past_the_recursion_limit_is_an_unexpected_response() {
        for depth in [129, 10_000, 1_000_000] {
            let body = format!(r#"{{"json":{}{}}}"#, "[".repeat(depth), "]".repeat(depth));
            match decode_response(200, None, body.as_bytes()).unwrap_err() {
                OrpcCallError::UnexpectedResponse {
                    reason: UnexpectedReason::NotJson { message },
                    body,
                    ..
                } => {
                    assert!(message.contains("recursion limit exceeded"), "{message}");
                    assert!(body.chars().count() <= BODY_EXCERPT_CHARS + 1);
                }
                other => panic!("{other:?}"),
            }
        }
        // Within the limit it decodes (126 arrays inside `{"json": …}`).
        let body = format!(r#"{{"json":{}{}}}"#, "[".repeat(126), "]".repeat(126));
        assert!(decode_response(200, None, body.as_bytes()).is_ok());
    }

    #[test]
    fn redirect_status_is_a_redirect_error_whatever_the_body() {
        for status in [300, 301, 302, 303, 304, 307, 308, 399] {
            let err = decode_response(status, None, br#"{"json":{"ok":true}}"#).unwrap_err();
            assert_eq!(
                err,
                OrpcCallError::Redirect {
                    status,
                    location: None
                }
            );
            assert!(err.may_have_executed());
        }
    }

    #[test]
    fn excerpts_look_only_at_the_beginning() {
        let big = vec![b'y'; 50 * 1024 * 1024];
        let cut = excerpt(&big);
        assert_eq!(cut.chars().count(), BODY_EXCERPT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(excerpt(b"short"), "short");
        let value = json!({"s": "z".repeat(1_000_000)});
        let cut = json_excerpt(&value);
        assert!(cut.starts_with(r#"{"s":"zzz"#), "{cut}");
        assert_eq!(cut.chars().count(), BODY_EXCERPT_CHARS + 1);
        assert_eq!(json_excerpt(&json!([1])), "[1]");
    }

    #[test]
    fn wire_validation_error_body_parses() {
        let body = br#"{"json":{"defined":false,"code":"BAD_REQUEST","status":400,"message":"Input validation failed","data":{"issues":[{"code":"too_small","path":["deviceIds"],"message":"Too small: expected array to have >=1 items","minimum":1}]}}}"#;
        let err = decode_response(400, Some("application/json"), body).unwrap_err();
        assert_eq!(
            err,
            OrpcCallError::Orpc(OrpcError {
                defined: false,
                code: "BAD_REQUEST".into(),
                status: 400,
                message: "Input validation failed".into(),
                data: Some(
                    json!({"issues": [{"code": "too_small", "path": ["deviceIds"], "message": "Too small: expected array to have >=1 items", "minimum": 1}]})
                ),
            })
        );
        assert_eq!(err.orpc_code(), Some("BAD_REQUEST"));
        assert!(!err.may_have_executed());
    }

    #[test]
    fn wire_error_kinds_parse_by_code() {
        /// (HTTP status, body, defined, code, body status, message)
        type Case = (u16, &'static [u8], bool, &'static str, u16, &'static str);
        let cases: [Case; 5] = [
            (401, br#"{"json":{"defined":false,"code":"UNAUTHORIZED","status":401,"message":"Unauthorized"}}"#, false, "UNAUTHORIZED", 401, "Unauthorized"),
            (403, br#"{"json":{"defined":false,"code":"FORBIDDEN","status":403,"message":"Forbidden"}}"#, false, "FORBIDDEN", 403, "Forbidden"),
            (500, br#"{"json":{"defined":false,"code":"INTERNAL_SERVER_ERROR","status":500,"message":"Internal server error"}}"#, false, "INTERNAL_SERVER_ERROR", 500, "Internal server error"),
            (429, br#"{"json":{"defined":false,"code":"RATE_LIMITED","status":429,"message":"Slow down"}}"#, false, "RATE_LIMITED", 429, "Slow down"),
            (500, br#"{"json":{"defined":false,"code":"TEAPOT","status":500,"message":"TEAPOT"}}"#, false, "TEAPOT", 500, "TEAPOT"),
        ];
        for (http, body, defined, code, status, message) in cases {
            match decode_response(http, Some("application/json"), body).unwrap_err() {
                OrpcCallError::Orpc(e) => {
                    assert_eq!(
                        (
                            e.defined,
                            e.code.as_str(),
                            e.status,
                            e.message.as_str(),
                            e.data
                        ),
                        (defined, code, status, message, None)
                    );
                }
                other => panic!("{code}: {other:?}"),
            }
        }
        let defined = br#"{"json":{"defined":true,"code":"NOT_FOUND","status":404,"message":"Device not found","data":{"deviceId":"nope"}}}"#;
        let err = decode_response(404, Some("application/json"), defined).unwrap_err();
        let OrpcCallError::Orpc(e) = err else {
            panic!()
        };
        assert!(e.defined);
        assert_eq!(e.data, Some(json!({"deviceId": "nope"})));
        // Missing `defined` / `status`: defaults.
        let sparse = br#"{"json":{"code":"X","message":"m"}}"#;
        let OrpcCallError::Orpc(e) = decode_response(418, None, sparse).unwrap_err() else {
            panic!()
        };
        assert_eq!((e.defined, e.status), (false, 418));
    }

    #[test]
    fn wire_error_data_meta_is_decoded() {
        let body = br#"{"json":{"defined":true,"code":"X","status":409,"message":"m","data":{"at":"2026-01-01T00:00:00.000Z","u":null}},"meta":[[1,"data","at"],[3,"data","u"]]}"#;
        let OrpcCallError::Orpc(e) = decode_response(409, None, body).unwrap_err() else {
            panic!()
        };
        assert_eq!(e.data, Some(json!({"at": "2026-01-01T00:00:00.000Z"})));
    }

    #[test]
    fn wire_non_orpc_bodies_are_unexpected_responses() {
        let err = decode_response(404, Some("text/plain"), b"Not found").unwrap_err();
        match &err {
            OrpcCallError::UnexpectedResponse {
                status,
                content_type,
                body,
                reason,
            } => {
                assert_eq!(*status, 404);
                assert_eq!(content_type.as_deref(), Some("text/plain"));
                assert_eq!(body, "Not found");
                assert!(
                    matches!(reason, UnexpectedReason::NotJson { .. }),
                    "{reason:?}"
                );
                assert!(
                    reason.to_string().starts_with("the body is not JSON: "),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(!err.may_have_executed());
        assert_eq!(err.to_internal()["kind"], "unexpected-response");
        // JSON, but not an error envelope.
        let err = decode_response(502, Some("application/json"), br#"{"error":"bad gateway"}"#)
            .unwrap_err();
        assert!(matches!(
            err,
            OrpcCallError::UnexpectedResponse { status: 502, .. }
        ));
        assert!(err.may_have_executed());
        let err = decode_response(500, None, b"[1]").unwrap_err();
        assert!(matches!(err, OrpcCallError::UnexpectedResponse { .. }));
        // A 200 that is not an envelope.
        let err = decode_response(200, Some("text/html"), b"<html>").unwrap_err();
        assert!(err.may_have_executed());
        // Long bodies are cut.
        let long = vec![b'x'; BODY_EXCERPT_CHARS + 10];
        let OrpcCallError::UnexpectedResponse { body, .. } =
            decode_response(404, None, &long).unwrap_err()
        else {
            panic!()
        };
        assert_eq!(body.chars().count(), BODY_EXCERPT_CHARS + 1);
    }

    #[test]
    fn unexpected_responses_carry_a_typed_reason_per_check() {
        let reason = |status, body: &[u8]| match decode_response(status, None, body) {
            Err(OrpcCallError::UnexpectedResponse { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            reason(502, br#"{"error":"bad gateway"}"#),
            UnexpectedReason::NoErrorEnvelope { status: 502 }
        );
        assert_eq!(
            reason(500, b"[1]"),
            UnexpectedReason::ErrorBodyNotAnObject {
                status: 500,
                found: "array"
            }
        );
        assert_eq!(
            reason(200, b"[1]"),
            UnexpectedReason::Payload(PayloadError::EnvelopeNotAnObject { found: "array" })
        );
        assert_eq!(
            reason(200, br#"{"json":1,"meta":{}}"#),
            UnexpectedReason::Payload(PayloadError::MetaNotAnArray { found: "object" })
        );
        for body in [&b"<html>"[..], b"Not found"] {
            let UnexpectedReason::NotJson { message } = reason(404, body) else {
                panic!("not NotJson")
            };
            assert_eq!(message, "expected value at line 1 column 1");
        }
        // The audit record keeps the reason's message.
        let err = decode_response(502, None, br#"{"error":"bad gateway"}"#).unwrap_err();
        assert_eq!(
            err.to_internal()["reason"],
            "HTTP 502 without an oRPC error envelope (`json.code`, `json.message`)"
        );
    }

    #[test]
    fn internal_record_keeps_full_server_error() {
        let err = OrpcCallError::Orpc(OrpcError {
            defined: true,
            code: "APPROVAL_REQUIRED".into(),
            status: 409,
            message: "needs approval".into(),
            data: Some(json!({"approvalId": "appr-1"})),
        });
        assert_eq!(
            err.to_internal(),
            json!({"kind": "orpc", "defined": true, "code": "APPROVAL_REQUIRED", "status": 409, "message": "needs approval", "data": {"approvalId": "appr-1"}})
        );
        assert_eq!(
            OrpcCallError::Transport {
                message: "reset".into()
            }
            .to_internal(),
            json!({"kind": "transport", "message": "reset"})
        );
    }
}
