//! Shared fixtures: a manifest compiled by `manifest!`, hand-written `BoundInput` impls
//! (the `#[agent_procedure]` macro is not used here), a recording executor.
#![allow(dead_code)]

use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use surface_runtime::{
    AgentConsumer, AgentInvocation, AgentInvocationResult, AgentManifest, AgentProcedureBinding,
    AgentProcedureExecutor, AgentProcedureRef, AuditEvent, Authority, BoundField, BoundInput,
    ConfirmationInfo, ExecuteRequest, ExecutionError, ManualClock, RegistrationHandle,
    Subscription, SurfaceRegistry,
};

/// The fixture manifest, compiled by `manifest!`: its authority carries the
/// generated validators the registry uses.
mod generated {
    surface_macros::manifest!(
        "tests/common/fixture.manifest.json",
        crate = ::surface_runtime
    );
}

/// The fixture manifest's text.
pub const MANIFEST: &str = generated::MANIFEST_JSON;

/// The fixture's generated authority (validators generated at compile time).
pub fn authority() -> Authority {
    generated::authority()
}

/// The same manifest as a runtime authority: the registry compiles its
/// schemas at registration.
pub fn runtime_authority() -> Authority {
    Authority::from_manifest(AgentManifest::from_json_str(MANIFEST).expect("fixture manifest"))
}

pub fn procedure(authority: &Authority, path: &str) -> AgentProcedureRef<Value, Value> {
    AgentProcedureRef::from_authority(authority, path).expect("path in fixture")
}

pub fn consumer() -> AgentConsumer {
    AgentConsumer::embedded("user-1")
}

/// `devices.disable` with `deviceIds` bound and locked.
#[derive(Clone, Debug)]
pub struct DisableBinding {
    pub device_ids: Vec<String>,
}

impl BoundInput for DisableBinding {
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
        m.insert("deviceIds".into(), serde_json::to_value(&self.device_ids)?);
        Ok(m)
    }
}

/// `devices.disable` with `deviceIds` locked and `reason` overridable.
#[derive(Clone, Debug)]
pub struct DisableWithReason {
    pub device_ids: Vec<String>,
    pub reason: String,
}

impl BoundInput for DisableWithReason {
    type Input = Value;
    const PROCEDURE: &'static str = "devices.disable";
    fn bound_fields() -> &'static [BoundField] {
        &[
            BoundField {
                name: "deviceIds",
                locked: true,
            },
            BoundField {
                name: "reason",
                locked: false,
            },
        ]
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut m = Map::new();
        m.insert("deviceIds".into(), json!(self.device_ids));
        m.insert("reason".into(), json!(self.reason));
        Ok(m)
    }
}

/// `devices.rename` with `deviceId` bound.
#[derive(Clone, Debug)]
pub struct RenameBinding {
    pub device_id: String,
}

impl BoundInput for RenameBinding {
    type Input = Value;
    const PROCEDURE: &'static str = "devices.rename";
    fn bound_fields() -> &'static [BoundField] {
        &[BoundField {
            name: "deviceId",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut m = Map::new();
        m.insert("deviceId".into(), json!(self.device_id));
        Ok(m)
    }
}

/// A binding that claims a field the manifest does not have.
pub struct BogusBinding;

impl BoundInput for BogusBinding {
    type Input = Value;
    const PROCEDURE: &'static str = "devices.disable";
    fn bound_fields() -> &'static [BoundField] {
        &[BoundField {
            name: "tenant",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        Ok(Map::new())
    }
}

/// What the executor received.
#[derive(Clone, Debug)]
pub struct Call {
    pub path: String,
    pub capability_id: String,
    pub input: Value,
    pub invocation_id: String,
    pub confirmation: Option<ConfirmationInfo>,
}

/// Records calls; answers `{"ok": true}` or a configured error.
#[derive(Default)]
pub struct RecordingExecutor {
    pub calls: Mutex<Vec<Call>>,
    pub fail_with: Mutex<Option<ExecutionError>>,
}

impl RecordingExecutor {
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

impl AgentProcedureExecutor for RecordingExecutor {
    fn execute(
        &self,
        request: ExecuteRequest,
    ) -> surface_runtime::sync::BoxFuture<'_, Result<Value, ExecutionError>> {
        self.calls.lock().unwrap().push(Call {
            path: request.path.to_string(),
            capability_id: request.capability_id.to_string(),
            input: request.input.clone(),
            invocation_id: request.info.invocation_id.to_string(),
            confirmation: request.info.confirmation.clone(),
        });
        let failure = self.fail_with.lock().unwrap().clone();
        Box::pin(async move {
            match failure {
                Some(err) => Err(err),
                None => Ok(json!({"ok": true})),
            }
        })
    }
}

pub struct Fixture {
    pub registry: SurfaceRegistry,
    pub executor: Arc<RecordingExecutor>,
    pub clock: Arc<ManualClock>,
    pub audit: Arc<Mutex<Vec<AuditEvent>>>,
    pub _audit_sub: Subscription,
}

/// Registers a plain reference to `path` (no binding, no `when`) and
/// returns its handle.
pub fn register_plain(registry: &SurfaceRegistry, path: &str) -> RegistrationHandle {
    registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            registry.authority(),
            path,
        )))
        .unwrap()
}

pub fn fixture() -> Fixture {
    fixture_with(|b| b)
}

pub fn fixture_with(
    configure: impl FnOnce(
        surface_runtime::SurfaceRegistryBuilder,
    ) -> surface_runtime::SurfaceRegistryBuilder,
) -> Fixture {
    fixture_on(authority(), configure)
}

/// [`fixture`] on the runtime authority (schemas compiled at registration).
pub fn runtime_fixture() -> Fixture {
    fixture_on(runtime_authority(), |b| b)
}

pub fn fixture_on(
    authority: Authority,
    configure: impl FnOnce(
        surface_runtime::SurfaceRegistryBuilder,
    ) -> surface_runtime::SurfaceRegistryBuilder,
) -> Fixture {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let registry = configure(
        SurfaceRegistry::builder(authority)
            .clock(clock.clone())
            .secret([42; 32]),
    )
    .build();
    let executor = Arc::new(RecordingExecutor::default());
    registry.set_procedure_executor(executor.clone());
    let audit = Arc::new(Mutex::new(Vec::new()));
    let sink = audit.clone();
    let sub = registry.on_audit(move |e| sink.lock().unwrap().push(e.clone()));
    Fixture {
        registry,
        executor,
        clock,
        audit,
        _audit_sub: sub,
    }
}

/// Polls a future that must complete without waiting (all test executors
/// and handlers are immediate).
pub fn now<F: Future>(fut: F) -> F::Output {
    futures_util::FutureExt::now_or_never(fut).expect("the future completes immediately")
}

/// Invokes `capability` like a well-behaved agent: with the
/// `surfaceVersion` of the current surface (destructive and
/// external-side-effect calls need one).
pub fn call(
    registry: &SurfaceRegistry,
    id: &str,
    capability: &str,
    input: Value,
) -> AgentInvocationResult {
    let mut inv = AgentInvocation::new(id, capability);
    inv.input = input;
    inv.surface_version = Some(registry.surface_version());
    now(registry.invoke(inv, &consumer()))
}

/// `inv` with the current `surfaceVersion` of `registry` unless it names
/// one already.
pub fn at_current_version(registry: &SurfaceRegistry, mut inv: AgentInvocation) -> AgentInvocation {
    inv.surface_version
        .get_or_insert(registry.surface_version());
    inv
}

pub fn error_code(result: &AgentInvocationResult) -> Option<&str> {
    result.error().map(|e| e.code.as_str())
}
