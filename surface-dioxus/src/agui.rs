//! `use_ag_ui_agent`: a chat with an AG-UI agent server over the page's
//! live surface (cargo feature `ag-ui`; `agent_surface::agui`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use agent_surface::agui::{
    AgUiAgent, AgUiChange, AgUiError, AgUiMessage, AgUiOptions, AgUiStatus, AgUiStreaming,
    AgUiSubscription, AgUiTransport, AgUiTurn, PendingApproval,
};
use agent_surface::Cancellation;
use dioxus::dioxus_core::{current_scope_id, use_drop, use_hook, Runtime, ScopeId};
use dioxus::prelude::*;

use crate::hooks::untracked;
use crate::provider::consume_surface;

/// A turn as the agent returns it, boxed to be polled once and spawned.
type Turn = Pin<Box<dyn Future<Output = Result<AgUiTurn, AgUiError>>>>;

/// The agent's state and the last turn's outcome, as signals.
#[derive(Clone, Copy, PartialEq)]
struct Signals {
    messages: Signal<Vec<AgUiMessage>>,
    status: Signal<AgUiStatus>,
    streaming: Signal<Option<AgUiStreaming>>,
    approvals: Signal<Vec<PendingApproval>>,
    error: Signal<Option<AgUiError>>,
    last_turn: Signal<Option<AgUiTurn>>,
}

impl Signals {
    fn new(agent: &AgUiAgent) -> Self {
        Self {
            messages: Signal::new(agent.messages()),
            status: Signal::new(agent.status()),
            streaming: Signal::new(agent.streaming()),
            approvals: Signal::new(agent.pending_approvals()),
            error: Signal::new(None),
            last_turn: Signal::new(None),
        }
    }

    /// Reads what `change` says changed back from `agent`.
    fn refresh(&self, agent: &AgUiAgent, change: AgUiChange) {
        match change {
            AgUiChange::Messages => set_changed(self.messages, agent.messages()),
            AgUiChange::Status => set_changed(self.status, agent.status()),
            AgUiChange::Approvals => set_changed(self.approvals, agent.pending_approvals()),
            AgUiChange::Streaming => {}
            _ => {
                set_changed(self.messages, agent.messages());
                set_changed(self.status, agent.status());
                set_changed(self.approvals, agent.pending_approvals());
            }
        }
        // Cheap, and keeps the streamed text in step with the status
        // whatever order the notices come in: read it on every change.
        set_changed(self.streaming, agent.streaming());
    }

    /// Records how a turn ended.
    fn finish(&self, outcome: Result<AgUiTurn, AgUiError>) {
        match outcome {
            Ok(turn) => set_changed(self.last_turn, Some(turn)),
            Err(error) => set_changed(self.error, Some(error)),
        }
    }
}

/// Sets `signal` to `value` unless it already holds it, was dropped (the
/// component unmounted) or is borrowed right now.
fn set_changed<T: PartialEq + 'static>(mut signal: Signal<T>, value: T) {
    if signal.try_peek().is_ok_and(|current| *current == value) {
        return;
    }
    if let Ok(mut current) = signal.try_write() {
        *current = value;
    }
}

/// An [`AgUiAgent`] owned by a component, from [`use_ag_ui_agent`]: the
/// thread, the agent's status, what the current run streams, the calls
/// the backend holds for approval and the last turn's outcome, each read
/// from a signal (reading one in a component re-renders the component
/// when it changes), and `send` / `run` / `cancel`. `Copy`, like Dioxus's
/// own handles: pass it to child components and event handlers freely.
///
/// Every method panics once the component that called
/// [`use_ag_ui_agent`] has unmounted, as a dropped signal does.
#[derive(Clone, Copy, PartialEq)]
pub struct UseAgUiAgent {
    agent: CopyValue<AgUiAgent>,
    scope: ScopeId,
    signals: Signals,
    subscription: CopyValue<Option<AgUiSubscription>>,
}

impl std::fmt::Debug for UseAgUiAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("UseAgUiAgent");
        match self.agent.try_peek() {
            Ok(agent) => out.field("agent", &*agent),
            Err(_) => out.field("agent", &"(unmounted)"),
        };
        out.finish_non_exhaustive()
    }
}

