//! What each outcome of an agent call means, in words for the person in
//! front of the page (the activity panel and the turn report).

use agent_surface::host::{BrowserSurfaceOutcome, ConfirmationOutcome, RejectionReason};
use agent_surface::page::{AgentCall, AgentCallState};
use agent_surface::{AgentError, AgentInvocationResult, ErrorCode};
use serde_json::Value;

/// How an activity entry is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tone {
    /// Succeeded.
    Ok,
    /// Failed or refused; nothing (or maybe something) happened.
    Error,
    /// Still running or waiting for the user.
    Pending,
    /// Neutral information.
    Info,
}

impl Tone {
    /// The CSS class.
    pub fn class(self) -> &'static str {
        match self {
            Tone::Ok => "ok",
            Tone::Error => "error",
            Tone::Pending => "pending",
            Tone::Info => "info",
        }
    }
}

/// `domain:devices.disable` → `devices.disable`, `view:devices.table.select`
/// → `devices.table.select`.
pub fn short_name(capability_id: &str) -> &str {
    capability_id
        .split_once(':')
        .map_or(capability_id, |(_, name)| name)
}

fn id_list(value: &Value) -> Option<String> {
    let ids: Vec<&str> = value.as_array()?.iter().filter_map(Value::as_str).collect();
    Some(if ids.is_empty() {
        "no device".to_string()
    } else {
        ids.join(", ")
    })
}

/// A sentence for a successful call's output (`Null` when it had none).
fn success_words(capability_id: &str, output: &Value) -> String {
    match short_name(capability_id) {
        "devices.disable" => match id_list(&output["disabled"]) {
            Some(ids) if ids != "no device" => format!("Done: disabled {ids}."),
            _ => "Done: those devices were already disabled.".to_string(),
        },
        "devices.list" => {
            let n = output["devices"].as_array().map_or(0, Vec::len);
            format!("Done: the agent read {n} device(s).")
        }
        "devices.table.select" => match id_list(&output["selected"]) {
            Some(ids) => format!("Done: selected {ids}."),
            None => "Done.".to_string(),
        },
        "devices.table.filter" => "Done: the table filter changed.".to_string(),
        "devices.table.clearSelection" => "Done: the selection was cleared.".to_string(),
        "devices.table.readState" => {
            let rows = output["visibleRows"].as_array().map_or(0, Vec::len);
            let selected = output["selectedIds"].as_array().map_or(0, Vec::len);
            format!("Done: the agent read the table ({rows} row(s) shown, {selected} selected).")
        }
        "devices.rename" => match output["name"].as_str() {
            Some(name) => format!("Done: renamed to “{name}”."),
            None => "Done: renamed.".to_string(),
        },
        _ => "Done.".to_string(),
    }
}

fn detail<'a>(error: &'a AgentError, key: &str) -> Option<&'a str> {
    error.details.get(key).and_then(Value::as_str)
}

/// A sentence for a refused or failed call.
pub fn error_words(error: &AgentError) -> String {
    match error.code {
        ErrorCode::CapabilityNotAvailable => format!(
            "Not available right now: {}",
            detail(error, "reason").unwrap_or("this action cannot run in the current view.")
        ),
        ErrorCode::StaleCapability => "The agent acted on an outdated view of this page; nothing was done. It has to look at the page again before retrying.".to_string(),
        ErrorCode::ConfirmationInvalid => match detail(error, "reason") {
            Some("mismatch") => "Your approval does not match this call: the selection changed after the agent asked, or the approval was for another call, so nothing was done.".to_string(),
            Some("denied") => "You declined it; nothing was done.".to_string(),
            Some("consumed") => "That approval was already used; nothing more was done.".to_string(),
            Some("expired") => "The confirmation expired before a decision; nothing was done.".to_string(),
            Some(other) => format!("The confirmation is no longer valid ({other}); nothing was done."),
            None => "The confirmation is no longer valid; nothing was done.".to_string(),
        },
        ErrorCode::ConfirmationRequired => "Waiting for your confirmation.".to_string(),
        ErrorCode::DomainApprovalRequired => format!(
            "The server needs an approval first{}; nothing was done yet.",
            detail(error, "approvalId").map(|id| format!(" (approval {id})")).unwrap_or_default()
        ),
        ErrorCode::NotAuthorized => "The server refused: you are not allowed to do this.".to_string(),
        ErrorCode::InvalidInput => format!("The agent sent input the action does not accept: {}", error.message),
        ErrorCode::CapabilityNotFound => "The agent asked for something this page does not offer.".to_string(),
        ErrorCode::ComponentUnmounted => "The part of the page the agent acted on is gone; nothing was done.".to_string(),
        ErrorCode::InvocationConflict => "The agent reused a call id for a different call; refused.".to_string(),
        ErrorCode::RateLimited => match detail(error, "reason") {
            Some("queue-full") => "Too many confirmations are waiting for you; nothing was done. The agent may retry once some are decided or expire.".to_string(),
            _ => "Too many calls for now; nothing was done. The agent may retry later.".to_string(),
        },
        ErrorCode::Timeout => "The call took too long; it may still have taken effect.".to_string(),
        ErrorCode::Cancelled => "The call was cancelled; it may still have taken effect.".to_string(),
        ErrorCode::DomainOutcomeUnknown => "The server's answer was lost; it may have taken effect. Check before retrying.".to_string(),
        _ => format!("It failed: {} ({})", error.message, error.code.as_str()),
    }
}

