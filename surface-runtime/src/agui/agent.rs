//! [`AgUiAgent`]: the thread, the turn loop and the page's tool calls.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::event::{Interrupt, RunOutcome};
use super::ids::fresh_id;
use super::message::{AgUiContext, AgUiMessage, AgUiTool, AgUiToolCall, RunAgentInput};
use super::run::{stream_run, RunOutput, StreamedCall};
use super::transport::AgUiTransport;
use super::{AgUiError, AgUiLimits};
use crate::export::ToolResultText;
use crate::export::{ExportOptions, ResolvedCall, ToolCall, ToolCallError, ToolCatalog};
use crate::invocation::{AgentConsumer, AgentError, AgentInvocationResult, ErrorCode, Retry};
use crate::page::PageSurface;
use crate::snapshot::SurfaceSnapshot;
use crate::sync::{lock, MaybeSend, MaybeSync};
use crate::Cancellation;

/// The consumer id of AG-UI calls ([`ag_ui_consumer`]).
pub const AG_UI_CONSUMER_ID: &str = "ag-ui";

/// The consumer AG-UI calls run as by default: **embedded** (the agent
/// acts on the live view, so it sees view capabilities) with id
/// [`AG_UI_CONSUMER_ID`]. Policies and audit see this id.
pub fn ag_ui_consumer() -> AgentConsumer {
    AgentConsumer::embedded(AG_UI_CONSUMER_ID)
}

#[cfg(not(target_arch = "wasm32"))]
type ContextFn = dyn Fn(&SurfaceSnapshot) -> Vec<AgUiContext> + Send + Sync;
#[cfg(target_arch = "wasm32")]
type ContextFn = dyn Fn(&SurfaceSnapshot) -> Vec<AgUiContext>;
#[cfg(not(target_arch = "wasm32"))]
type StateFn = dyn Fn(&SurfaceSnapshot) -> Value + Send + Sync;
#[cfg(target_arch = "wasm32")]
type StateFn = dyn Fn(&SurfaceSnapshot) -> Value;
#[cfg(not(target_arch = "wasm32"))]
type Listener = dyn Fn(AgUiChange) + Send + Sync;
#[cfg(target_arch = "wasm32")]
type Listener = dyn Fn(AgUiChange);

/// Options of [`AgUiAgent::new`].
#[derive(Clone)]
pub struct AgUiOptions {
    /// Who the snapshot is computed for and calls run as (default
    /// [`ag_ui_consumer`]).
    pub consumer: AgentConsumer,
    /// How the tools are exported (default: available tools only, one tool
    /// per capability; [`crate::export::ToolMode::Meta`] sends the two meta
    /// tools instead).
    pub export: ExportOptions,
    /// Every bound of the client.
    pub limits: AgUiLimits,
    /// The thread id (default: a fresh `thread-` id).
    pub thread_id: Option<String>,
    /// Sent as `forwardedProps` with every run (default `{}`).
    pub forwarded_props: Value,
    context: Option<Arc<ContextFn>>,
    state: Option<Arc<StateFn>>,
}

