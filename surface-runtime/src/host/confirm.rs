//! Confirmation while the call waits (docs/host.md, "Confirmation while the
//! call waits").
//!
//! With [`ConfirmationMode::Hold`], a call dispatched through a
//! `BrowserSurfaceSession` whose registry answers `CONFIRMATION_REQUIRED`
//! is not answered yet. The session
//!
//! 1. records a [`HeldConfirmation`] (the registry's confirmation id, the
//!    capability, its description, the registry's `details.summary` text
//!    and the effective `input` the server will receive) and tells the
//!    application ([`ConfirmationEvent::Requested`]) so the page can show
//!    its dialog, and the host ([`BrowserSurfaceProgress`],
//!    `awaiting-confirmation`);
//! 2. waits for the application's decision — `approve` / `reject`, methods
//!    of the session that neither the host nor the model can reach — or
//!    the confirmation's expiry, or the connection's end;
//! 3. on approval has the registry approve it, tells the host
//!    (`confirmed`, with the fresh invocation id), re-runs the call with
//!    its `confirmationId` under a **fresh invocation id**, and answers the
//!    *original* call with that result (its `invocationId` the original's);
//!    on rejection or expiry answers `CONFIRMATION_INVALID`
//!    (`details.reason` `"denied"`, retry `no`; `"expired"`, retry
//!    `with-confirmation`, also when
//!    the registry no longer holds the confirmation). Disconnect and
//!    dispose abort the wait.
//!
//! The approval never leaves the page: the retry carrying the
//! `confirmationId` is made inside this module. In this mode a host call
//! that carries a `confirmationId` is refused (`invalid-call`) before
//! anything is recorded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use futures_channel::oneshot;
use futures_util::future::{select, Either};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::progress::BrowserSurfaceProgress;
use super::source::SurfaceSource;
use super::wire::BrowserSurfaceCall;
use crate::cancellation::Cancellation;
use crate::clock::{Clock, Timer};
use crate::confirmation::{ConfirmationError, EvidenceProblem};
use crate::invocation::{AgentConsumer, AgentError, AgentInvocationResult, ErrorCode, Retry};
use crate::sync::BoxFuture;

/// How a `BrowserSurfaceSession` answers a call that needs the user's
/// local confirmation (docs/host.md, "Confirmation while the call waits").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConfirmationMode {
    /// The registry's `CONFIRMATION_REQUIRED` goes back to the host as the
    /// call's result (the default). The host retries with the
    /// `confirmationId` once the application approved it.
    #[default]
    Return,
    /// The call waits in the page until the user approves, rejects, the
    /// confirmation expires or the connection ends; the host receives one
    /// result for its original call. The application must show the held
    /// confirmations (`on_confirmation` / `held_confirmations`): a session
    /// nobody listens to keeps each such call waiting until it expires.
    Hold,
}

/// A call the session holds for the user's decision: what the page's
/// dialog shows. camelCase JSON, for a JavaScript UI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldConfirmation {
    /// The registry's confirmation id: the argument of `approve`/`reject`.
    pub confirmation_id: String,
    /// The host's invocation id (the call that waits).
    pub invocation_id: String,
    /// The connection the call arrived on.
    pub connection_id: String,
    /// The agent run.
    pub run_id: String,
    /// The model's tool call.
    pub tool_call_id: String,
    /// The capability called (`domain:…` / `view:…`).
    pub capability_id: String,
    /// The registration called.
    pub registration_id: String,
    /// The capability's description (a procedure's manifest text).
    pub description: String,
    /// The effective input, bound values included: exactly what the server
    /// will receive if the user approves and the view has not changed
    /// meanwhile (`null` when the source cannot show it).
    pub input: Value,
    /// The registry's `details.summary` text: `"<description> — input:
    /// <input as JSON>"`.
    pub summary: String,
    /// When the confirmation expires, ms since the Unix epoch.
    pub expires_at_ms: u64,
}

