//! Remote browser sessions (`docs/host.md`): the browser side
//! ([`BrowserSurfaceSession`]) announces a registry's live surface to a
//! long-running agent host and answers its correlated calls; the host side
//! ([`AgentHost`]) verifies announcements against known build artifacts,
//! composes each run's tools and binds every outstanding call to its
//! connection, session, tab, run, tool call and invocation.
//!
//! Both sides are transport-free: the application moves the JSON messages
//! ([`BrowserSurfaceAnnouncement`], [`BrowserSurfaceCall`],
//! [`BrowserSurfaceResult`]) over its own authenticated transport
//! (WebSocket, SSE + POST, …). Neither side needs an async runtime, so the
//! module builds for `wasm32-unknown-unknown`. See `docs/host.md` for the
//! protocol and what stays the application's responsibility.
//!
//! * `wire` — the JSON messages; `wire_text` — lone UTF-16 surrogate
//!   escapes in their text ([`from_json_lossy`]); `session` —
//!   [`BrowserSurfaceSession`];
//!   `source` — [`SurfaceSource`], what a session needs of a registry;
//! * `agent_host` — `AgentHost` (feature `agent-host`: a server's, never
//!   compiled into a page); `verify` — how it checks an announcement
//!   against a `KnownBuild` (with the registry's own rules);
//!   `error` — [`HostError`].

#[cfg(feature = "agent-host")]
mod agent_host;
mod confirm;
mod error;
mod progress;
mod session;
mod source;
#[cfg(feature = "agent-host")]
mod verify;
mod wire;
mod wire_text;

#[cfg(feature = "agent-host")]
pub use agent_host::*;
pub(crate) use confirm::LocalHolds;
pub use confirm::{
    ConfirmationDecisionError, ConfirmationEvent, ConfirmationListener, ConfirmationMode,
    ConfirmationOutcome, HeldConfirmation, ProgressListener, SessionEventSubscription,
};
pub use error::{ArtifactMismatch, EchoField, HostError, IdentityChange};
pub use progress::{BrowserSurfaceProgress, BrowserToHostMessage, ProgressStage};
pub use session::{
    AnnouncementListener, AnnouncementSubscription, BrowserSurfaceSession,
    BrowserSurfaceSessionOptions, SessionCollection, SessionError, SessionUsage,
    DEFAULT_MAX_ENTRIES, DEFAULT_TTL,
};
pub use source::{SourceListener, SourceSubscription, SurfaceSource};
#[cfg(feature = "agent-host")]
pub use verify::KnownBuild;
pub use wire::{
    serialized_chars, AnnouncementType, BrowserSurfaceAnnouncement, BrowserSurfaceCall,
    BrowserSurfaceIdentity, BrowserSurfaceOutcome, BrowserSurfaceResult, CallType, ProgressType,
    Rejected, RejectedStatus, RejectionReason, ResultType, MAX_ENVELOPE_CHARS, MAX_ID_CHARS,
    PROTOCOL_VERSION,
};
pub use wire_text::{from_json_lossy, replace_lone_surrogates};
