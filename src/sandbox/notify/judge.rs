//! Whether the sandbox's plan forbids a write at a path: outside every
//! writable root, or under a protected path inside one. Only a path the
//! plan forbids becomes a denial; the kernel has already decided the call
//! itself (the judge only names it).

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use crate::sandbox::plan::Plan;

/// Where writes are the kernel's own business, not the plan's: devices
/// (`/dev/null`, `/dev/stdout`), and `/proc` (a process's own files).
const KERNEL_PATHS: &[&str] = &["/dev", "/proc"];

/// The plan's write rules.
#[derive(Debug, Clone)]
pub struct Judge {
    writable: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    private_tmp: bool,
}

impl Judge {
    /// The rules of `plan`, with its protected paths when the backend
    /// enforces them (bubblewrap's read-only binds; Landlock rules only grant).
    pub fn new(plan: &Plan, protects: bool) -> Judge {
        Judge {
            writable: plan.writable.clone(),
            protected: match protects {
                true => plan.protected.iter().map(|p| p.path.clone()).collect(),
                false => Vec::new(),
            },
            private_tmp: plan.private_tmp,
        }
    }

    /// Whether the plan forbids writing `path` (absolute, as the command
    /// sees it). A path that looks forbidden is checked once more with its
    /// existing part resolved, so a symlink into a root is not blamed.
    pub fn forbids(&self, path: &Path) -> bool {
        let path = normalize(path);
        self.forbids_lexically(&path) && resolve_existing(&path).is_none_or(|real| self.forbids_lexically(&real))
    }

    fn forbids_lexically(&self, path: &Path) -> bool {
        if KERNEL_PATHS.iter().any(|k| path.starts_with(k)) || (self.private_tmp && path.starts_with("/tmp")) {
            return false;
        }
        !self.writable.iter().any(|root| path.starts_with(root)) || self.protected.iter().any(|p| path.starts_with(p))
    }
}

/// `path` with `.` and `..` taken out, without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// `path` with its longest existing ancestor made canonical and the rest
/// appended (`None` when nothing of it resolves).
fn resolve_existing(path: &Path) -> Option<PathBuf> {
    let mut rest: Vec<&OsStr> = Vec::new();
    for ancestor in path.ancestors() {
        if let Ok(real) = ancestor.canonicalize() {
            return Some(rest.iter().rev().fold(real, |p, name| p.join(name)));
        }
        rest.push(ancestor.file_name()?);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::plan::Protected;

    fn judge() -> Judge {
        Judge::new(
            &Plan {
                cwd: PathBuf::from("/nonexistent-w"),
                writable: vec![PathBuf::from("/nonexistent-w")],
                protected: vec![Protected {
                    path: PathBuf::from("/nonexistent-w/.git/hooks"),
                    pinned_dirs: vec![],
                }],
                absent: vec![],
                read_deny: vec![],
                network: false,
                private_tmp: false,
            },
            true,
        )
    }

    #[test]
    fn outside_roots_and_protected_paths_are_forbidden_devices_are_not() {
        let j = judge();
        assert!(j.forbids(Path::new("/nonexistent-elsewhere/x")));
        assert!(j.forbids(Path::new("/nonexistent-w/.git/hooks/pre-commit")));
        assert!(j.forbids(Path::new("/nonexistent-w/sub/../../nonexistent-v/x")));
        assert!(!j.forbids(Path::new("/nonexistent-w/src/main.rs")));
        assert!(!j.forbids(Path::new("/dev/null")));
        assert!(!j.forbids(Path::new("/proc/self/fd/1")));
    }
}
