//! A view capability whose input type `view_inputs!` generated registers
//! and runs without the `dynamic` feature: this package builds
//! agent-surface without it (a runtime schema is refused with
//! `NoValidator`, as `runtime_validation.rs` shows for procedures), and the
//! generated validator answers a wrong input with the pipeline's
//! `INVALID_INPUT` and `details.issues`. An observation (no input) needs
//! no schema compiler either.

mod view {
    agent_surface::view_inputs!("../fixtures/view-inputs.json");
}

mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use agent_surface::{
    AgentConsumer, AgentInvocation, AgentInvocationResult, ComponentDefinition, RegistrationError,
    SurfaceRegistry, ViewCapability, ViewInput,
};
use serde_json::{json, Value};

/// Polls `future` once: the registry's local view calls complete at once.
fn now<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the call did not complete at once"),
    }
}

fn call(registry: &SurfaceRegistry, id: &str, capability: &str, input: Value) -> Value {
    let mut invocation = AgentInvocation::new(id, capability);
    invocation.input = input;
    invocation.surface_version = Some(registry.surface_version());
    let result: AgentInvocationResult =
        now(registry.invoke(invocation, &AgentConsumer::embedded("user-1")));
    serde_json::to_value(result).unwrap()
}

fn main() {
    let registry = SurfaceRegistry::new(api::authority());

    // This build has no runtime schema compiler.
    let raw =
        ComponentDefinition::new("devices.raw", "main").capability(ViewCapability::with_schema(
            "pick",
            "Pick",
            json!({"type": "object"}),
            |v: Value| async move { Ok(v) },
        ));
    match registry.register_component(raw) {
        Err(RegistrationError::NoValidator { name }) => assert_eq!(name, "view:devices.raw.pick"),
        other => panic!("expected NoValidator, got {other:?}"),
    }

    // A generated view input needs none.
    let table = ComponentDefinition::new("devices.table", "main")
        .capability(ViewCapability::new::<view::SelectRows, _, _>(
            "select",
            "Select rows of the devices table",
            |input: view::SelectRows| async move { Ok(json!({"selected": input.device_ids})) },
        ))
        .capability(ViewCapability::new::<view::FilterRows, _, _>(
            "filter",
            "Filter the devices table by status",
            |input: view::FilterRows| async move {
                Ok(json!({"status": input.status.map(|s| s.as_str())}))
            },
        ))
        .capability(ViewCapability::observation(
            "readSelection",
            "The selected rows",
            json!({"type": "object", "properties": {"selected": {"type": "array"}}}),
            || async { Ok(json!({"selected": ["dev-1"]})) },
        ));
    let _table = registry
        .register_component(table)
        .expect("a view_inputs! capability registers without `dynamic`");
    let version = registry.surface_version().to_string();
    let error = |id: &str, capability: &str, issues: Value| {
        json!({"status": "error", "invocationId": id, "capabilityId": capability, "error": {
            "code": "INVALID_INPUT",
            "message": "The input does not match the capability's schema. Fix the listed issues and retry.",
            "retry": "with-changes",
            "details": {"issues": issues}
        }, "surfaceVersion": version})
    };

    assert_eq!(
        call(
            &registry,
            "i1",
            "view:devices.table.select",
            json!({"deviceIds": ["dev-1", "dev-2"]})
        ),
        json!({"status": "ok", "invocationId": "i1", "capabilityId": "view:devices.table.select",
               "output": {"selected": ["dev-1", "dev-2"]}, "surfaceVersion": version})
    );
    assert_eq!(
        call(
            &registry,
            "i2",
            "view:devices.table.filter",
            json!({"status": "disabled"})
        ),
        json!({"status": "ok", "invocationId": "i2", "capabilityId": "view:devices.table.filter",
               "output": {"status": "disabled"}, "surfaceVersion": version})
    );
    assert_eq!(
        call(
            &registry,
            "i3",
            "view:devices.table.select",
            json!({"deviceIds": ["dev-1", ""], "all": true})
        ),
        error("i3", "view:devices.table.select", json!([
            {"path": "deviceIds[1]", "keyword": "minLength", "message": "must be at least 1 characters"},
            {"path": "all", "keyword": "additionalProperties", "message": "is not an allowed property"}
        ]))
    );
    assert_eq!(
        call(
            &registry,
            "i4",
            "view:devices.table.filter",
            json!({"status": "gone"})
        ),
        error("i4", "view:devices.table.filter", json!([
            {"path": "status", "keyword": "enum", "message": "must be one of [\"active\",\"disabled\"]"}
        ]))
    );
    assert_eq!(
        call(&registry, "i5", "view:devices.table.select", json!({})),
        error("i5", "view:devices.table.select", json!([
            {"path": "deviceIds", "keyword": "required", "message": "is required"}
        ]))
    );

    // The agent is shown the schema the validator was generated from.
    let snapshot = registry.snapshot(&AgentConsumer::embedded("user-1"));
    let select = &snapshot.components[0].actions[0];
    assert_eq!(select.capability_id, "view:devices.table.select");
    let shown: Value = serde_json::from_str(view::SelectRows::INPUT_SCHEMA_JSON).unwrap();
    assert_eq!(*select.input_schema, shown);
    assert_eq!(shown["required"], json!(["deviceIds"]));

    // The observation: listed as one, called with no input; whatever
    // object a call carries is ignored, as the original ignores it.
    let observation = &snapshot.components[0].observations[0];
    assert_eq!(observation.capability_id, "view:devices.table.readSelection");
    assert_eq!(
        call(&registry, "i6", "view:devices.table.readSelection", json!({})),
        json!({"status": "ok", "invocationId": "i6", "capabilityId": "view:devices.table.readSelection",
               "output": {"selected": ["dev-1"]}, "surfaceVersion": version})
    );
    assert_eq!(
        call(&registry, "i7", "view:devices.table.readSelection", json!({"x": 1})),
        json!({"status": "ok", "invocationId": "i7", "capabilityId": "view:devices.table.readSelection",
               "output": {"selected": ["dev-1"]}, "surfaceVersion": version})
    );
}