impl std::fmt::Debug for AgUiOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgUiOptions")
            .field("consumer", &self.consumer)
            .field("export", &self.export)
            .field("limits", &self.limits)
            .field("thread_id", &self.thread_id)
            .field("context", &self.context.is_some())
            .field("state", &self.state.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for AgUiOptions {
    fn default() -> Self {
        Self {
            consumer: ag_ui_consumer(),
            export: ExportOptions::default(),
            limits: AgUiLimits::default(),
            thread_id: None,
            forwarded_props: Value::Object(serde_json::Map::new()),
            context: None,
            state: None,
        }
    }
}

impl AgUiOptions {
    /// Sends `context(snapshot)` as every run's `context` (for example what
    /// the view shows). The snapshot is the run's own, for the consumer.
    #[must_use]
    pub fn with_context(
        mut self,
        context: impl Fn(&SurfaceSnapshot) -> Vec<AgUiContext> + MaybeSend + MaybeSync + 'static,
    ) -> Self {
        self.context = Some(Arc::new(context));
        self
    }

    /// Sends `state(snapshot)` as every run's `state` (default `{}`).
    #[must_use]
    pub fn with_state(
        mut self,
        state: impl Fn(&SurfaceSnapshot) -> Value + MaybeSend + MaybeSync + 'static,
    ) -> Self {
        self.state = Some(Arc::new(state));
        self
    }

    /// These options with another export (for example
    /// `include_unavailable`, or [`crate::export::ToolMode::Meta`]).
    #[must_use]
    pub fn with_export(mut self, export: ExportOptions) -> Self {
        self.export = export;
        self
    }

    /// These options with a thread id (to continue a conversation the
    /// agent server knows).
    #[must_use]
    pub fn with_thread_id(mut self, thread_id: impl Into<String>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// These options with another consumer (who the snapshot is for and
    /// calls run as; policies and audit see it).
    #[must_use]
    pub fn with_consumer(mut self, consumer: AgentConsumer) -> Self {
        self.consumer = consumer;
        self
    }

    /// These options with other limits.
    #[must_use]
    pub fn with_limits(mut self, limits: AgUiLimits) -> Self {
        self.limits = limits;
        self
    }

    /// These options with a `forwardedProps` object.
    #[must_use]
    pub fn with_forwarded_props(mut self, props: Value) -> Self {
        self.forwarded_props = props;
        self
    }
}

/// What changed, for [`AgUiAgent::on_change`] listeners.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgUiChange {
    /// [`AgUiAgent::messages`].
    Messages,
    /// [`AgUiAgent::status`].
    Status,
    /// [`AgUiAgent::streaming`] (after every chunk of a run that completed
    /// events, and when it goes back to `None` once the run's calls are
    /// answered).
    Streaming,
    /// [`AgUiAgent::pending_approvals`].
    Approvals,
}

/// What the agent is doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgUiStatus {
    /// No turn is running.
    #[default]
    Idle,
    /// A turn has started and a run is streaming (from the moment
    /// [`AgUiAgent::send`] returns).
    Streaming,
    /// The page runs the agent's tool calls (perhaps waiting for the
    /// user's confirmation).
    RunningTools,
}

/// How one tool call of the agent was answered.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgUiCallOutcome {
    /// It went through the registry's pipeline (success or any of its
    /// errors: locked field, unavailable, stale, confirmation declined, …).
    Ran(AgentInvocationResult),
    /// It never reached the pipeline: a tool this run did not declare, a
    /// call whose arguments did not arrive completely or are not a JSON
    /// object. Nothing ran.
    Refused(AgentInvocationResult),
    /// A meta-mode `surface_discover` call, answered from the catalog.
    Discovered(String),
    /// The agent ran it itself and sent its result (`TOOL_CALL_RESULT`).
    AnsweredByAgent(String),
    /// A call id the thread has answered already (an agent replaying or
    /// retrying): not run again, and its first answer stays the only one.
    Repeated,
}

impl AgUiCallOutcome {
    /// The pipeline's or the refusal's result, if any.
    pub fn result(&self) -> Option<&AgentInvocationResult> {
        match self {
            Self::Ran(result) | Self::Refused(result) => Some(result),
            _ => None,
        }
    }

    /// The tool message's text sent back to the agent.
    pub fn text(&self) -> String {
        match self {
            Self::Ran(result) | Self::Refused(result) => ToolResultText::new(result).text,
            Self::Discovered(text) | Self::AnsweredByAgent(text) => text.clone(),
            Self::Repeated => String::new(),
        }
    }
}

/// One tool call of a turn.
#[derive(Clone, Debug, PartialEq)]
pub struct AgUiCall {
    /// The agent's `toolCallId`.
    pub tool_call_id: String,
    /// The tool it named.
    pub tool_name: String,
    /// Its arguments as the agent sent them.
    pub arguments: String,
    /// How it was answered.
    pub outcome: AgUiCallOutcome,
}

/// What a turn did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgUiTurn {
    /// Runs made (one, plus one per round of tool results).
    pub runs: usize,
    /// Every tool call, in order.
    pub calls: Vec<AgUiCall>,
    /// The assistant's text in the last run.
    pub text: String,
    /// When the last run ended with an interrupt outcome: what it waits
    /// for (this client reports interrupts; it does not answer them).
    pub interrupts: Vec<Interrupt>,
}

/// A call the backend holds for a person's approval
/// (`DOMAIN_APPROVAL_REQUIRED`), whose outcome the application delivers
/// later with [`AgUiAgent::deliver_approval`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingApproval {
    /// The backend's approval id (`details.approvalId`).
    pub approval_id: String,
    /// The agent's tool call.
    pub tool_call_id: String,
    /// The tool it named.
    pub tool_name: String,
    /// The capability (`domain:devices.purge`).
    pub capability_id: String,
    /// The invocation id the page ran it under.
    pub invocation_id: String,
}

/// Why [`AgUiAgent::deliver_approval`] refused an outcome.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalDeliveryError {
    /// No pending approval has this id (never held by this agent, already
    /// delivered, or forgotten past the limit).
    #[error("no pending approval `{0}`; an outcome is delivered once")]
    Unknown(String),
}

