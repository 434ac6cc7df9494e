//! What the store keeps for replicas (`docs/host.md`, "Replicas"): calls
//! routed from the replica an agent reached to the replica holding the
//! tab's socket ([`RouteRecord`], table `host_routes`), MCP bearer tokens
//! (`host_tokens`) and MCP sessions (`host_mcp_sessions`).

use super::StoreError;

/// Where a routed call is (`host_routes.state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RouteState {
    /// Written by the requester; the holder has not taken it yet.
    Requested,
    /// The holder took it and dispatched it to the tab (or is about to).
    Taken,
    /// The holder wrote the result.
    Answered,
    /// The holder stopped (its lease expired, or it restarted) or the
    /// requester gave up before the holder took it: no result will come.
    /// A call interrupted after it was taken is ambiguous (it may have
    /// taken effect); one interrupted while `requested` never ran.
    Interrupted,
}

impl RouteState {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteState::Requested => "requested",
            RouteState::Taken => "taken",
            RouteState::Answered => "answered",
            RouteState::Interrupted => "interrupted",
        }
    }

    /// Parses the stored text.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for any other text.
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        Ok(match text {
            "requested" => RouteState::Requested,
            "taken" => RouteState::Taken,
            "answered" => RouteState::Answered,
            "interrupted" => RouteState::Interrupted,
            other => return Err(StoreError::corrupt("host_routes.state", other)),
        })
    }
}

/// One routed call (`host_routes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteRecord {
    /// The invocation id (primary key, the id rule).
    pub invocation_id: String,
    /// The run it belongs to.
    pub run_id: String,
    /// The tab it is for.
    pub tab_id: String,
    /// The replica that received the agent's call and waits for the answer.
    pub requester: String,
    /// The replica holding the tab's socket when the call was routed.
    pub holder: String,
    /// The `ToolCallRequest` JSON (at most [`super::MAX_STORED_JSON_BYTES`]).
    pub request: String,
    /// Where it is.
    pub state: RouteState,
    /// The `CallEnd` JSON once answered.
    pub result: Option<String>,
    /// The latest `BrowserSurfaceProgress` JSON the holder relayed while
    /// the call was `taken` (at most [`super::MAX_STORED_JSON_BYTES`]):
    /// what the page reported, e.g. that it waits for the user's
    /// confirmation. `None` until the first progress.
    pub progress: Option<String>,
    /// When the requester wrote it, milliseconds since the Unix epoch.
    pub requested_at_ms: i64,
    /// When it was answered or interrupted.
    pub settled_at_ms: Option<i64>,
}

/// What [`super::HostStore::record_route`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteWrite {
    /// The row is written (`requested`).
    Inserted,
    /// A routed call has this invocation id already; it is as returned.
    Exists(Box<RouteRecord>),
}

/// What a conditional change of a routed call did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteTransition {
    /// This statement changed it.
    Applied,
    /// It was not in the state the change leaves (or not the caller's);
    /// it is as returned.
    NotApplied(Box<RouteRecord>),
    /// No routed call has this id.
    Unknown,
}

/// What [`super::HostStore::take_route`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteTake {
    /// This statement took it; it is as returned (`taken`).
    Taken(Box<RouteRecord>),
    /// It was not `requested`, or not the caller's to take; it is as
    /// returned.
    NotTaken(Box<RouteRecord>),
    /// No routed call has this id.
    Unknown,
}
