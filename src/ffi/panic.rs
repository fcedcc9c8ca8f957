//! The panic boundary: no unwind ever crosses into C.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::ffi::result::{bash_mcp_result, set_last_error};

/// Runs `body`; if it panics, records the panic as the last error and returns
/// `on_panic()` instead.
///
/// Every exported function's body is one call to this function or to a
/// helper built on it (`tests/c_api.rs` checks the sources for that).
///
/// `AssertUnwindSafe` is sound here: after a panic the C caller only sees the
/// error value, and the shared state a body touches (the server's locks) is
/// poison-tolerant.
pub(crate) fn guard<T>(on_panic: impl FnOnce() -> T, body: impl FnOnce() -> T) -> T {
    let body = || {
        forced_panic_for_tests();
        body()
    };
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let message = format!("internal error: the library panicked: {}", payload_text(&*payload));
            set_last_error(&message);
            tracing::error!(target: "bash_mcp::ffi", "{message}");
            on_panic()
        }
    }
}

/// The environment variable that, in a build with debug assertions, makes the
/// body of every exported function panic (when set to `1`), so tests can
/// check from C what each function returns after a panic. Release builds
/// (`cargo build --release`) do not have this hook.
#[cfg(debug_assertions)]
pub(crate) const FORCE_PANIC_VAR: &str = "BASH_MCP_TEST_FORCE_PANIC";

/// The test hook behind [`FORCE_PANIC_VAR`]; nothing in release builds.
#[inline]
fn forced_panic_for_tests() {
    #[cfg(debug_assertions)]
    if std::env::var_os(FORCE_PANIC_VAR).is_some_and(|v| v == "1") {
        panic!("forced by {FORCE_PANIC_VAR}=1 (a test hook of debug builds)");
    }
}

/// [`guard`] for functions that return a result code.
pub(crate) fn guard_code(body: impl FnOnce() -> bash_mcp_result) -> bash_mcp_result {
    guard(|| bash_mcp_result::Panic, body)
}

/// The text of a panic payload.
pub(crate) fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::result::last_error;

    #[test]
    fn a_panic_becomes_the_fallback_and_the_last_error() {
        let code = guard_code(|| panic!("boom {}", 42));
        assert_eq!(code, bash_mcp_result::Panic);
        let message = last_error().expect("recorded");
        assert!(message.contains("boom 42"), "{message}");
        assert_eq!(guard(|| 1, || 2), 2);
    }
}
