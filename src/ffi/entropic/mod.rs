//! The entropic engine's MCP plugin entry points (plugin API version 1).
//!
//! Built with the `entropic-plugin` feature, the shared library exports the
//! nine symbols the engine resolves after `dlopen(RTLD_NOW | RTLD_LOCAL)`.
//! They run the same [`BashServer`] as the C API, fitted to what the engine
//! does with a plugin (v2.10, checked against its source by
//! `tests/entropic_engine.rs`):
//!
//! - configuration: the engine never calls configure, so the JSON file named
//!   by `BASH_MCP_PLUGIN_CONFIG` is read at creation ([`setup`]);
//! - a name: `shell`, or `bash` (or another) when configured, so the engine's
//!   identities and rules written for `bash.execute` apply;
//! - a tool surface the engine's permission matching keys on the command
//!   ([`surface`]), and optional per-part enforcement of its rules;
//! - results the engine reads right: errors start with `{"error":`, and the
//!   default output limit keeps results under the engine's 16 KiB cut;
//! - return codes in the engine's `entropic_error_t` vocabulary ([`codes`]);
//! - a log: warnings and errors go to stderr (the engine has no log channel
//!   for plugins) unless the host set a log callback.
//!
//! The engine serializes calls into one instance but varies the calling
//! thread, so nothing here keeps thread-local state across calls.

pub mod codes;
pub mod setup;
pub mod surface;

use std::ffi::{CString, c_char, c_int, c_void};
use std::path::Path;

use crate::bash::BashServer;
use crate::error::{ErrorCode, ToolError};
use crate::ffi::log::{bash_mcp_log_level, enable_stderr_fallback};
use crate::ffi::panic;
use crate::ffi::ptr::{free_owned, str_arg};
use crate::ffi::result::Failure;
use crate::ffi::server::{bash_mcp_server, panic_envelope};
use crate::ffi::string::into_c_string;
use crate::tool::{CallOptions, McpServer, ToolResponse};
use crate::tool_args::ToolArgs;

pub use codes::EntropicError;
pub use setup::{CONFIG_VAR, DEFAULT_PLUGIN_NAME, NAME_VAR, PLUGIN_OUTPUT_LIMIT_BYTES, plugin_name};
use surface::Enforcement;

/// The plugin API version this library implements.
pub const PLUGIN_API_VERSION: c_int = 1;

/// The engine's handle to a plugin server.
pub type entropic_mcp_server_t = *mut c_void;

/// One plugin instance: the server and the rules it enforces itself.
struct Plugin {
    server: bash_mcp_server,
    enforcement: Option<Enforcement>,
}

impl Plugin {
    fn create() -> Result<Self, Failure> {
        let setup = setup::from_env()?;
        if let Some(warning) = &setup.warning {
            tracing::warn!("{warning}");
        }
        let (server, enforcement) = setup::build(&setup)?;
        Ok(Self {
            server: bash_mcp_server::wrap(server)?,
            enforcement,
        })
    }

    fn inner(&self) -> &BashServer {
        self.server.inner()
    }

    /// Runs `tool` after the plugin's own checks; returns the envelope.
    fn execute(&self, tool: &str, args_json: &str) -> String {
        let name = self.inner().name();
        let local = tool
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('.'))
            .unwrap_or(tool);
        // The edge: the arguments are parsed here, once, for the checks and
        // the call, and the result written as text here, once.
        let args = ToolArgs::parse(args_json);
        if let Err(error) = surface::check_call(local, &args).and_then(|()| self.enforce(local, &args)) {
            return ToolResponse::error(&error).to_envelope();
        }
        self.inner()
            .call_tool(local, &args, CallOptions::default())
            .to_envelope()
    }

    /// Applies the plugin's own permission rules to an `execute` call.
    fn enforce(&self, local: &str, args: &ToolArgs) -> Result<(), ToolError> {
        let Some(enforcement) = &self.enforcement else {
            return Ok(());
        };
        if local != surface::EXECUTE {
            return Ok(());
        }
        match args.get("command").and_then(serde_json::Value::as_str) {
            Some(command) => enforcement.check(&format!("{}.{local}", self.inner().name()), command),
            None => Ok(()), // refused by the server: there is no command to run
        }
    }
}

/// Plugin ABI: the API version, always 1.
#[unsafe(no_mangle)]
pub extern "C" fn entropic_plugin_api_version() -> c_int {
    panic::guard(|| PLUGIN_API_VERSION, || PLUGIN_API_VERSION)
}

/// Plugin ABI: creates the server; NULL (with the reason on stderr) if the
/// configuration file is unreadable or invalid.
#[unsafe(no_mangle)]
pub extern "C" fn entropic_create_server() -> entropic_mcp_server_t {
    panic::guard(std::ptr::null_mut, || {
        enable_stderr_fallback(bash_mcp_log_level::Warn);
        match Plugin::create() {
            Ok(plugin) => Box::into_raw(Box::new(plugin)).cast(),
            Err(failure) => {
                tracing::error!("cannot create the plugin server: {}", failure.message);
                std::ptr::null_mut()
            }
        }
    })
}