/// How a held confirmation ended, serialized kebab-case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfirmationOutcome {
    /// The user approved; the call runs with the evidence.
    Approved,
    /// The user rejected; the call was answered `CONFIRMATION_INVALID`
    /// (`rejected`).
    Rejected,
    /// It expired (or the registry dropped it) before a decision; the call
    /// was answered `CONFIRMATION_INVALID` (`expired` / `not-pending`).
    Expired,
    /// The wait was aborted: disconnect, reconnect, dispose or session
    /// expiry. The call was answered `disconnected`.
    Aborted,
}

/// What the session tells the application about held confirmations
/// (`BrowserSurfaceSession::on_confirmation`). JSON: `{"type":"requested",
/// …HeldConfirmation}` or `{"type":"settled","confirmationId",
/// "invocationId","outcome"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
// One event per confirmation shown or taken down: its size never matters,
// and a box would only burden every listener's pattern.
#[allow(clippy::large_enum_variant)]
pub enum ConfirmationEvent {
    /// Show this confirmation to the user.
    Requested(HeldConfirmation),
    /// Take it down: it was decided, expired or aborted.
    #[serde(rename_all = "camelCase")]
    Settled {
        /// The confirmation.
        confirmation_id: String,
        /// The host's invocation id.
        invocation_id: String,
        /// How it ended.
        outcome: ConfirmationOutcome,
    },
}

/// Why `BrowserSurfaceSession::approve` / `reject` did nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfirmationDecisionError {
    /// No call of this session waits for this confirmation (never held,
    /// already decided, expired, or aborted).
    #[error("no call of this session waits for confirmation `{0}`")]
    Unknown(String),
    /// It expired before the decision; the call was answered
    /// `CONFIRMATION_INVALID` (`expired`).
    #[error("confirmation `{0}` expired before the decision; the call was answered CONFIRMATION_INVALID (expired)")]
    Expired(String),
    /// The registry no longer held it as pending (dropped at its bound of
    /// live confirmations, or approved/rejected directly through the
    /// registry); the call was answered `CONFIRMATION_INVALID`
    /// (`not-pending`).
    #[error("the registry no longer holds confirmation `{id}` as pending ({source}); the call was answered CONFIRMATION_INVALID (not-pending)")]
    NotPending {
        /// The confirmation.
        id: String,
        /// The registry's answer.
        source: ConfirmationError,
    },
}

/// Receives every [`ConfirmationEvent`]. `Send + Sync` on native targets,
/// plain on `wasm32`.
#[cfg(not(target_arch = "wasm32"))]
pub type ConfirmationListener = dyn Fn(&ConfirmationEvent) + Send + Sync;
/// Receives every [`ConfirmationEvent`]. `Send + Sync` on native targets,
/// plain on `wasm32`.
#[cfg(target_arch = "wasm32")]
pub type ConfirmationListener = dyn Fn(&ConfirmationEvent);

/// Receives every [`BrowserSurfaceProgress`] to send to the host.
/// `Send + Sync` on native targets, plain on `wasm32`.
#[cfg(not(target_arch = "wasm32"))]
pub type ProgressListener = dyn Fn(&BrowserSurfaceProgress) + Send + Sync;
/// Receives every [`BrowserSurfaceProgress`] to send to the host.
/// `Send + Sync` on native targets, plain on `wasm32`.
#[cfg(target_arch = "wasm32")]
pub type ProgressListener = dyn Fn(&BrowserSurfaceProgress);

/// A registration from `BrowserSurfaceSession::on_confirmation` or
/// `on_progress`; dropping it (or [`Self::unsubscribe`]) removes the
/// listener.
#[must_use = "dropping the subscription unsubscribes the listener"]
pub struct SessionEventSubscription {
    table: Weak<HeldTable>,
    id: u64,
}

impl SessionEventSubscription {
    /// Removes the listener now.
    pub fn unsubscribe(self) {}
}

