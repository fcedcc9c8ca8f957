//! The entropic engine's MCP plugin entry points (plugin API version 1).
//!
//! Built with the `entropic-plugin` feature, the shared library exports the
//! nine symbols the engine resolves after `dlopen(RTLD_NOW | RTLD_LOCAL)`.
//! They delegate to the same [`bash_mcp_server`] as the C API; only what the
//! engine cannot give a plugin is added here:
//!
//! - a name that does not collide with the engine's built-in `bash` server:
//!   `shell`, or `BASH_MCP_PLUGIN_NAME` when that is a valid, free name;
//! - configuration: the engine never calls configure, so the JSON object in
//!   the file named by `BASH_MCP_PLUGIN_CONFIG` (the keys of
//!   `bash_mcp_server_configure`, `timeout_seconds` included) is applied at
//!   creation;
//! - a log: warnings and errors go to stderr (the engine has no log channel
//!   for plugins) unless the host set a log callback.
//!
//! The engine serializes calls into one instance but varies the calling
//! thread, so nothing here keeps thread-local state across calls.

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;

use crate::bash::BashServer;
use crate::error::{ErrorCode, ToolError};
use crate::ffi::log::{bash_mcp_log_level, enable_stderr_fallback};
use crate::ffi::panic;
use crate::ffi::ptr::str_arg;
use crate::ffi::result::{Failure, bash_mcp_result};
use crate::ffi::server::{bash_mcp_server, panic_envelope};
use crate::ffi::string::into_c_string;
use crate::server::{McpServer, ToolResponse};

/// The plugin API version this library implements.
pub const PLUGIN_API_VERSION: c_int = 1;
/// The plugin's server name unless `BASH_MCP_PLUGIN_NAME` gives a valid one.
pub const DEFAULT_PLUGIN_NAME: &str = "shell";
/// Environment variable naming the plugin's server.
pub const NAME_VAR: &str = "BASH_MCP_PLUGIN_NAME";
/// Environment variable naming a JSON configuration file.
pub const CONFIG_VAR: &str = "BASH_MCP_PLUGIN_CONFIG";
/// The engine's built-in servers; a plugin may not take their names.
pub const BUILTIN_SERVERS: &[&str] = &["bash", "filesystem", "git", "web", "diagnostics", "entropic"];
/// Default time limit of a command when the configuration sets none.
pub const DEFAULT_TIMEOUT_SECONDS: i64 = 30;

/// The engine's handle to a plugin server.
pub type entropic_mcp_server_t = *mut c_void;

/// The server name to use for `requested` (the variable's value, if set).
///
/// Returns the name and, when `requested` was refused, why.
pub fn plugin_name(requested: Option<&str>) -> (String, Option<String>) {
    let Some(name) = requested else {
        return (DEFAULT_PLUGIN_NAME.to_owned(), None);
    };
    let problem = if name.is_empty() {
        Some("is empty".to_owned())
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Some("may contain only letters, digits, `_` and `-`".to_owned())
    } else if BUILTIN_SERVERS.contains(&name) {
        Some(format!(
            "is the name of a built-in server ({})",
            BUILTIN_SERVERS.join(", ")
        ))
    } else {
        None
    };
    match problem {
        None => (name.to_owned(), None),
        Some(problem) => (
            DEFAULT_PLUGIN_NAME.to_owned(),
            Some(format!("{NAME_VAR}={name:?} {problem}; using `{DEFAULT_PLUGIN_NAME}`")),
        ),
    }
}

