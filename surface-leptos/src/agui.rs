//! `use_ag_ui_agent`: an AG-UI agent in a component (feature `ag-ui`;
//! `docs/frameworks.md`, "Leptos: use_ag_ui_agent").
//!
//! The runtime's [`AgUiAgent`] runs the turn loop over the page's live
//! surface (its tool calls go through the pipeline: bound fields locked,
//! confirmations held in the page). This hook builds one per component
//! from the [`AgentSurface`](crate::AgentSurface) in context and mirrors
//! its state into signals a chat panel reads.

use agent_surface::agui::{
    AgUiAgent, AgUiChange, AgUiError, AgUiMessage, AgUiOptions, AgUiStatus, AgUiStreaming,
    AgUiSubscription, AgUiTransport, AgUiTurn, PendingApproval,
};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::provider::use_agent_surface;

/// One line of a chat transcript ([`AgUiHandle::transcript`], from
/// [`transcript`]): the thread's messages with each tool call paired with
/// the page's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChatEntry {
    /// A user message (what the user typed; also the application's
    /// `[application] …` notes of [`AgUiAgent::deliver_approval`]).
    User {
        /// The message id.
        id: String,
        /// Its text.
        text: String,
    },
    /// The agent's text.
    Assistant {
        /// The message id.
        id: String,
        /// Its text.
        text: String,
    },
    /// A tool the agent called, and what was sent back.
    ToolCall {
        /// The agent's tool call id.
        id: String,
        /// The tool it named (`devices__disable`).
        name: String,
        /// Its arguments as the thread keeps them (JSON text).
        arguments: String,
        /// The tool message answering it (the output as compact JSON, or
        /// the error's text and JSON: `ToolResultText`); `None` while
        /// unanswered.
        result: Option<String>,
    },
}

/// The transcript of `messages`, in order: user and assistant texts, and
/// each assistant tool call paired with the tool message that answers it
/// (`developer` and `system` messages, and tool messages answering no call
/// of the thread, are left out).
pub fn transcript(messages: &[AgUiMessage]) -> Vec<ChatEntry> {
    let answer = |call_id: &str| {
        messages.iter().find_map(|m| match m {
            AgUiMessage::Tool {
                content,
                tool_call_id,
                ..
            } if tool_call_id == call_id => Some(content.clone()),
            _ => None,
        })
    };
    let mut entries = Vec::new();
    for message in messages {
        match message {
            AgUiMessage::User { id, content } => entries.push(ChatEntry::User {
                id: id.clone(),
                text: content.clone(),
            }),
            AgUiMessage::Assistant {
                id,
                content,
                tool_calls,
            } => {
                if let Some(text) = content.as_ref().filter(|t| !t.is_empty()) {
                    entries.push(ChatEntry::Assistant {
                        id: id.clone(),
                        text: text.clone(),
                    });
                }
                entries.extend(tool_calls.iter().map(|call| ChatEntry::ToolCall {
                    id: call.id.clone(),
                    name: call.function.name.clone(),
                    arguments: call.function.arguments.clone(),
                    result: answer(&call.id),
                }));
            }
            _ => {}
        }
    }
    entries
}

/// An AG-UI agent in a component ([`use_ag_ui_agent`]): its thread, status
/// and what the current run streams as signals, and `send` / `cancel`.
/// `Copy`, like the crate's other handles: the agent belongs to the
/// calling component's reactive owner, not to this value; when that owner
/// is cleaned up the listener is removed and a running turn is cancelled.
#[derive(Clone, Copy)]
pub struct AgUiHandle {
    agent: StoredValue<AgUiAgent, LocalStorage>,
    subscription: StoredValue<Option<AgUiSubscription>, LocalStorage>,
    messages: RwSignal<Vec<AgUiMessage>>,
    status: RwSignal<AgUiStatus>,
    streaming: RwSignal<Option<AgUiStreaming>>,
    approvals: RwSignal<Vec<PendingApproval>>,
    error: RwSignal<Option<AgUiError>>,
    last_turn: RwSignal<Option<AgUiTurn>>,
}

