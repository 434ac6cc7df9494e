//! The agent-host side of the session protocol (`docs/host.md`, "The agent host"): [`AgentHost`] accepts
//! announcements only on connections the application authenticated and
//! only for build artifacts it knows, composes each run's tools from the
//! live browser surface and its own server-side domain tools, and binds
//! every outstanding call to its connection, session, tab, run, tool call
//! and invocation.
//!
//! `AgentHost` is bookkeeping only: it never touches the network. The
//! application sends the [`BrowserSurfaceCall`]s it returns and hands back
//! what arrives.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use super::error::{EchoField, HostError, IdentityChange};
use super::verify::{verify_snapshot, with_manifest_descriptions, KnownBuild};
use super::wire::{
    BrowserSurfaceAnnouncement, BrowserSurfaceCall, BrowserSurfaceIdentity, BrowserSurfaceOutcome,
    BrowserSurfaceResult, PROTOCOL_VERSION,
};
use crate::authority::Authority;
use crate::confirmation::ConfirmationLevel;
use crate::export::{ToolDescriptor, ToolRoute, ToolSource};
use crate::hash::{IdDigester, Sha256Hasher};
use crate::invocation::{check_invocation_id, AgentInvocation, ConsumerKind};
use crate::ledger::{Admission, IdLedger, Status};
use crate::manifest::{canonical_capability_id, AgentEffect};
use crate::snapshot::{
    AgentProcedureDescriptor, ComponentContext, ComponentDescriptor, SurfaceSnapshot,
    ViewCapabilityDescriptor,
};
use crate::sync::lock;

/// Default bound of outstanding calls and of remembered completed calls
/// per host.
pub const DEFAULT_HOST_MAX_OUTSTANDING: usize = 1_000;
/// Default number of completed calls whose result is remembered to
/// recognise duplicate results (oldest forgotten first; a forgotten call's
/// late result is `Unsolicited`). Each costs a 32-byte result digest (its
/// id's digest is held for the host's lifetime anyway).
pub const DEFAULT_HOST_COMPLETED_MEMORY: usize = 10_000;
/// Default bound of the invocation ids a host remembers for its lifetime
/// (every id it ever dispatched, in the shared id ledger: a 16-byte keyed
/// digest and an 8-byte state each, ≈ 52 MB with the hash table at the
/// bound). At the bound `dispatch` refuses new ids with
/// [`HostError::InvocationIdsExhausted`]; an id is never forgotten, so a
/// completed or interrupted call is never dispatched again.
pub const DEFAULT_HOST_MAX_INVOCATION_IDS: usize = 1_000_000;

/// Evidence that the application authenticated a transport connection
/// (authentication is the application's job, `docs/host.md`). Construct it only
/// after your own authentication of the connection succeeded; the host
/// accepts announcements and results only together with one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AuthenticatedConnection {
    /// The connection id the browser announced on (the session's
    /// `connect(connection_id)`).
    pub connection_id: String,
    /// The authenticated session binding (must equal the announced
    /// `identity.sessionId`).
    pub session_id: String,
    /// The authenticated principal (user id), for the application's audit.
    pub principal: String,
}

impl AuthenticatedConnection {
    /// Evidence for one authenticated connection.
    pub fn new(
        connection_id: impl Into<String>,
        session_id: impl Into<String>,
        principal: impl Into<String>,
    ) -> Self {
        Self {
            connection_id: connection_id.into(),
            session_id: session_id.into(),
            principal: principal.into(),
        }
    }
}

/// A tool the host runs itself on the server (for example through the
/// governed oRPC bridge), offered to runs unless the browser surface owns
/// the operation (see [`AgentHost::tools_for_run`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerTool {
    /// Canonical capability id (the manifest's `capabilityId`
    /// override or `"domain:" + path`).
    pub capability_id: String,
    /// Model-facing description.
    pub description: String,
    /// Input JSON Schema.
    pub input_schema: Value,
    /// Effect class.
    pub effect: AgentEffect,
    /// `true` for an operation the user must contextually control: it is
    /// never offered as a direct server tool (the counterpart of
    /// orpc-agent's `expose.aiSdk: false`).
    pub surface_only: bool,
}

impl ServerTool {
    /// The server tool for manifest entry `path` of `authority`, if present.
    pub fn from_authority(authority: &Authority, path: &str) -> Option<Self> {
        let tool = authority.manifest().tools.get(path)?;
        Some(Self {
            capability_id: canonical_capability_id(path, tool),
            description: tool.description.clone(),
            input_schema: tool.input_schema.clone(),
            effect: tool.effect,
            surface_only: false,
        })
    }

    /// Marks the tool surface-only.
    pub fn surface_only(mut self) -> Self {
        self.surface_only = true;
        self
    }
}

/// An agent run as the host tracks it: which authenticated session and
/// which tab its browser tools come from, and its consumer kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRun {
    /// Run id (unique per host).
    pub run_id: String,
    /// The authenticated session the run acts for.
    pub session_id: String,
    /// The tab whose surface the run uses; `None` for runs without a page
    /// (they get server tools only).
    pub tab_id: Option<String>,
    /// `Headless` runs get no view tools.
    pub kind: ConsumerKind,
}

/// One canonical operation offered to a run: exactly one presentation per
/// capability id.
#[derive(Clone, Debug, PartialEq)]
pub enum HostTool {
    /// Served by the run's live browser surface (dispatch with
    /// [`AgentHost::dispatch`]).
    Browser(BrowserTool),
    /// Run by the host itself.
    Server(ServerTool),
}

impl HostTool {
    /// The canonical capability id.
    pub fn capability_id(&self) -> &str {
        match self {
            HostTool::Browser(b) => &b.capability_id,
            HostTool::Server(s) => &s.capability_id,
        }
    }
}

