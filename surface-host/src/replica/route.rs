//! Calls: on this replica's own tab ([`local_call`]), routed to the
//! replica holding the tab ([`routed_call`], the requester), and run here
//! for another replica ([`serve_calls`], the holder).

use std::sync::{Arc, Weak};
use std::time::Duration;

use surface_runtime::host::{BrowserSurfaceProgress, ToolCallRequest};
use tokio::sync::{mpsc, oneshot, Notify};

use super::{answers_target, calls_target, refused, CallEnd, Inner, Refusal, Waiter};
use surface_store::store::{
    RouteRecord, RouteState, RouteTake, RouteTransition, RouteWrite, StoreError, SurfaceLease,
};
use surface_store::wake::{Delivery, Subscription};

/// Removes an entry of the replica's state when its call ends, however it
/// ends.
struct Forget<'a> {
    inner: &'a Inner,
    invocation_id: String,
    answer: bool,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let mut state = self.inner.lock();
        if self.answer {
            state.answers.remove(&self.invocation_id);
        } else {
            state.waiters.remove(&self.invocation_id);
        }
    }
}

/// Dispatches to the tab connected to this replica and waits for the end.
/// `expected_tab`: for a routed call, the tab it was routed to — a call
/// the host would send to another tab is withdrawn (a call never moves).
pub(super) async fn local_call(
    inner: &Inner,
    request: ToolCallRequest,
    progress: Option<mpsc::UnboundedSender<BrowserSurfaceProgress>>,
    expected_tab: Option<&str>,
) -> CallEnd {
    let id = request.invocation_id.clone();
    let (done, ended) = oneshot::channel();
    {
        let mut state = inner.lock();
        // An id still outstanding here (a call that timed out, its page
        // may still answer) is never sent again.
        if state.waiters.contains_key(&id) || inner.durable.host().outstanding_call(&id).is_some() {
            return refused(Refusal::Conflict);
        }
        // Registered before dispatch, so no answer can arrive unheard.
        state.waiters.insert(id.clone(), Waiter { done, progress });
    }
    let _forget = Forget {
        inner,
        invocation_id: id.clone(),
        answer: false,
    };
    let call = match inner.durable.dispatch(request).await {
        Ok(call) => call,
        Err(error) => return refused(Refusal::of(&error)),
    };
    let on_tab = expected_tab.is_none_or(|tab| call.identity.tab_id == tab);
    let sent = on_tab && {
        let state = inner.lock();
        // Only to the socket that announced the call's tab here (a mirror
        // names another replica's connection id, which a socket here may
        // also carry).
        let announced = state.local_tabs.get(&call.identity.tab_id) == Some(&call.connection_id);
        announced
            && state
                .connections
                .get(&call.connection_id)
                .is_some_and(|c| c.sender.send(call).is_ok())
    };
    if !sent {
        // The surface is a mirror, its connection just closed, or the run
        // is on another tab now: nothing left the host, and the id stays
        // refused.
        inner.durable.host().withdraw(&id);
        if let Err(error) = inner.store().interrupt(&id, inner.now()).await {
            tracing::warn!(invocation_id = ?id, ?error, "replica: unsent call not recorded");
        }
        return refused(Refusal::NoLivePage);
    }
    match tokio::time::timeout(inner.options.call_timeout, ended).await {
        Ok(Ok(end)) => end,
        Ok(Err(_)) => CallEnd::Interrupted,
        Err(_) => CallEnd::TimedOut,
    }
}