impl Drop for SessionEventSubscription {
    fn drop(&mut self) {
        if let Some(table) = self.table.upgrade() {
            let mut state = table.lock();
            state
                .confirmation_listeners
                .retain(|(id, _)| *id != self.id);
            state.progress_listeners.retain(|(id, _)| *id != self.id);
        }
    }
}

impl std::fmt::Debug for SessionEventSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionEventSubscription")
            .field("id", &self.id)
            .finish()
    }
}

/// The decision sent to a waiting call.
enum Decision {
    /// Approved at the registry: retry with this `confirmationId`.
    Approve(String),
    Reject,
    /// Expired, or no longer pending at the registry: answered
    /// `CONFIRMATION_INVALID` `expired`.
    Withdrawn,
}

struct HeldEntry {
    info: HeldConfirmation,
    decide: oneshot::Sender<Decision>,
}

#[derive(Default)]
struct HeldState {
    entries: HashMap<String, HeldEntry>,
    confirmation_listeners: Vec<(u64, Arc<ConfirmationListener>)>,
    progress_listeners: Vec<(u64, Arc<ProgressListener>)>,
    next_id: u64,
}

/// The confirmations a session holds and the listeners it tells. At most
/// one entry per pending call, so bounded by the session's `max_entries`.
pub(super) struct HeldTable {
    state: Mutex<HeldState>,
    max_listeners: usize,
}

