//! A view capability whose input type `view_inputs!` generated registers
//! and runs without the `dynamic` feature: this package builds
//! agent-surface without it (a runtime schema is refused with
//! `NoValidator`, as `runtime_validation.rs` shows for procedures), and the
//! generated validator answers a wrong input with the pipeline's
//! `INVALID_INPUT` and `details.errors`.

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
        ));
    let _table = registry
        .register_component(table)
        .expect("a view_inputs! capability registers without `dynamic`");

    assert_eq!(
        call(
            &registry,
            "i1",
            "view:devices.table.select",
            json!({"deviceIds": ["dev-1", "dev-2"]})
        ),
        json!({"status": "success", "invocationId": "i1", "output": {"selected": ["dev-1", "dev-2"]}})
    );
    assert_eq!(
        call(
            &registry,
            "i2",
            "view:devices.table.filter",
            json!({"status": "disabled"})
        ),
        json!({"status": "success", "invocationId": "i2", "output": {"status": "disabled"}})
    );
    assert_eq!(
        call(
            &registry,
            "i3",
            "view:devices.table.select",
            json!({"deviceIds": ["dev-1", ""], "all": true})
        ),
        json!({"status": "error", "invocationId": "i3", "error": {
            "code": "INVALID_INPUT",
            "message": "The input does not match the input schema.",
            "retry": "with-changes",
            "details": {"errors": [
                {"instancePath": "/deviceIds/1", "keyword": "minLength", "message": "value is shorter than 1 character"},
                {"instancePath": "", "keyword": "additionalProperties", "message": "Additional properties are not allowed ('all' was unexpected)"}
            ]}
        }})
    );
    assert_eq!(
        call(
            &registry,
            "i4",
            "view:devices.table.filter",
            json!({"status": "gone"})
        ),
        json!({"status": "error", "invocationId": "i4", "error": {
            "code": "INVALID_INPUT",
            "message": "The input does not match the input schema.",
            "retry": "with-changes",
            "details": {"errors": [
                {"instancePath": "/status", "keyword": "enum", "message": "value is not one of \"active\" or \"disabled\""}
            ]}
        }})
    );
    assert_eq!(
        call(&registry, "i5", "view:devices.table.select", json!({})),
        json!({"status": "error", "invocationId": "i5", "error": {
            "code": "INVALID_INPUT",
            "message": "The input does not match the input schema.",
            "retry": "with-changes",
            "details": {"errors": [
                {"instancePath": "", "keyword": "required", "message": "\"deviceIds\" is a required property"}
            ]}
        }})
    );

    // The agent is shown the schema the validator was generated from.
    let snapshot = registry.snapshot(&AgentConsumer::embedded("user-1"));
    let select = &snapshot.components[0].capabilities[0];
    assert_eq!(select.capability_id, "view:devices.table.select");
    let shown: Value = serde_json::from_str(view::SelectRows::INPUT_SCHEMA_JSON).unwrap();
    assert_eq!(*select.input_schema, shown);
    assert_eq!(shown["required"], json!(["deviceIds"]));
}
