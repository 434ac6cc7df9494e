//! `validation = runtime` opts a manifest out of generated validators: the
//! unsupported keyword compiles, and the authority carries no validator.
//! This package builds agent-surface without the `dynamic` feature, so such
//! a procedure cannot be registered (there is no runtime schema compiler),
//! while a generated reference registers.

mod api {
    agent_surface::manifest!("../fixtures/unsupported.manifest.json", validation = runtime);
}

mod generated {
    agent_surface::manifest!("../fixtures/bind.manifest.json", validation = generated);
}

use agent_surface::{AgentProcedureBinding, RegistrationError, SurfaceRegistry};

fn main() {
    assert!(api::authority().input_validator("notes.tag").is_none());
    let registry = SurfaceRegistry::new(api::authority());
    match registry.register_procedure(AgentProcedureBinding::new(api::notes::tag())) {
        Err(RegistrationError::NoValidator { name }) => assert_eq!(name, "notes.tag"),
        other => panic!("expected NoValidator, got {other:?}"),
    }

    assert!(generated::authority()
        .input_validator("devices.disable")
        .is_some());
    let registry = SurfaceRegistry::new(generated::authority());
    let handle = registry
        .register_procedure(AgentProcedureBinding::new(generated::devices::rename()))
        .expect("a generated reference registers without `dynamic`");
    drop(handle);
}