/// A capability of a live browser surface, with every live registration of
/// it (two tables may bind one procedure; the call must then name a
/// registration).
#[derive(Clone, Debug, PartialEq)]
pub struct BrowserTool {
    /// Canonical capability id.
    pub capability_id: String,
    /// The tab serving it.
    pub tab_id: String,
    /// The surface version of the announcement it comes from.
    pub surface_version: u64,
    /// The live registrations.
    pub references: Vec<BrowserReference>,
}

impl BrowserTool {
    /// Whether any registration binds inputs or asks for confirmation (the
    /// user controls it contextually).
    pub fn is_contextual(&self) -> bool {
        self.references.iter().any(BrowserReference::is_contextual)
    }

    /// The tool's registrations as tools to catalog
    /// ([`ToolCatalog::from_tools`](crate::export::ToolCatalog::from_tools)):
    /// one per reference, in order, routed [`ToolRoute::Browser`] to its
    /// tab, at the announcement's surface version.
    pub fn into_tool_sources(self) -> impl Iterator<Item = ToolSource> {
        let (tab_id, surface_version) = (self.tab_id, self.surface_version);
        self.references
            .into_iter()
            .map(move |reference| ToolSource {
                descriptor: reference.into(),
                route: ToolRoute::Browser {
                    tab_id: tab_id.clone(),
                },
                surface_version,
            })
    }
}

/// One live registration of a [`BrowserTool`].
#[derive(Clone, Debug, PartialEq)]
pub enum BrowserReference {
    /// A procedure binding.
    Procedure(AgentProcedureDescriptor),
    /// An observation or action of a component instance.
    View {
        /// The component (its `observations` and `actions` left empty: the
        /// capability is `capability`).
        component: ComponentDescriptor,
        /// The capability.
        capability: ViewCapabilityDescriptor,
    },
}

impl BrowserReference {
    /// The capability id calls name: the procedure id (`domain:…`) or the
    /// view capability's (`view:…`).
    pub fn capability_id(&self) -> &str {
        match self {
            BrowserReference::Procedure(p) => &p.procedure_id,
            BrowserReference::View { capability, .. } => capability.capability_id(),
        }
    }
    /// The registration id calls must carry.
    pub fn registration_id(&self) -> &str {
        match self {
            BrowserReference::Procedure(p) => &p.registration_id,
            BrowserReference::View { component, .. } => &component.registration_id,
        }
    }
    /// The effect (view capabilities have none: they act locally).
    pub fn effect(&self) -> Option<AgentEffect> {
        match self {
            BrowserReference::Procedure(p) => Some(p.effect),
            BrowserReference::View { .. } => None,
        }
    }
    /// Binds inputs or asks for confirmation.
    pub fn is_contextual(&self) -> bool {
        match self {
            BrowserReference::Procedure(p) => {
                !p.bound_fields.is_empty() || p.confirmation != ConfirmationLevel::Never
            }
            BrowserReference::View { .. } => true,
        }
    }
}

impl From<BrowserReference> for ToolDescriptor {
    /// The same descriptor: a procedure as it is; a view capability with
    /// its component's registration id, type and instance id.
    fn from(reference: BrowserReference) -> Self {
        match reference {
            BrowserReference::Procedure(p) => ToolDescriptor::Procedure(p),
            BrowserReference::View {
                component,
                capability,
            } => ToolDescriptor::View {
                registration_id: component.registration_id,
                component: ComponentContext {
                    component_type: component.component_type,
                    instance_id: component.instance_id,
                },
                capability,
            },
        }
    }
}

/// A model tool call the host wants to run on a browser surface. Its JSON
/// (camelCase, absent options left out) is what replicas hand each other
/// (`docs/host.md`, "Replicas").
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolCallRequest {
    /// The run.
    pub run_id: String,
    /// The model's tool call id.
    pub tool_call_id: String,
    /// A fresh invocation id (persist it before sending).
    pub invocation_id: String,
    /// Canonical capability id of the tool (as [`BrowserTool`] names it;
    /// the call names the reference's procedure or view id).
    pub capability_id: String,
    /// Required when the tool has more than one live registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_id: Option<String>,
    /// Agent input (unlocked fields only).
    pub input: Value,
    /// Component instance, for view capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// The approved confirmation id, for a retry after local confirmation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_id: Option<String>,
}

impl ToolCallRequest {
    /// A request with no registration, instance or confirmation id.
    pub fn new(
        run_id: impl Into<String>,
        tool_call_id: impl Into<String>,
        invocation_id: impl Into<String>,
        capability_id: impl Into<String>,
        input: Value,
    ) -> Self {
        Self {
            run_id: run_id.into(),
            tool_call_id: tool_call_id.into(),
            invocation_id: invocation_id.into(),
            capability_id: capability_id.into(),
            registration_id: None,
            input,
            instance_id: None,
            confirmation_id: None,
        }
    }
    /// Names the registration.
    pub fn registration(mut self, registration_id: impl Into<String>) -> Self {
        self.registration_id = Some(registration_id.into());
        self
    }
}

/// A call that was outstanding on a connection that closed (or was
/// replaced by a reconnect). Its outcome is unknown: a mutation may have
/// taken effect. Reconcile (for governed procedures through the backend's
/// `getInvocation`); never re-dispatch it, and never to another tab.
#[derive(Clone, Debug, PartialEq)]
pub struct InterruptedCall {
    /// The call as dispatched.
    pub call: BrowserSurfaceCall,
    /// The effect of the procedure (`None` for view capabilities).
    pub effect: Option<AgentEffect>,
}