/// Routes a call to `lease.replica` and waits for its answer (module docs
/// of [`super`]).
pub(super) async fn routed_call(
    inner: &Arc<Inner>,
    request: ToolCallRequest,
    lease: SurfaceLease,
    progress: Option<mpsc::UnboundedSender<BrowserSurfaceProgress>>,
) -> CallEnd {
    let Ok(_permit) = inner.waiting.clone().try_acquire_owned() else {
        return refused(Refusal::Capacity);
    };
    let id = request.invocation_id.clone();
    if surface_runtime::check_invocation_id(&id).is_err() {
        return refused(Refusal::Invalid);
    }
    let notify = Arc::new(Notify::new());
    {
        let mut state = inner.lock();
        if state.answers.contains_key(&id) {
            return refused(Refusal::Conflict);
        }
        state.answers.insert(id.clone(), notify.clone());
    }
    let _forget = Forget {
        inner,
        invocation_id: id.clone(),
        answer: true,
    };
    let route = RouteRecord {
        invocation_id: id.clone(),
        run_id: request.run_id.clone(),
        tab_id: lease.tab_id.clone(),
        requester: inner.name().to_string(),
        holder: lease.replica.clone(),
        request: serde_json::to_string(&request).unwrap_or_default(),
        state: RouteState::Requested,
        result: None,
        progress: None,
        requested_at_ms: inner.now(),
        settled_at_ms: None,
    };
    // From here on, a requester that stops waiting (its agent went away:
    // this future is dropped) withdraws the row if it is still its own and
    // `requested` (or not written yet: an insert in flight never runs).
    let mut abandon = Abandon {
        inner: Some(inner.clone()),
        route: Some(route.clone()),
    };
    let end = match inner.store().record_route(&route).await {
        Ok(RouteWrite::Inserted) => {
            // An id dispatched here before (not routed) is refused too:
            // the holder's dispatch would find its host_calls row.
            wake_holder(inner, &route).await;
            await_answer(inner, &route, &notify, progress.as_ref()).await
        }
        Ok(RouteWrite::Exists(_)) => {
            abandon.inner = None;
            return refused(Refusal::Conflict);
        }
        // Nothing was written: the request cannot be stored (and so
        // cannot be routed) at all.
        Err(StoreError::TooLarge { bytes, limit, .. }) => {
            abandon.inner = None;
            tracing::warn!(invocation_id = ?id, bytes, limit, "replica: the call is too large to route");
            return refused(Refusal::Invalid);
        }
        Err(error) => {
            tracing::error!(invocation_id = ?id, ?error, "replica: the call cannot be routed");
            after_failed_insert(inner, &route, &notify, progress.as_ref()).await
        }
    };
    abandon.inner = None;
    end
}

/// The end of a routed call whose insert failed: it may have committed
/// with its answer lost, or may still commit — the row is written
/// `interrupted` (or moved there from `requested`), so that insert never
/// runs either; a row that got further is waited for.
async fn after_failed_insert(
    inner: &Inner,
    route: &RouteRecord,
    notify: &Notify,
    progress: Option<&mpsc::UnboundedSender<BrowserSurfaceProgress>>,
) -> CallEnd {
    match inner.store().withdraw_route(route, inner.now()).await {
        Ok(RouteTransition::Applied) => refused(Refusal::StoreUnavailable),
        // Another call's row (another requester's, or an earlier one with
        // this id).
        Ok(RouteTransition::NotApplied(row)) if !same_call(&row, route) => {
            refused(Refusal::Conflict)
        }
        Ok(RouteTransition::NotApplied(row)) => match settled(&row) {
            Some(end) => end,
            None => await_answer(inner, route, notify, progress).await,
        },
        Ok(RouteTransition::Unknown) | Err(_) => CallEnd::Interrupted,
    }
}

/// Whether `row` is the row `route` wrote (not another call's with the
/// same id).
fn same_call(row: &RouteRecord, route: &RouteRecord) -> bool {
    row.requester == route.requester
        && row.requested_at_ms == route.requested_at_ms
        && row.request == route.request
}

/// Withdraws a routed call whose requester stopped waiting before it
/// settled (the future was dropped): its own row still `requested`, or
/// one not written yet, never runs.
struct Abandon {
    inner: Option<Arc<Inner>>,
    route: Option<RouteRecord>,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        let (Some(inner), Some(route)) = (self.inner.take(), self.route.take()) else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let now = inner.now();
                if let Err(error) = inner.store().withdraw_route(&route, now).await {
                    let id = &route.invocation_id;
                    tracing::warn!(invocation_id = ?id, ?error, "replica: abandoned routed call not withdrawn");
                }
            });
        }
    }
}

