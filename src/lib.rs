//! bash-mcp: a shell tool an AI model can trust.
pub mod permission;