/// Plugin ABI: the server name, owned by the server; NULL for a NULL handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_mcp_server_name(server: entropic_mcp_server_t) -> *const c_char {
    // SAFETY: NULL or a handle from entropic_create_server.
    panic::guard(std::ptr::null, || match unsafe { handle(server) } {
        Some(plugin) => plugin.server.name_ptr(),
        None => std::ptr::null(),
    })
}

/// Plugin ABI: the tools as a JSON array; released with entropic_free().
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_mcp_server_list_tools(server: entropic_mcp_server_t) -> *mut c_char {
    // SAFETY: NULL or a handle from entropic_create_server.
    panic::guard(std::ptr::null_mut, || match unsafe { handle(server) } {
        Some(plugin) => into_c_string(surface::list_tools(plugin.inner())),
        None => std::ptr::null_mut(),
    })
}

/// Plugin ABI: runs a tool; returns the `{"result", "directives"}` envelope,
/// released with entropic_free(). Bad arguments give an envelope carrying an
/// error document; only a NULL handle gives NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_mcp_server_execute(
    server: entropic_mcp_server_t,
    tool: *const c_char,
    args_json: *const c_char,
) -> *mut c_char {
    panic::guard(panic_envelope, || {
        // SAFETY: NULL or a handle from entropic_create_server.
        let Some(plugin) = (unsafe { handle(server) }) else {
            return std::ptr::null_mut();
        };
        // SAFETY: NULL or C strings per the plugin ABI.
        let args = unsafe { str_arg(tool, "tool").and_then(|t| Ok((t, str_arg(args_json, "args_json")?))) };
        let envelope = match args {
            Ok((tool, args_json)) => plugin.execute(tool, args_json),
            Err(failure) => ToolResponse::error(&ToolError::new(
                ErrorCode::InvalidArguments,
                failure.message,
                "pass the tool name and its arguments as UTF-8 JSON text",
            ))
            .to_envelope(),
        };
        into_c_string(envelope)
    })
}

/// Runs `body` on the plugin behind `server`; returns an `entropic_error_t`.
fn code_call(server: entropic_mcp_server_t, body: impl FnOnce(&Plugin) -> Result<(), Failure>) -> c_int {
    panic::guard(
        || EntropicError::Internal.raw(),
        || {
            // SAFETY: NULL or a handle from entropic_create_server.
            let Some(plugin) = (unsafe { handle(server) }) else {
                return EntropicError::InvalidHandle.raw();
            };
            match body(plugin) {
                Ok(()) => EntropicError::Ok.raw(),
                Err(failure) => {
                    tracing::warn!("{}", failure.message);
                    EntropicError::from_result(failure.record()).raw()
                }
            }
        },
    )
}

/// Plugin ABI: applies a JSON configuration (the server's keys, as in
/// `bash_mcp_server_configure`); an `entropic_error_t`: 0 on success.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_mcp_server_configure(server: entropic_mcp_server_t, json: *const c_char) -> c_int {
    code_call(server, |plugin| {
        // SAFETY: NULL or a C string per the plugin ABI.
        let json = unsafe { str_arg(json, "config_json") }?;
        Ok(plugin.inner().configure(json)?)
    })
}

/// Plugin ABI: sets the working directory; an `entropic_error_t`: 0 on success.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_mcp_server_set_working_dir(
    server: entropic_mcp_server_t,
    path: *const c_char,
) -> c_int {
    code_call(server, |plugin| {
        // SAFETY: NULL or a C string per the plugin ABI.
        let path = unsafe { str_arg(path, "path") }?;
        plugin.inner().set_working_dir(Path::new(path)).map_err(|e| {
            Failure::from(ToolError::new(
                e.code,
                format!("set_working_dir refused: {}", e.message),
                e.hint,
            ))
        })
    })
}

/// Plugin ABI: destroys the server; NULL-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_mcp_server_destroy(server: entropic_mcp_server_t) {
    // SAFETY: NULL or a handle from entropic_create_server, destroyed once (ABI contract).
    unsafe { free_owned(server.cast::<Plugin>(), |plugin: Box<_>| drop(plugin)) }
}

/// Plugin ABI: frees a string from list_tools or execute; NULL-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_free(ptr: *mut c_void) {
    // SAFETY: NULL or a string from list_tools or execute, made by into_c_string
    // (CString::into_raw), freed once (ABI contract).
    unsafe { free_owned(ptr.cast::<c_char>(), |s: CString| drop(s)) }
}

/// # Safety
/// `server` is NULL or a live handle from `entropic_create_server`.
unsafe fn handle<'a>(server: entropic_mcp_server_t) -> Option<&'a Plugin> {
    // SAFETY: per the function contract.
    unsafe { server.cast_const().cast::<Plugin>().as_ref() }
}
