//! The first look at a POSTed MCP message, before rmcp sees it: the body
//! read within its bound, and the JSON-RPC framing errors answered as the
//! JSON-RPC 2.0 specification names them (docs/agents.md, "The MCP
//! server").

use std::convert::Infallible;
use std::fmt::Display;

use bytes::{Buf, BufMut, Bytes};
use http::{header, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use serde_json::{json, Value};

/// JSON-RPC "Parse error": the text is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "Invalid Request": JSON, but not one JSON-RPC 2.0 message.
pub const INVALID_REQUEST: i64 = -32600;

/// Why a POST body was refused before reaching the MCP session.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageRefusal {
    /// The body is longer than the server's bound (HTTP 413).
    #[error("the request body is over {limit} bytes")]
    TooLarge {
        /// `McpServerOptions::max_request_body_bytes`.
        limit: usize,
    },
    /// The body could not be read to its end (HTTP 400).
    #[error("the request body could not be read")]
    Unreadable,
    /// Not JSON (HTTP 400, JSON-RPC `-32700`), with the 1-based position.
    #[error("the request body is not JSON (line {line}, column {column})")]
    NotJson {
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
    },
    /// A JSON array: a JSON-RPC batch, which no revision this server
    /// negotiates has (HTTP 400, `-32600`).
    #[error("JSON-RPC batches are not supported: the MCP revisions this server speaks have none; send one message per request")]
    Batch,
    /// JSON, but not a JSON-RPC 2.0 request, notification or response
    /// (HTTP 400, `-32600`).
    #[error("the body is not a JSON-RPC 2.0 message: {0}")]
    NotJsonRpc(&'static str),
}

impl MessageRefusal {
    /// The HTTP answer: 413 with a plain message, or 400 with a JSON-RPC
    /// error object (`"id": null`: the request's id is unknown).
    pub fn response(&self) -> Response<BoxBody<Bytes, Infallible>> {
        let (status, code) = match self {
            MessageRefusal::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, INVALID_REQUEST),
            MessageRefusal::NotJson { .. } => (StatusCode::BAD_REQUEST, PARSE_ERROR),
            _ => (StatusCode::BAD_REQUEST, INVALID_REQUEST),
        };
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": code, "message": self.to_string() },
        });
        let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        response
    }
}

/// Reads `body` (at most `limit` bytes) and checks it is one JSON-RPC 2.0
/// message; returns the bytes unchanged for the transport.
///
/// # Errors
/// Each [`MessageRefusal`].
pub async fn read_message<B>(body: B, limit: usize) -> Result<Bytes, MessageRefusal>
where
    B: http_body::Body + Send,
    B::Error: Display,
{
    let mut body = std::pin::pin!(body);
    let mut bytes = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Err(MessageRefusal::Unreadable);
        };
        if let Ok(data) = frame.into_data() {
            if data.remaining() > limit.saturating_sub(bytes.len()) {
                return Err(MessageRefusal::TooLarge { limit });
            }
            bytes.put(data);
        }
    }
    let bytes = bytes.freeze();
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| MessageRefusal::NotJson {
        line: e.line(),
        column: e.column(),
    })?;
    check_message(&value)?;
    Ok(bytes)
}

/// One JSON-RPC 2.0 object: `"jsonrpc": "2.0"` and a `method` (request
/// or notification) or a `result`/`error` (response).
fn check_message(value: &Value) -> Result<(), MessageRefusal> {
    let object = match value {
        Value::Array(_) => return Err(MessageRefusal::Batch),
        Value::Object(object) => object,
        _ => return Err(MessageRefusal::NotJsonRpc("it is not a JSON object")),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(MessageRefusal::NotJsonRpc("\"jsonrpc\" must be \"2.0\""));
    }
    match object.get("id") {
        None | Some(Value::String(_)) => {}
        Some(Value::Number(n)) if n.as_i64().is_some() => {}
        // A response to an unreadable request may carry a null id.
        Some(Value::Null) if !object.contains_key("method") => {}
        Some(_) => {
            return Err(MessageRefusal::NotJsonRpc(
                "\"id\" must be a string or an integer (MCP ids are never null)",
            ))
        }
    }
    match object.get("method") {
        Some(Value::String(_)) => Ok(()),
        Some(_) => Err(MessageRefusal::NotJsonRpc("\"method\" must be a string")),
        None if object.contains_key("result") || object.contains_key("error") => Ok(()),
        None => Err(MessageRefusal::NotJsonRpc(
            "it has neither a \"method\" nor a \"result\" or \"error\"",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_errors_are_named() {
        assert_eq!(check_message(&json!([])), Err(MessageRefusal::Batch));
        for id in [
            json!(null),
            json!({}),
            json!([1]),
            json!(1.5),
            json!(true),
            json!(1e30),
        ] {
            assert_eq!(
                check_message(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})),
                Err(MessageRefusal::NotJsonRpc(
                    "\"id\" must be a string or an integer (MCP ids are never null)"
                )),
                "{id}"
            );
        }
        for id in [json!(7), json!(-3), json!("a")] {
            assert_eq!(
                check_message(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})),
                Ok(())
            );
        }
        assert_eq!(
            check_message(&json!(1)),
            Err(MessageRefusal::NotJsonRpc("it is not a JSON object"))
        );
        assert_eq!(
            check_message(&json!({"jsonrpc": "1.0", "method": "x"})),
            Err(MessageRefusal::NotJsonRpc("\"jsonrpc\" must be \"2.0\""))
        );
        assert_eq!(
            check_message(&json!({"jsonrpc": "2.0", "method": "ping", "id": 1})),
            Ok(())
        );
        assert_eq!(
            check_message(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
            Ok(())
        );
    }
}