async fn wake_holder(inner: &Inner, route: &RouteRecord) {
    let target = calls_target(&route.holder);
    if let Err(error) = inner.wake.notify(&target, &route.invocation_id).await {
        tracing::warn!(
            ?error,
            "replica: holder not woken; it is woken again at the next check"
        );
    }
}

/// Waits for a routed call's answer: on a wake-up, at every check (which
/// also re-wakes a holder that may have missed it and gives up on a holder
/// whose lease is gone), until the call timeout. The progress the holder
/// relays is handed to `progress` as it is read.
async fn await_answer(
    inner: &Inner,
    route: &RouteRecord,
    notify: &Notify,
    progress: Option<&mpsc::UnboundedSender<BrowserSurfaceProgress>>,
) -> CallEnd {
    let id = &route.invocation_id;
    let deadline = tokio::time::Instant::now() + inner.options.call_timeout;
    let mut last_progress: Option<String> = None;
    loop {
        let check = tokio::select! {
            () = notify.notified() => false,
            () = tokio::time::sleep(inner.options.check_interval) => true,
            () = tokio::time::sleep_until(deadline) => {
                return give_up(inner, id, CallEnd::TimedOut).await;
            }
        };
        let row = match inner.store().route(id).await {
            Ok(Some(row)) => row,
            Ok(None) => return CallEnd::Interrupted,
            Err(error) => {
                tracing::warn!(invocation_id = ?id, ?error, "replica: routed call not readable");
                continue;
            }
        };
        let relayed = forward_progress(&row, &mut last_progress, progress);
        if let Some(end) = settled(&row) {
            if relayed {
                // The waiting side reads the progress before the end.
                tokio::task::yield_now().await;
            }
            return end;
        }
        if !check {
            continue;
        }
        if !holder_alive(inner, route).await {
            return give_up(inner, id, CallEnd::Interrupted).await;
        }
        if row.state == RouteState::Requested {
            wake_holder(inner, route).await;
        }
    }
}

/// Hands the row's progress to `sink` when it changed since `last`;
/// whether it did.
fn forward_progress(
    row: &RouteRecord,
    last: &mut Option<String>,
    sink: Option<&mpsc::UnboundedSender<BrowserSurfaceProgress>>,
) -> bool {
    let (Some(sink), Some(json)) = (sink, row.progress.as_ref()) else {
        return false;
    };
    if last.as_ref() == Some(json) {
        return false;
    }
    *last = Some(json.clone());
    match serde_json::from_str::<BrowserSurfaceProgress>(json) {
        Ok(message) if message.invocation_id == row.invocation_id => sink.send(message).is_ok(),
        _ => {
            tracing::warn!(invocation_id = ?row.invocation_id, "replica: a routed call's progress is not this call's; ignored");
            false
        }
    }
}

/// The end of a settled routed call.
fn settled(row: &RouteRecord) -> Option<CallEnd> {
    match row.state {
        RouteState::Answered => Some(
            row.result
                .as_deref()
                .and_then(|r| serde_json::from_str(r).ok())
                .unwrap_or(CallEnd::Interrupted),
        ),
        RouteState::Interrupted => Some(CallEnd::Interrupted),
        RouteState::Requested | RouteState::Taken => None,
    }
}

/// Whether the holder still holds the tab's lease (a store that cannot be
/// read counts as alive: the deadline still bounds the wait).
async fn holder_alive(inner: &Inner, route: &RouteRecord) -> bool {
    match inner.store().surface(&route.tab_id).await {
        Ok(Some(lease)) => {
            lease.replica == route.holder && lease.lease_expires_at_ms >= inner.now()
        }
        Ok(None) => false,
        Err(_) => true,
    }
}

/// Ends a routed call this requester stops waiting for: one still
/// `requested` is cancelled — it never ran and never will, so it is
/// refused [`Refusal::HolderUnavailable`]; one taken is interrupted
/// (`end`: it may have taken effect); an answer that won the race is
/// returned instead.
async fn give_up(inner: &Inner, id: &str, end: CallEnd) -> CallEnd {
    match inner.store().cancel_route(id, inner.now()).await {
        Ok(RouteTransition::Applied) => return refused(Refusal::HolderUnavailable),
        Ok(RouteTransition::NotApplied(row)) => {
            if let Some(end) = settled(&row) {
                return end;
            }
        }
        Ok(RouteTransition::Unknown) | Err(_) => {}
    }
    match inner.store().interrupt_route(id, inner.now()).await {
        Ok(RouteTransition::NotApplied(row)) => settled(&row).unwrap_or(end),
        _ => end,
    }
}

