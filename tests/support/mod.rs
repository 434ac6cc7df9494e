pub mod agui;
pub mod mcp;
pub mod net;
pub mod peer;
pub mod process;