/// Builds an [`AgUiAgent`] over the page surface in context, reached
/// through `transport` (`agent_surface::agui::FetchAgUiTransport::new(url)`
/// in a page), and keeps it as long as the calling component is mounted.
/// The component function runs once, so the agent (and its thread) is
/// built once per component.
///
/// The returned [`AgUiHandle`] mirrors the agent into signals
/// ([`AgUiHandle::messages`], [`status`](AgUiHandle::status),
/// [`streaming`](AgUiHandle::streaming),
/// [`pending_approvals`](AgUiHandle::pending_approvals),
/// [`error`](AgUiHandle::error), [`last_turn`](AgUiHandle::last_turn),
/// [`transcript`](AgUiHandle::transcript)), updated from the agent's
/// `on_change` listener, and [`AgUiHandle::send`] runs a turn on Leptos's
/// executor. The agent's tool calls run through the page's pipeline: a
/// call that needs the user's confirmation waits in
/// [`use_held_confirmations`](crate::use_held_confirmations) (the page's
/// dialog) while [`AgUiHandle::status`] is
/// [`AgUiStatus::RunningTools`].
///
/// When the component's owner is cleaned up (it unmounts), the listener is
/// dropped and a running turn is cancelled (a held confirmation is
/// withdrawn, a streaming run aborted).
///
/// # Panics
/// Without an [`AgentSurface`](crate::AgentSurface) in the context
/// ([`use_agent_surface`]).
#[track_caller]
pub fn use_ag_ui_agent(
    transport: impl AgUiTransport + 'static,
    options: AgUiOptions,
) -> AgUiHandle {
    let surface = use_agent_surface();
    let built = AgUiAgent::new(&surface.page(), transport, options);
    let handle = AgUiHandle {
        messages: RwSignal::new(built.messages()),
        status: RwSignal::new(built.status()),
        streaming: RwSignal::new(built.streaming()),
        approvals: RwSignal::new(built.pending_approvals()),
        error: RwSignal::new(None),
        last_turn: RwSignal::new(None),
        agent: StoredValue::new_local(built.clone()),
        subscription: StoredValue::new_local(None),
    };
    // The listener reads the agent through the stored value, not a clone
    // of its own: a clone in the agent's listener list would keep the
    // agent alive forever.
    let subscription = built.on_change(move |change| handle.refresh(change));
    handle.subscription.set_value(Some(subscription));
    on_cleanup(move || {
        if let Some(agent) = handle.agent.try_get_value() {
            agent.cancel();
        }
        let _ = handle.subscription.try_update_value(Option::take);
    });
    handle
}

/// Sets `signal` to `value` unless it holds it already (a run notifies
/// after every chunk: the status effects need not run again each time).
fn set_if_changed<T: PartialEq + Send + Sync + 'static>(signal: RwSignal<T>, value: T) {
    if signal.try_with_untracked(|old| old != &value) == Some(true) {
        signal.try_set(value);
    }
}

impl AgUiHandle {
    /// Copies what `change` names from the agent into its signal.
    fn refresh(&self, change: AgUiChange) {
        let Some(agent) = self.agent.try_get_value() else {
            return;
        };
        match change {
            AgUiChange::Messages => {
                self.messages.try_set(agent.messages());
            }
            AgUiChange::Approvals => {
                self.approvals.try_set(agent.pending_approvals());
            }
            // A run's end clears `streaming` with a status change only.
            _ => {
                set_if_changed(self.status, agent.status());
                set_if_changed(self.streaming, agent.streaming());
            }
        }
    }

    /// The agent (a cheap clone sharing the thread): for what the handle
    /// does not wrap, e.g. [`AgUiAgent::deliver_approval`] and
    /// [`AgUiAgent::run`].
    ///
    /// # Panics
    /// After the owning component was cleaned up.
    pub fn agent(&self) -> AgUiAgent {
        self.agent.get_value()
    }

    /// Adds the user's `text` to the thread and runs a turn on Leptos's
    /// executor ([`AgUiAgent::send`]). [`Self::error`] is cleared when it
    /// starts and set if it fails; [`Self::last_turn`] is set when it
    /// succeeds. While a turn runs another `send` is refused with
    /// [`AgUiError::Busy`] (in [`Self::error`]) and its text is not added.
    /// A no-op once the owning component was cleaned up.
    pub fn send(&self, text: impl Into<String>) {
        let Some(agent) = self.agent.try_get_value() else {
            return;
        };
        let (error, last_turn) = (self.error, self.last_turn);
        error.try_set(None);
        let turn = agent.send(text);
        spawn_local(async move {
            match turn.await {
                Ok(turn) => {
                    last_turn.try_set(Some(turn));
                }
                Err(e) => {
                    error.try_set(Some(e));
                }
            }
        });
    }

    /// Cancels the running turn, if any ([`AgUiAgent::cancel`]): its
    /// error becomes [`AgUiError::Cancelled`].
    pub fn cancel(&self) {
        if let Some(agent) = self.agent.try_get_value() {
            agent.cancel();
        }
    }

    /// The thread, oldest first ([`AgUiAgent::messages`]).
    pub fn messages(&self) -> Signal<Vec<AgUiMessage>> {
        self.messages.into()
    }

    /// The thread as a chat panel shows it ([`transcript`]): texts, and
    /// each tool call with its answer.
    pub fn transcript(&self) -> Signal<Vec<ChatEntry>> {
        let messages = self.messages;
        Signal::derive(move || messages.with(|m| transcript(m)))
    }

    /// What the agent is doing ([`AgUiAgent::status`]).
    pub fn status(&self) -> Signal<AgUiStatus> {
        self.status.into()
    }

    /// What the current run has streamed so far, `None` between runs
    /// ([`AgUiAgent::streaming`]).
    pub fn streaming(&self) -> Signal<Option<AgUiStreaming>> {
        self.streaming.into()
    }

    /// Calls the backend holds for a person's approval
    /// ([`AgUiAgent::pending_approvals`]).
    pub fn pending_approvals(&self) -> Signal<Vec<PendingApproval>> {
        self.approvals.into()
    }

    /// Why the last turn sent through this handle failed (`None` while it
    /// runs and after it succeeded).
    pub fn error(&self) -> Signal<Option<AgUiError>> {
        self.error.into()
    }

    /// What the last successful turn sent through this handle did (its
    /// runs, tool calls with their outcomes, final text); a failed turn
    /// leaves the previous one.
    pub fn last_turn(&self) -> Signal<Option<AgUiTurn>> {
        self.last_turn.into()
    }
}