/// A chat with an AG-UI agent server over the page's live surface, owned
/// by the calling component. A hook: call it unconditionally, in the same
/// order on every render.
///
/// On the first render it creates an [`AgUiAgent`] over the
/// [`PageSurface`](agent_surface::page::PageSurface) in the Dioxus
/// context ([`crate::use_agent_surface`]) with `transport()` (in a page,
/// [`FetchAgUiTransport::new("/agent")`](agent_surface::agui::FetchAgUiTransport::new)) and
/// `options()`; later renders return the same handle and call neither
/// closure. Each run of the agent declares the page's live catalog as its
/// tools, and the agent's calls of them run through the page's pipeline
/// (bound fields locked, confirmations held in the page and shown by
/// [`crate::use_held_confirmations`], stale calls refused).
///
/// The handle's signals follow [`AgUiAgent::on_change`] for as long as the
/// component is mounted. When it unmounts, the listener is removed and a
/// running turn is cancelled (its request aborted, a held confirmation
/// withdrawn); the agent itself lives on only in clones taken with
/// [`UseAgUiAgent::agent`].
///
/// ```ignore
/// let chat = use_ag_ui_agent(|| FetchAgUiTransport::new("/agent"), AgUiOptions::default);
/// rsx! {
///     for message in chat.messages() { Message { message } }
///     if let Some(error) = chat.error() { p { class: "error", "{error}" } }
///     button { onclick: move |_| { let _ = chat.send("Disable the selected devices"); }, "Send" }
/// }
/// ```
///
/// # Panics
/// Without an [`AgentSurface`](crate::AgentSurface) in the context (see
/// [`crate::use_agent_surface`]).
#[track_caller]
pub fn use_ag_ui_agent<T: AgUiTransport + 'static>(
    transport: impl FnOnce() -> T,
    options: impl FnOnce() -> AgUiOptions,
) -> UseAgUiAgent {
    let handle = use_hook(move || {
        let page = consume_surface().page();
        UseAgUiAgent::start(AgUiAgent::new(&page, transport(), options()))
    });
    use_drop(move || handle.unmount());
    handle
}

impl UseAgUiAgent {
    /// The handle of `agent`, in the current scope, its signals following
    /// the agent.
    fn start(agent: AgUiAgent) -> Self {
        let signals = Signals::new(&agent);
        let slot = CopyValue::new(agent.clone());
        // The listener reads the agent through the component's slot, not a
        // clone: the agent keeps its listeners, and a clone would keep the
        // agent alive through itself.
        let subscription = agent.on_change(move |change| {
            if let Ok(agent) = slot.try_peek() {
                signals.refresh(&agent, change);
            }
        });
        Self {
            agent: slot,
            scope: current_scope_id(),
            signals,
            subscription: CopyValue::new(Some(subscription)),
        }
    }

    /// The component unmounts: the signals stop following the agent and
    /// the running turn, if any, is cancelled.
    fn unmount(&self) {
        let mut subscription = self.subscription;
        let taken = subscription.try_write().ok().and_then(|mut s| s.take());
        drop(taken);
        if let Ok(agent) = self.agent.try_peek() {
            agent.cancel();
        }
    }

    /// The agent (a cheap clone sharing the thread), for what the handle
    /// does not wrap: [`AgUiAgent::deliver_approval`],
    /// [`AgUiAgent::thread_id`], a turn of its own with
    /// [`AgUiAgent::send_with`].
    pub fn agent(&self) -> AgUiAgent {
        self.agent.peek().clone()
    }

    /// The thread: every message sent and received, oldest first
    /// ([`AgUiAgent::messages`]). The user's message is there as soon as
    /// [`Self::send`] returns; a run's assistant and tool messages once the
    /// run completed (a failed run adds nothing). Read from a signal.
    pub fn messages(&self) -> Vec<AgUiMessage> {
        self.signals.messages.cloned()
    }

    /// What the agent is doing ([`AgUiAgent::status`]): `Streaming` while
    /// a run streams, `RunningTools` while the page runs the agent's calls
    /// (perhaps waiting for the user's confirmation), `Idle` between turns.
    /// Read from a signal.
    pub fn status(&self) -> AgUiStatus {
        self.signals.status.cloned()
    }

    /// What the current run has streamed so far, for a chat panel (the
    /// assistant's text and the names of the tools it is calling; `None`
    /// between runs). Read from a signal.
    pub fn streaming(&self) -> Option<AgUiStreaming> {
        self.signals.streaming.cloned()
    }