impl HeldTable {
    // On wasm32 listeners are not `Send`; the table is still shared.
    #[cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]
    pub(super) fn new(max_listeners: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(HeldState::default()),
            max_listeners,
        })
    }

    fn lock(&self) -> MutexGuard<'_, HeldState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a confirmation listener; `None` at the bound.
    pub(super) fn add_confirmation_listener(
        self: &Arc<Self>,
        listener: Arc<ConfirmationListener>,
    ) -> Option<SessionEventSubscription> {
        let mut state = self.lock();
        if state.confirmation_listeners.len() >= self.max_listeners {
            return None;
        }
        state.next_id += 1;
        let id = state.next_id;
        state.confirmation_listeners.push((id, listener));
        Some(SessionEventSubscription {
            table: Arc::downgrade(self),
            id,
        })
    }

    /// Adds a progress listener; `None` at the bound.
    pub(super) fn add_progress_listener(
        self: &Arc<Self>,
        listener: Arc<ProgressListener>,
    ) -> Option<SessionEventSubscription> {
        let mut state = self.lock();
        if state.progress_listeners.len() >= self.max_listeners {
            return None;
        }
        state.next_id += 1;
        let id = state.next_id;
        state.progress_listeners.push((id, listener));
        Some(SessionEventSubscription {
            table: Arc::downgrade(self),
            id,
        })
    }

    /// Drops every listener and held entry without notifying (dispose and
    /// expiry clear everything; the waits are aborted separately).
    pub(super) fn clear_listeners(&self) {
        let mut state = self.lock();
        state.confirmation_listeners.clear();
        state.progress_listeners.clear();
    }

    /// The held confirmations, oldest first by expiry (then id).
    pub(super) fn list(&self) -> Vec<HeldConfirmation> {
        let mut all: Vec<HeldConfirmation> = self
            .lock()
            .entries
            .values()
            .map(|e| e.info.clone())
            .collect();
        all.sort_by(|a, b| {
            (a.expires_at_ms, &a.confirmation_id).cmp(&(b.expires_at_ms, &b.confirmation_id))
        });
        all
    }

    fn notify(&self, event: &ConfirmationEvent) {
        let listeners: Vec<_> = self
            .lock()
            .confirmation_listeners
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for listener in listeners {
            listener(event);
        }
    }

    fn progress(&self, message: &BrowserSurfaceProgress) {
        let listeners: Vec<_> = self
            .lock()
            .progress_listeners
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for listener in listeners {
            listener(message);
        }
    }

    fn settled(&self, info: &HeldConfirmation, outcome: ConfirmationOutcome) {
        self.notify(&ConfirmationEvent::Settled {
            confirmation_id: info.confirmation_id.clone(),
            invocation_id: info.invocation_id.clone(),
            outcome,
        });
    }

    fn take(&self, confirmation_id: &str) -> Option<HeldEntry> {
        self.lock().entries.remove(confirmation_id)
    }

    /// Answers every held call whose confirmation expired by `now` (ms)
    /// with `CONFIRMATION_INVALID` (`expired`): the lazy expiry of
    /// sessions without a timer.
    pub(super) fn sweep_expired(&self, source: &dyn SurfaceSource, now: u64) {
        let expired: Vec<HeldEntry> = {
            let mut state = self.lock();
            let ids: Vec<String> = state
                .entries
                .iter()
                .filter(|(_, e)| e.info.expires_at_ms < now)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter()
                .filter_map(|id| state.entries.remove(id))
                .collect()
        };
        for entry in expired {
            let _ = source.reject(&entry.info.confirmation_id);
            let _ = entry.decide.send(Decision::Withdrawn);
            self.settled(&entry.info, ConfirmationOutcome::Expired);
        }
    }

    /// The application approves: the registry approves the confirmation
    /// and the waiting call re-runs with its id.
    pub(super) fn approve(
        &self,
        source: &dyn SurfaceSource,
        confirmation_id: &str,
        now: u64,
    ) -> Result<(), ConfirmationDecisionError> {
        self.sweep_expired(source, now);
        let entry = self
            .take(confirmation_id)
            .ok_or_else(|| ConfirmationDecisionError::Unknown(confirmation_id.to_string()))?;
        match source.confirm(confirmation_id) {
            Ok(approved) => {
                let _ = entry
                    .decide
                    .send(Decision::Approve(approved.confirmation_id));
                self.settled(&entry.info, ConfirmationOutcome::Approved);
                Ok(())
            }
            Err(ConfirmationError::Expired(id)) => {
                let _ = entry.decide.send(Decision::Withdrawn);
                self.settled(&entry.info, ConfirmationOutcome::Expired);
                Err(ConfirmationDecisionError::Expired(id))
            }
            Err(error) => {
                // Approved elsewhere (not by this wait) or gone: make sure
                // no stray approval stays usable.
                let _ = source.reject(confirmation_id);
                let _ = entry.decide.send(Decision::Withdrawn);
                self.settled(&entry.info, ConfirmationOutcome::Expired);
                Err(ConfirmationDecisionError::NotPending {
                    id: confirmation_id.to_string(),
                    source: error,
                })
            }
        }
    }

    /// The application rejects: the waiting call is answered
    /// `CONFIRMATION_INVALID` (`rejected`).
    pub(super) fn reject(
        &self,
        source: &dyn SurfaceSource,
        confirmation_id: &str,
        now: u64,
    ) -> Result<(), ConfirmationDecisionError> {
        self.sweep_expired(source, now);
        let entry = self
            .take(confirmation_id)
            .ok_or_else(|| ConfirmationDecisionError::Unknown(confirmation_id.to_string()))?;
        // Expired or already gone at the registry: the user's "no" stands.
        let _ = source.reject(confirmation_id);
        let _ = entry.decide.send(Decision::Reject);
        self.settled(&entry.info, ConfirmationOutcome::Rejected);
        Ok(())
    }
}

/// Removes the held entry when the wait ends without a decision (the
/// future was aborted and dropped): the registry forgets the confirmation
/// and the application takes its dialog down.
struct AbortGuard {
    table: Arc<HeldTable>,
    source: Arc<dyn SurfaceSource>,
    confirmation_id: Option<String>,
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        let Some(id) = self.confirmation_id.take() else {
            return;
        };
        if let Some(entry) = self.table.take(&id) {
            let _ = self.source.reject(&id);
            self.table
                .settled(&entry.info, ConfirmationOutcome::Aborted);
        }
    }
}