/// What a run streams so far, for a chat panel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgUiStreaming {
    /// The assistant's text so far.
    pub text: String,
    /// The tools it is calling, by name.
    pub tool_calls: Vec<String>,
}

#[derive(Default)]
struct State {
    forwarded_props: Option<Value>,
    messages: VecDeque<AgUiMessage>,
    weight: usize,
    status: AgUiStatus,
    running: Option<Cancellation>,
    streaming: Option<AgUiStreaming>,
    streamed: Streamed,
    approvals: VecDeque<PendingApproval>,
    listeners: Vec<(u64, Arc<Listener>)>,
    next_listener: u64,
}

struct Inner {
    page: PageSurface,
    transport: Arc<dyn AgUiTransport>,
    options: AgUiOptions,
    thread_id: String,
    state: Mutex<State>,
}

/// An AG-UI client over a page's live surface (`docs/agents.md`,
/// "AG-UI"): each run declares the catalog as the run's `tools`, the
/// agent's calls of those tools run through the page's pipeline (bound
/// fields locked, confirmation held in the page, staleness checked), and
/// their results go back as tool messages in the next run. Cloning shares
/// the thread.
#[derive(Clone)]
pub struct AgUiAgent {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AgUiAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgUiAgent")
            .field("url", &self.inner.transport.url())
            .field("thread_id", &self.inner.thread_id)
            .field("status", &self.status())
            .finish()
    }
}

