//! Finding the `bash-mcp` binary that doubles as the Landlock + seccomp
//! helper, so a C host needs no extra install step: the configured path,
//! else `bash-mcp` next to the shared library (or the program) this code is
//! linked into, else `bash-mcp` on PATH.

use std::path::{Path, PathBuf};

/// The helper binary's file name.
pub const HELPER_NAME: &str = "bash-mcp";

/// The helper to use, or `None` when none is found.
pub fn find(configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = configured {
        return Some(path.to_path_buf());
    }
    let beside = |file: &Path| {
        file.parent()
            .map(|dir| dir.join(HELPER_NAME))
            .filter(|p| is_executable(p))
    };
    object_file()
        .as_deref()
        .and_then(beside)
        .or_else(|| std::env::current_exe().ok().as_deref().and_then(beside))
        .or_else(|| on_path(HELPER_NAME))
}

/// The file this code was loaded from (the `.so` for a C host).
fn object_file() -> Option<PathBuf> {
    // SAFETY: Dl_info is plain data; all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr reads the address of a function in this object and
    // fills `info` with pointers into the loader's own tables.
    let found = unsafe { libc::dladdr(find as *const libc::c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(std::ffi::OsStr::new(name.to_str().ok()?));
    path.is_absolute().then_some(path)
}

/// `name` in `$PATH`, as a shell would find it (the sandbox sits below the
/// configuration, so it keeps its own lookup).
pub fn on_path(name: &str) -> Option<PathBuf> {
    let search = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&search)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
