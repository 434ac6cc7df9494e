//! The approver page's HTML: every value from the store, the gateway or
//! the query string is escaped.

use std::collections::HashMap;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;
use surface_runtime::bridge::{CallOptions, GatewayApproval};
use surface_runtime::invocation::AgentInvocationResult;
use surface_store::{ApprovalCursor, ApprovalRecord};

use super::listing::{page_cursor, pending_page, Listed, QUERY};
use super::{Inner, SignIn};
use crate::host::approvals::backend_problem;
use crate::web::{escape_html as esc, html_page};

/// The sign-in form (or the application's sign-in link), with `problem`.
pub(crate) fn sign_in(inner: &Inner, status: StatusCode, problem: Option<&str>) -> Response {
    let mut body = problem_line(problem);
    match &inner.sign_in.0 {
        SignIn::Secret { .. } => body.push_str(&format!(
            "<p>Sign in with the approver secret.</p><form method=\"post\" action=\"{}/login\">\
             <label>Approver secret <input type=\"password\" name=\"secret\" id=\"approver-secret\" \
             autocomplete=\"off\"></label> <button id=\"approver-login\">Sign in</button></form>",
            esc(&inner.path)
        )),
        SignIn::Application {
            sign_in_url: Some(url),
            ..
        } => body.push_str(&format!(
            "<p><a id=\"approver-sign-in\" href=\"{}\">Sign in</a> as an approver.</p>",
            esc(url)
        )),
        SignIn::Application { .. } => body.push_str("<p>Sign in as an approver first.</p>"),
    }
    html_page(status, &inner.title, &body)
}

fn problem_line(problem: Option<&str>) -> String {
    problem
        .map(|p| format!("<p id=\"approver-result\" class=\"error\">{}</p>", esc(p)))
        .unwrap_or_default()
}

/// The signed-in page: the outcome of `?done=ID`, `problem`, the
/// approvals decided but not resumed, and a page of pending approvals as
/// the gateway shows them.
pub(crate) async fn approvals(
    inner: &Inner,
    approver: &str,
    query: &HashMap<String, String>,
    problem: Option<String>,
) -> Response {
    let mut body = format!(
        "<p id=\"approver-user\">Signed in as {}.</p>",
        esc(approver)
    );
    if let Some(done) = query.get("done") {
        body.push_str(&done_line(inner, done).await);
    }
    body.push_str(&problem_line(problem.as_deref()));
    let after = match page_cursor(query) {
        Ok(after) => after,
        Err(refused) => {
            body.push_str(&problem_line(Some(&refused.message)));
            return html_page(refused.status, &inner.title, &body);
        }
    };
    let Listed {
        rows: pending,
        next,
        conflicts,
    } = match pending_page(inner, after.as_ref()).await {
        Ok(listed) => listed,
        Err(refused) => {
            body.push_str(&problem_line(Some(&refused.message)));
            return html_page(refused.status, &inner.title, &body);
        }
    };
    if after.is_none() {
        body.push_str(&awaiting_resume(inner).await);
    }
    if pending.is_empty() && after.is_none() {
        body.push_str("<p id=\"no-approvals\">No approvals are pending.</p>");
        return html_page(StatusCode::OK, &inner.title, &body);
    }
    body.push_str(
        "<table id=\"approvals\"><tr><th>Approval</th><th>Procedure</th><th>Run</th>\
         <th>At the gateway</th><th>Decision</th></tr>",
    );
    for approval in &pending {
        let conflict = conflicts.contains(&approval.backend_approval_id);
        body.push_str(&row(
            inner,
            approval,
            conflict,
            gateway_view(inner, &approval.backend_approval_id).await,
        ));
    }
    body.push_str("</table>");
    body.push_str(&pager(inner, after.is_some(), next.as_ref()));
    html_page(StatusCode::OK, &inner.title, &body)
}

/// Links to the first page (from a later one) and to the next page.
fn pager(inner: &Inner, later_page: bool, next: Option<&ApprovalCursor>) -> String {
    let path = esc(&inner.path);
    let mut links = String::new();
    if later_page {
        links.push_str(&format!(
            "<a id=\"approvals-first\" href=\"{path}\">Oldest</a> "
        ));
    }
    if let Some(next) = next {
        let after = percent_encoding::utf8_percent_encode(&next.to_string(), QUERY).to_string();
        links.push_str(&format!(
            "<a id=\"approvals-next\" href=\"{path}?after={}\">Next</a>",
            esc(&after)
        ));
    }
    match links.is_empty() {
        true => links,
        false => format!("<p class=\"pager\">{links}</p>"),
    }
}

