pub mod mcp;
pub mod peer;
