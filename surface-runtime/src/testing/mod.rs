//! A test kit for an application's agent surface (feature `testing`;
//! `docs/testing.md`): [`TestSurface`] runs the real registry and pipeline
//! with a [`FakeExecutor`] for the server and a manual clock, so a test
//! says "with nothing selected, disable is unavailable with this reason"
//! or "the agent cannot set deviceIds" without a browser, a host or an
//! agent. Assertions panic with a message that lists the snapshot
//! ([`describe_surface`]); [`serialize_surface_snapshot`] writes a snapshot
//! stably, for golden files.
//!
//! No async runtime is needed: [`TestSurface::call`] completes calls whose
//! handlers answer at once (the fake executor does); [`TestSurface::invoke`]
//! is the same call as a future, for handlers that wait.

mod assertions;
mod executor;
mod render;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

pub use assertions::assert_fails_with;
pub use executor::{ExecutedCall, FakeExecutor};
pub use render::{describe_surface, serialize_surface_snapshot};

use crate::audit::AuditEvent;
use crate::authority::Authority;
use crate::clock::ManualClock;
use crate::confirmation::PendingConfirmation;
use crate::invocation::{
    AgentConsumer, AgentError, AgentInvocation, AgentInvocationResult, ErrorCode,
};
use crate::registry::{Subscription, SurfaceRegistry, SurfaceRegistryBuilder};
use crate::snapshot::SurfaceSnapshot;
use crate::sync::lock;

/// Where a test surface's clock starts: 2026-01-01T00:00:00.000Z, in ms
/// since the Unix epoch.
pub const TEST_START_MS: u64 = 1_767_225_600_000;

/// The registry secret of [`TestSurface::new`]: fixed, so confirmation
/// ids repeat from run to run. Never use it outside tests.
pub const TEST_SECRET: [u8; 32] = [7; 32];

/// The number of the next invocation id, process-wide: two test surfaces
/// over one registry never reuse an id (a reused one would be a replay).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How many audit events a test surface keeps (the oldest go first).
pub const MAX_AUDIT_EVENTS: usize = 10_000;

/// A registry under test, with the calls an agent would make and the
/// assertions an application team needs. See the module docs.
pub struct TestSurface {
    registry: SurfaceRegistry,
    clock: Option<Arc<ManualClock>>,
    executor: Arc<FakeExecutor>,
    consumer: AgentConsumer,
    audit: Arc<Mutex<Vec<AuditEvent>>>,
    _audit: Subscription,
}

impl TestSurface {
    /// A registry over `authority` with a manual clock at
    /// [`TEST_START_MS`], [`TEST_SECRET`] and a [`FakeExecutor`]; the
    /// consumer is `AgentConsumer::embedded("test-agent")`.
    pub fn new(authority: Authority) -> Self {
        Self::with(authority, |builder| builder)
    }

    /// [`Self::new`], with `configure` applied to the registry builder
    /// after the test clock and secret (policies, a principal, an
    /// environment, bounds; a clock set there replaces the test clock, and
    /// [`Self::advance`] then panics).
    pub fn with(
        authority: Authority,
        configure: impl FnOnce(SurfaceRegistryBuilder) -> SurfaceRegistryBuilder,
    ) -> Self {
        let clock = Arc::new(ManualClock::new(TEST_START_MS));
        let builder = SurfaceRegistry::builder(authority)
            .clock(clock.clone())
            .secret(TEST_SECRET);
        let mut surface = Self::over(configure(builder).build());
        surface.clock = Some(clock);
        surface
    }

    /// A test surface over an existing registry — a page's
    /// (`PageSurface::registry()`), with everything the page registered.
    /// Its procedure executor is replaced by a [`FakeExecutor`], so no
    /// call reaches a backend; its clock is its own ([`Self::advance`]
    /// panics).
    pub fn over(registry: SurfaceRegistry) -> Self {
        let executor = Arc::new(FakeExecutor::default());
        registry.set_procedure_executor(executor.clone());
        let audit = Arc::new(Mutex::new(Vec::new()));
        let sink = audit.clone();
        let subscription = registry.on_audit(move |event| {
            let mut events = lock(&sink);
            if events.len() == MAX_AUDIT_EVENTS {
                events.remove(0);
            }
            events.push(event.clone());
        });
        Self {
            registry,
            clock: None,
            executor,
            consumer: AgentConsumer::embedded("test-agent"),
            audit,
            _audit: subscription,
        }
    }

    /// The same surface, calling and taking snapshots as `consumer`.
    #[must_use]
    pub fn as_consumer(mut self, consumer: AgentConsumer) -> Self {
        self.consumer = consumer;
        self
    }

    /// The registry: register the application's bindings and components
    /// on it as the application does.
    pub fn registry(&self) -> &SurfaceRegistry {
        &self.registry
    }

    /// The fake server: set answers, read the calls it received.
    pub fn executor(&self) -> &FakeExecutor {
        &self.executor
    }

    /// The consumer calls and snapshots are made as.
    pub fn consumer(&self) -> &AgentConsumer {
        &self.consumer
    }

