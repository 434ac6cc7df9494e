//! `runtime_validation = ["notes.tag"]` leaves one procedure to run-time
//! validation: the manifest compiles although `notes.tag`'s schema has
//! keywords the generator does not support, `notes.rename` keeps its
//! generated validator. This package builds agent-surface without the
//! `dynamic` feature, so `notes.tag` cannot be registered (no runtime
//! schema compiler) while `notes.rename` registers and validates.

mod api {
    agent_surface::manifest!(
        "../fixtures/mixed.manifest.json",
        runtime_validation = ["notes.tag"]
    );
}

use agent_surface::{AgentProcedureBinding, RegistrationError, SurfaceRegistry};

fn main() {
    let authority = api::authority();
    assert!(authority.input_validator("notes.tag").is_none());
    assert!(authority.input_validator("notes.rename").is_some());
    // The listed procedure's types are generated as usual.
    let typed: api::notes::tag::Input =
        serde_json::from_value(serde_json::json!({"noteId": "n1", "tags": ["a"]})).unwrap();
    assert_eq!(typed.note_id, "n1");
    assert_eq!(typed.tags, Some(vec!["a".to_string()]));
    let registry = SurfaceRegistry::new(authority);
    match registry.register_procedure(AgentProcedureBinding::new(api::notes::tag())) {
        Err(RegistrationError::NoValidator { name }) => assert_eq!(name, "notes.tag"),
        other => panic!("expected NoValidator, got {other:?}"),
    }
    let handle = registry
        .register_procedure(AgentProcedureBinding::new(api::notes::rename()))
        .expect("a procedure with a generated validator registers without `dynamic`");
    drop(handle);
}