/// What a held call needs besides the first answer.
pub(super) struct HoldContext {
    pub(super) table: Arc<HeldTable>,
    pub(super) source: Arc<dyn SurfaceSource>,
    pub(super) consumer: AgentConsumer,
    pub(super) call: BrowserSurfaceCall,
    pub(super) cancellation: Cancellation,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) timer: Option<Arc<dyn Timer>>,
}

/// The registry's confirmation request in `result`, if it is one: the
/// pending confirmation as the source holds it (its `details.confirmationId`
/// looked up). A source that does not show its pending confirmations
/// (`SurfaceSource::pending_confirmation` left at its default) still holds
/// the call, with the summary text and the expiry of the details only.
fn confirmation_request(
    source: &dyn SurfaceSource,
    result: &AgentInvocationResult,
) -> Option<PendingRequest> {
    let error = result.error()?;
    if error.code != ErrorCode::ConfirmationRequired {
        return None;
    }
    let details = &error.details;
    let id = details.get("confirmationId")?.as_str()?.to_string();
    let summary = details
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Some(match source.pending_confirmation(&id) {
        Some(pending) => PendingRequest {
            id,
            summary,
            description: pending.description,
            input: pending.input,
            expires_at_ms: pending.expires_at_ms,
        },
        None => PendingRequest {
            expires_at_ms: details
                .get("expiresAt")
                .and_then(Value::as_str)
                .and_then(crate::clock::parse_iso_8601)?,
            id,
            summary,
            description: String::new(),
            input: Value::Null,
        },
    })
}

/// What [`confirmation_request`] reads of a `CONFIRMATION_REQUIRED`.
struct PendingRequest {
    id: String,
    summary: String,
    description: String,
    input: Value,
    expires_at_ms: u64,
}

/// A fresh invocation id for the approved retry: `confirmed-` and 32 hex
/// digits from the platform's randomness (the registry never runs one id
/// twice, so it must not be derivable from the host's id).
fn fresh_invocation_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: fall back to a process-unique counter and the
        // time; still never equal to an id the session was sent, as no
        // host id is checked against it — the registry refuses a repeat.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        bytes[..8].copy_from_slice(&n.to_le_bytes());
        bytes[8..].copy_from_slice(&crate::clock::SystemClock.now_ms().to_le_bytes());
    }
    format!("confirmed-{}", hex::encode(bytes))
}

/// `CONFIRMATION_INVALID` for the held `call` at `surface_version`, as the
/// original's registry answers the retry of a held call: `denied` (the
/// user declined, retry `no`) or `expired` (not decided in time, or no
/// longer held by the registry: retry `with-confirmation`), with its
/// messages.
fn invalid(
    call: &BrowserSurfaceCall,
    surface_version: u64,
    problem: EvidenceProblem,
) -> AgentInvocationResult {
    let error = AgentError::new(
        ErrorCode::ConfirmationInvalid,
        problem.message(),
        problem.retry(),
    )
    .with_detail("reason", problem.as_str());
    AgentInvocationResult::err(
        call.invocation.invocation_id.clone(),
        call.invocation.capability_id.clone(),
        error,
        surface_version,
    )
}

/// `result` answered as the invocation `invocation_id`.
fn as_invocation(mut result: AgentInvocationResult, invocation_id: &str) -> AgentInvocationResult {
    match &mut result {
        AgentInvocationResult::Ok {
            invocation_id: id, ..
        }
        | AgentInvocationResult::Error {
            invocation_id: id, ..
        } => *id = invocation_id.to_string(),
    }
    result
}

