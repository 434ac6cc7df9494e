//! Shared fixtures of the `host_*` integration tests: a registry over the
//! devices manifest with a counting executor, a [`CountingSource`] that
//! records every call reaching the registry, and a browser session with a
//! manual clock.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use surface_runtime::host::{
    BrowserSurfaceCall, BrowserSurfaceIdentity, BrowserSurfaceSession,
    BrowserSurfaceSessionOptions, SourceListener, SourceSubscription, SurfaceSource,
};
use surface_runtime::sync::BoxFuture;
use surface_runtime::{
    AgentConsumer, AgentInvocation, AgentInvocationResult, AgentManifest, AgentProcedureBinding,
    AgentProcedureExecutor, AgentProcedureRef, Authority, BoundField, BoundInput, Cancellation,
    ComponentDefinition, ExecuteRequest, ExecutionError, ManualClock, RegistrationHandle,
    SurfaceRegistry, SurfaceSnapshot, ViewCapability,
};

pub const MANIFEST: &str = include_str!("../../../tests/fixtures/devices.manifest.json");

pub fn authority() -> Authority {
    Authority::from_manifest(AgentManifest::from_json_str(MANIFEST).expect("fixture manifest"))
}

/// Executor that records every request and answers
/// `{"path": …, "input": …}`. While `gate` is closed, calls wait until it
/// opens or their cancellation fires (then they report `cancelled_seen`).
#[derive(Default)]
pub struct CountingExecutor {
    pub calls: Mutex<Vec<(String, Value)>>,
    pub gate: Mutex<Option<Cancellation>>,
    pub cancelled_seen: AtomicUsize,
}

impl CountingExecutor {
    pub fn count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
    /// Makes later calls wait; returns the signal that releases them.
    pub fn close_gate(&self) -> Cancellation {
        let gate = Cancellation::new();
        *self.gate.lock().unwrap() = Some(gate.clone());
        gate
    }
}

