//! The generated API of `tests/ui/fixtures/bind.manifest.json` in a crate
//! of its own, as an application shares it between its wasm page and its
//! native agent host. The trybuild cases `pass/cross_crate.rs` and
//! `fail/cross_crate_*.rs` bind their own structs to it with
//! `#[agent_procedure(api, "…")]`.

// At the crate root: `api::devices::disable()`, `api::authority()`, …
agent_surface::manifest!("../fixtures/bind.manifest.json");

/// The same manifest again, in a module, with the facade reached under
/// another name: the binding expansion in a dependent crate must not name
/// the facade the way this crate does (`crate::renamed::facade` means
/// nothing there), and the two lookup macros of one crate must not clash.
pub mod renamed {
    extern crate agent_surface as facade;

    facade::manifest!(
        "../fixtures/bind.manifest.json",
        crate = crate::renamed::facade
    );
}
