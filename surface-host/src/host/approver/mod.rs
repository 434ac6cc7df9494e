//! The approvals service a [`Host`] hands out (feature `axum`;
//! docs/host.md, "The approvals service"): the approver page and its JSON
//! twin, behind the application's approver authentication, deciding
//! through [`Host::decide_approval`] and resuming the held call.
//!
//! ```text
//! GET  {path}[?after=CURSOR&done=ID&problem=TEXT]  the page: sign-in, or the pending approvals (paged oldest first)
//! POST {path}/login      form `secret`       the shared-secret sign-in (ApproverSignIn::secret)
//! POST {path}/decide     form `approvalId`, `decision` = approve | reject | resume → 303
//! GET  {path}/api/pending[?after=CURSOR]      {"approvals":[…],"pageSize","next"}
//! POST {path}/api/decide {"approvalId","decision"} → {"approvalId","state","decidedBy","summary","outcome"}
//! ```
//!
//! Every route is behind [`page_guard`] (the `Host` allow-list; `Origin`
//! or `Referer` of the page's own origin on every POST), bodies are
//! bounded by [`MAX_APPROVER_REQUEST_BYTES`], the JSON routes take only
//! `Content-Type: application/json`, and the page is
//! [`html_page`](crate::web::html_page): no scripts, no framing, every
//! value escaped.

mod decider;
mod handlers;
mod listing;
mod page;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::extract::DefaultBodyLimit;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::Router;
use surface_runtime::bridge::CapabilityClient;
use surface_runtime::invocation::AgentInvocationResult;
use surface_store::{ApprovalRecord, ApprovalState};

pub use decider::{HttpApprovalDecider, DECIDE_TIMEOUT, MAX_DECIDE_ANSWER_BYTES};

use super::{ApprovalDecider, Host};
use crate::web::{page_guard, PageOrigin, PageSessions, SessionLimits};

/// Default [`ApprovalsOptions::page_size`]: 50 approvals a page.
pub const DEFAULT_APPROVALS_PAGE_SIZE: u32 = 50;
/// Largest [`ApprovalsOptions::page_size`]: 100 (larger values are
/// clamped). The page asks the gateway about each row it shows.
pub const MAX_APPROVALS_PAGE_SIZE: u32 = 100;
/// Largest request body of the service (sign-in, decisions): 4 KiB.
pub const MAX_APPROVER_REQUEST_BYTES: usize = 4 * 1024;
/// Characters of a `problem` shown on the page at most: 300.
pub const MAX_SHOWN_PROBLEM_CHARS: usize = 300;
/// Approvals whose resumed outcome was handed to
/// [`ApprovalsOptions::on_resumed`] that the service remembers, so each
/// is handed over once: 10,000 (past it the set starts over).
pub const MAX_REPORTED_APPROVALS: usize = 10_000;
/// The cookie of [`ApproverSignIn::secret`]'s sessions.
pub const APPROVER_COOKIE: &str = "approver_session";

/// Who is an approver: the application's authentication of a request
/// (its SSO session, its own cookie). Implemented for closures
/// `Fn(&HeaderMap) -> Option<String>`.
pub trait ApproverAuth: Send + Sync + 'static {
    /// The approver this request is signed in as (the name recorded with
    /// the decision), or `None`: the service answers 401 and shows no
    /// approval.
    fn approver(&self, headers: &HeaderMap) -> Option<String>;
}

impl<F: Fn(&HeaderMap) -> Option<String> + Send + Sync + 'static> ApproverAuth for F {
    fn approver(&self, headers: &HeaderMap) -> Option<String> {
        self(headers)
    }
}

/// How approvers sign in to the service.
pub struct ApproverSignIn(SignIn);

pub(crate) enum SignIn {
    Secret {
        digest: [u8; 32],
        approver: String,
        sessions: PageSessions<String>,
    },
    Application {
        auth: Arc<dyn ApproverAuth>,
        sign_in_url: Option<String>,
    },
}

