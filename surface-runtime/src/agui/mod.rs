//! AG-UI: the page's live surface for an agent whose loop runs on a server
//! (cargo feature `ag-ui`; `docs/agents.md`, "AG-UI").
//!
//! [AG-UI](https://docs.ag-ui.com) is the open protocol between a UI and
//! an agent server (LangGraph, Mastra, CrewAI, Pydantic AI, Google ADK, AWS
//! Strands, Microsoft Agent Framework, …): the client posts a
//! `RunAgentInput` — the thread's messages, the tools the page offers for
//! this run, context, state — and reads the run's events back as
//! server-sent events. Tools the client declared are *frontend tools*: the
//! agent streams the call (`TOOL_CALL_START`/`ARGS`/`END`), the run
//! finishes, the client runs the tool and sends the result as a tool
//! message in the next run.
//!
//! [`AgUiAgent`] does that over a [`PageSurface`](crate::page::PageSurface):
//!
//! * every run declares the live catalog as `tools` (the
//!   [`ToolCatalog`](crate::export::ToolCatalog) of a fresh snapshot: the
//!   names, contextual descriptions and reduced input schemas of the MCP
//!   export; unavailable capabilities left out unless
//!   [`ExportOptions::include_unavailable`](crate::export::ExportOptions));
//! * a call of a declared tool runs through the registry's pipeline with
//!   the catalog's capability, registration and surface version
//!   ([`PageSurface::invoke_in_page`](crate::page::PageSurface::invoke_in_page)):
//!   bound fields are locked, a confirmation is held in the page while the
//!   turn waits, a stale call is refused — the same
//!   [`AgentInvocationResult`](crate::AgentInvocationResult)s as MCP,
//!   sent back as tool messages ([`crate::export::ToolResultText`]);
//! * a call of a tool the run did not declare never reaches the pipeline
//!   (`CAPABILITY_NOT_FOUND`), nor does a call whose arguments did not
//!   arrive completely;
//! * the next run carries the results; the turn ends when the agent
//!   answers without calling a page tool;
//! * a `DOMAIN_APPROVAL_REQUIRED` call is remembered
//!   ([`AgUiAgent::pending_approvals`]); its outcome is delivered once the
//!   application resumed it ([`AgUiAgent::deliver_approval`]), never
//!   re-run;
//! * every size, count and wait is bounded ([`AgUiLimits`]), a failed run
//!   leaves the thread as it was, and [`AgUiAgent::cancel`] (or a
//!   [`Cancellation`](crate::Cancellation) given to
//!   [`AgUiAgent::send_with`]) ends a turn.
//!
//! Transports: `HttpAgUiTransport` (native, feature `http`) and
//! `FetchAgUiTransport` (wasm32, feature `browser`).

mod agent;
mod error;
pub mod event;
#[cfg(all(feature = "browser", target_arch = "wasm32"))]
mod fetch;
mod ids;
mod limits;
pub mod message;
pub mod run;
pub mod sse;
pub mod transport;

pub use agent::{
    ag_ui_consumer, AgUiAgent, AgUiCall, AgUiCallOutcome, AgUiChange, AgUiOptions, AgUiStatus,
    AgUiStreaming, AgUiSubscription, AgUiTurn, ApprovalDeliveryError, PendingApproval,
    AG_UI_CONSUMER_ID,
};
pub use error::{foreign_text, AgUiError, MAX_FOREIGN_TEXT_CHARS};
pub use event::{AgUiEvent, Interrupt, RunOutcome};
#[cfg(all(feature = "browser", target_arch = "wasm32"))]
pub use fetch::{cancellation_from_abort_signal, AbortSignalCancellation, FetchAgUiTransport};
pub use limits::AgUiLimits;
pub use message::{AgUiContext, AgUiMessage, AgUiTool, AgUiToolCall, RunAgentInput};
pub use run::{RunOutput, StreamedCall};
#[cfg(all(feature = "http", not(target_arch = "wasm32")))]
pub use transport::HttpAgUiTransport;
pub use transport::{AgUiBody, AgUiResponse, AgUiTransport};