/// The line after a decision: the outcome, or why there is none yet.
async fn done_line(inner: &Inner, approval_id: &str) -> String {
    let Ok(Some(approval)) = inner.host.store().approval(approval_id).await else {
        return String::new();
    };
    let outcome = approval
        .outcome
        .as_deref()
        .and_then(|o| serde_json::from_str::<AgentInvocationResult>(o).ok());
    match outcome {
        Some(outcome) => format!(
            "<p id=\"approver-result\" class=\"ok\">{}: {}</p>",
            esc(approval_id),
            esc(&(inner.summary)(&approval, &outcome))
        ),
        None => format!(
            "<p id=\"approver-result\" class=\"error\">{}: decided ({}), not resumed yet.</p>",
            esc(approval_id),
            approval.state.as_str()
        ),
    }
}

/// The approvals decided but not resumed (a failed resumption), each
/// with a Retry button.
async fn awaiting_resume(inner: &Inner) -> String {
    let waiting = match inner
        .host
        .store()
        .approvals_awaiting_resume(inner.page_size)
        .await
    {
        Ok(waiting) if !waiting.is_empty() => waiting,
        Ok(_) => return String::new(),
        Err(e) => {
            tracing::warn!(error = ?e, "listing approvals awaiting resumption");
            return String::new();
        }
    };
    let mut table = String::from("<h2>Decided, not resumed yet</h2><table id=\"awaiting-resume\">");
    for approval in &waiting {
        let id = esc(&approval.approval_id);
        table.push_str(&format!(
            "<tr id=\"awaiting-{id}\"><td>{id}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&approval.capability_id),
            approval.state.as_str(),
            form(inner, &id, &[("resume", "Retry")]),
        ));
    }
    table.push_str("</table>");
    table
}

/// The decision form of the (escaped) approval id `id`.
fn form(inner: &Inner, id: &str, buttons: &[(&str, &str)]) -> String {
    let buttons: String = buttons
        .iter()
        .map(|(value, label)| {
            format!(
                "<button name=\"decision\" value=\"{value}\" id=\"{value}-{id}\">{label}</button>"
            )
        })
        .collect();
    format!(
        "<form method=\"post\" action=\"{}/decide\"><input type=\"hidden\" name=\"approvalId\" \
         value=\"{id}\">{buttons}</form>",
        esc(&inner.path)
    )
}

/// One pending approval: the host's record and the gateway's view (the
/// backend's approval id, and a warning when another pending call names
/// the same backend approval).
fn row(
    inner: &Inner,
    approval: &ApprovalRecord,
    conflict: bool,
    view: Result<GatewayApproval, String>,
) -> String {
    let id = esc(&approval.approval_id);
    let backend = esc(&approval.backend_approval_id);
    let conflict = match conflict {
        true => {
            "<br><span class=\"conflict error\">Another pending call names this backend \
                 approval: the backend's receipt decides which call it holds.</span>"
        }
        false => "",
    };
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
                esc(&gateway.expires_at),
                esc(&shown.to_string())
            )
        }
        Err(why) => format!("<span class=\"error\">{}</span>", esc(&why)),
    };
    format!(
        "<tr id=\"approval-{id}\"><td>{id}<br><small>backend <code class=\"backend-approval\">{backend}</code></small>{conflict}</td><td>{}</td><td>{} / {}</td><td>{view}</td><td>{}</td></tr>",
        esc(&approval.capability_id),
        esc(&approval.run_id),
        esc(&approval.tool_call_id),
        form(inner, &id, &[("approve", "Approve"), ("reject", "Reject")]),
    )
}

/// What the gateway shows for the approval (`getApproval`, with the
/// requester's credential), or why it could not be read.
async fn gateway_view(inner: &Inner, approval_id: &str) -> Result<GatewayApproval, String> {
    match inner
        .requester
        .get_approval(approval_id, CallOptions::default())
        .await
    {
        Ok(Some(approval)) => Ok(approval),
        Ok(None) => Err("The gateway has no such approval.".into()),
        Err(e) => Err(backend_problem("read the approval", &e)),
    }
}