impl AgUiAgent {
    /// An agent for `page`'s surface reached through `transport`.
    pub fn new(
        page: &PageSurface,
        transport: impl AgUiTransport + 'static,
        options: AgUiOptions,
    ) -> Self {
        let thread_id = options
            .thread_id
            .clone()
            .unwrap_or_else(|| fresh_id("thread"));
        Self {
            inner: Arc::new(Inner {
                page: page.clone(),
                transport: Arc::new(transport),
                options,
                thread_id,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The thread id every run carries.
    pub fn thread_id(&self) -> &str {
        &self.inner.thread_id
    }

    /// The thread: every message sent and received, oldest first.
    pub fn messages(&self) -> Vec<AgUiMessage> {
        lock(&self.inner.state).messages.iter().cloned().collect()
    }

    /// What the agent is doing.
    pub fn status(&self) -> AgUiStatus {
        lock(&self.inner.state).status
    }

    /// What the current run has streamed so far, kept while the page runs
    /// its calls (`None` between runs).
    pub fn streaming(&self) -> Option<AgUiStreaming> {
        lock(&self.inner.state).streaming.clone()
    }

    /// Replaces the `forwardedProps` sent from the next run on (the
    /// options' value until then).
    pub fn set_forwarded_props(&self, props: Value) {
        lock(&self.inner.state).forwarded_props = Some(props);
    }

    /// Calls the backend holds for approval, oldest first.
    pub fn pending_approvals(&self) -> Vec<PendingApproval> {
        lock(&self.inner.state).approvals.iter().cloned().collect()
    }

    /// Calls `listener` after every change (read the new state with the
    /// matching getter). Dropping the subscription removes it.
    pub fn on_change(
        &self,
        listener: impl Fn(AgUiChange) + MaybeSend + MaybeSync + 'static,
    ) -> AgUiSubscription {
        let mut state = lock(&self.inner.state);
        state.next_listener += 1;
        let id = state.next_listener;
        state.listeners.push((id, Arc::new(listener)));
        AgUiSubscription {
            inner: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// Cancels the running turn, if any: a streaming run is aborted, a
    /// held confirmation withdrawn, a procedure call in flight dropped
    /// (its answer is `CANCELLED`).
    pub fn cancel(&self) {
        if let Some(cancellation) = lock(&self.inner.state).running.clone() {
            cancellation.cancel();
        }
    }

    /// Adds the user's `text` to the thread and runs a turn
    /// ([`Self::run`]).
    ///
    /// # Errors
    /// [`AgUiError`]; [`AgUiError::Busy`] (and the text is not added)
    /// while another turn runs.
    pub fn send(
        &self,
        text: impl Into<String>,
    ) -> impl std::future::Future<Output = Result<AgUiTurn, AgUiError>> + 'static {
        let started = self.start(Some(text.into()), Cancellation::new());
        run_turn(self.inner.clone(), started)
    }

    /// [`Self::send`], also ended by `cancellation` (in a browser, cancel
    /// it from an `AbortSignal`'s `abort` event).
    ///
    /// # Errors
    /// As [`Self::send`].
    pub fn send_with(
        &self,
        text: impl Into<String>,
        cancellation: Cancellation,
    ) -> impl std::future::Future<Output = Result<AgUiTurn, AgUiError>> + 'static {
        let started = self.start(Some(text.into()), cancellation);
        run_turn(self.inner.clone(), started)
    }

    /// Runs a turn on the thread as it stands (after an error, or after
    /// [`Self::deliver_approval`] so the agent sees the outcome now): runs
    /// until the agent answers without calling a page tool, at most
    /// [`AgUiLimits::max_runs_per_turn`] runs.
    ///
    /// # Errors
    /// As [`Self::send`].
    pub fn run(
        &self,
        cancellation: Cancellation,
    ) -> impl std::future::Future<Output = Result<AgUiTurn, AgUiError>> + 'static {
        let started = self.start(None, cancellation);
        run_turn(self.inner.clone(), started)
    }

    fn start(
        &self,
        text: Option<String>,
        cancellation: Cancellation,
    ) -> Result<Running, AgUiError> {
        let mut state = lock(&self.inner.state);
        if state.running.is_some() {
            return Err(AgUiError::Busy);
        }
        state.running = Some(cancellation.clone());
        // Busy from now on, before the turn's future is first polled.
        state.status = AgUiStatus::Streaming;
        if let Some(text) = text {
            let message = AgUiMessage::User {
                id: fresh_id("msg"),
                content: text,
            };
            push_message(&mut state, message, &self.inner.options.limits);
        }
        drop(state);
        self.inner.notify(AgUiChange::Status);
        self.inner.notify(AgUiChange::Messages);
        Ok(Running {
            inner: self.inner.clone(),
            cancellation,
        })
    }

    /// Delivers the outcome of a call the backend held for approval, once
    /// the application resumed it (`GovernedOrpcAgentBridge::resume`, or
    /// the host's approver): a `user` message saying which call it was and
    /// its result joins the thread, so the agent sees it on the next run.
    /// The call is never run again. (`user`, not `developer`: agents such
    /// as `@ag-ui/mastra` drop developer and system messages.)
    ///
    /// # Errors
    /// [`ApprovalDeliveryError::Unknown`] for an approval this agent does
    /// not hold (or already delivered).
    pub fn deliver_approval(
        &self,
        approval_id: &str,
        result: &AgentInvocationResult,
    ) -> Result<(), ApprovalDeliveryError> {
        let mut state = lock(&self.inner.state);
        let position = state
            .approvals
            .iter()
            .position(|a| a.approval_id == approval_id)
            .ok_or_else(|| ApprovalDeliveryError::Unknown(approval_id.to_string()))?;
        let Some(pending) = state.approvals.remove(position) else {
            return Err(ApprovalDeliveryError::Unknown(approval_id.to_string()));
        };
        let content = format!(
            "[application] The call of tool `{}` (tool call {}) that the server held for approval \
             was decided and has finished; do not make it again. Its result: {}",
            pending.tool_name,
            pending.tool_call_id,
            ToolResultText::new(result).text
        );
        let message = AgUiMessage::User {
            id: fresh_id("msg"),
            content,
        };
        push_message(&mut state, message, &self.inner.options.limits);
        drop(state);
        self.inner.notify(AgUiChange::Approvals);
        self.inner.notify(AgUiChange::Messages);
        Ok(())
    }
}

/// A listener from [`AgUiAgent::on_change`]; dropping it removes the
/// listener.
#[must_use = "dropping the subscription unsubscribes the listener"]
pub struct AgUiSubscription {
    inner: std::sync::Weak<Inner>,
    id: u64,
}

impl std::fmt::Debug for AgUiSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgUiSubscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for AgUiSubscription {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            lock(&inner.state)
                .listeners
                .retain(|(id, _)| *id != self.id);
        }
    }
}

/// A turn holding the agent; dropping it (the turn's future dropped, or
/// the turn over) frees the agent.
struct Running {
    inner: Arc<Inner>,
    cancellation: Cancellation,
}

impl Drop for Running {
    fn drop(&mut self) {
        let was_streaming = {
            let mut state = lock(&self.inner.state);
            state.running = None;
            state.streamed = Streamed::default();
            state.status = AgUiStatus::Idle;
            state.streaming.take().is_some()
        };
        // A turn dropped mid-run: what it streamed is gone.
        if was_streaming {
            self.inner.notify(AgUiChange::Streaming);
        }
        self.inner.notify(AgUiChange::Status);
    }
}

/// Adds `message`, then drops the oldest messages while the thread is over
/// its limits: a unit at a time — a user, developer or system message
/// alone, an assistant message with the tool messages that follow it — so
/// a tool call never loses its answer; the newest two units always stay.
fn push_message(state: &mut State, message: AgUiMessage, limits: &AgUiLimits) {
    state.weight += message.weight();
    state.messages.push_back(message);
    while state.messages.len() > limits.max_thread_messages
        || state.weight > limits.max_thread_bytes
    {
        let unit = first_unit_len(&state.messages);
        let units_after = count_units(state.messages.iter().skip(unit));
        if units_after < 2 {
            break;
        }
        for _ in 0..unit {
            if let Some(old) = state.messages.pop_front() {
                state.weight -= old.weight();
            }
        }
    }
}

fn is_tool(message: &AgUiMessage) -> bool {
    matches!(message, AgUiMessage::Tool { .. })
}

/// Length of the first unit (see [`push_message`]).
fn first_unit_len(messages: &VecDeque<AgUiMessage>) -> usize {
    1 + messages.iter().skip(1).take_while(|m| is_tool(m)).count()
}

/// Units in `messages`: every message that is not a tool message starts one.
fn count_units<'a>(messages: impl Iterator<Item = &'a AgUiMessage>) -> usize {
    let mut units = 0;
    for (i, message) in messages.enumerate() {
        if i == 0 || !is_tool(message) {
            units += 1;
        }
    }
    units
}

