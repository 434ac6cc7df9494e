//! The service's routes, and the decision they share.

use std::collections::HashMap;
use std::sync::Arc;

use crate::durable::DurableError;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use serde::Deserialize;
use serde_json::json;
use surface_runtime::invocation::AgentInvocationResult;
use surface_store::{ApprovalDecision, ApprovalRecord, ApprovalState};

use super::listing::{page_cursor, pending_page, refusal, store_refusal, Refusal, QUERY};
use super::{page, Inner, SignIn, MAX_SHOWN_PROBLEM_CHARS};
use crate::host::DecideError;
use crate::web::see_other;

type Service = State<Arc<Inner>>;

/// A decided and resumed approval, as stored.
pub(crate) struct Decided {
    pub(crate) approval: ApprovalRecord,
    pub(crate) outcome: AgentInvocationResult,
}

impl Inner {
    /// The stored approval `id` with its outcome, after a resume.
    async fn decided(&self, id: &str, outcome: AgentInvocationResult) -> Result<Decided, Refusal> {
        let approval = self
            .host
            .store()
            .approval(id)
            .await
            .map_err(store_refusal)?;
        let approval =
            approval.ok_or_else(|| refusal(StatusCode::NOT_FOUND, "No such approval."))?;
        Ok(Decided { approval, outcome })
    }

    /// Resumes a decided approval and reports its outcome.
    pub(crate) async fn resume(&self, id: &str) -> Result<Decided, Refusal> {
        let outcome = self
            .host
            .resume_approval(id, self.requester.as_ref())
            .await
            .map_err(|e| match e {
                DurableError::Store(_) => store_refusal(e),
                other => refusal(
                    StatusCode::CONFLICT,
                    DecideError::NotResumed(other).to_string(),
                ),
            })?;
        let decided = self.decided(id, outcome).await?;
        self.report(&decided.approval, &decided.outcome);
        Ok(decided)
    }

    /// `decision` (`approve`, `reject`, or `resume` for an approval decided
    /// earlier whose resumption failed) on approval `id` by `approver`.
    pub(crate) async fn decide(
        &self,
        approver: &str,
        id: &str,
        decision: &str,
    ) -> Result<Decided, Refusal> {
        let bad = |text: &str| refusal(StatusCode::BAD_REQUEST, text);
        let decision = match decision {
            "approve" => Some(ApprovalDecision::Approve),
            "reject" => Some(ApprovalDecision::Reject),
            "resume" => None,
            _ => return Err(bad("The decision must be approve, reject or resume.")),
        };
        if surface_runtime::check_invocation_id(id).is_err() {
            return Err(bad("That is not an approval id."));
        }
        let stored = self
            .host
            .store()
            .approval(id)
            .await
            .map_err(store_refusal)?;
        let stored = stored.ok_or_else(|| refusal(StatusCode::NOT_FOUND, "No such approval."))?;
        if let Some(outcome) = stored.outcome.as_deref() {
            let outcome = serde_json::from_str(outcome).map_err(store_refusal)?;
            return Ok(Decided {
                approval: stored,
                outcome,
            });
        }
        let Some(decision) = decision else {
            if stored.state == ApprovalState::Pending {
                return Err(bad("Decide first: the approval is still pending."));
            }
            return self.resume(id).await;
        };
        let outcome = self
            .host
            .decide_approval(
                id,
                decision,
                approver,
                self.decider.as_ref(),
                self.requester.as_ref(),
            )
            .await
            .map_err(|e| {
                let status = match &e {
                    DecideError::UnknownApproval => StatusCode::NOT_FOUND,
                    DecideError::Backend(_) => StatusCode::BAD_GATEWAY,
                    DecideError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
                    _ => StatusCode::CONFLICT,
                };
                tracing::warn!(approval_id = ?id, error = ?e, "an approval was not decided");
                refusal(status, e.to_string())
            })?;
        let decided = self.decided(id, outcome).await?;
        self.report(&decided.approval, &decided.outcome);
        Ok(decided)
    }

    /// `{path}?KEY=VALUE`, the value percent-encoded.
    fn location(&self, key: &str, value: &str) -> String {
        let value = percent_encoding::utf8_percent_encode(value, QUERY);
        format!("{}?{key}={value}", self.path)
    }
}

