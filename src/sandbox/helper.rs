//! Finding the `bash-mcp` binary that doubles as the Landlock + seccomp
//! helper and the sandbox supervisor, so a C host needs no extra install
//! step: the configured path, else `bash-mcp` next to the shared library
//! (or the program) this code is linked into or in the `bin` directory of
//! the prefix the library is installed under (`<prefix>/lib/libbash_mcp.so`
//! or `<prefix>/lib/<multiarch>/libbash_mcp.so` finds `<prefix>/bin/bash-mcp`,
//! where `scripts/install-c.sh` puts it), else `bash-mcp` on PATH.

use std::path::{Path, PathBuf};

/// The helper binary's file name.
pub const HELPER_NAME: &str = "bash-mcp";

/// The helper to use, or `None` when none is found.
pub fn find(configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = configured {
        return Some(path.to_path_buf());
    }
    let exe = std::env::current_exe().ok();
    candidates(object_file().as_deref(), exe.as_deref())
        .into_iter()
        .find(|p| is_executable(p))
        .or_else(|| on_path(HELPER_NAME))
}

/// Where to look, in order, for a library loaded from `object` into the
/// program `exe`: beside the library, in its prefix's `bin` (one or two
/// levels up, for `lib/` and `lib/<multiarch>/`), beside the program.
fn candidates(object: Option<&Path>, exe: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = object.and_then(Path::parent) {
        out.push(dir.join(HELPER_NAME));
        for prefix in dir.ancestors().skip(1).take(2) {
            out.push(prefix.join("bin").join(HELPER_NAME));
        }
    }
    if let Some(dir) = exe.and_then(Path::parent) {
        out.push(dir.join(HELPER_NAME));
    }
    out
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

/// Whether `path` is a file this user may run.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_installed_library_finds_the_helper_in_its_prefix() {
        let lib = Path::new("/opt/x/lib/libbash_mcp.so.0.1.0");
        let multiarch = Path::new("/opt/x/lib/x86_64-linux-gnu/libbash_mcp.so");
        let found = candidates(Some(lib), None);
        assert_eq!(found[0], Path::new("/opt/x/lib/bash-mcp"), "beside the library first");
        assert!(found.contains(&PathBuf::from("/opt/x/bin/bash-mcp")), "{found:?}");
        assert!(
            candidates(Some(multiarch), None).contains(&PathBuf::from("/opt/x/bin/bash-mcp")),
            "a multiarch libdir still finds <prefix>/bin"
        );
    }

    #[test]
    fn a_program_finds_the_helper_beside_itself_last() {
        let found = candidates(Some(Path::new("/a/lib/libbash_mcp.so")), Some(Path::new("/b/bin/host")));
        assert_eq!(found.last().unwrap(), Path::new("/b/bin/bash-mcp"));
        assert_eq!(
            candidates(None, Some(Path::new("/b/host"))),
            [PathBuf::from("/b/bash-mcp")]
        );
    }
}
