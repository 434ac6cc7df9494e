extern crate agent_surface as facade;

mod api {
    facade::manifest!(
        "../fixtures/bind.manifest.json",
        crate = ::facade
    );
}

#[facade::agent_procedure(api, "devices.list")]
struct ListLimit {
    limit: Option<i64>,
}

fn main() {
    use facade::BoundInput;
    assert_eq!(api::devices::list().id(), "domain:devices.list");
    assert_eq!(ListLimit::PROCEDURE, "devices.list");
    let _ = ListLimit { limit: Some(3) };
}