/// `GET {path}`: the sign-in, or the pending approvals.
pub(crate) async fn page(
    State(inner): Service,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(approver) = inner.sign_in.approver(&headers) else {
        return page::sign_in(&inner, StatusCode::OK, None);
    };
    let problem = query
        .get("problem")
        .map(|p| p.chars().take(MAX_SHOWN_PROBLEM_CHARS).collect::<String>());
    page::approvals(&inner, &approver, &query, problem).await
}

#[derive(Deserialize)]
pub(crate) struct LoginForm {
    secret: String,
}

/// `POST {path}/login`: a session cookie when the secret matches.
pub(crate) async fn login(State(inner): Service, Form(form): Form<LoginForm>) -> Response {
    let SignIn::Secret {
        digest,
        approver,
        sessions,
    } = &inner.sign_in.0
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    // Compared as digests: the time taken says nothing about the secret.
    let given = surface_runtime::hash::sha256(form.secret.as_bytes());
    if form.secret.is_empty() || given != *digest {
        return page::sign_in(
            &inner,
            StatusCode::UNAUTHORIZED,
            Some("Wrong approver secret."),
        );
    }
    match sessions.issue(approver.clone()) {
        Ok(issued) => {
            let mut response = see_other(&inner.path);
            response
                .headers_mut()
                .insert(header::SET_COOKIE, issued.set_cookie);
            response
        }
        Err(full) => page::sign_in(
            &inner,
            StatusCode::SERVICE_UNAVAILABLE,
            Some(&full.to_string()),
        ),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DecideForm {
    approval_id: String,
    decision: String,
}

/// `POST {path}/decide`: decides, then `303` to `{path}?done=ID` or
/// `{path}?problem=SENTENCE`.
pub(crate) async fn decide_form(
    State(inner): Service,
    headers: HeaderMap,
    Form(form): Form<DecideForm>,
) -> Response {
    let Some(approver) = inner.sign_in.approver(&headers) else {
        return page::sign_in(&inner, StatusCode::UNAUTHORIZED, None);
    };
    match inner
        .decide(&approver, &form.approval_id, &form.decision)
        .await
    {
        Ok(_) => see_other(&inner.location("done", &form.approval_id)),
        Err(refused) => see_other(&inner.location("problem", &refused.message)),
    }
}

fn json_error(refused: Refusal) -> Response {
    (refused.status, Json(json!({ "error": refused.message }))).into_response()
}

fn not_signed_in() -> Response {
    json_error(refusal(StatusCode::UNAUTHORIZED, "Sign in as an approver."))
}

/// `GET {path}/api/pending[?after=CURSOR]`.
pub(crate) async fn api_pending(
    State(inner): Service,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if inner.sign_in.approver(&headers).is_none() {
        return not_signed_in();
    }
    let listed = match page_cursor(&query) {
        Ok(after) => pending_page(&inner, after.as_ref()).await,
        Err(refused) => Err(refused),
    };
    match listed {
        Ok(listed) => {
            let approvals: Vec<_> = listed
                .rows
                .iter()
                .map(|a| {
                    json!({"approvalId": a.approval_id,
                        "backendApprovalId": a.backend_approval_id, "runId": a.run_id,
                        "toolCallId": a.tool_call_id, "capabilityId": a.capability_id,
                        "state": a.state.as_str(), "requestedAtMs": a.requested_at_ms,
                        "expiresAtMs": a.expires_at_ms,
                        "conflict": listed.conflicts.contains(&a.backend_approval_id)})
                })
                .collect();
            Json(json!({"approvals": approvals, "pageSize": inner.page_size,
                "next": listed.next.map(|c| c.to_string())}))
            .into_response()
        }
        Err(refused) => json_error(refused),
    }
}

/// `POST {path}/api/decide` `{"approvalId","decision"}`.
pub(crate) async fn api_decide(
    State(inner): Service,
    headers: HeaderMap,
    Json(form): Json<DecideForm>,
) -> Response {
    let Some(approver) = inner.sign_in.approver(&headers) else {
        return not_signed_in();
    };
    match inner
        .decide(&approver, &form.approval_id, &form.decision)
        .await
    {
        Ok(Decided { approval, outcome }) => Json(json!({
            "approvalId": approval.approval_id,
            "state": approval.state.as_str(),
            "decidedBy": approval.decided_by,
            "summary": (inner.summary)(&approval, &outcome),
            "outcome": outcome,
        }))
        .into_response(),
        Err(refused) => json_error(refused),
    }
}
