//! The decision endpoint over HTTP: `POST {approvalId, status}` (plain
//! JSON) with the approver's credential — the shape of orpc-agent's
//! coordinator `decide` and of the project's peer (`/approvals/decide`).

use std::time::Duration;

use serde_json::{json, Value};
use surface_runtime::bridge::GatewayApproval;
use surface_runtime::sync::BoxFuture;
use surface_store::ApprovalDecision;

use crate::host::ApprovalDecider;

/// How long [`HttpApprovalDecider`] waits for the endpoint's answer: 10
/// seconds.
pub const DECIDE_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest answer [`HttpApprovalDecider`] reads: 64 KiB.
pub const MAX_DECIDE_ANSWER_BYTES: usize = 64 * 1024;

/// An [`ApprovalDecider`] posting `{"approvalId", "status": "approved" |
/// "rejected"}` to `url` with `Authorization: authorization` (the
/// approver's credential; never the requester's). A 200 answer is the
/// decided approval; a 409 (decided before) carries it as it stands in
/// `{"approval": …}`: both give the decision the backend kept. No
/// redirects are followed; the answer is bounded by
/// [`MAX_DECIDE_ANSWER_BYTES`] and [`DECIDE_TIMEOUT`].
#[derive(Clone)]
pub struct HttpApprovalDecider {
    url: String,
    authorization: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for HttpApprovalDecider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpApprovalDecider")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl HttpApprovalDecider {
    /// The endpoint at `url`, called with `authorization`.
    ///
    /// # Errors
    /// The HTTP client cannot be built (the platform's TLS set-up).
    pub fn new(
        url: impl Into<String>,
        authorization: impl Into<String>,
    ) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(DECIDE_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            url: url.into(),
            authorization: authorization.into(),
            http,
        })
    }

    async fn send(&self, approval_id: &str, status: &str) -> Result<GatewayApproval, String> {
        let response = self
            .http
            .post(&self.url)
            .header("authorization", &self.authorization)
            .header("content-type", "application/json")
            .body(json!({"approvalId": approval_id, "status": status}).to_string())
            .send()
            .await
            .map_err(|_| "The decision endpoint could not be reached.".to_string())?;
        let code = response.status().as_u16();
        let body = read_bounded(response)
            .await
            .ok_or("The decision endpoint's answer could not be read.")?;
        let approval = match code {
            200 => serde_json::from_slice::<GatewayApproval>(&body).ok(),
            409 => serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|mut v| serde_json::from_value(v["approval"].take()).ok()),
            _ => {
                return Err(format!(
                    "The decision endpoint refused the decision (HTTP {code})."
                ))
            }
        };
        approval.ok_or_else(|| "The decision endpoint answered unexpectedly.".into())
    }
}

impl ApprovalDecider for HttpApprovalDecider {
    fn decide<'a>(
        &'a self,
        approval_id: &'a str,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<GatewayApproval, String>> {
        let status = match decision {
            ApprovalDecision::Approve => "approved",
            ApprovalDecision::Reject => "rejected",
        };
        Box::pin(self.send(approval_id, status))
    }
}

/// The body, at most [`MAX_DECIDE_ANSWER_BYTES`]; `None` when longer or
/// unreadable.
async fn read_bounded(mut response: reqwest::Response) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > MAX_DECIDE_ANSWER_BYTES {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    Some(body)
}