/// An outstanding call as [`AgentHost::outstanding_call`] reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchedCall {
    /// The call as dispatched.
    pub call: BrowserSurfaceCall,
    /// The effect of the procedure (`None` for view capabilities).
    pub effect: Option<AgentEffect>,
}

/// What [`AgentHost::accept_announcement`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnouncementAccepted {
    /// The tab's surface version now in force.
    pub surface_version: u64,
    /// Calls interrupted because this announcement opened a new connection
    /// for the tab (the browser aborted them when it reconnected).
    pub interrupted: Vec<InterruptedCall>,
}

/// What [`AgentHost::accept_result`] did with a result.
#[derive(Clone, Debug, PartialEq)]
pub enum ResultDisposition {
    /// The result completes an outstanding call.
    Completed(Box<CompletedCall>),
    /// An identical copy of a result already accepted; ignore it.
    Duplicate,
}

/// A completed browser call.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletedCall {
    /// The call as dispatched.
    pub call: BrowserSurfaceCall,
    /// Its result.
    pub result: BrowserSurfaceOutcome,
}

/// The host's view of one live tab.
#[derive(Clone, Debug)]
struct LiveSurface {
    identity: BrowserSurfaceIdentity,
    connection_id: String,
    snapshot: SurfaceSnapshot,
    /// The canonical capability id of each announced procedure id
    /// (`domain:<path>` → the build manifest's `capabilityId` override, or
    /// the procedure id), for composing with server tools.
    canonical: HashMap<String, String>,
}

struct Outstanding {
    call: BrowserSurfaceCall,
    effect: Option<AgentEffect>,
}

/// SHA-256 over a completed call's echo ids (authenticated connection and
/// session, connection, run, tool call and invocation ids) and its result:
/// what the host keeps to tell an identical duplicate result from a changed
/// one.
type ResultDigest = [u8; 32];

struct HostState {
    /// By tab id.
    surfaces: HashMap<String, LiveSurface>,
    runs: HashMap<String, AgentRun>,
    outstanding: HashMap<String, Outstanding>,
    /// Every invocation id ever dispatched (outstanding, completed or
    /// interrupted), as keyed digests (at most `max_invocation_ids`), and
    /// the result digests of the last `completed_memory` completed calls.
    /// An outstanding, withdrawn or interrupted call's id is pending there.
    ledger: IdLedger<(), ResultDigest>,
    /// Capability ids some accepted announcement bound or confirmed: never
    /// offered as direct server tools afterwards, even with no live tab.
    contextual_seen: BTreeSet<String>,
}

/// The agent-host side of the session protocol (`docs/host.md`). Thread-safe; all methods take `&self`.
///
/// * [`Self::accept_announcement`] — only with an
///   [`AuthenticatedConnection`], only for a [`KnownBuild`], after
///   verifying every procedure against the build's manifest.
/// * [`Self::tools_for_run`] — one presentation per canonical capability id.
/// * [`Self::dispatch`] / [`Self::accept_result`] — each call bound to
///   connection, session, tab, run, tool call and invocation.
/// * [`Self::connection_closed`] — removes the tab's browser tools and
///   returns the interrupted calls for reconciliation.
pub struct AgentHost {
    builds: BTreeMap<(String, String), KnownBuild>,
    server_tools: Vec<ServerTool>,
    max_outstanding: usize,
    state: Mutex<HostState>,
}

/// How full each bounded collection of an [`AgentHost`] is, for monitoring
/// (rotate the host before `invocation_ids` reaches its bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostUsage {
    /// Calls outstanding (bound: `max_outstanding`).
    pub outstanding: usize,
    /// Completed calls whose result digest is remembered (bound:
    /// `completed_memory`).
    pub remembered_results: usize,
    /// Invocation ids ever dispatched (bound: `max_invocation_ids`).
    pub invocation_ids: usize,
}

impl std::fmt::Debug for AgentHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentHost")
            .field("builds", &self.builds.keys().collect::<Vec<_>>())
            .field("server_tools", &self.server_tools.len())
            .finish()
    }
}

impl Default for AgentHost {
    fn default() -> Self {
        Self::new()
    }
}

impl AgentHost {
    /// A host with no known builds and no server tools.
    pub fn new() -> Self {
        Self {
            builds: BTreeMap::new(),
            server_tools: Vec::new(),
            max_outstanding: DEFAULT_HOST_MAX_OUTSTANDING,
            state: Mutex::new(HostState {
                surfaces: HashMap::new(),
                runs: HashMap::new(),
                outstanding: HashMap::new(),
                ledger: IdLedger::new(
                    IdDigester::random(),
                    DEFAULT_HOST_MAX_INVOCATION_IDS,
                    DEFAULT_HOST_COMPLETED_MEMORY,
                ),
                contextual_seen: BTreeSet::new(),
            }),
        }
    }

    /// Adds a trusted build artifact.
    pub fn with_known_build(mut self, build: KnownBuild) -> Self {
        self.builds
            .insert((build.app_id.clone(), build.build_id.clone()), build);
        self
    }

    /// Adds a server-side tool.
    pub fn with_server_tool(mut self, tool: ServerTool) -> Self {
        self.server_tools.push(tool);
        self
    }

    /// Sets the bound of outstanding calls (default
    /// [`DEFAULT_HOST_MAX_OUTSTANDING`]).
    pub fn with_max_outstanding(mut self, max: usize) -> Self {
        self.max_outstanding = max;
        self
    }

    /// Sets how many completed calls' result digests are remembered to
    /// recognise duplicate results (default
    /// [`DEFAULT_HOST_COMPLETED_MEMORY`]; oldest forgotten first). It does
    /// not affect which ids may be dispatched: a forgotten call's id stays
    /// in the id ledger for the host's lifetime.
    pub fn with_completed_memory(mut self, count: usize) -> Self {
        self.ledger_mut().set_max_results(count);
        self
    }

