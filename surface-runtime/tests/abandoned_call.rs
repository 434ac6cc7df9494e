//! A call whose future is dropped before the executor finished (a browser
//! session aborting its pending calls at disconnect drops them) fires the
//! executor's cancellation signal, so the executor can stop its work.

mod common;

use std::sync::{Arc, Mutex};

use common::{authority, consumer, procedure};
use futures_util::FutureExt;
use serde_json::Value;
use surface_runtime::sync::BoxFuture;
use surface_runtime::{
    AgentInvocation, AgentProcedureBinding, AgentProcedureExecutor, Cancellation, ExecuteRequest,
    ExecutionError, SurfaceRegistry,
};

/// Never finishes; keeps each call's signal.
#[derive(Default)]
struct Pending(Mutex<Vec<Cancellation>>);

impl AgentProcedureExecutor for Pending {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        self.0
            .lock()
            .unwrap()
            .push(request.info.cancellation.clone());
        Box::pin(std::future::pending())
    }
}

#[test]
fn dropping_an_invoke_future_mid_call_fires_the_executors_cancellation() {
    let registry = SurfaceRegistry::new(authority());
    let executor = Arc::new(Pending::default());
    registry.set_procedure_executor(executor.clone());
    let _list = registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            registry.authority(),
            "devices.list",
        )))
        .unwrap();
    let consumer = consumer();
    let mut call = registry
        .invoke(
            AgentInvocation::new("i-1", "domain:devices.list"),
            &consumer,
        )
        .boxed();
    assert!(
        (&mut call).now_or_never().is_none(),
        "the executor is pending"
    );
    let signal = executor.0.lock().unwrap()[0].clone();
    assert!(!signal.is_cancelled());
    drop(call);
    assert!(signal.is_cancelled());
}

/// A call that completes leaves its signal alone (an executor that keeps
/// it for background work is not told to stop).
#[test]
fn a_completed_call_does_not_fire_the_executors_cancellation() {
    let registry = SurfaceRegistry::new(authority());
    let signals = Arc::new(Mutex::new(Vec::new()));
    struct Keep(Arc<Mutex<Vec<Cancellation>>>);
    impl AgentProcedureExecutor for Keep {
        fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
            self.0
                .lock()
                .unwrap()
                .push(request.info.cancellation.clone());
            Box::pin(async { Ok(Value::Null) })
        }
    }
    registry.set_procedure_executor(Arc::new(Keep(signals.clone())));
    let _list = registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            registry.authority(),
            "devices.list",
        )))
        .unwrap();
    let result = common::now(registry.invoke(
        AgentInvocation::new("i-2", "domain:devices.list"),
        &consumer(),
    ));
    assert!(result.error().is_none(), "{result:?}");
    assert!(!signals.lock().unwrap()[0].is_cancelled());
}
