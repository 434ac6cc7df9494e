//! The approver page (`/approver`, `docs/host.md`, "Approvals, decided
//! and resumed"): a person who knows the approver secret signs in (a
//! cookie of its own — the requester's page session grants nothing here),
//! sees every pending approval as the gateway shows it (`getApproval`:
//! status, types, reasons, expiry) and decides. A decision goes to the
//! application's decision endpoint (`POST {approvalId, status}` with the
//! approver's credential), is recorded in the host store, and the held
//! call is resumed through the gateway (`resumeApproval {invocationId,
//! approvalId}`) with the requester's credential — never by sending the
//! browser call again. The outcome is recorded for the run, which observes
//! it through `/app/run`.
//!
//! Server-rendered HTML without scripts; every value shown is escaped.

use std::collections::HashMap;
use std::sync::Arc;

use agent_surface::bridge::{
    CallOptions, CapabilityClient, GatewayApproval, HttpOrpcClient, OrpcCallError,
    OrpcCapabilityClient,
};
use agent_surface::store::{ApprovalDecision, ApprovalRecord, ApprovalState};
use agent_surface::sync::BoxFuture;
use agent_surface::{AgentInvocationResult, ApprovalDecider, DecideError};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use devices_api::{TurnReport, TurnStep};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// How long the decision endpoint may take to answer.
pub const DECIDE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Largest decision-endpoint answer read, in bytes.
pub const MAX_DECIDE_ANSWER: usize = 64 * 1024;

use crate::server::{lock, resumed_summary, AppState};

/// The approver session cookie's name.
pub const COOKIE: &str = "approver_session";

/// Most pending approvals the page lists.
pub const MAX_LISTED: u32 = 100;