impl Inner {
    fn notify(&self, change: AgUiChange) {
        let listeners: Vec<Arc<Listener>> = lock(&self.state)
            .listeners
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for listener in listeners {
            listener(change);
        }
    }

    fn set_status(&self, status: AgUiStatus) {
        lock(&self.state).status = status;
        self.notify(AgUiChange::Status);
    }

    /// Brings [`AgUiAgent::streaming`] up to `output` after a chunk that
    /// completed events: appends what the last message gained (the usual
    /// case) instead of joining every message again.
    fn set_streaming(&self, output: &RunOutput) {
        let mut state = lock(&self.state);
        let seen = state.streamed;
        let streaming = state.streaming.get_or_insert_with(AgUiStreaming::default);
        let last = output.texts.last().map_or("", |(_, t)| t.as_str());
        let total = output.text_bytes();
        let only_last_grew = output.texts.len() == seen.messages
            && seen.messages > 0
            && total - seen.total == last.len() - seen.last;
        if only_last_grew {
            streaming.text.push_str(&last[seen.last..]);
        } else if total != seen.total || output.texts.len() != seen.messages {
            streaming.text = output.text();
        }
        if streaming.tool_calls.len() != output.calls.len() {
            streaming.tool_calls = output.calls.iter().map(|c| c.name.clone()).collect();
        }
        state.streamed = Streamed {
            messages: output.texts.len(),
            total,
            last: last.len(),
        };
        drop(state);
        self.notify(AgUiChange::Streaming);
    }

    /// The run ended: nothing streams.
    fn clear_streaming(&self) {
        {
            let mut state = lock(&self.state);
            state.streaming = None;
            state.streamed = Streamed::default();
        }
        self.notify(AgUiChange::Streaming);
    }
}

/// How much of a run [`AgUiAgent::streaming`] shows: text messages, their
/// total bytes, and the last one's.
#[derive(Clone, Copy, Debug, Default)]
struct Streamed {
    messages: usize,
    total: usize,
    last: usize,
}

/// One run's request and what it declared.
struct PreparedRun {
    body: String,
    catalog: ToolCatalog,
    declared: HashSet<String>,
    /// Tool call ids the thread has answered already.
    answered: HashSet<String>,
}

impl Inner {
    fn prepare_run(&self) -> Result<PreparedRun, AgUiError> {
        let options = &self.options;
        let snapshot = self.page.registry().snapshot(&options.consumer);
        let catalog = ToolCatalog::with_options(&snapshot, &options.export)?;
        let tools: Vec<AgUiTool> = catalog
            .mcp_tools()
            .into_iter()
            .map(|tool| AgUiTool {
                name: tool.name,
                description: tool.description.unwrap_or_default(),
                parameters: tool.input_schema,
            })
            .collect();
        let declared = tools.iter().map(|t| t.name.clone()).collect();
        let mut input = RunAgentInput::new(self.thread_id.clone(), fresh_id("run"));
        input.messages = lock(&self.state).messages.iter().cloned().collect();
        let answered = input
            .messages
            .iter()
            .filter_map(|m| match m {
                AgUiMessage::Tool { tool_call_id, .. } => Some(tool_call_id.clone()),
                _ => None,
            })
            .collect();
        input.tools = tools;
        if let Some(context) = &options.context {
            input.context = context(&snapshot);
        }
        if let Some(state) = &options.state {
            input.state = state(&snapshot);
        }
        input.forwarded_props = lock(&self.state)
            .forwarded_props
            .clone()
            .unwrap_or_else(|| options.forwarded_props.clone());
        let body = serde_json::to_string(&input).unwrap_or_else(|_| "{}".to_string());
        Ok(PreparedRun {
            body,
            catalog,
            declared,
            answered,
        })
    }
}