    /// Sets how many dispatched invocation ids the host remembers (default
    /// [`DEFAULT_HOST_MAX_INVOCATION_IDS`], at least 1). Every dispatched id
    /// is remembered for the host's lifetime as a 16-byte keyed digest
    /// (24 bytes with its state, whatever the id's length), so
    /// a completed or interrupted call is never dispatched again; at the
    /// bound `dispatch` refuses new ids with
    /// [`HostError::InvocationIdsExhausted`].
    pub fn with_max_invocation_ids(mut self, count: usize) -> Self {
        self.ledger_mut().set_max_ids(count.max(1));
        self
    }

    fn ledger_mut(&mut self) -> &mut IdLedger<(), ResultDigest> {
        &mut self
            .state
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .ledger
    }

    /// How full the host's bounded collections are.
    pub fn usage(&self) -> HostUsage {
        let state = self.lock();
        HostUsage {
            outstanding: state.outstanding.len(),
            remembered_results: state.ledger.kept_results(),
            invocation_ids: state.ledger.len(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HostState> {
        lock(&self.state)
    }

    /// Accepts a browser's announcement on an authenticated connection:
    /// announcements are authenticated and compared with known build
    /// artifacts (`docs/host.md`).
    ///
    /// Checks, in order: protocol version; the announcement's connection
    /// and session equal the authenticated ones; `(appId, buildId)` is a
    /// [`KnownBuild`]; every procedure descriptor exists in that build's
    /// manifest with the same canonical id, effect, output schema and
    /// `requiresApproval`, a confirmation level no lower than the effect
    /// floor, a description that is the manifest's — or the manifest's
    /// followed by a space and more text, as a TypeScript page created with
    /// `snapshotMergesContextualNote: true` announces it (only appending:
    /// text before or instead of the manifest's is refused; with an empty
    /// manifest description any text appends) — and an input
    /// schema equal to the manifest schema reduced by the announced
    /// bindings (binding rule 1);
    /// every view capability is a well-formed `view:` id that does not name
    /// a manifest path (and is listed, if the build restricts them); the
    /// tab keeps its app, build and session, a connection carries one tab,
    /// and versions never go back.
    ///
    /// The host keeps the manifest's description for every procedure (what
    /// a merging page appended travels as `contextualNote` too), so its
    /// tools show the contextual note once.
    ///
    /// A first announcement on a new connection for a known tab replaces
    /// the old connection (a reconnect): calls outstanding on the old one
    /// are returned as interrupted — the browser aborted them — and are
    /// never moved to the new connection.
    ///
    /// # Errors
    /// The [`HostError`] of the first failed check; nothing changes then.
    pub fn accept_announcement(
        &self,
        connection: &AuthenticatedConnection,
        announcement: &BrowserSurfaceAnnouncement,
    ) -> Result<AnnouncementAccepted, HostError> {
        let build = self.known_build(connection, announcement)?;
        verify_snapshot(build, &announcement.snapshot)?;
        let snapshot = with_manifest_descriptions(build, &announcement.snapshot);
        let canonical = canonical_ids(build, &announcement.snapshot);
        let identity = &announcement.identity;
        let mut state = self.lock();
        let interrupted = tab_takeover(&mut state, connection, announcement)?;
        for p in &announcement.snapshot.procedures {
            if BrowserReference::Procedure(p.clone()).is_contextual() {
                let cap = canonical
                    .get(&p.procedure_id)
                    .cloned()
                    .unwrap_or_else(|| p.procedure_id.clone());
                state.contextual_seen.insert(cap);
            }
        }
        state.surfaces.insert(
            identity.tab_id.clone(),
            LiveSurface {
                identity: identity.clone(),
                connection_id: connection.connection_id.clone(),
                snapshot,
                canonical,
            },
        );
        Ok(AnnouncementAccepted {
            surface_version: announcement.snapshot.surface_version,
            interrupted,
        })
    }

    /// The known build an announcement names, once its protocol version,
    /// connection and session are the authenticated ones.
    fn known_build(
        &self,
        connection: &AuthenticatedConnection,
        announcement: &BrowserSurfaceAnnouncement,
    ) -> Result<&KnownBuild, HostError> {
        if announcement.protocol_version != PROTOCOL_VERSION {
            return Err(HostError::ProtocolVersion(announcement.protocol_version));
        }
        if announcement.connection_id != connection.connection_id {
            return Err(HostError::ConnectionMismatch {
                message: announcement.connection_id.clone(),
                authenticated: connection.connection_id.clone(),
            });
        }
        let identity = &announcement.identity;
        if identity.session_id != connection.session_id {
            return Err(HostError::SessionMismatch {
                announced: identity.session_id.clone(),
                authenticated: connection.session_id.clone(),
            });
        }
        self.builds
            .get(&(identity.app_id.clone(), identity.build_id.clone()))
            .ok_or_else(|| HostError::UnknownBuild {
                app_id: identity.app_id.clone(),
                build_id: identity.build_id.clone(),
            })
    }

    /// The connection closed: the tab's browser tools disappear and its
    /// outstanding calls are returned for reconciliation (never
    /// re-dispatched).
    pub fn connection_closed(&self, connection_id: &str) -> Vec<InterruptedCall> {
        let mut state = self.lock();
        state
            .surfaces
            .retain(|_, s| s.connection_id != connection_id);
        take_outstanding_on(&mut state, connection_id)
    }

    /// Whether `tab_id` has a live surface.
    pub fn has_live_surface(&self, tab_id: &str) -> bool {
        self.lock().surfaces.contains_key(tab_id)
    }

    /// Starts tracking a run.
    ///
    /// # Errors
    /// [`HostError::RunExists`].
    pub fn start_run(&self, run: AgentRun) -> Result<(), HostError> {
        let mut state = self.lock();
        if state.runs.contains_key(&run.run_id) {
            return Err(HostError::RunExists(run.run_id));
        }
        state.runs.insert(run.run_id.clone(), run);
        Ok(())
    }

    /// A tracked run (a copy), or `None`.
    pub fn run(&self, run_id: &str) -> Option<AgentRun> {
        self.lock().runs.get(run_id).cloned()
    }

    /// Points a run at another tab (for example the new tab after a
    /// reload). Refused while the run has calls outstanding on its current
    /// tab: a pending call never moves to another tab.
    ///
    /// # Errors
    /// [`HostError::UnknownRun`], [`HostError::PendingCallsOnTab`].
    pub fn attach_run_to_tab(&self, run_id: &str, tab_id: Option<String>) -> Result<(), HostError> {
        let mut state = self.lock();
        let run = state
            .runs
            .get(run_id)
            .ok_or_else(|| HostError::UnknownRun(run_id.to_string()))?;
        if let Some(current) = &run.tab_id {
            let count = state
                .outstanding
                .values()
                .filter(|o| o.call.run_id == run_id && o.call.identity.tab_id == *current)
                .count();
            if count > 0 && run.tab_id != tab_id {
                return Err(HostError::PendingCallsOnTab {
                    run_id: run_id.to_string(),
                    tab_id: current.clone(),
                    count,
                });
            }
        }
        if let Some(run) = state.runs.get_mut(run_id) {
            run.tab_id = tab_id;
        }
        Ok(())
    }

    /// Stops tracking a run (its outstanding calls stay bound and can still
    /// complete).
    pub fn end_run(&self, run_id: &str) {
        self.lock().runs.remove(run_id);
    }

    /// The tools of one run, sorted by capability id, exactly one per
    /// canonical capability id:
    ///
    /// * browser tools come only from the live surface of the run's own tab
    ///   and session — none when it has no live session; headless runs get
    ///   no view tools;
    /// * a server tool is dropped when its capability is *surface-owned*:
    ///   marked [`ServerTool::surface_only`], or bound/confirmed by a live
    ///   reference, or bound/confirmed by any reference ever accepted by
    ///   this host (so a contextual operation does not turn into a direct
    ///   server tool when the tab closes);
    /// * otherwise, when both sides offer a capability, the server
    ///   presentation is kept and the (non-contextual) browser one dropped
    ///   — partition each operation to exactly one path.
    ///
    /// An unknown run gets no tools.
    pub fn tools_for_run(&self, run_id: &str) -> Vec<HostTool> {
        let state = self.lock();
        match state.runs.get(run_id) {
            Some(run) => self.tools_for_locked(&state, run),
            None => Vec::new(),
        }
    }

    /// Builds the [`BrowserSurfaceCall`] for a tool call and records it as
    /// outstanding, bound to the run's tab, its current connection and
    /// surface version, the run, the tool call and the invocation.
    /// Re-dispatching an identical request returns the same call (safe to
    /// re-send; the browser joins or replays it).
    ///
    /// # Errors
    /// [`HostError::UnknownRun`]; [`HostError::NoLiveSession`] when the
    /// run's tab has no live surface (never another tab);
    /// [`HostError::NotOffered`] when the capability is not a browser tool
    /// of the run (headless runs: no view tools);
    /// [`HostError::InvalidInvocationId`] when the id breaks the one
    /// invocation-id rule (checked first: such an id would fail on any
    /// transport); [`HostError::AmbiguousReference`];
    /// [`HostError::InvocationConflict`] when the invocation id was used for
    /// something else, or its call completed or was interrupted — an id is
    /// dispatched at most once in the host's lifetime, however long ago;
    /// [`HostError::CapacityExceeded`];
    /// [`HostError::InvocationIdsExhausted`].
    pub fn dispatch(&self, request: ToolCallRequest) -> Result<BrowserSurfaceCall, HostError> {
        check_invocation_id(&request.invocation_id).map_err(HostError::InvalidInvocationId)?;
        let mut state = self.lock();
        let (call, effect) = self.call_for(&state, &request)?;
        if let Some(existing) = state.outstanding.get(&request.invocation_id) {
            return if existing.call == call {
                Ok(call)
            } else {
                Err(HostError::InvocationConflict(request.invocation_id))
            };
        }
        // Not outstanding but dispatched before: completed, withdrawn or
        // interrupted, never dispatched again.
        let id = state.ledger.digest(&request.invocation_id);
        if state.ledger.lookup(id).is_some() {
            return Err(HostError::InvocationConflict(request.invocation_id));
        }
        if state.outstanding.len() >= self.max_outstanding {
            return Err(HostError::CapacityExceeded(self.max_outstanding));
        }
        match state.ledger.admit(id, ()) {
            Admission::Admitted => {}
            Admission::Known(_) => {
                return Err(HostError::InvocationConflict(request.invocation_id))
            }
            Admission::Refused => {
                let max = state.ledger.max_ids();
                return Err(HostError::InvocationIdsExhausted(max));
            }
        }
        state.outstanding.insert(
            request.invocation_id,
            Outstanding {
                call: call.clone(),
                effect,
            },
        );
        Ok(call)
    }

    /// The call `request` makes on its run's live tab, and the effect of
    /// the reference it targets.
    fn call_for(
        &self,
        state: &HostState,
        request: &ToolCallRequest,
    ) -> Result<(BrowserSurfaceCall, Option<AgentEffect>), HostError> {
        let run = state
            .runs
            .get(&request.run_id)
            .ok_or_else(|| HostError::UnknownRun(request.run_id.clone()))?;
        let surface = live_surface(state, run)
            .ok_or_else(|| HostError::NoLiveSession(request.run_id.clone()))?;
        let not_offered = || HostError::NotOffered {
            run_id: request.run_id.clone(),
            capability_id: request.capability_id.clone(),
        };
        let tool = self
            .tools_for_locked(state, run)
            .into_iter()
            .find_map(|t| match t {
                HostTool::Browser(b) if b.capability_id == request.capability_id => Some(b),
                _ => None,
            })
            .ok_or_else(not_offered)?;
        let reference = match &request.registration_id {
            Some(id) => tool
                .references
                .iter()
                .find(|r| r.registration_id() == id)
                .ok_or_else(not_offered)?,
            None if tool.references.len() == 1 => &tool.references[0],
            None => {
                return Err(HostError::AmbiguousReference {
                    capability_id: request.capability_id.clone(),
                    registration_ids: tool
                        .references
                        .iter()
                        .map(|r| r.registration_id().to_string())
                        .collect(),
                })
            }
        };
        let call = BrowserSurfaceCall::new(
            surface.identity.clone(),
            surface.connection_id.clone(),
            request.run_id.clone(),
            request.tool_call_id.clone(),
            AgentInvocation {
                invocation_id: request.invocation_id.clone(),
                capability_id: reference.capability_id().to_string(),
                registration_id: Some(reference.registration_id().to_string()),
                surface_version: Some(surface.snapshot.surface_version),
                input: request.input.clone(),
                instance_id: request.instance_id.clone(),
                confirmation_id: request.confirmation_id.clone(),
            },
        );
        Ok((call, reference.effect()))
    }

    fn tools_for_locked(&self, state: &HostState, run: &AgentRun) -> Vec<HostTool> {
        // Same composition as `tools_for_run`, on an already locked state.
        let mut tools: BTreeMap<String, HostTool> = browser_tools(state, run)
            .into_iter()
            .map(|b| (b.capability_id.clone(), HostTool::Browser(b)))
            .collect();
        for server in &self.server_tools {
            let cap = &server.capability_id;
            let browser_contextual =
                matches!(tools.get(cap), Some(HostTool::Browser(b)) if b.is_contextual());
            if server.surface_only || browser_contextual || state.contextual_seen.contains(cap) {
                continue;
            }
            tools.insert(cap.clone(), HostTool::Server(server.clone()));
        }
        tools.into_values().collect()
    }

    /// Accepts a browser's result on an authenticated connection. It must
    /// answer an outstanding call and echo its dispatch exactly: the
    /// authenticated connection and session are the call's, and the
    /// result's connection, run, tool call and invocation ids (and the
    /// inner result's invocation id) are the call's.
    ///
    /// # Errors
    /// [`HostError::ProtocolVersion`]; [`HostError::Unsolicited`] for an
    /// invocation id with no outstanding or remembered call;
    /// [`HostError::ChangedDuplicate`] for a second, different result of a
    /// completed call (an identical one is [`ResultDisposition::Duplicate`]);
    /// [`HostError::ResultMismatch`] naming the first differing field.
    pub fn accept_result(
        &self,
        connection: &AuthenticatedConnection,
        result: &BrowserSurfaceResult,
    ) -> Result<ResultDisposition, HostError> {
        if result.protocol_version != PROTOCOL_VERSION {
            return Err(HostError::ProtocolVersion(result.protocol_version));
        }
        let mut state = self.lock();
        let id = &result.invocation_id;
        let digest = state.ledger.digest(id);
        let Some(outstanding) = state.outstanding.remove(id) else {
            return match state.ledger.lookup(digest).map(|known| known.status) {
                Some(Status::Completed(done)) if *done == result_digest(connection, result) => {
                    Ok(ResultDisposition::Duplicate)
                }
                Some(Status::Completed(_)) => Err(HostError::ChangedDuplicate(id.clone())),
                _ => Err(HostError::Unsolicited(id.clone())),
            };
        };
        if let Err(e) = echoes(&outstanding.call, connection, result) {
            state.outstanding.insert(id.clone(), outstanding);
            return Err(e);
        }
        state
            .ledger
            .complete(digest, result_digest(connection, result));
        Ok(ResultDisposition::Completed(Box::new(CompletedCall {
            call: outstanding.call,
            result: result.result.clone(),
        })))
    }

    /// Checks a result exactly as [`Self::accept_result`] does, without
    /// consuming it: `Ok` with the call it answers when it answers an
    /// outstanding call and echoes its dispatch. The call stays
    /// outstanding — for a durable host that records the result before
    /// the call stops being outstanding (then calls `accept_result`).
    ///
    /// # Errors
    /// [`HostError::ProtocolVersion`]; [`HostError::Unsolicited`] when no
    /// call with this invocation id is outstanding (a completed one's
    /// duplicate included: ask `accept_result`);
    /// [`HostError::ResultMismatch`] naming the first differing field.
    pub fn check_result(
        &self,
        connection: &AuthenticatedConnection,
        result: &BrowserSurfaceResult,
    ) -> Result<BrowserSurfaceCall, HostError> {
        if result.protocol_version != PROTOCOL_VERSION {
            return Err(HostError::ProtocolVersion(result.protocol_version));
        }
        let state = self.lock();
        let outstanding = state
            .outstanding
            .get(&result.invocation_id)
            .ok_or_else(|| HostError::Unsolicited(result.invocation_id.clone()))?;
        echoes(&outstanding.call, connection, result)?;
        Ok(outstanding.call.clone())
    }

    /// Takes back a call [`Self::dispatch`] returned that was never sent
    /// (for example because a durable store refused to record it: fail
    /// closed). It stops being outstanding; its invocation id stays
    /// refused for the host's lifetime. Returns the call, `None` when no
    /// call with this id is outstanding.
    pub fn withdraw(&self, invocation_id: &str) -> Option<BrowserSurfaceCall> {
        self.lock()
            .outstanding
            .remove(invocation_id)
            .map(|o| o.call)
    }

    /// The outstanding call with this invocation id and the effect of
    /// the reference it targets, if any.
    pub fn outstanding_call(&self, invocation_id: &str) -> Option<DispatchedCall> {
        self.lock()
            .outstanding
            .get(invocation_id)
            .map(|o| DispatchedCall {
                call: o.call.clone(),
                effect: o.effect,
            })
    }

    /// Accepts a browser's progress message for an outstanding call
    /// (docs/host.md, "Confirmation while the call waits"): it must arrive
    /// on the dispatching authenticated connection and session and echo
    /// the call's connection, run, tool call and invocation ids. Progress
    /// changes nothing in the host's bookkeeping — the call stays
    /// outstanding until its result — and can never approve anything.
    /// Returns the call it reports on.
    ///
    /// # Errors
    /// [`HostError::ProtocolVersion`]; [`HostError::Unsolicited`] when no
    /// call with this invocation id is outstanding;
    /// [`HostError::ResultMismatch`] naming the first differing field.
    pub fn accept_progress(
        &self,
        connection: &AuthenticatedConnection,
        progress: &super::progress::BrowserSurfaceProgress,
    ) -> Result<BrowserSurfaceCall, HostError> {
        if progress.protocol_version != PROTOCOL_VERSION {
            return Err(HostError::ProtocolVersion(progress.protocol_version));
        }
        let state = self.lock();
        let call = &state
            .outstanding
            .get(&progress.invocation_id)
            .ok_or_else(|| HostError::Unsolicited(progress.invocation_id.clone()))?
            .call;
        match first_difference(
            call,
            connection,
            Echoed {
                connection_id: &progress.connection_id,
                run_id: &progress.run_id,
                tool_call_id: &progress.tool_call_id,
                invocation_id: &progress.invocation_id,
            },
        ) {
            Some(field) => Err(HostError::ResultMismatch {
                invocation_id: progress.invocation_id.clone(),
                field,
            }),
            None => Ok(call.clone()),
        }
    }

    /// The calls currently outstanding, sorted by invocation id.
    pub fn outstanding(&self) -> Vec<BrowserSurfaceCall> {
        let state = self.lock();
        let mut calls: Vec<_> = state.outstanding.values().map(|o| o.call.clone()).collect();
        calls.sort_by(|a, b| a.invocation.invocation_id.cmp(&b.invocation.invocation_id));
        calls
    }
}

/// The identity rules of an announcement for a tab: a connection carries
/// one tab, a tab keeps its app, build and session, and versions never go
/// back. On a reconnect (a known tab on a new connection) the calls
/// outstanding on the old connection are taken out and returned as
/// interrupted.
fn tab_takeover(
    state: &mut HostState,
    connection: &AuthenticatedConnection,
    announcement: &BrowserSurfaceAnnouncement,
) -> Result<Vec<InterruptedCall>, HostError> {
    let identity = &announcement.identity;
    let changed = |change| HostError::IdentityChanged {
        tab_id: identity.tab_id.clone(),
        change,
    };
    if let Some(other) = state.surfaces.values().find(|s| {
        s.connection_id == connection.connection_id && s.identity.tab_id != identity.tab_id
    }) {
        return Err(changed(IdentityChange::ConnectionCarriesAnotherTab {
            connection_id: connection.connection_id.clone(),
            other_tab_id: other.identity.tab_id.clone(),
        }));
    }
    let Some(existing) = state.surfaces.get(&identity.tab_id) else {
        return Ok(Vec::new());
    };
    if let Some(change) = identity_change(&existing.identity, identity) {
        return Err(changed(change));
    }
    if announcement.snapshot.surface_version < existing.snapshot.surface_version {
        return Err(HostError::OutdatedAnnouncement {
            tab_id: identity.tab_id.clone(),
            announced: announcement.snapshot.surface_version,
            current: existing.snapshot.surface_version,
        });
    }
    if existing.connection_id == connection.connection_id {
        return Ok(Vec::new());
    }
    let old = existing.connection_id.clone();
    Ok(take_outstanding_on(state, &old))
}

/// What differs between the accepted identity of a tab and a new
/// announcement's, first app, then build, then session.
fn identity_change(
    accepted: &BrowserSurfaceIdentity,
    announced: &BrowserSurfaceIdentity,
) -> Option<IdentityChange> {
    if accepted.app_id != announced.app_id {
        return Some(IdentityChange::AppId {
            accepted: accepted.app_id.clone(),
            announced: announced.app_id.clone(),
        });
    }
    if accepted.build_id != announced.build_id {
        return Some(IdentityChange::BuildId {
            accepted: accepted.build_id.clone(),
            announced: announced.build_id.clone(),
        });
    }
    (accepted.session_id != announced.session_id).then_some(IdentityChange::SessionId)
}

/// The [`ResultDigest`] of `result` received on `connection`: equal for
/// two results exactly when both arrive on the same authenticated
/// connection and session, echo the same ids and carry the same outcome.
fn result_digest(
    connection: &AuthenticatedConnection,
    result: &BrowserSurfaceResult,
) -> ResultDigest {
    let mut hasher = Sha256Hasher::new();
    for field in [
        &connection.connection_id,
        &connection.session_id,
        &result.connection_id,
        &result.run_id,
        &result.tool_call_id,
        &result.invocation_id,
    ] {
        hasher.update(&(field.len() as u64).to_le_bytes());
        hasher.update(field.as_bytes());
    }
    // Writing into a hasher cannot fail; a serialization error (never for
    // these types) would only make a duplicate count as changed.
    let _ = serde_json::to_writer(&mut hasher, &result.result);
    hasher.finish()
}

fn echoes(
    call: &BrowserSurfaceCall,
    connection: &AuthenticatedConnection,
    result: &BrowserSurfaceResult,
) -> Result<(), HostError> {
    let inner_id = match &result.result {
        BrowserSurfaceOutcome::Invocation(r) => r.invocation_id(),
        BrowserSurfaceOutcome::Rejected(_) => &call.invocation.invocation_id,
    };
    let echoed = Echoed {
        connection_id: &result.connection_id,
        run_id: &result.run_id,
        tool_call_id: &result.tool_call_id,
        invocation_id: inner_id,
    };
    match first_difference(call, connection, echoed) {
        Some(field) => Err(HostError::ResultMismatch {
            invocation_id: call.invocation.invocation_id.clone(),
            field,
        }),
        None => Ok(()),
    }
}

/// What a page's message (a result or a progress report) echoes of the call
/// it answers.
struct Echoed<'a> {
    connection_id: &'a str,
    run_id: &'a str,
    tool_call_id: &'a str,
    invocation_id: &'a str,
}

/// The first field in which a page's message differs from the call it
/// answers, in the order of `docs/host.md` (authenticated connection and
/// session first), or `None` when it echoes the call exactly.
fn first_difference(
    call: &BrowserSurfaceCall,
    connection: &AuthenticatedConnection,
    echoed: Echoed<'_>,
) -> Option<EchoField> {
    let checks = [
        (
            connection.connection_id.as_str(),
            call.connection_id.as_str(),
            EchoField::AuthenticatedConnection,
        ),
        (
            connection.session_id.as_str(),
            call.identity.session_id.as_str(),
            EchoField::AuthenticatedSession,
        ),
        (
            echoed.connection_id,
            call.connection_id.as_str(),
            EchoField::ConnectionId,
        ),
        (echoed.run_id, call.run_id.as_str(), EchoField::RunId),
        (
            echoed.tool_call_id,
            call.tool_call_id.as_str(),
            EchoField::ToolCallId,
        ),
        (
            echoed.invocation_id,
            call.invocation.invocation_id.as_str(),
            EchoField::ResultInvocationId,
        ),
    ];
    checks
        .into_iter()
        .find(|(got, expected, _)| got != expected)
        .map(|(_, _, field)| field)
}

fn take_outstanding_on(state: &mut HostState, connection_id: &str) -> Vec<InterruptedCall> {
    let ids: Vec<String> = state
        .outstanding
        .iter()
        .filter(|(_, o)| o.call.connection_id == connection_id)
        .map(|(id, _)| id.clone())
        .collect();
    let mut interrupted: Vec<InterruptedCall> = ids
        .iter()
        .filter_map(|id| state.outstanding.remove(id))
        .map(|o| InterruptedCall {
            call: o.call,
            effect: o.effect,
        })
        .collect();
    interrupted.sort_by(|a, b| {
        a.call
            .invocation
            .invocation_id
            .cmp(&b.call.invocation.invocation_id)
    });
    interrupted
}

/// The live surface of `run`'s own tab and session, if any.
fn live_surface<'s>(state: &'s HostState, run: &AgentRun) -> Option<&'s LiveSurface> {
    run.tab_id
        .as_ref()
        .and_then(|t| state.surfaces.get(t))
        .filter(|s| s.identity.session_id == run.session_id)
}

