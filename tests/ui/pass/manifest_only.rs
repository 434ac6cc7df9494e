mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

mod nested {
    pub mod deeper {
        agent_surface::manifest!("../fixtures/bind.manifest.json",);
    }
}

fn main() {
    let authority: agent_surface::Authority = api::authority();
    assert_eq!(authority.procedures().count(), 3);
    assert_eq!(nested::deeper::devices::rename().path(), "devices.rename");
    assert_eq!(
        api::devices::disable::Field::DeviceIds.as_str(),
        "deviceIds"
    );
}
