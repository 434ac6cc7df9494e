//! `validation = runtime` opts a manifest out of generated validators: the
//! unsupported keyword compiles, and the authority carries no validator
//! (the registry compiles the schema at run time).

mod api {
    agent_surface::manifest!("../fixtures/unsupported.manifest.json", validation = runtime);
}

mod generated {
    agent_surface::manifest!("../fixtures/bind.manifest.json", validation = generated);
}

fn main() {
    assert!(api::authority().input_validator("notes.tag").is_none());
    assert_eq!(api::notes::tag().path(), "notes.tag");
    assert!(generated::authority()
        .input_validator("devices.disable")
        .is_some());
}