impl AgentProcedureExecutor for CountingExecutor {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        self.calls
            .lock()
            .unwrap()
            .push((request.path.to_string(), request.input.clone()));
        let gate = self.gate.lock().unwrap().clone();
        Box::pin(async move {
            if let Some(gate) = gate {
                let released = gate.cancelled();
                let cancelled = request.info.cancellation.cancelled();
                futures_util::pin_mut!(released, cancelled);
                match futures_util::future::select(released, cancelled).await {
                    futures_util::future::Either::Left(_) => {}
                    futures_util::future::Either::Right(_) => {
                        self.cancelled_seen.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
            Ok(json!({"path": request.path, "input": request.input}))
        })
    }
}

/// `devices.disable`'s UI-bound subset: `deviceIds`, locked.
pub struct DisableSelection(pub Vec<String>);

impl BoundInput for DisableSelection {
    type Input = Value;
    const PROCEDURE: &'static str = "devices.disable";
    fn bound_fields() -> &'static [BoundField] {
        &[BoundField {
            name: "deviceIds",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut m = Map::new();
        m.insert("deviceIds".into(), serde_json::to_value(&self.0)?);
        Ok(m)
    }
}

pub fn procedure(authority: &Authority, path: &str) -> AgentProcedureRef<Value, Value> {
    AgentProcedureRef::from_authority(authority, path).expect("path in fixture")
}

/// A registry with: `devices.list` (plain query), `devices.disable` bound to
/// a selection, `devices.purge` (destructive), and a `devices.table`
/// component with the view capability `select`.
pub struct Fixture {
    pub registry: SurfaceRegistry,
    pub executor: Arc<CountingExecutor>,
    pub handles: Vec<RegistrationHandle>,
}

impl Fixture {
    pub fn new() -> Self {
        let authority = authority();
        let registry = SurfaceRegistry::new(authority.clone());
        let executor = Arc::new(CountingExecutor::default());
        registry.set_procedure_executor(executor.clone());
        let mut handles = Vec::new();
        let table = registry
            .register_component(
                ComponentDefinition::new("devices.table", "main").capability(
                    ViewCapability::with_schema(
                        "select",
                        "Select rows",
                        json!({"type":"object","properties":{"ids":{"type":"array","items":{"type":"string"}}},"required":["ids"]}),
                        |input: Value| async move { Ok(json!({"selected": input["ids"]})) },
                    ),
                ),
            )
            .expect("component registers");
        handles.push(
            registry
                .register_procedure(AgentProcedureBinding::new(procedure(
                    &authority,
                    "devices.list",
                )))
                .expect("list registers"),
        );
        handles.push(
            registry
                .register_procedure(
                    AgentProcedureBinding::new(procedure(&authority, "devices.disable"))
                        .bind(|| DisableSelection(vec!["d1".into(), "d2".into()]))
                        .context(&table),
                )
                .expect("disable registers"),
        );
        handles.push(
            registry
                .register_procedure(AgentProcedureBinding::new(procedure(
                    &authority,
                    "devices.purge",
                )))
                .expect("purge registers"),
        );
        handles.insert(0, table);
        Fixture {
            registry,
            executor,
            handles,
        }
    }

    pub fn registration(&self, capability_id: &str) -> String {
        let snap = self.registry.snapshot(&AgentConsumer::embedded("u1"));
        if let Some(p) = snap
            .procedures
            .iter()
            .find(|p| p.procedure_id == capability_id)
        {
            return p.registration_id.clone();
        }
        snap.components
            .iter()
            .find(|c| c.capability(capability_id).is_some())
            .map(|c| c.registration_id.clone())
            .expect("capability registered")
    }
}

/// Wraps a registry and counts every call that reaches it.
#[derive(Clone)]
pub struct CountingSource {
    pub inner: SurfaceRegistry,
    pub invokes: Arc<AtomicUsize>,
}

impl CountingSource {
    pub fn new(inner: SurfaceRegistry) -> Self {
        Self {
            inner,
            invokes: Arc::new(AtomicUsize::new(0)),
        }
    }
    pub fn invokes(&self) -> usize {
        self.invokes.load(Ordering::SeqCst)
    }
}

impl SurfaceSource for CountingSource {
    fn surface_version(&self) -> u64 {
        SurfaceSource::surface_version(&self.inner)
    }
    fn snapshot(&self, consumer: &AgentConsumer) -> SurfaceSnapshot {
        SurfaceSource::snapshot(&self.inner, consumer)
    }
    fn invoke(
        &self,
        invocation: AgentInvocation,
        consumer: AgentConsumer,
        cancellation: Cancellation,
    ) -> BoxFuture<'static, AgentInvocationResult> {
        self.invokes.fetch_add(1, Ordering::SeqCst);
        SurfaceSource::invoke(&self.inner, invocation, consumer, cancellation)
    }
    fn subscribe(&self, listener: Arc<SourceListener>) -> Box<dyn SourceSubscription> {
        SurfaceSource::subscribe(&self.inner, listener)
    }
    fn confirm(
        &self,
        confirmation_id: &str,
    ) -> Result<surface_runtime::PendingConfirmation, surface_runtime::ConfirmationError> {
        SurfaceSource::confirm(&self.inner, confirmation_id)
    }
    fn reject(&self, confirmation_id: &str) -> Result<(), surface_runtime::ConfirmationError> {
        SurfaceSource::reject(&self.inner, confirmation_id)
    }
    fn pending_confirmation(
        &self,
        confirmation_id: &str,
    ) -> Option<surface_runtime::PendingConfirmation> {
        SurfaceSource::pending_confirmation(&self.inner, confirmation_id)
    }
}

pub fn identity() -> BrowserSurfaceIdentity {
    BrowserSurfaceIdentity::new("console", "build-1", "sess-1", "tab-1")
}

pub const T0: u64 = 1_700_000_000_000;

pub struct SessionFixture {
    pub fx: Fixture,
    pub source: CountingSource,
    pub clock: Arc<ManualClock>,
    pub session: BrowserSurfaceSession,
}

pub fn session_with(consumer: AgentConsumer, max_entries: usize, ttl: Duration) -> SessionFixture {
    let fx = Fixture::new();
    let source = CountingSource::new(fx.registry.clone());
    let clock = Arc::new(ManualClock::new(T0));
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(source.clone(), identity(), consumer)
            .max_entries(max_entries)
            .ttl(ttl)
            .clock(clock.clone()),
    );
    SessionFixture {
        fx,
        source,
        clock,
        session,
    }
}

pub fn session() -> SessionFixture {
    session_with(
        AgentConsumer::embedded("u1"),
        surface_runtime::host::DEFAULT_MAX_ENTRIES,
        surface_runtime::host::DEFAULT_TTL,
    )
}

impl SessionFixture {
    /// A well-formed call for `capability_id` at the current version.
    pub fn call(
        &self,
        connection_id: &str,
        invocation_id: &str,
        capability_id: &str,
        input: Value,
    ) -> BrowserSurfaceCall {
        let mut invocation = AgentInvocation::new(invocation_id, capability_id);
        invocation.registration_id = Some(self.fx.registration(capability_id));
        invocation.surface_version = Some(self.fx.registry.surface_version());
        invocation.input = input;
        BrowserSurfaceCall::new(
            identity(),
            connection_id,
            "run-1",
            format!("tc-{invocation_id}"),
            invocation,
        )
    }
}
