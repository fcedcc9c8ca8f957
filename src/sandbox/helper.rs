//! Finding the `bash-mcp` binary that doubles as the Landlock + seccomp
//! helper and the sandbox supervisor, so a C host needs no extra install
//! step: the configured path, else `bash-mcp` next to the shared library
//! (or the program) this code is linked into or in the `bin` directory of
//! the prefix the library is installed under (`<prefix>/lib/libbash_mcp.so`
//! or `<prefix>/lib/<multiarch>/libbash_mcp.so` finds `<prefix>/bin/bash-mcp`,
//! where `scripts/install-c.sh` puts it), else `bash-mcp` on PATH.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The helper binary's file name.
pub const HELPER_NAME: &str = "bash-mcp";

/// The helper to use, or `None` when none is found.
pub fn find(configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = configured {
        return Some(path.to_path_buf());
    }
    // Where this code and its program were loaded from does not change
    // while it runs: read once (`/proc/self/maps` is long), not per command.
    static ORIGINS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    let candidates =
        ORIGINS.get_or_init(|| candidates(object_file().as_deref(), std::env::current_exe().ok().as_deref()));
    candidates
        .iter()
        .find(|p| is_executable(p))
        .cloned()
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

/// The file this code was loaded from (the `.so` for a C host): the file
/// mapped at the address of one of its functions, as `/proc/self/maps`
/// lists it.
fn object_file() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    mapped_file(&maps, find as fn(Option<&Path>) -> Option<PathBuf> as usize)
}

/// The file `maps` (the text of `/proc/<pid>/maps`) shows mapped at
/// `address`, if it is a file with an absolute path.
fn mapped_file(maps: &str, address: usize) -> Option<PathBuf> {
    maps.lines().find_map(|line| {
        // start-end perms offset dev inode path (the path may hold spaces).
        let mut fields = line.splitn(6, ' ');
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        if !(start..end).contains(&address) {
            return None;
        }
        let path = fields.nth(4)?.trim_start();
        let path = Path::new(path.strip_suffix(" (deleted)").unwrap_or(path));
        path.is_absolute().then(|| path.to_path_buf())
    })
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
    fn the_object_file_is_the_file_this_code_is_mapped_from() {
        // The unit tests link this code into the test program itself.
        let exe = std::env::current_exe().unwrap().canonicalize().unwrap();
        assert_eq!(object_file(), Some(exe));
    }

    #[test]
    fn a_mapping_line_gives_its_whole_path() {
        let maps = "\
1000-2000 r--p 00000000 08:01 11 /lib/first.so
2000-3000 r-xp 00001000 08:01 12                         /opt/a dir/libbash_mcp.so (deleted)
3000-4000 rw-p 00000000 00:00 0
4000-5000 r-xp 00000000 08:01 13 relative.so
";
        assert_eq!(mapped_file(maps, 0x1000), Some(PathBuf::from("/lib/first.so")));
        assert_eq!(
            mapped_file(maps, 0x2fff),
            Some(PathBuf::from("/opt/a dir/libbash_mcp.so"))
        );
        assert_eq!(mapped_file(maps, 0x3000), None, "an anonymous mapping names no file");
        assert_eq!(
            mapped_file(maps, 0x4000),
            None,
            "a path that is not absolute is not trusted"
        );
        assert_eq!(mapped_file(maps, 0x5000), None, "an address mapped nowhere");
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
