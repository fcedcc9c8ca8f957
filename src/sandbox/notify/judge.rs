//! Whether the sandbox's plan forbids a write at a path: outside every
//! writable root, or under a protected path inside one. Only a path the
//! plan forbids becomes a denial; the kernel (or, in a guarded directory,
//! the handler) has already decided the call itself: the judge only names
//! it.

use std::path::{Path, PathBuf};

use crate::sandbox::guard::{Kind, Layout};
use crate::sandbox::lexical::normalize;
use crate::sandbox::plan::Plan;

/// Where writes are the kernel's own business, not the plan's: devices
/// (`/dev/null`, `/dev/stdout`), and `/proc` (a process's own files).
/// `/dev/shm` is a file system like any other (bubblewrap gives each
/// command its own; Landlock leaves it read-only).
const KERNEL_PATHS: &[&str] = &["/dev", "/proc"];

/// The plan's write rules.
#[derive(Debug, Clone)]
pub struct Judge {
    /// The plan, for where it lets the command write (its roots and temp dir).
    plan: Plan,
    /// Protected paths no guarded directory holds (bound read-only).
    protected: Vec<PathBuf>,
    layout: Layout,
}

/// What the plan says of a write at one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Outside every writable root, or protected.
    Forbidden,
}

impl Judge {
    /// The rules of `plan`, with the protected entries of its guarded
    /// directories (`layout`) and its protected paths outside them.
    pub fn new(plan: &Plan, layout: &Layout) -> Judge {
        Judge {
            plan: plan.clone(),
            protected: plan
                .protected
                .iter()
                .filter(|p| layout.find(&p.path).is_none())
                .map(|p| p.path.clone())
                .collect(),
            layout: layout.clone(),
        }
    }

    /// What the plan says of a write at `path`: where the write lands, as
    /// the command sees it (absolute, with its symlinks resolved: see
    /// [`Target::landing`](super::target::Target::landing)).
    pub fn verdict(&self, path: &Path) -> Verdict {
        let path = normalize(path);
        if KERNEL_PATHS.iter().any(|k| path.starts_with(k)) && !path.starts_with("/dev/shm") {
            return Verdict::Allowed;
        }
        if !self.plan.in_writable_place(&path) {
            return Verdict::Forbidden;
        }
        match self.is_protected(&path) {
            false => Verdict::Allowed,
            true => Verdict::Forbidden,
        }
    }
}

impl Judge {
    /// Whether `path` is protected: under a protected path bound on its own,
    /// or a protected entry of a guarded directory (or beneath one), or an
    /// entry on the way to a deeper guarded directory itself.
    fn is_protected(&self, path: &Path) -> bool {
        self.protected.iter().any(|p| path.starts_with(p))
            || self.layout.find(path).is_some_and(|(m, rest)| {
                let mut names = rest.iter();
                match names.next().and_then(|first| m.kind(first)) {
                    Some(Kind::Protected) => true,
                    Some(Kind::Holds) => names.next().is_none(),
                    _ => false,
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::plan::Protected;

    fn judge(layout: &Layout) -> Judge {
        Judge::new(
            &Plan {
                cwd: PathBuf::from("/nonexistent-w"),
                writable: vec![PathBuf::from("/nonexistent-w")],
                protected: vec![Protected {
                    path: PathBuf::from("/nonexistent-w/.git/hooks"),
                    pinned_dirs: vec![],
                }],
                workdir: None,
                absent: vec![],
                read_deny: vec![],
                network: false,
                temp: crate::sandbox::temp::Temp::Fresh,
            },
            layout,
        )
    }

    #[test]
    fn outside_roots_and_protected_paths_are_forbidden_devices_are_not() {
        let j = judge(&Layout::default());
        let verdict = |p: &str| j.verdict(Path::new(p));
        assert_eq!(verdict("/nonexistent-elsewhere/x"), Verdict::Forbidden);
        assert_eq!(verdict("/nonexistent-w/.git/hooks/pre-commit"), Verdict::Forbidden);
        assert_eq!(verdict("/nonexistent-w/sub/../../nonexistent-v/x"), Verdict::Forbidden);
        assert_eq!(verdict("/nonexistent-w/src/main.rs"), Verdict::Allowed);
        assert_eq!(verdict("/dev/null"), Verdict::Allowed);
        assert_eq!(verdict("/proc/self/fd/1"), Verdict::Allowed);
        assert_eq!(verdict("/tmp/x"), Verdict::Allowed, "the command's own /tmp");
    }

    #[test]
    fn protected_names_of_guarded_directories_are_forbidden_there_or_not() {
        use crate::sandbox::guard::Mediated;
        let mediated = |dir: &str, entries: &[(&str, Kind)]| Mediated {
            dir: PathBuf::from(dir),
            id: (0, 0),
            entries: entries.iter().map(|(n, k)| ((*n).into(), *k)).collect(),
        };
        let layout = Layout {
            mediated: vec![
                mediated("/nonexistent-w", &[(".git", Kind::Holds), (".envrc", Kind::Protected)]),
                mediated(
                    "/nonexistent-w/.git",
                    &[("commondir", Kind::Protected), ("objects", Kind::WritableDir)],
                ),
            ],
            ..Layout::default()
        };
        let j = judge(&layout);
        let verdict = |p: &str| j.verdict(Path::new(p));
        assert_eq!(verdict("/nonexistent-w/.git/commondir"), Verdict::Forbidden);
        assert_eq!(verdict("/nonexistent-w/.envrc"), Verdict::Forbidden);
        assert_eq!(
            verdict("/nonexistent-w/.git"),
            Verdict::Forbidden,
            "the way to a guarded dir"
        );
        assert_eq!(verdict("/nonexistent-w/.git/objects/ab/cd"), Verdict::Allowed);
        assert_eq!(verdict("/nonexistent-w/.git/index.lock"), Verdict::Allowed);
    }
}
