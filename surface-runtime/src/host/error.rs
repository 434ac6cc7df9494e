//! Why the agent host refuses an announcement, a dispatch or a result:
//! [`HostError`], with one variant (or sub-variant) per check.

use crate::confirmation::ConfirmationLevel;
use crate::invocation::InvalidInvocationId;
use crate::manifest::AgentEffect;

/// Why the host refused an announcement, a dispatch or a result. Each
/// message names what was wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// `protocolVersion` is not 1.
    #[error("unsupported protocol version {0}; this host speaks version 1")]
    ProtocolVersion(u32),
    /// The message's connection id is not the authenticated connection.
    #[error(
        "message for connection `{message}` arrived on authenticated connection `{authenticated}`"
    )]
    ConnectionMismatch {
        /// The id in the message.
        message: String,
        /// The authenticated connection id.
        authenticated: String,
    },
    /// The announced session is not the authenticated session.
    #[error("announcement for session `{announced}` arrived on a connection authenticated for session `{authenticated}`")]
    SessionMismatch {
        /// The announced session id.
        announced: String,
        /// The authenticated session id.
        authenticated: String,
    },
    /// No known build artifact has this app and build id.
    #[error("unknown build artifact: app `{app_id}`, build `{build_id}`; register it with AgentHost::add_known_build")]
    UnknownBuild {
        /// App id.
        app_id: String,
        /// Build id.
        build_id: String,
    },
    /// The announced surface does not match the known build artifact.
    #[error("announced capability `{capability_id}` does not match the known build artifact: {mismatch}; the browser runs another build than the one registered for its app and build id (register that build's authority with `KnownBuild`), or the announcement was altered")]
    ArtifactMismatch {
        /// The offending capability (procedure or view) id, as announced.
        capability_id: String,
        /// Which check failed.
        mismatch: ArtifactMismatch,
    },
    /// The tab already announced a different app, build or session, or the
    /// connection already carries another tab.
    #[error("identity change refused for tab `{tab_id}`: {change}")]
    IdentityChanged {
        /// The tab.
        tab_id: String,
        /// What changed.
        change: IdentityChange,
    },
    /// The announcement is older than one already accepted for the tab.
    #[error("announcement for tab `{tab_id}` at surface version {announced} is older than the accepted version {current}")]
    OutdatedAnnouncement {
        /// The tab.
        tab_id: String,
        /// Its version.
        announced: u64,
        /// The version in force.
        current: u64,
    },
    /// The run id is unknown.
    #[error("unknown run `{0}`; start it with AgentHost::start_run")]
    UnknownRun(String),
    /// A run with this id already exists.
    #[error("run `{0}` already exists")]
    RunExists(String),
    /// The run has no live browser surface (no tab, or the tab's session is
    /// gone). Calls are never sent to another tab.
    #[error("run `{0}` has no live browser session; browser tools are unavailable")]
    NoLiveSession(String),
    /// The capability is not offered to the run as a browser tool.
    #[error("`{capability_id}` is not offered to run `{run_id}` as a browser tool")]
    NotOffered {
        /// The run.
        run_id: String,
        /// The capability.
        capability_id: String,
    },
    /// More than one live registration and no registration id.
    #[error("`{capability_id}` has several live references; name one of {registration_ids:?}")]
    AmbiguousReference {
        /// The capability.
        capability_id: String,
        /// The candidates.
        registration_ids: Vec<String>,
    },
    /// The invocation id was dispatched before with a different envelope,
    /// or its call has completed or been interrupted: an id is dispatched
    /// at most once in the host's lifetime.
    #[error("invocation id `{0}` was already used; use a fresh invocation id per call")]
    InvocationConflict(String),
    /// The invocation id breaks the one invocation-id rule
    /// ([`crate::invocation::check_invocation_id`]: 1–256 visible ASCII
    /// characters); nothing was recorded or sent.
    #[error("invalid invocation id: {0}")]
    InvalidInvocationId(InvalidInvocationId),
    /// The host already remembers `max_invocation_ids` dispatched ids and
    /// never forgets one; start a new `AgentHost` for new runs.
    #[error("this host has dispatched {0} invocation ids, the most it remembers (ids are never forgotten, so none is ever dispatched twice); start a new AgentHost for new runs or raise with_max_invocation_ids")]
    InvocationIdsExhausted(usize),
    /// `max_outstanding` calls are outstanding.
    #[error("{0} calls are outstanding; wait for results before dispatching more")]
    CapacityExceeded(usize),
    /// The run still has outstanding calls on its current tab.
    #[error("run `{run_id}` has {count} outstanding call(s) on tab `{tab_id}`; a pending call never moves to another tab")]
    PendingCallsOnTab {
        /// The run.
        run_id: String,
        /// Its current tab.
        tab_id: String,
        /// How many calls are outstanding.
        count: usize,
    },
    /// No outstanding (or remembered) call has this invocation id.
    #[error("unsolicited result for invocation `{0}`")]
    Unsolicited(String),
    /// A second result for a completed call that differs from the first.
    #[error("a different result for already completed invocation `{0}` was refused")]
    ChangedDuplicate(String),
    /// The result does not echo the dispatch it answers.
    #[error("result for invocation `{invocation_id}` does not match its dispatch: {field} differs; a result must come back on the connection and session of its call and echo its ids")]
    ResultMismatch {
        /// The invocation.
        invocation_id: String,
        /// The first field that differs.
        field: EchoField,
    },
}