/// Runs `first` (the registry's answer to the host's call) and, when it is
/// a confirmation request, holds the call as the module docs describe.
pub(super) fn hold(
    ctx: HoldContext,
    first: BoxFuture<'static, AgentInvocationResult>,
) -> BoxFuture<'static, AgentInvocationResult> {
    Box::pin(async move {
        let first = first.await;
        let Some(request) = confirmation_request(&*ctx.source, &first) else {
            return first;
        };
        let PendingRequest {
            id: confirmation_id,
            summary,
            description,
            input,
            expires_at_ms,
        } = request;
        let call = &ctx.call;
        let info = HeldConfirmation {
            confirmation_id: confirmation_id.clone(),
            invocation_id: call.invocation.invocation_id.clone(),
            connection_id: call.connection_id.clone(),
            run_id: call.run_id.clone(),
            tool_call_id: call.tool_call_id.clone(),
            capability_id: call.invocation.capability_id.clone(),
            registration_id: call.invocation.registration_id.clone().unwrap_or_default(),
            description,
            input,
            summary,
            expires_at_ms,
        };
        let (decide, decision) = oneshot::channel();
        ctx.table.lock().entries.insert(
            confirmation_id.clone(),
            HeldEntry {
                info: info.clone(),
                decide,
            },
        );
        let mut guard = AbortGuard {
            table: ctx.table.clone(),
            source: ctx.source.clone(),
            confirmation_id: Some(confirmation_id.clone()),
        };
        ctx.table
            .notify(&ConfirmationEvent::Requested(info.clone()));
        ctx.table
            .progress(&BrowserSurfaceProgress::awaiting_confirmation(
                call,
                expires_at_ms,
            ));

        let decision = await_decision(&ctx, &confirmation_id, expires_at_ms, decision).await;
        // Whoever took the entry out of the table has settled it.
        guard.confirmation_id = None;
        decided(&ctx, decision).await
    })
}

/// The user's decision on a held call, or `Withdrawn` when the
/// timer fires first (the entry is then rejected at the registry and
/// settled as expired here); `None` when the table was cleared.
async fn await_decision(
    ctx: &HoldContext,
    confirmation_id: &str,
    expires_at_ms: u64,
    decision: oneshot::Receiver<Decision>,
) -> Option<Decision> {
    let Some(timer) = &ctx.timer else {
        return decision.await.ok();
    };
    let wait = expires_at_ms.saturating_sub(ctx.clock.now_ms());
    // One millisecond past the expiry: the registry's check is
    // `expires < now`.
    let sleep = timer.sleep(std::time::Duration::from_millis(wait.saturating_add(1)));
    match select(decision, sleep).await {
        Either::Left((decided, _)) => decided.ok(),
        Either::Right(((), decision)) => {
            // Expired unless decided at the same moment.
            if let Some(entry) = ctx.table.take(confirmation_id) {
                let _ = ctx.source.reject(confirmation_id);
                let _ = entry.decide.send(Decision::Withdrawn);
                ctx.table.settled(&entry.info, ConfirmationOutcome::Expired);
            }
            decision.await.ok()
        }
    }
}

/// What the held call answers once decided: an approval retries it under
/// a fresh invocation id with the evidence, answered under the original id.
async fn decided(ctx: &HoldContext, decision: Option<Decision>) -> AgentInvocationResult {
    let call = &ctx.call;
    let original = call.invocation.invocation_id.as_str();
    let version = ctx.source.surface_version();
    match decision {
        Some(Decision::Approve(confirmation_id)) => {
            let retry_id = fresh_invocation_id();
            ctx.table
                .progress(&BrowserSurfaceProgress::confirmed(call, retry_id.clone()));
            let mut invocation = call.invocation.clone();
            invocation.invocation_id = retry_id;
            invocation.confirmation_id = Some(confirmation_id);
            let result = ctx
                .source
                .invoke(invocation, ctx.consumer.clone(), ctx.cancellation.clone())
                .await;
            as_invocation(result, original)
        }
        Some(Decision::Reject) => invalid(call, version, EvidenceProblem::Denied),
        Some(Decision::Withdrawn) => invalid(call, version, EvidenceProblem::Expired),
        // The sender was dropped without a decision: only when the
        // table is cleared, i.e. the session is going away.
        None => AgentInvocationResult::err(
            original,
            call.invocation.capability_id.clone(),
            AgentError::new(
                ErrorCode::Cancelled,
                "The application closed before the user decided; the call did not run.",
                Retry::No,
            ),
            version,
        ),
    }
}