    /// The calls the backend holds for a person's approval, oldest first
    /// ([`AgUiAgent::pending_approvals`]); deliver each outcome with
    /// [`AgUiAgent::deliver_approval`] on [`Self::agent`], then
    /// [`Self::run`]. Read from a signal.
    pub fn pending_approvals(&self) -> Vec<PendingApproval> {
        self.signals.approvals.cloned()
    }

    /// Why the last turn this handle started failed, if it did: the
    /// [`AgUiError`] of [`AgUiAgent::send`] — `Agent { message, code }` for
    /// the agent's `RUN_ERROR`, `Status`, `Transport`, `Timeout`,
    /// `TooLarge`, `Malformed`, `StreamEnded`, `TooManyRuns`, `Cancelled`
    /// after [`Self::cancel`]. `None` while a turn runs and after one that
    /// finished; cleared by the next [`Self::send`] or [`Self::run`]. Read
    /// from a signal.
    pub fn error(&self) -> Option<AgUiError> {
        self.signals.error.cloned()
    }

    /// What the last turn this handle started did, once it finished (its
    /// runs, every tool call with its outcome, the assistant's last text,
    /// an interrupt's reasons). `None` while a turn runs and after one that
    /// failed; cleared by the next [`Self::send`] or [`Self::run`]. Read
    /// from a signal.
    pub fn last_turn(&self) -> Option<AgUiTurn> {
        self.signals.last_turn.cloned()
    }

    /// Adds the user's `text` to the thread and runs a turn
    /// ([`AgUiAgent::send`]) in a task of the component that owns the
    /// agent (dropped if it unmounts). The turn starts before `send`
    /// returns: the message is in [`Self::messages`] and the first run's
    /// request is on its way. [`Self::error`] and [`Self::last_turn`] are
    /// cleared, and one of them is set when the turn ends.
    ///
    /// # Errors
    /// [`AgUiError::Busy`] while a turn runs on this agent (this handle's
    /// or one started on a clone): the text is not added and the running
    /// turn's outcome is left to land in [`Self::error`] /
    /// [`Self::last_turn`]. Every other error of the turn is reported in
    /// [`Self::error`].
    ///
    /// # Panics
    /// Outside the Dioxus runtime (event handlers, effects and tasks are
    /// inside it; a `web_sys` callback needs a `RuntimeGuard`).
    pub fn send(&self, text: impl Into<String>) -> Result<(), AgUiError> {
        let text = text.into();
        self.spawn_turn(move |agent| Box::pin(agent.send(text)))
    }

    /// Runs a turn on the thread as it stands ([`AgUiAgent::run`]): after
    /// an error, or after [`AgUiAgent::deliver_approval`] so the agent sees
    /// the outcome now. Like [`Self::send`] otherwise; [`Self::cancel`]
    /// ends it.
    ///
    /// # Errors
    /// As [`Self::send`].
    ///
    /// # Panics
    /// As [`Self::send`].
    pub fn run(&self) -> Result<(), AgUiError> {
        self.spawn_turn(|agent| Box::pin(agent.run(Cancellation::new())))
    }

    /// Cancels the running turn, if any ([`AgUiAgent::cancel`]): a
    /// streaming run is aborted, a held confirmation withdrawn, a procedure
    /// call in flight dropped. A turn this handle started then ends with
    /// [`Self::error`] [`AgUiError::Cancelled`].
    pub fn cancel(&self) {
        self.agent.peek().cancel();
    }

    /// Starts `turn` now, in the component's scope, and spawns the rest of
    /// it there.
    fn spawn_turn(&self, turn: impl FnOnce(&AgUiAgent) -> Turn) -> Result<(), AgUiError> {
        let agent = self.agent();
        let signals = self.signals;
        Runtime::current().in_scope(self.scope, move || {
            // The agent starts the turn when it is created (taking the
            // thread, or answering `Busy` at once) and runs up to its first
            // wait on the first poll: poll it here, outside any reactive
            // context (the snapshot of the run's tools reads the signals
            // of `when()` closures, which must not subscribe the caller).
            let mut turn = turn(&agent);
            let mut context = Context::from_waker(Waker::noop());
            let first = untracked(|| turn.as_mut().poll(&mut context));
            if let Poll::Ready(Err(AgUiError::Busy)) = first {
                return Err(AgUiError::Busy);
            }
            set_changed(signals.error, None);
            set_changed(signals.last_turn, None);
            match first {
                Poll::Ready(outcome) => signals.finish(outcome),
                Poll::Pending => {
                    spawn(async move { signals.finish(turn.await) });
                }
            }
            Ok(())
        })
    }
}