async fn run_turn(
    inner: Arc<Inner>,
    started: Result<Running, AgUiError>,
) -> Result<AgUiTurn, AgUiError> {
    let running = started?;
    let cancellation = running.cancellation.clone();
    let limits = inner.options.limits;
    let mut turn = AgUiTurn::default();
    loop {
        if turn.runs == limits.max_runs_per_turn {
            return Err(AgUiError::TooManyRuns {
                limit: limits.max_runs_per_turn,
            });
        }
        turn.runs += 1;
        let prepared = inner.prepare_run()?;
        inner.set_status(AgUiStatus::Streaming);
        let body = prepared.body.clone();
        let observe = |output: &RunOutput| inner.set_streaming(output);
        // What streamed stays in `streaming()` while the page runs the
        // calls (a panel shows "calling …"); the turn's end clears it on
        // every other path (`Running`'s drop).
        let output = stream_run(&*inner.transport, body, limits, &cancellation, observe).await?;
        // Cancelled while the last bytes arrived: nothing of the run runs.
        if cancellation.is_cancelled() {
            return Err(AgUiError::Cancelled);
        }
        if let Some(error) = output.error {
            return Err(AgUiError::Agent {
                message: super::foreign_text(&error.message),
                code: error.code.as_deref().map(super::foreign_text),
            });
        }
        let (calls, ran) = answer_run(&inner, &prepared, &output, &cancellation).await;
        inner.clear_streaming();
        turn.text = output.text();
        turn.calls.extend(calls);
        if cancellation.is_cancelled() {
            return Err(AgUiError::Cancelled);
        }
        if let Some(RunOutcome::Interrupt { interrupts }) = output.outcome {
            turn.interrupts = interrupts;
            break;
        }
        // Another run only when the agent waits for a page tool's answer.
        if !ran {
            break;
        }
    }
    drop(running);
    Ok(turn)
}

/// The outcome of the calls of a run that ended with an interrupt or a
/// cancelled outcome: the agent asks for nothing, so the page runs none.
fn not_run(prepared: &PreparedRun, outcome: &RunOutcome) -> AgUiCallOutcome {
    let message = match outcome {
        RunOutcome::Interrupt { .. } => {
            "The agent's run stopped for an interrupt; the page did not run this call."
        }
        _ => "The agent's run ended as cancelled; the page did not run this call.",
    };
    let error = AgentError::new(ErrorCode::Cancelled, message, Retry::No);
    let version = prepared.catalog.surface_version();
    AgUiCallOutcome::Refused(AgentInvocationResult::err(
        fresh_id("agui"),
        "",
        error,
        version,
    ))
}

/// Answers a run's calls and commits them; returns them and whether a page
/// tool ran (the agent then waits for its answer).
async fn answer_run(
    inner: &Arc<Inner>,
    prepared: &PreparedRun,
    output: &RunOutput,
    cancellation: &Cancellation,
) -> (Vec<AgUiCall>, bool) {
    if let Some(outcome @ (RunOutcome::Interrupt { .. } | RunOutcome::Cancelled)) = &output.outcome
    {
        // Kept out of the thread: the agent's server holds them.
        let calls = output
            .calls
            .iter()
            .map(|c| streamed_call(c, not_run(prepared, outcome)))
            .collect();
        inner.commit(output, &[]);
        return (calls, false);
    }
    let needs_page = output
        .calls
        .iter()
        .any(|c| !output.agent_results.contains_key(&c.id));
    if needs_page {
        inner.set_status(AgUiStatus::RunningTools);
    }
    let calls = answer_calls(inner, prepared, output, cancellation).await;
    let ran = calls.iter().any(|c| {
        matches!(
            c.outcome,
            AgUiCallOutcome::Ran(_) | AgUiCallOutcome::Discovered(_)
        )
    });
    (calls, ran)
}

fn streamed_call(call: &StreamedCall, outcome: AgUiCallOutcome) -> AgUiCall {
    AgUiCall {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: call.arguments.clone(),
        outcome,
    }
}

/// How a streamed call is answered before anything runs.
enum Decision {
    Done(AgUiCallOutcome),
    Invoke(crate::AgentInvocation),
}