/// The browser tools of `run`'s tab, by capability id.
fn browser_tools(state: &HostState, run: &AgentRun) -> Vec<BrowserTool> {
    let Some(surface) = live_surface(state, run) else {
        return Vec::new();
    };
    let mut by_cap: BTreeMap<String, BrowserTool> = BTreeMap::new();
    let mut add = |cap: String, reference: BrowserReference| {
        by_cap
            .entry(cap.clone())
            .or_insert_with(|| BrowserTool {
                capability_id: cap,
                tab_id: surface.identity.tab_id.clone(),
                surface_version: surface.snapshot.surface_version,
                references: Vec::new(),
            })
            .references
            .push(reference);
    };
    for p in &surface.snapshot.procedures {
        let cap = surface
            .canonical
            .get(&p.procedure_id)
            .cloned()
            .unwrap_or_else(|| p.procedure_id.clone());
        add(cap, BrowserReference::Procedure(p.clone()));
    }
    if run.kind != ConsumerKind::Headless {
        for c in &surface.snapshot.components {
            for cap in c.capabilities() {
                let component = ComponentDescriptor {
                    observations: Vec::new(),
                    actions: Vec::new(),
                    ..c.clone()
                };
                add(
                    cap.capability_id().to_string(),
                    BrowserReference::View {
                        component,
                        capability: cap,
                    },
                );
            }
        }
    }
    by_cap.into_values().collect()
}

/// The canonical capability id of each procedure `snapshot` announces,
/// from `build`'s manifest (the announcement was verified against it).
fn canonical_ids(build: &KnownBuild, snapshot: &SurfaceSnapshot) -> HashMap<String, String> {
    let manifest = build.authority.manifest();
    snapshot
        .procedures
        .iter()
        .filter_map(|p| {
            let path = p.procedure_id.strip_prefix("domain:")?;
            let tool = manifest.tools.get(path)?;
            Some((p.procedure_id.clone(), canonical_capability_id(path, tool)))
        })
        .collect()
}