/// The holder's side: takes the routed calls it is woken for (and every
/// `requested` one on a rescan).
pub(super) async fn serve_calls(inner: Weak<Inner>, mut calls: Subscription) {
    while let Some(delivery) = calls.next().await {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        match delivery {
            Delivery::Wake(id) => take(&strong, id),
            Delivery::Rescan => take_requested(&strong).await,
        }
    }
}

/// Takes every routed call still `requested` from this replica: on a
/// rescan of the wake-ups, and at every lease renewal (a listening
/// connection that died silently loses wake-ups without a rescan).
pub(super) async fn take_requested(inner: &Arc<Inner>) {
    let limit = u32::try_from(inner.options.max_routed_calls).unwrap_or(u32::MAX);
    // Older rows are never taken (their requester stopped waiting).
    let since = inner.now().saturating_sub(call_timeout_ms(inner));
    let rows = inner
        .store()
        .routes_for_holder(inner.name(), RouteState::Requested, since, limit)
        .await;
    match rows {
        Ok(rows) => {
            for row in rows {
                take(inner, row.invocation_id);
            }
        }
        Err(error) => tracing::warn!(?error, "replica: routed calls not re-read"),
    }
}

fn call_timeout_ms(inner: &Inner) -> i64 {
    i64::try_from(inner.options.call_timeout.as_millis()).unwrap_or(i64::MAX)
}

/// Takes one routed call (one conditional statement) and runs it, in a
/// task of its own: at most `max_routed_calls` at once.
fn take(inner: &Arc<Inner>, id: String) {
    // Past the bound the row stays `requested`; its requester re-wakes us.
    let Ok(permit) = inner.running.clone().try_acquire_owned() else {
        return;
    };
    let inner = inner.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let not_before = inner.now().saturating_sub(call_timeout_ms(&inner));
        match inner
            .store()
            .take_route(&id, inner.name(), not_before)
            .await
        {
            Ok(RouteTake::Taken(row)) => run_routed(&inner, *row).await,
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(invocation_id = ?id, ?error, "replica: routed call not taken")
            }
        }
    });
}

/// Runs a taken call on this replica's tab, relaying its progress, and
/// answers it.
async fn run_routed(inner: &Inner, row: RouteRecord) {
    let end = match runnable(inner, &row).await {
        Ok(request) => {
            let (sender, receiver) = mpsc::unbounded_channel();
            let call = local_call(inner, request, Some(sender), Some(&row.tab_id));
            // The relay ends once the call's waiter (the sender) is gone,
            // after its last write: the answer follows every progress.
            let (end, ()) = tokio::join!(call, relay_progress(inner, &row, receiver));
            end
        }
        Err(end) => end,
    };
    answer(inner, &row, &end).await;
}

/// Attempts at writing a routed call's answer, [`ANSWER_RETRY`] apart,
/// doubling: 5 (within 1.5 s).
const ANSWER_ATTEMPTS: u32 = 5;
const ANSWER_RETRY: Duration = Duration::from_millis(100);