/// A sentence for a refusal by the session (the registry was not reached).
pub fn rejection_words(reason: RejectionReason) -> String {
    match reason {
        RejectionReason::StaleSurface => "The agent's view of this page was out of date, so the call was not run; it has to look again.".to_string(),
        RejectionReason::Disconnected => "The connection to the agent dropped while this was running; it may or may not have taken effect.".to_string(),
        RejectionReason::WrongSession => "The call was meant for another tab or session and was refused.".to_string(),
        RejectionReason::InvocationConflict => "The agent reused a call id for a different call; refused.".to_string(),
        RejectionReason::InvalidCall => "The agent sent a malformed call; refused.".to_string(),
        RejectionReason::CapacityExceeded => "This tab has handled too many agent calls; reload the page to start a new session.".to_string(),
        RejectionReason::SessionExpired => "The agent session of this tab expired; reload the page.".to_string(),
    }
}

/// Whether `outcome` is the registry's success.
pub fn succeeded(outcome: &BrowserSurfaceOutcome) -> bool {
    matches!(
        outcome,
        BrowserSurfaceOutcome::Invocation(AgentInvocationResult::Ok { .. })
    )
}

/// The tone and sentence of a call's outcome.
pub fn outcome_words(capability_id: &str, outcome: &BrowserSurfaceOutcome) -> (Tone, String) {
    match outcome {
        BrowserSurfaceOutcome::Invocation(AgentInvocationResult::Ok { output, .. }) => (
            Tone::Ok,
            success_words(capability_id, output.as_ref().unwrap_or(&Value::Null)),
        ),
        BrowserSurfaceOutcome::Invocation(result) => match result.error() {
            Some(error) => (Tone::Error, error_words(error)),
            None => (Tone::Info, "Finished.".to_string()),
        },
        BrowserSurfaceOutcome::Rejected(rejected) => {
            (Tone::Error, rejection_words(rejected.reason))
        }
    }
}

/// The agent's input as a short line (`{}` → "no input").
pub fn input_words(input: &Value) -> String {
    match input.as_object() {
        Some(map) if map.is_empty() => "no input of its own".to_string(),
        _ => format!("input {input}"),
    }
}

/// The title and the tone and sentence of an activity entry.
pub fn call_words(call: &AgentCall) -> (String, Tone, String) {
    let name = short_name(&call.capability_id);
    let title = format!("Agent → {name}, {}", input_words(&call.input));
    let (tone, detail) = match &call.state {
        AgentCallState::Answered(outcome) => outcome_words(&call.capability_id, outcome),
        AgentCallState::AwaitingConfirmation => {
            (Tone::Pending, "Waiting for your confirmation…".to_string())
        }
        AgentCallState::Confirmation(outcome) => (
            Tone::Pending,
            match outcome {
                ConfirmationOutcome::Approved => "You approved; running it…",
                ConfirmationOutcome::Rejected => "You rejected it.",
                ConfirmationOutcome::Expired => "The confirmation expired.",
                _ => "The confirmation was withdrawn (connection lost).",
            }
            .to_string(),
        ),
        _ => (Tone::Pending, "Running…".to_string()),
    };
    (title, tone, detail)
}