    /// Moves the test clock forward (confirmation expiry, rate limits).
    ///
    /// # Panics
    /// On a surface without the test clock ([`Self::over`], or a clock set
    /// in [`Self::with`]).
    pub fn advance(&self, by: Duration) {
        match &self.clock {
            Some(clock) => clock.advance(by),
            None => panic!("this TestSurface has no test clock: build it with TestSurface::new or TestSurface::with"),
        }
    }

    /// The audit events so far (at most [`MAX_AUDIT_EVENTS`], oldest
    /// first).
    pub fn audit(&self) -> Vec<AuditEvent> {
        lock(&self.audit).clone()
    }

    /// What the agent sees now.
    pub fn snapshot(&self) -> SurfaceSnapshot {
        self.registry.snapshot(&self.consumer)
    }

    /// [`serialize_surface_snapshot`] of a snapshot taken now.
    pub fn serialize_snapshot(&self) -> String {
        serialize_surface_snapshot(&self.snapshot())
    }

    /// A fresh invocation id: `test-<n>`, `n` counting up across every
    /// test surface of the process.
    fn fresh_id(&self) -> String {
        format!("test-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed))
    }

    /// Calls `capability_id` as an agent would: a fresh invocation id and
    /// the current `surfaceVersion`, no registration id.
    pub fn invoke(
        &self,
        capability_id: &str,
        input: Value,
    ) -> impl Future<Output = AgentInvocationResult> + '_ {
        let mut invocation = AgentInvocation::new(self.fresh_id(), capability_id);
        invocation.input = input;
        self.invoke_with(invocation)
    }

    /// Runs `invocation` as given, with the current `surfaceVersion` when
    /// it names none.
    pub fn invoke_with(
        &self,
        mut invocation: AgentInvocation,
    ) -> impl Future<Output = AgentInvocationResult> + '_ {
        invocation
            .surface_version
            .get_or_insert(self.registry.surface_version());
        self.registry.invoke(invocation, &self.consumer)
    }

    /// [`Self::invoke`], completed at once.
    ///
    /// # Panics
    /// When the call does not complete at its first poll (a handler or
    /// executor that waits): use [`Self::invoke`] and await it.
    pub fn call(&self, capability_id: &str, input: Value) -> AgentInvocationResult {
        complete(self.invoke(capability_id, input), capability_id)
    }

    /// Calls `capability_id`, expects `CONFIRMATION_REQUIRED`, approves it
    /// as the user would (`registry.confirm`) and retries with a fresh id
    /// and the `confirmationId`; the confirmation the user saw and the
    /// retry's result.
    ///
    /// # Panics
    /// When the first call is not `CONFIRMATION_REQUIRED` (the message shows
    /// its result and the surface), or a call does not complete at once.
    pub fn call_approved(
        &self,
        capability_id: &str,
        input: Value,
    ) -> (PendingConfirmation, AgentInvocationResult) {
        self.call_deciding(capability_id, input, true)
    }

    /// As [`Self::call_approved`], the user declining instead: the retry's
    /// result is `CONFIRMATION_INVALID` (`denied`).
    ///
    /// # Panics
    /// As [`Self::call_approved`].
    pub fn call_rejected(
        &self,
        capability_id: &str,
        input: Value,
    ) -> (PendingConfirmation, AgentInvocationResult) {
        self.call_deciding(capability_id, input, false)
    }

    fn call_deciding(
        &self,
        capability_id: &str,
        input: Value,
        approve: bool,
    ) -> (PendingConfirmation, AgentInvocationResult) {
        let first = self.call(capability_id, input.clone());
        let asked = first
            .error()
            .filter(|e| e.code == ErrorCode::ConfirmationRequired)
            .and_then(|e| e.details.get("confirmationId"))
            .and_then(Value::as_str)
            .and_then(|id| self.registry.pending_confirmation(id));
        let Some(pending) = asked else {
            panic!(
                "expected `{}` to ask for confirmation, got:\n{}\n{}",
                capability_id.escape_debug(),
                result_text(&first),
                self.describe()
            );
        };
        let decided = if approve {
            self.registry.confirm(&pending.confirmation_id).map(|_| ())
        } else {
            self.registry.reject(&pending.confirmation_id)
        };
        if let Err(err) = decided {
            panic!("the confirmation could not be decided: {err}");
        }
        let mut retry = AgentInvocation::new(self.fresh_id(), capability_id);
        retry.input = input;
        retry.confirmation_id = Some(pending.confirmation_id.clone());
        let result = complete(self.invoke_with(retry), capability_id);
        (pending, result)
    }

    /// [`describe_surface`] of a snapshot taken now.
    pub fn describe(&self) -> String {
        describe_surface(&self.snapshot())
    }
}

/// Polls `call` once.
fn complete<F: Future>(call: F, capability_id: &str) -> F::Output {
    let mut call = std::pin::pin!(call);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match call.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!(
            "the call of `{}` did not complete at once (its handler or executor waits): use TestSurface::invoke and await it",
            capability_id.escape_debug()
        ),
    }
}

/// A result as pretty JSON, for failure messages.
fn result_text(result: &AgentInvocationResult) -> String {
    serde_json::to_string_pretty(result).unwrap_or_else(|_| format!("{result:?}"))
}

/// The error of `result`, if it is one (shared by the assertions).
fn error_of(result: &AgentInvocationResult) -> Option<&AgentError> {
    result.error()
}