/// Aborts every held wait's bookkeeping (dispose): entries are dropped
/// after being rejected at the registry and settled as aborted.
pub(super) fn abort_all(table: &HeldTable, source: &dyn SurfaceSource) {
    let entries: Vec<HeldEntry> = table.lock().entries.drain().map(|(_, e)| e).collect();
    for entry in entries {
        let _ = source.reject(&entry.info.confirmation_id);
        table.settled(&entry.info, ConfirmationOutcome::Aborted);
        drop(entry.decide);
    }
}

/// Held confirmations for calls that start in the page itself (an in-page
/// agent such as the browser's WebMCP one) rather than from the agent
/// host: the same table, decisions and retry as a session's
/// [`ConfirmationMode::Hold`] calls, with no connection behind them.
/// `PageSurface` owns one and merges it into its held confirmations.
pub(crate) struct LocalHolds {
    table: Arc<HeldTable>,
    source: Arc<dyn SurfaceSource>,
    clock: Arc<dyn Clock>,
    timer: Option<Arc<dyn Timer>>,
}

impl LocalHolds {
    /// Holds over `source`, expiring with `timer` when there is one (else
    /// lazily, at the next decision or listing).
    pub(crate) fn new(
        source: Arc<dyn SurfaceSource>,
        clock: Arc<dyn Clock>,
        timer: Option<Arc<dyn Timer>>,
    ) -> Self {
        Self {
            table: HeldTable::new(super::DEFAULT_MAX_ENTRIES),
            source,
            clock,
            timer,
        }
    }

    /// Tells `listener` every requested and settled confirmation.
    pub(crate) fn on_confirmation(
        &self,
        listener: Arc<ConfirmationListener>,
    ) -> Option<SessionEventSubscription> {
        self.table.add_confirmation_listener(listener)
    }

    /// Runs `call.invocation` through the source as `consumer`; a
    /// `CONFIRMATION_REQUIRED` answer waits for [`Self::approve`] /
    /// [`Self::reject`] as a held session call does.
    pub(crate) fn invoke(
        &self,
        call: BrowserSurfaceCall,
        consumer: AgentConsumer,
        cancellation: Cancellation,
    ) -> BoxFuture<'static, AgentInvocationResult> {
        self.table.sweep_expired(&*self.source, self.clock.now_ms());
        let first = self.source.invoke(
            call.invocation.clone(),
            consumer.clone(),
            cancellation.clone(),
        );
        hold(
            HoldContext {
                table: self.table.clone(),
                source: self.source.clone(),
                consumer,
                call,
                cancellation,
                clock: self.clock.clone(),
                timer: self.timer.clone(),
            },
            first,
        )
    }

    /// Whether a call waits for `confirmation_id` here.
    pub(crate) fn holds(&self, confirmation_id: &str) -> bool {
        self.table.lock().entries.contains_key(confirmation_id)
    }

    /// The held confirmations, oldest first.
    pub(crate) fn list(&self) -> Vec<HeldConfirmation> {
        self.table.sweep_expired(&*self.source, self.clock.now_ms());
        self.table.list()
    }

    /// The user approves: the call re-runs with the evidence.
    pub(crate) fn approve(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        self.table
            .approve(&*self.source, confirmation_id, self.clock.now_ms())
    }

    /// The user rejects: the call is answered `CONFIRMATION_INVALID`.
    pub(crate) fn reject(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        self.table
            .reject(&*self.source, confirmation_id, self.clock.now_ms())
    }
}