/// `<`, `>`, `&`, `"` and `'` as HTML entities.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn html(status: StatusCode, body: &str) -> Response {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Approvals — devices console</title>\
         <style>body{{font:15px system-ui,sans-serif;margin:2rem;max-width:60rem;color:#1b1f24}}\
         table{{border-collapse:collapse;width:100%}}td,th{{border-bottom:1px solid #ddd;padding:.5rem;text-align:left;vertical-align:top}}\
         code{{background:#f3f4f6;padding:.1rem .3rem}}button{{margin-right:.5rem;padding:.3rem .8rem}}\
         .ok{{color:#116329}}.error{{color:#a40e26}}</style></head><body><h1>Approvals</h1>{body}</body></html>"
    );
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page,
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

fn signed_in(state: &AppState, headers: &HeaderMap) -> Option<String> {
    state.approvers.authenticate(headers).map(|s| s.data)
}

const LOGIN_FORM: &str = "<p>Sign in with the approver secret the host printed at start-up.</p>\
    <form method=\"post\" action=\"/approver/login\"><label>Approver secret \
    <input type=\"password\" name=\"secret\" id=\"approver-secret\" autocomplete=\"off\"></label> \
    <button id=\"approver-login\">Sign in</button></form>";

/// `GET /approver[?done=ID]`: the sign-in form, or the pending approvals.
pub(crate) async fn page(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(approver) = signed_in(&state, &headers) else {
        return html(StatusCode::OK, LOGIN_FORM);
    };
    let mut body = format!(
        "<p id=\"approver-user\">Signed in as {}.</p>",
        escape_html(&approver)
    );
    if let Some(done) = query.get("done") {
        body.push_str(&decided_line(&state, done).await);
    }
    if let Some(problem) = query.get("problem") {
        body.push_str(&format!(
            "<p id=\"approver-result\" class=\"error\">{}</p>",
            escape_html(problem)
        ));
    }
    let pending = match state.host.pending_approvals(MAX_LISTED).await {
        Ok(pending) => pending,
        Err(e) => {
            eprintln!("devices-host: listing approvals: {e}");
            body.push_str("<p class=\"error\">The host store cannot be read right now.</p>");
            return html(StatusCode::SERVICE_UNAVAILABLE, &body);
        }
    };
    match state
        .host
        .store()
        .approvals_awaiting_resume(MAX_LISTED)
        .await
    {
        Ok(waiting) if !waiting.is_empty() => {
            body.push_str("<h2>Decided, not resumed yet</h2><table id=\"awaiting-resume\">");
            for approval in &waiting {
                let id = escape_html(&approval.approval_id);
                body.push_str(&format!(
                    "<tr id=\"awaiting-{id}\"><td>{id}</td><td>{}</td><td>{}</td><td><form method=\"post\" action=\"/approver/decide\">\
                     <input type=\"hidden\" name=\"approvalId\" value=\"{id}\">\
                     <button name=\"decision\" value=\"resume\" id=\"resume-{id}\">Retry</button></form></td></tr>",
                    escape_html(&approval.capability_id),
                    approval.state.as_str()
                ));
            }
            body.push_str("</table>");
        }
        Ok(_) => {}
        Err(e) => eprintln!("devices-host: listing approvals awaiting resumption: {e}"),
    }
    if pending.is_empty() {
        body.push_str("<p id=\"no-approvals\">No approvals are pending.</p>");
        return html(StatusCode::OK, &body);
    }
    body.push_str(
        "<table id=\"approvals\"><tr><th>Approval</th><th>Procedure</th><th>Run</th>\
         <th>At the gateway</th><th>Decision</th></tr>",
    );
    let gateway = requester_gateway(&state);
    for approval in &pending {
        body.push_str(&row(
            approval,
            gateway_view(&gateway, &approval.approval_id).await,
        ));
    }
    body.push_str("</table>");
    html(StatusCode::OK, &body)
}

/// The line shown after a decision: the run's outcome, or why there is
/// none yet.
async fn decided_line(state: &AppState, approval_id: &str) -> String {
    match state.host.store().approval(approval_id).await {
        Ok(Some(approval)) => {
            let outcome = approval
                .outcome
                .as_deref()
                .and_then(|o| serde_json::from_str::<AgentInvocationResult>(o).ok());
            match outcome {
                Some(outcome) => format!(
                    "<p id=\"approver-result\" class=\"ok\">{}: {}</p>",
                    escape_html(approval_id),
                    escape_html(&resumed_summary(&approval, &outcome))
                ),
                None => format!(
                    "<p id=\"approver-result\" class=\"error\">{}: decided ({}), not resumed yet.</p>",
                    escape_html(approval_id),
                    approval.state.as_str()
                ),
            }
        }
        _ => String::new(),
    }
}

/// One pending approval's table row: the host's record and the gateway's
/// view (`getApproval`), or why it could not be read.
fn row(approval: &ApprovalRecord, view: Result<GatewayApproval, String>) -> String {
    let id = escape_html(&approval.approval_id);
    let view = match view {
        Ok(gateway) => {
            let shown = json!({
                "status": gateway.status.as_str(),
                "types": gateway.types,
                "reasons": gateway.reasons,
                "expiresAt": gateway.expires_at,
            });
            format!(
                "<span class=\"status\">{}</span>, expires <span class=\"expires\">{}</span>\
                 <br><code class=\"approval\">{}</code>",
                gateway.status.as_str(),
                escape_html(&gateway.expires_at),
                escape_html(&shown.to_string())
            )
        }
        Err(why) => format!("<span class=\"error\">{}</span>", escape_html(&why)),
    };
    format!(
        "<tr id=\"approval-{id}\"><td>{id}</td><td>{capability}</td><td>{run} / {tool}</td><td>{view}</td>\
         <td><form method=\"post\" action=\"/approver/decide\"><input type=\"hidden\" name=\"approvalId\" value=\"{id}\">\
         <button name=\"decision\" value=\"approve\" id=\"approve-{id}\">Approve</button>\
         <button name=\"decision\" value=\"reject\" id=\"reject-{id}\">Reject</button></form></td></tr>",
        capability = escape_html(&approval.capability_id),
        run = escape_html(&approval.run_id),
        tool = escape_html(&approval.tool_call_id),
    )
}

/// The gateway with the requester's credential (the host's backend
/// credential): `getApproval`, `resumeApproval`.
fn requester_gateway(state: &AppState) -> OrpcCapabilityClient<HttpOrpcClient> {
    OrpcCapabilityClient::new(
        HttpOrpcClient::new(state.config.backend_gateway.clone())
            .with_header("authorization", state.config.backend_authorization.clone()),
    )
}

/// What the gateway shows for the approval (`getApproval`).
async fn gateway_view(
    gateway: &OrpcCapabilityClient<HttpOrpcClient>,
    approval_id: &str,
) -> Result<GatewayApproval, String> {
    match gateway
        .get_approval(approval_id, CallOptions::default())
        .await
    {
        Ok(Some(approval)) => Ok(approval),
        Ok(None) => Err("The gateway has no such approval.".into()),
        Err(e) => Err(backend_problem("read the approval", &e)),
    }
}

/// A backend failure in words, without the server's text.
fn backend_problem(what: &str, error: &OrpcCallError) -> String {
    let code = error
        .orpc_code()
        .filter(|c| c.len() <= 64 && c.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'));
    match code {
        Some(code) => format!("The backend refused to {what} ({code})."),
        None => format!("The backend could not {what} (unreachable or an unexpected answer)."),
    }
}

/// `POST {approvalId, status}` to the application's decision endpoint with
/// the approver's credential. A 200 is the decided approval; a 409 (not
/// pending any more) carries the approval as it stands (`{"approval"}`):
/// both give the decision the backend kept. `Err` is the sentence for the
/// approver.
async fn send_decision(
    state: &AppState,
    approval_id: &str,
    status: &str,
) -> Result<GatewayApproval, String> {
    let http = reqwest::Client::builder()
        .timeout(DECIDE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|_| "The decision endpoint cannot be called.".to_string())?;
    let response = http
        .post(&state.config.backend_decide)
        .header("authorization", state.config.approver_authorization.clone())
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
            .and_then(|v| serde_json::from_value::<GatewayApproval>(v["approval"].clone()).ok()),
        _ => {
            return Err(format!(
                "The decision endpoint refused the decision (HTTP {code})."
            ))
        }
    };
    approval.ok_or_else(|| "The decision endpoint answered unexpectedly.".into())
}

/// The body, at most [`MAX_DECIDE_ANSWER`] bytes; `None` when longer or
/// unreadable.
async fn read_bounded(mut response: reqwest::Response) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > MAX_DECIDE_ANSWER {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    Some(body)
}

#[derive(Deserialize)]
pub(crate) struct LoginForm {
    secret: String,
}

/// `POST /approver/login` (form `secret`): a session cookie for the
/// approver when the secret matches.
pub(crate) async fn login(
    State(state): State<Arc<AppState>>,
    Form(form): Form<LoginForm>,
) -> Response {
    // Compared as digests, so the time taken says nothing about the secret.
    let given = Sha256::digest(form.secret.as_bytes());
    let expected = Sha256::digest(state.config.approver_secret.as_bytes());
    if given != expected || state.config.approver_secret.is_empty() {
        return html(
            StatusCode::UNAUTHORIZED,
            &format!(
                "<p id=\"approver-result\" class=\"error\">Wrong approver secret.</p>{LOGIN_FORM}"
            ),
        );
    }
    match state.approvers.issue("approver".to_string()) {
        Ok(issued) => {
            let mut response = see_other("/approver");
            response
                .headers_mut()
                .insert(header::SET_COOKIE, issued.set_cookie);
            response
        }
        Err(full) => html(
            StatusCode::SERVICE_UNAVAILABLE,
            &escape_html(&full.to_string()),
        ),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DecideForm {
    approval_id: String,
    decision: String,
}

/// `POST /approver/decide` (form `approvalId`, `decision`: `approve`,
/// `reject`, or `resume` for an approval decided earlier whose resumption
/// failed): the decision to the backend, then to the store — the decision
/// the *backend* kept, which is the one it acts on — then the held call
/// resumed through the backend for its requester; the outcome recorded
/// for the run.
pub(crate) async fn decide(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Form(form): Form<DecideForm>,
) -> Response {
    let Some(approver) = signed_in(&state, &headers) else {
        return html(StatusCode::UNAUTHORIZED, LOGIN_FORM);
    };
    if !matches!(form.decision.as_str(), "approve" | "reject" | "resume") {
        return problem("The decision must be approve, reject or resume.");
    }
    if agent_surface::check_invocation_id(&form.approval_id).is_err() {
        return problem("That is not an approval id.");
    }
    let id = form.approval_id.as_str();
    let approval = match state.host.store().approval(id).await {
        Ok(Some(approval)) => approval,
        Ok(None) => return problem("No such approval."),
        Err(e) => {
            eprintln!("devices-host: reading approval {id}: {e}");
            return problem("The host store cannot be read right now.");
        }
    };
    if approval.outcome.is_some() {
        return see_other(&done_location(id));
    }
    if approval.state == ApprovalState::Pending && form.decision == "resume" {
        return problem("Decide first: the approval is still pending.");
    }
    let requester = requester_gateway(&state);
    let decided = match form.decision.as_str() {
        "resume" => state
            .agent
            .resume_approval(id, &requester)
            .await
            .map_err(|e| DecideError::NotResumed(e).to_string()),
        decision => {
            let decision = if decision == "approve" {
                ApprovalDecision::Approve
            } else {
                ApprovalDecision::Reject
            };
            let endpoint = DecisionEndpoint(&state);
            state
                .agent
                .decide_approval(id, decision, &approver, &endpoint, &requester)
                .await
                .map_err(|e| e.to_string())
        }
    };
    match decided {
        Ok(outcome) => {
            report_to_run(&state, id, &outcome).await;
            see_other(&done_location(id))
        }
        Err(why) => {
            eprintln!("devices-host: deciding {id}: {why}");
            problem(&why)
        }
    }
}

/// The backend's decision endpoint, with the approver's credential.
struct DecisionEndpoint<'a>(&'a AppState);

impl ApprovalDecider for DecisionEndpoint<'_> {
    fn decide<'a>(
        &'a self,
        approval_id: &'a str,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<GatewayApproval, String>> {
        let status = match decision {
            ApprovalDecision::Approve => "approved",
            ApprovalDecision::Reject => "rejected",
        };
        Box::pin(send_decision(self.0, approval_id, status))
    }
}

/// `/approver?done=ID`, the id percent-encoded.
fn done_location(id: &str) -> String {
    format!("/approver?done={}", query_encode(id))
}

/// Every byte but `A-Z a-z 0-9 - _ .` as `%XX`.
fn query_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

fn problem(text: &str) -> Response {
    see_other(&format!("/approver?problem={}", query_encode(text)))
}

/// Resumes a decided approval through the gateway's `resumeApproval`
/// with the requester's credential (fresh requester authority: read at
/// resume time) and reports the outcome to its run.
pub(crate) async fn resume_and_report(
    state: &AppState,
    approval_id: &str,
) -> Result<(), agent_surface::host::DurableError> {
    let requester = requester_gateway(state);
    let outcome = state.agent.resume_approval(approval_id, &requester).await?;
    report_to_run(state, approval_id, &outcome).await;
    Ok(())
}

/// The run's report of the resumed call (what `Running::reports` and
/// `/app/run` show).
async fn report_to_run(state: &AppState, approval_id: &str, outcome: &AgentInvocationResult) {
    // One report per approval, however many clicks or restarts resumed it.
    {
        let mut reported = lock(&state.reported_approvals);
        if reported.len() >= crate::server::MAX_TRACKED_RUNS {
            reported.clear();
        }
        if !reported.insert(approval_id.to_string()) {
            return;
        }
    }
    let Ok(Some(approval)) = state.host.store().approval(approval_id).await else {
        return;
    };
    let report = TurnReport {
        run_id: approval.run_id.clone(),
        steps: vec![TurnStep {
            action: format!(
                "approval {approval_id} {} by {}; resumed through the backend",
                approval.state.as_str(),
                approval.decided_by.as_deref().unwrap_or("the approver")
            ),
            outcome: serde_json::to_value(outcome).unwrap_or(Value::Null),
        }],
        summary: resumed_summary(&approval, outcome),
    };
    lock(&state.reports).push(report);
    state.reported.notify_waiters();
}
