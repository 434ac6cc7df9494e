//! A `runtime_validation` entry that names no procedure is an error on the
//! entry, with the nearest path.

mod api {
    agent_surface::manifest!(
        "../fixtures/mixed.manifest.json",
        runtime_validation = ["notes.tags"]
    );
}

fn main() {}