/// Writes the answer of a routed call (`taken` → `answered`) and wakes
/// its requester. A store error is retried ([`ANSWER_ATTEMPTS`]); an
/// answer the row cannot hold is written [`CallEnd::Interrupted`] (the
/// call ran; its result is not carried); past the attempts the requester
/// ends its wait at its call timeout.
async fn answer(inner: &Inner, row: &RouteRecord, end: &CallEnd) {
    let id = &row.invocation_id;
    let mut json = serde_json::to_string(end).unwrap_or_default();
    let mut delay = ANSWER_RETRY;
    for attempt in 1..=ANSWER_ATTEMPTS {
        match inner.store().answer_route(id, &json, inner.now()).await {
            Ok(RouteTransition::Applied) => return wake_requester(inner, row).await,
            // An earlier attempt committed though its reply was lost.
            Ok(RouteTransition::NotApplied(now))
                if attempt > 1 && now.state == RouteState::Answered =>
            {
                return wake_requester(inner, row).await
            }
            Ok(_) => {
                return tracing::info!(invocation_id = ?id, "replica: the requester stopped waiting first")
            }
            Err(StoreError::TooLarge { bytes, .. }) => {
                tracing::error!(invocation_id = ?id, bytes, "replica: the answer does not fit its row; answered interrupted");
                json = serde_json::to_string(&CallEnd::Interrupted).unwrap_or_default();
            }
            Err(error) if attempt < ANSWER_ATTEMPTS => {
                tracing::warn!(invocation_id = ?id, ?error, attempt, "replica: answer not recorded; retrying");
                tokio::time::sleep(delay).await;
                delay = delay.saturating_mul(2);
            }
            Err(error) => {
                tracing::error!(invocation_id = ?id, ?error, "replica: answer not recorded")
            }
        }
    }
}

/// The request of a taken routed call when it may run here: it parses,
/// and its run is still on the tab it was routed to (a call never moves).
async fn runnable(inner: &Inner, row: &RouteRecord) -> Result<ToolCallRequest, CallEnd> {
    let request = serde_json::from_str::<ToolCallRequest>(&row.request)
        .ok()
        .filter(|r| r.invocation_id == row.invocation_id && r.run_id == row.run_id)
        .ok_or(refused(Refusal::Invalid))?;
    let tab = Some(row.tab_id.as_str());
    // The requester read the run from the store just before routing; a
    // run tracked here on the routed tab, routed within the last check
    // interval, needs no second read.
    let known = inner.durable.host().run(&request.run_id);
    let check = i64::try_from(inner.options.check_interval.as_millis()).unwrap_or(0);
    let fresh = inner.now().saturating_sub(row.requested_at_ms) <= check;
    if fresh && known.is_some_and(|run| run.tab_id.as_deref() == tab) {
        return Ok(request);
    }
    match inner.ensure_run(&request.run_id).await {
        Ok(Some(run)) if run.tab_id.as_deref() == tab => Ok(request),
        // Ended, or on another tab now.
        Ok(_) => Err(refused(Refusal::UnknownTool)),
        Err(_) => Err(refused(Refusal::StoreUnavailable)),
    }
}

/// Relays the page's progress of a routed call to its requester: the
/// message is written to the row and the requester woken, once per stage
/// (awaiting-confirmation, confirmed), so at most two writes a call
/// whatever the page sends.
async fn relay_progress(
    inner: &Inner,
    row: &RouteRecord,
    mut progress: mpsc::UnboundedReceiver<BrowserSurfaceProgress>,
) {
    let mut relayed = Vec::with_capacity(2);
    while let Some(message) = progress.recv().await {
        if relayed.contains(&message.stage) {
            continue;
        }
        relayed.push(message.stage);
        let Ok(json) = serde_json::to_string(&message) else {
            continue;
        };
        let id = &row.invocation_id;
        match inner.store().progress_route(id, inner.name(), &json).await {
            Ok(RouteTransition::Applied) => wake_requester(inner, row).await,
            // Settled meanwhile: nobody waits for its progress.
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(invocation_id = ?id, ?error, "replica: progress not relayed")
            }
        }
    }
}

async fn wake_requester(inner: &Inner, row: &RouteRecord) {
    let target = answers_target(&row.requester);
    if let Err(error) = inner.wake.notify(&target, &row.invocation_id).await {
        tracing::warn!(
            ?error,
            "replica: requester not woken; it re-reads at its next check"
        );
    }
}

/// The requester's side: wakes the routed call a wake-up names (every one
/// on a rescan).
pub(super) async fn serve_answers(inner: Weak<Inner>, mut answers: Subscription) {
    while let Some(delivery) = answers.next().await {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let state = inner.lock();
        match delivery {
            Delivery::Wake(id) => {
                if let Some(notify) = state.answers.get(&id) {
                    notify.notify_one();
                }
            }
            Delivery::Rescan => state.answers.values().for_each(|n| n.notify_one()),
        }
    }
}