/// Builds the plugin's server from the environment.
fn create_from_env() -> Result<BashServer, ToolError> {
    let requested = std::env::var(NAME_VAR).ok();
    let (name, warning) = plugin_name(requested.as_deref());
    if let Some(warning) = warning {
        tracing::warn!("{warning}");
    }
    let config = match std::env::var_os(CONFIG_VAR) {
        Some(path) if !path.is_empty() => Some(std::fs::read_to_string(&path).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidConfig,
                format!("{CONFIG_VAR}: cannot read {}: {e}", Path::new(&path).display()),
                "point it at a readable JSON file, or unset it to use the defaults",
            )
        })?),
        _ => None,
    };
    let server = BashServer::named(&name, ".", None, DEFAULT_TIMEOUT_SECONDS)?;
    if let Some(config) = config {
        server
            .configure(&config)
            .map_err(|e| ToolError::new(e.code, format!("{CONFIG_VAR}: {}", e.message), e.hint))?;
    }
    Ok(server)
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
        match create_from_env().map_err(Failure::from).and_then(bash_mcp_server::wrap) {
            Ok(server) => Box::into_raw(Box::new(server)).cast(),
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
        Some(server) => server.name_ptr(),
        None => std::ptr::null(),
    })
}

/// Plugin ABI: the tools as a JSON array; released with entropic_free().
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_mcp_server_list_tools(server: entropic_mcp_server_t) -> *mut c_char {
    // SAFETY: NULL or a handle from entropic_create_server.
    panic::guard(std::ptr::null_mut, || match unsafe { handle(server) } {
        Some(server) => into_c_string(server.inner().list_tools()),
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
        let Some(server) = (unsafe { handle(server) }) else {
            return std::ptr::null_mut();
        };
        // SAFETY: NULL or C strings per the plugin ABI.
        let args = unsafe { str_arg(tool, "tool").and_then(|t| Ok((t, str_arg(args_json, "args_json")?))) };
        let envelope = match args {
            Ok((tool, args_json)) => server.inner().execute(tool, args_json),
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

/// Plugin ABI: applies a JSON configuration; 0 on success, else a
/// `bash_mcp_result` code.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_mcp_server_configure(server: entropic_mcp_server_t, json: *const c_char) -> c_int {
    panic::guard_code(|| {
        // SAFETY: forwarded contract; the handle is a bash_mcp_server.
        unsafe { crate::ffi::server::bash_mcp_server_configure(server.cast(), json) }
    }) as c_int
}

/// Plugin ABI: sets the working directory; 0 on success, else a
/// `bash_mcp_result` code.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_mcp_server_set_working_dir(
    server: entropic_mcp_server_t,
    path: *const c_char,
) -> c_int {
    panic::guard_code(|| {
        // SAFETY: forwarded contract; the handle is a bash_mcp_server.
        let code = unsafe { crate::ffi::server::bash_mcp_server_set_working_dir(server.cast(), path) };
        if code != bash_mcp_result::Ok {
            tracing::warn!(
                "set_working_dir refused: {}",
                crate::ffi::result::last_error().unwrap_or_default()
            );
        }
        code
    }) as c_int
}

/// Plugin ABI: destroys the server; NULL-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_mcp_server_destroy(server: entropic_mcp_server_t) {
    // SAFETY: forwarded contract; the handle is a bash_mcp_server.
    panic::guard(
        || (),
        || unsafe { crate::ffi::server::bash_mcp_server_free(server.cast()) },
    )
}

/// Plugin ABI: frees a string from list_tools or execute; NULL-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entropic_free(ptr: *mut c_void) {
    // SAFETY: forwarded contract; every string this plugin returns is a library string.
    panic::guard(
        || (),
        || unsafe { crate::ffi::string::bash_mcp_string_free(ptr.cast()) },
    )
}

/// # Safety
/// `server` is NULL or a live handle from `entropic_create_server`.
unsafe fn handle<'a>(server: entropic_mcp_server_t) -> Option<&'a bash_mcp_server> {
    // SAFETY: per the function contract.
    unsafe { server.cast_const().cast::<bash_mcp_server>().as_ref() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_are_validated() {
        assert_eq!(plugin_name(None), ("shell".to_owned(), None));
        assert_eq!(plugin_name(Some("sh_2-x")), ("sh_2-x".to_owned(), None));
        for bad in ["", "bash", "git", "filesystem", "a.b", "a b", "é"] {
            let (name, warning) = plugin_name(Some(bad));
            assert_eq!(name, "shell", "{bad:?}");
            assert!(warning.unwrap().contains("using `shell`"), "{bad:?}");
        }
    }
}
