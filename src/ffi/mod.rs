//! The C API: a thin layer over the Rust API that validates, converts and
//! delegates.
//!
//! Every function here is `extern "C"`, prefixed `bash_mcp_`, and documented
//! for C readers: the doc comments flow through cbindgen into
//! `include/bash_mcp.h` and from there into the Doxygen reference
//! (`BASH_MCP_BLESS=1 cargo test --test header` regenerates the header). The conventions
//! every function follows are stated once, in `docs/c-api.md` (also the
//! Doxygen main page):
//!
//! - every pointer argument is NULL-checked; input strings must be UTF-8;
//! - out-parameters are written only on success;
//! - a returned `char *` is owned by the caller and released with
//!   `bash_mcp_string_free()`;
//! - no panic crosses the boundary (each body runs inside `panic::guard`).
//!
//! One file per C type (`server.rs`, `exec_result.rs`, `cancel.rs`, `policy.rs`,
//! `session.rs`; `policy.rs` also holds the classifier and
//! `bash_mcp_command_pattern`), plus the result codes and last-error message
//! (`result.rs`, their text for C in `result_string.rs`), strings (`string.rs`), log records (`log.rs`), and the panic
//! and pointer helpers (`panic.rs`, `ptr.rs`).
//! `entropic.rs` exports the entropic engine's plugin entry points when the
//! `entropic-plugin` feature is on.

// Doc comments here are written for Doxygen: `@param[out]` is not a Rust link.
#![allow(rustdoc::broken_intra_doc_links)]
// The C names are the contract; Rust naming conventions do not apply here.
#![allow(non_camel_case_types)]
// The safety contract of each function is its C documentation (what every
// pointer must be), which flows into the header; a Rust `# Safety` heading
// would not read well there.
#![allow(clippy::missing_safety_doc)]

// Declaration order is the order of the header's sections.
pub mod approver;
pub mod cancel;
#[cfg(feature = "entropic-plugin")]
pub mod entropic;
pub mod exec_result;
pub mod log;
pub mod mcp;
pub(crate) mod panic;
pub mod policy;
pub(crate) mod ptr;
pub mod result;
pub mod result_string;
pub mod server;
pub mod session;
pub mod string;

pub use cancel::bash_mcp_cancel_token;
pub use exec_result::bash_mcp_exec_result;
pub use log::{bash_mcp_log_callback, bash_mcp_log_level};
pub use policy::{bash_mcp_decision, bash_mcp_policy};
pub use result::bash_mcp_result;
pub use server::{bash_mcp_output_callback, bash_mcp_output_stream, bash_mcp_server};
pub use session::{bash_mcp_subscription, bash_mcp_terminal_callback, bash_mcp_terminal_event};