impl ApproverSignIn {
    /// A shared secret typed on the page's sign-in form (compared as
    /// SHA-256 digests; an empty secret never signs in); a signed-in
    /// approver decides as `approver` and holds a session cookie of its own
    /// ([`APPROVER_COOKIE`]: `HttpOnly; SameSite=Strict`; `__Host-`
    /// prefixed and `Secure` when the service's origin is https; refused
    /// when a request carries its name twice; bounded by
    /// [`SessionLimits::default`]) — a requester's page session grants
    /// nothing here.
    pub fn secret(secret: &str, approver: impl Into<String>) -> Self {
        let digest = match secret.is_empty() {
            true => [0; 32],
            false => surface_runtime::hash::sha256(secret.as_bytes()),
        };
        Self(SignIn::Secret {
            digest,
            approver: approver.into(),
            sessions: PageSessions::new(APPROVER_COOKIE, SessionLimits::default()),
        })
    }

    /// The application's own authentication; a person not signed in is
    /// shown a link to `sign_in_url` (when given).
    pub fn application(auth: impl ApproverAuth, sign_in_url: Option<String>) -> Self {
        Self(SignIn::Application {
            auth: Arc::new(auth),
            sign_in_url,
        })
    }

    fn approver(&self, headers: &HeaderMap) -> Option<String> {
        match &self.0 {
            SignIn::Secret { sessions, .. } => sessions.authenticate(headers).map(|s| s.data),
            SignIn::Application { auth, .. } => auth.approver(headers),
        }
    }
}

/// One line for a person: what the resumed call did.
pub type OutcomeSummary =
    Arc<dyn Fn(&ApprovalRecord, &AgentInvocationResult) -> String + Send + Sync>;
/// Hears each resumed outcome once (to deliver it to its run).
pub type OnResumed = Arc<dyn Fn(&ApprovalRecord, &AgentInvocationResult) + Send + Sync>;

/// The configuration of [`Host::approvals`].
pub struct ApprovalsOptions {
    origin: PageOrigin,
    sign_in: ApproverSignIn,
    decider: Arc<dyn ApprovalDecider>,
    requester: Arc<dyn CapabilityClient>,
    path: String,
    title: String,
    page_size: u32,
    summary: OutcomeSummary,
    on_resumed: Option<OnResumed>,
}

impl ApprovalsOptions {
    /// The service for the page origin `origin` (its guard), approvers
    /// signing in by `sign_in`, decisions sent through `decider` (the
    /// backend's decision endpoint, the approver's credential) and the
    /// gateway read and resumed through `requester` (the requester's
    /// credential). Path `/approver`, title `Approvals`,
    /// [`DEFAULT_APPROVALS_PAGE_SIZE`], [`default_summary`].
    pub fn new(
        origin: PageOrigin,
        sign_in: ApproverSignIn,
        decider: Arc<dyn ApprovalDecider>,
        requester: Arc<dyn CapabilityClient>,
    ) -> Self {
        Self {
            origin,
            sign_in,
            decider,
            requester,
            path: "/approver".into(),
            title: "Approvals".into(),
            page_size: DEFAULT_APPROVALS_PAGE_SIZE,
            summary: Arc::new(default_summary),
            on_resumed: None,
        }
    }

    /// Serves under `path` (`/` prepended when missing, a trailing `/`
    /// dropped).
    pub fn path(mut self, path: &str) -> Self {
        self.path = format!("/{}", path.trim_matches('/'));
        self
    }

    /// The page's title and heading (escaped).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// Approvals a page lists: 1 to [`MAX_APPROVALS_PAGE_SIZE`] (clamped).
    pub fn page_size(mut self, size: u32) -> Self {
        self.page_size = size.clamp(1, MAX_APPROVALS_PAGE_SIZE);
        self
    }

    /// How a resumed outcome reads for a person (on the page after a
    /// decision, and `summary` of the JSON answer).
    pub fn summary(
        mut self,
        summary: impl Fn(&ApprovalRecord, &AgentInvocationResult) -> String + Send + Sync + 'static,
    ) -> Self {
        self.summary = Arc::new(summary);
        self
    }

    /// Called once per approval this service resumed (a decision, a
    /// retry, [`ApprovalsService::resume_recovered`]) with the stored
    /// approval and its outcome.
    pub fn on_resumed(
        mut self,
        on_resumed: impl Fn(&ApprovalRecord, &AgentInvocationResult) + Send + Sync + 'static,
    ) -> Self {
        self.on_resumed = Some(Arc::new(on_resumed));
        self
    }
}