/// `INVALID_INPUT` for a call whose arguments did not arrive completely.
fn incomplete(invocation_id: &str, capability_id: &str, version: u64) -> AgentInvocationResult {
    let message = "The call's arguments did not arrive completely; it was not run.";
    let error = AgentError::new(ErrorCode::InvalidInput, message, Retry::WithChanges).with_detail(
        "issues",
        serde_json::json!([{"path": "", "message": message}]),
    );
    AgentInvocationResult::err(invocation_id, capability_id, error, version)
}

/// The text of a `surface_discover` answer: its structured content.
fn discovered_text(answer: &crate::export::McpCallToolResult) -> String {
    match &answer.structured_content {
        Some(content) => Value::Object(content.clone()).to_string(),
        None => answer
            .content
            .iter()
            .map(|c| match c {
                crate::export::McpContent::Text { text } => text.as_str(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn decide(prepared: &PreparedRun, output: &RunOutput, call: &StreamedCall) -> Decision {
    if prepared.answered.contains(&call.id) {
        return Decision::Done(AgUiCallOutcome::Repeated);
    }
    if let Some(content) = output.agent_results.get(&call.id) {
        return Decision::Done(AgUiCallOutcome::AnsweredByAgent(content.clone()));
    }
    let catalog = &prepared.catalog;
    let version = catalog.surface_version();
    let id = fresh_id("agui");
    let capability_of = |name: &str| {
        catalog
            .tool(name)
            .map_or(String::new(), |t| t.capability_id().to_string())
    };
    if !prepared.declared.contains(&call.name) {
        let name: String = call.name.chars().take(128).collect();
        let error = ToolCallError::UnknownTool {
            name,
            surface_version: version,
        };
        return Decision::Done(AgUiCallOutcome::Refused(error.to_result(&id, "", version)));
    }
    if !call.complete {
        let result = incomplete(&id, &capability_of(&call.name), version);
        return Decision::Done(AgUiCallOutcome::Refused(result));
    }
    let resolved = ToolCall::from_json_arguments(call.name.as_str(), id.as_str(), &call.arguments)
        .and_then(|c| catalog.resolve_call(c));
    let refuse = |e: ToolCallError, name: &str| {
        Decision::Done(AgUiCallOutcome::Refused(e.to_result(
            &id,
            capability_of(name),
            version,
        )))
    };
    match resolved {
        Err(e) => refuse(e, &call.name),
        Ok(ResolvedCall::Discovered(answer)) => {
            Decision::Done(AgUiCallOutcome::Discovered(discovered_text(&answer)))
        }
        Ok(ResolvedCall::Tool(tool_call)) => {
            let target = tool_call.name.clone();
            match catalog.invocation(tool_call) {
                Ok(invocation) => Decision::Invoke(invocation),
                Err(e) => refuse(e, &target),
            }
        }
    }
}

/// Answers every call of a run: the page's through the pipeline, all at
/// once (the pipeline's concurrency groups order what must not overlap),
/// and commits them to the thread — also when the turn is dropped midway
/// ([`Answering`]).
async fn answer_calls(
    inner: &Arc<Inner>,
    prepared: &PreparedRun,
    output: &RunOutput,
    cancellation: &Cancellation,
) -> Vec<AgUiCall> {
    let consumer = &inner.options.consumer;
    let answering = Answering::new(inner.clone(), output.clone());
    let mut invocations = Vec::new();
    for (index, call) in output.calls.iter().enumerate() {
        match decide(prepared, output, call) {
            Decision::Done(outcome) => answering.settle(index, outcome),
            // Cancelled before it started (a stop button at RunningTools):
            // never handed to the pipeline.
            Decision::Invoke(invocation) if cancellation.is_cancelled() => {
                let error =
                    AgentError::new(ErrorCode::Cancelled, "The turn was cancelled.", Retry::No);
                let version = prepared.catalog.surface_version();
                let result = AgentInvocationResult::err(
                    invocation.invocation_id,
                    invocation.capability_id,
                    error,
                    version,
                );
                answering.settle(index, AgUiCallOutcome::Ran(result));
            }
            Decision::Invoke(invocation) => {
                let run =
                    inner
                        .page
                        .invoke_in_page(invocation, consumer.clone(), cancellation.clone());
                let answering = &answering;
                invocations.push(async move {
                    let result = run.await;
                    answering.settle(index, AgUiCallOutcome::Ran(result));
                });
            }
        }
    }
    futures_util::future::join_all(invocations).await;
    answering.finish()
}

/// The answers of one run's calls as they settle. Committed to the thread
/// by [`Answering::finish`], or — when the turn is dropped before — by its
/// `Drop`, the calls still running recorded as `CANCELLED` (dropping their
/// futures withdrew a held confirmation or dropped the procedure call), so
/// the agent learns what already ran.
struct Answering {
    inner: Arc<Inner>,
    output: RunOutput,
    outcomes: Mutex<Vec<Option<AgUiCallOutcome>>>,
    finished: bool,
}

impl Answering {
    fn new(inner: Arc<Inner>, output: RunOutput) -> Self {
        let outcomes = Mutex::new(vec![None; output.calls.len()]);
        Self {
            inner,
            output,
            outcomes,
            finished: false,
        }
    }

    fn settle(&self, index: usize, outcome: AgUiCallOutcome) {
        if let Some(slot) = lock(&self.outcomes).get_mut(index) {
            *slot = Some(outcome);
        }
    }

    /// The calls, the unsettled ones `CANCELLED`; committed and recorded.
    fn commit(&self) -> Vec<AgUiCall> {
        let outcomes = std::mem::take(&mut *lock(&self.outcomes));
        let calls: Vec<AgUiCall> = self
            .output
            .calls
            .iter()
            .zip(outcomes)
            .map(|(call, outcome)| {
                let outcome = outcome.unwrap_or_else(|| {
                    let error =
                        AgentError::new(ErrorCode::Cancelled, "The turn was dropped.", Retry::No);
                    AgUiCallOutcome::Ran(AgentInvocationResult::err("", "", error, 0))
                });
                streamed_call(call, outcome)
            })
            .collect();
        self.inner.hold_approvals(&calls);
        self.inner.commit(&self.output, &calls);
        calls
    }

    fn finish(mut self) -> Vec<AgUiCall> {
        self.finished = true;
        self.commit()
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        if !self.finished {
            self.commit();
        }
    }
}

/// The arguments as the thread keeps them: a JSON object's text, else
/// `{}` (agents parse them on every later run).
fn kept_arguments(arguments: &str) -> &str {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(_)) => arguments,
        _ => "{}",
    }
}

impl Inner {
    /// Records the calls the backend holds for approval.
    fn hold_approvals(&self, calls: &[AgUiCall]) {
        let mut held = false;
        let mut state = lock(&self.state);
        for call in calls {
            let AgUiCallOutcome::Ran(result) = &call.outcome else {
                continue;
            };
            let Some(error) = result.error() else {
                continue;
            };
            let approval_id = error.details.get("approvalId").and_then(Value::as_str);
            let (ErrorCode::DomainApprovalRequired, Some(approval_id)) = (&error.code, approval_id)
            else {
                continue;
            };
            if state.approvals.len() >= self.options.limits.max_pending_approvals {
                state.approvals.pop_front();
            }
            state.approvals.push_back(PendingApproval {
                approval_id: approval_id.to_string(),
                tool_call_id: call.tool_call_id.clone(),
                tool_name: call.tool_name.clone(),
                capability_id: result.capability_id().to_string(),
                invocation_id: result.invocation_id().to_string(),
            });
            held = true;
        }
        drop(state);
        if held {
            self.notify(AgUiChange::Approvals);
        }
    }

    /// Adds a run's assistant messages to the thread, each followed by the
    /// tool messages answering its calls (`calls` empty: the text alone).
    fn commit(&self, output: &RunOutput, calls: &[AgUiCall]) {
        let limits = &self.options.limits;
        let mut state = lock(&self.state);
        for id in &output.message_order {
            let content = output
                .texts
                .iter()
                .find(|(m, t)| m == id && !t.is_empty())
                .map(|(_, t)| t.clone());
            // A repeated call id keeps its first answer alone.
            let answered: Vec<(&StreamedCall, &AgUiCall)> = output
                .calls
                .iter()
                .zip(calls)
                .filter(|(s, c)| {
                    s.parent_message_id == *id && !matches!(c.outcome, AgUiCallOutcome::Repeated)
                })
                .collect();
            if content.is_none() && answered.is_empty() {
                continue;
            }
            let tool_calls = answered
                .iter()
                .map(|(s, _)| AgUiToolCall::new(&s.id, &s.name, kept_arguments(&s.arguments)))
                .collect();
            let assistant = AgUiMessage::Assistant {
                id: id.clone(),
                content,
                tool_calls,
            };
            push_message(&mut state, assistant, limits);
            for (streamed, call) in answered {
                let tool = AgUiMessage::Tool {
                    id: fresh_id("msg"),
                    content: call.outcome.text(),
                    tool_call_id: streamed.id.clone(),
                };
                push_message(&mut state, tool, limits);
            }
        }
        drop(state);
        self.notify(AgUiChange::Messages);
    }
}
