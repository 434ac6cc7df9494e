//! A `view_inputs!` key that is not an UpperCamelCase type name is a
//! compile error at the path literal, naming the key and the fix.

mod view {
    agent_surface::view_inputs!("../fixtures/bad-key.view-inputs.json");
}

fn main() {}