/// Which check of an announced capability against the known build
/// artifact failed (`HostError::ArtifactMismatch`). Procedure checks come
/// first, in the order the host runs them, then view-capability checks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactMismatch {
    /// A procedure id is not `domain:<path>`.
    #[error("a procedure id must be `domain:<path>`")]
    ProcedureIdShape,
    /// The path is not in the build's manifest.
    #[error("`{path}` is not in the build's manifest")]
    NotInManifest {
        /// The announced path.
        path: String,
    },
    /// The effect differs from the manifest's.
    #[error("effect `{announced}` differs from the manifest's `{manifest}`")]
    Effect {
        /// As announced.
        announced: AgentEffect,
        /// The manifest's.
        manifest: AgentEffect,
    },
    /// The output schema differs from the manifest's.
    #[error("outputSchema differs from the manifest's")]
    OutputSchema,
    /// The confirmation level is below the effect's floor.
    #[error("confirmation `{}` is below the `{}` floor of effect `{effect}`", .announced.as_str(), .floor.as_str())]
    ConfirmationBelowFloor {
        /// As announced.
        announced: ConfirmationLevel,
        /// `ConfirmationLevel::floor(effect)`.
        floor: ConfirmationLevel,
        /// The manifest's effect.
        effect: AgentEffect,
    },
    /// The description is neither the manifest's nor the manifest's
    /// followed by a space and more text (how a TypeScript page merging its
    /// contextual note announces it); the contextual text travels as
    /// `contextualNote`.
    #[error(
        "description is neither the manifest's description nor it followed by a space and more text (contextual text belongs in contextualNote)"
    )]
    Description,
    /// `requiresApproval` differs from the manifest's.
    #[error("requiresApproval differs from the manifest's")]
    RequiresApproval,
    /// A bound field is not a top-level property of the manifest input
    /// schema.
    #[error("bound field `{field}` is not a property of the manifest input schema")]
    BoundField {
        /// The announced field.
        field: String,
    },
    /// The input schema is not the manifest's reduced by the announced
    /// bindings (binding rule 1).
    #[error("inputSchema is not the manifest input schema reduced by the announced bindings")]
    InputSchema,
    /// A view capability id is not `view:<type>.<name>`.
    #[error("a view capability id must be `{expected}`")]
    ViewIdShape {
        /// `view:<type>.<name>` of the announced component and name.
        expected: String,
    },
    /// A view capability is named like a manifest path.
    #[error("the view capability collides with manifest path `{path}`")]
    ViewCollision {
        /// The manifest path.
        path: String,
    },
    /// The build restricts its view capabilities and does not declare this
    /// one (`KnownBuild::with_view_capabilities`).
    #[error("the build does not declare this view capability")]
    ViewNotDeclared,
}

/// What an announcement tried to change (`HostError::IdentityChanged`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdentityChange {
    /// The authenticated connection already carries another tab; a
    /// connection carries one tab.
    #[error("connection `{connection_id}` already carries tab `{other_tab_id}`")]
    ConnectionCarriesAnotherTab {
        /// The connection.
        connection_id: String,
        /// The tab it carries.
        other_tab_id: String,
    },
    /// The tab was announced before with another app id.
    #[error("the tab was announced with app `{accepted}`, now `{announced}`")]
    AppId {
        /// The accepted app id.
        accepted: String,
        /// The new one.
        announced: String,
    },
    /// The tab was announced before with another build id.
    #[error("the tab was announced with build `{accepted}`, now `{announced}`")]
    BuildId {
        /// The accepted build id.
        accepted: String,
        /// The new one.
        announced: String,
    },
    /// The tab was announced before for another session (the session ids
    /// are not repeated: one of them belongs to someone else).
    #[error("the tab was announced for another session; a tab id belongs to one session")]
    SessionId,
}

/// A field a result must echo from its dispatch
/// (`HostError::ResultMismatch`), in the order the host checks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EchoField {
    /// The result arrived on another authenticated connection.
    AuthenticatedConnection,
    /// The result arrived on a connection authenticated for another session.
    AuthenticatedSession,
    /// `connectionId`.
    ConnectionId,
    /// `runId`.
    RunId,
    /// `toolCallId`.
    ToolCallId,
    /// `result.invocationId`.
    ResultInvocationId,
}

impl EchoField {
    /// The field's name in messages (`"runId"`, `"authenticated session"`…).
    pub fn as_str(self) -> &'static str {
        match self {
            EchoField::AuthenticatedConnection => "authenticated connection",
            EchoField::AuthenticatedSession => "authenticated session",
            EchoField::ConnectionId => "connectionId",
            EchoField::RunId => "runId",
            EchoField::ToolCallId => "toolCallId",
            EchoField::ResultInvocationId => "result.invocationId",
        }
    }
}

impl std::fmt::Display for EchoField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