/// The summary of [`ApprovalsOptions::new`]: `Approved by A and resumed:
/// the call succeeded.`, `Rejected by A: the call was not run.` or
/// `Approved by A, but not done: CODE.`
pub fn default_summary(approval: &ApprovalRecord, outcome: &AgentInvocationResult) -> String {
    let by = approval.decided_by.as_deref().unwrap_or("the approver");
    match outcome.error() {
        None => format!("Approved by {by} and resumed: the call succeeded."),
        Some(_) if approval.state == ApprovalState::Rejected => {
            format!("Rejected by {by}: the call was not run.")
        }
        Some(error) => format!("Approved by {by}, but not done: {}.", error.code.as_str()),
    }
}

/// The approvals service of a [`Host`] ([`Host::approvals`]): its
/// [`router`](Self::router), and the resumption of what a previous process
/// decided. Cheap to clone.
#[derive(Clone)]
pub struct ApprovalsService {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) host: Host,
    pub(crate) sign_in: ApproverSignIn,
    pub(crate) decider: Arc<dyn ApprovalDecider>,
    pub(crate) requester: Arc<dyn CapabilityClient>,
    pub(crate) path: String,
    pub(crate) title: String,
    pub(crate) page_size: u32,
    pub(crate) summary: OutcomeSummary,
    on_resumed: Option<OnResumed>,
    reported: Mutex<HashSet<String>>,
    origin: Arc<PageOrigin>,
}

impl std::fmt::Debug for ApprovalsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalsService")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// The approvals service on this host (see [`ApprovalsOptions`]).
    pub fn approvals(&self, options: ApprovalsOptions) -> ApprovalsService {
        let mut sign_in = options.sign_in;
        if let SignIn::Secret { sessions, .. } = &mut sign_in.0 {
            if options.origin.scheme() == "https" {
                sessions.make_secure();
            }
        }
        ApprovalsService {
            inner: Arc::new(Inner {
                host: self.clone(),
                sign_in,
                decider: options.decider,
                requester: options.requester,
                path: options.path,
                title: options.title,
                page_size: options.page_size,
                summary: options.summary,
                on_resumed: options.on_resumed,
                reported: Mutex::default(),
                origin: Arc::new(options.origin),
            }),
        }
    }

    /// `self.approvals(options).router()`: the approvals service's routes,
    /// to merge into the application's router.
    pub fn approvals_service(&self, options: ApprovalsOptions) -> Router {
        self.approvals(options).router()
    }
}

impl ApprovalsService {
    /// The routes (module documentation), guarded and bounded, to merge
    /// into the application's router (`app.merge(service.router())`).
    pub fn router(&self) -> Router {
        let p = &self.inner.path;
        Router::new()
            .route(p, get(handlers::page))
            .route(&format!("{p}/login"), post(handlers::login))
            .route(&format!("{p}/decide"), post(handlers::decide_form))
            .route(&format!("{p}/api/pending"), get(handlers::api_pending))
            .route(&format!("{p}/api/decide"), post(handlers::api_decide))
            .with_state(self.inner.clone())
            .layer(DefaultBodyLimit::max(MAX_APPROVER_REQUEST_BYTES))
            .layer(axum::middleware::from_fn_with_state(
                self.inner.origin.clone(),
                page_guard,
            ))
    }

    /// Resumes the approvals [`Host::recovery`] found decided but not
    /// resumed (a process stopped between the decision and the resume),
    /// handing each outcome to [`ApprovalsOptions::on_resumed`]; answers
    /// each approval id with `Err` (a sentence) when it could not be
    /// resumed yet.
    pub async fn resume_recovered(&self) -> Vec<(String, Result<(), String>)> {
        let mut results = Vec::new();
        for approval in &self.inner.host.recovery().awaiting_resume {
            let id = approval.approval_id.clone();
            let resumed = self.inner.resume(&id).await.map(|_| ());
            results.push((id, resumed.map_err(|r| r.message)));
        }
        results
    }
}

impl Inner {
    /// Hands `outcome` of `approval_id` to `on_resumed`, once.
    pub(crate) fn report(&self, approval: &ApprovalRecord, outcome: &AgentInvocationResult) {
        let Some(on_resumed) = &self.on_resumed else {
            return;
        };
        {
            let mut reported = self.reported.lock().unwrap_or_else(|p| p.into_inner());
            if reported.len() >= MAX_REPORTED_APPROVALS {
                reported.clear();
            }
            if !reported.insert(approval.approval_id.clone()) {
                return;
            }
        }
        on_resumed(approval, outcome);
    }
}
