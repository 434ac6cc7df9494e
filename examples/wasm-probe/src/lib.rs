//! The weight probe (`scripts/wasm-size`): a wasm32 app that uses
//! agent-surface the way an application does and nothing else —
//! `manifest!` of the devices manifest, one `#[agent_procedure]` binding
//! (the table's selection, locked, bound into `devices.disable`), a
//! snapshot and one `invoke` through a no-op executor.
//!
//! Its one export, `run()`, returns `{"snapshot": …, "invoke": …}` (the
//! snapshot and the invocation result as the agent would get them), so
//! the script can check that the module really ran. On native targets the library is empty.
#![forbid(unsafe_code)]

#[cfg(target_arch = "wasm32")]
mod probe {
    use std::sync::Arc;

    use agent_surface::executor::{AgentProcedureExecutor, ExecuteRequest, ExecutionError};
    use agent_surface::{
        agent_procedure, AgentConsumer, AgentInvocation, AgentProcedureBinding, SurfaceRegistry,
    };
    use serde_json::{json, Value};
    use wasm_bindgen::prelude::wasm_bindgen;

    /// Everything `manifest!` generates from the devices manifest.
    mod api {
        agent_surface::manifest!("../../tests/fixtures/devices.manifest.json");
    }

    /// The selected rows, bound into `devices.disable` (locked).
    #[agent_procedure(api, "devices.disable")]
    struct Selection {
        device_ids: Vec<String>,
    }

    /// Answers every call with `{"ok": true}`.
    struct Noop;

    impl AgentProcedureExecutor for Noop {
        fn execute(
            &self,
            _request: ExecuteRequest,
        ) -> agent_surface::sync::BoxFuture<'_, Result<Value, ExecutionError>> {
            Box::pin(std::future::ready(Ok(json!({ "ok": true }))))
        }
    }

    /// Builds the registry, registers the binding, takes a snapshot and
    /// invokes `devices.disable` once; returns what it saw as JSON.
    #[wasm_bindgen]
    pub fn run() -> String {
        let registry = SurfaceRegistry::builder(api::authority()).build();
        registry.set_procedure_executor(Arc::new(Noop));
        let _disable = match registry.register_procedure(
            AgentProcedureBinding::new(api::devices::disable())
                .bind(|| Selection {
                    device_ids: vec!["device-1".into(), "device-2".into()],
                })
                .when(|| true),
        ) {
            Ok(handle) => handle,
            Err(e) => return json!({ "error": e.to_string() }).to_string(),
        };
        let consumer = AgentConsumer::embedded("probe");
        let snapshot = registry.snapshot(&consumer);
        let mut invocation = AgentInvocation::new("probe-1", "domain:devices.disable");
        invocation.input = json!({ "reason": "probe" });
        let result = futures_util::FutureExt::now_or_never(registry.invoke(invocation, &consumer));
        json!({
            "snapshot": snapshot,
            "invoke": result,
        })
        .to_string()
    }
}
