//! A sandbox configuration resolved for one command: absolute, existing,
//! canonical paths that a backend turns into its own rules.

use std::path::{Path, PathBuf};

use super::config::{Mode, SandboxConfig, expand_home};

/// A protected path inside a writable root, with the directories between
/// the root and it (kept in place so the path cannot be swapped out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    pub path: PathBuf,
    pub pinned_dirs: Vec<PathBuf>,
}

/// What one sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub cwd: PathBuf,
    pub writable: Vec<PathBuf>,
    pub protected: Vec<Protected>,
    pub read_deny: Vec<PathBuf>,
    pub network: bool,
    /// A private, empty /tmp (read-only mode).
    pub private_tmp: bool,
}

/// What is wrong with a configured path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanProblem {
    pub message: String,
    pub hint: String,
}

impl Plan {
    /// The plan for a command in `cwd` (already confined and canonical),
    /// with `extra_writable` (e.g. a session's private dir) added to the roots.
    pub fn new(config: &SandboxConfig, cwd: &Path, extra_writable: &[PathBuf]) -> Result<Plan, PlanProblem> {
        let writable = match config.mode {
            Mode::WorkspaceWrite => {
                let roots = match &config.writable_roots {
                    Some(roots) => roots.clone(),
                    None => vec![cwd.to_path_buf(), std::env::temp_dir()],
                };
                let mut roots = canonical_roots(&roots)?;
                roots.extend(canonical_roots(extra_writable)?);
                roots
            }
            Mode::ReadOnly => canonical_roots(extra_writable)?,
            Mode::Off => Vec::new(),
        };
        let protected = if config.mode == Mode::WorkspaceWrite {
            protected_paths(&config.protected, &writable)
        } else {
            Vec::new()
        };
        let read_deny = config
            .read_deny
            .iter()
            .filter(|p| p.symlink_metadata().is_ok())
            .cloned()
            .collect();
        Ok(Plan {
            cwd: cwd.to_path_buf(),
            writable,
            protected,
            read_deny,
            network: config.network,
            private_tmp: config.mode == Mode::ReadOnly,
        })
    }
}

fn canonical_roots(roots: &[PathBuf]) -> Result<Vec<PathBuf>, PlanProblem> {
    let mut out: Vec<PathBuf> = Vec::new();
    for root in roots {
        let canonical = root.canonicalize().map_err(|e| PlanProblem {
            message: format!("sandbox writable root {} cannot be used: {e}", root.display()),
            hint: "list existing directories in `sandbox.writable_roots`".into(),
        })?;
        if !out.contains(&canonical) {
            out.push(canonical);
        }
    }
    Ok(out)
}

/// Every existing protected entry that lies inside a writable root, for
/// every root (relative entries apply to each root; `~/` ones to the home).
fn protected_paths(entries: &[String], roots: &[PathBuf]) -> Vec<Protected> {
    let mut out: Vec<Protected> = Vec::new();
    for entry in entries {
        let candidates: Vec<PathBuf> = match expand_home(entry) {
            Some(path) => vec![path],
            None if entry.starts_with("~/") => Vec::new(),
            None => roots.iter().map(|r| r.join(entry)).collect(),
        };
        for candidate in candidates {
            // Canonical: a protected symlink protects what it points at.
            let Ok(path) = candidate.canonicalize() else { continue };
            let Some(root) = roots
                .iter()
                .filter(|r| path.starts_with(r))
                .max_by_key(|r| r.as_os_str().len())
            else {
                continue;
            };
            if &path == root || out.iter().any(|p| p.path == path) {
                continue;
            }
            let pinned_dirs = path
                .ancestors()
                .skip(1)
                .take_while(|a| a != root)
                .map(Path::to_path_buf)
                .collect::<Vec<_>>();
            out.push(Protected {
                path,
                pinned_dirs: pinned_dirs.into_iter().rev().collect(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_tree() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "bm-plan-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
        std::fs::write(dir.join(".git/config"), "").unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn protected_entries_resolve_inside_roots_with_pinned_parents() {
        let dir = temp_tree();
        let config = SandboxConfig {
            mode: Mode::WorkspaceWrite,
            writable_roots: Some(vec![dir.clone()]),
            protected: vec![
                ".git/hooks".into(),
                ".git/config".into(),
                ".missing".into(),
                "/etc/passwd".into(),
            ],
            ..SandboxConfig::default()
        };
        let plan = Plan::new(&config, &dir, &[]).unwrap();
        assert_eq!(plan.writable, vec![dir.clone()]);
        let paths: Vec<_> = plan.protected.iter().map(|p| p.path.clone()).collect();
        assert_eq!(paths, vec![dir.join(".git/hooks"), dir.join(".git/config")]);
        assert_eq!(plan.protected[0].pinned_dirs, vec![dir.join(".git")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_only_has_no_roots_and_a_private_tmp() {
        let dir = temp_tree();
        let config = SandboxConfig {
            mode: Mode::ReadOnly,
            ..SandboxConfig::default()
        };
        let plan = Plan::new(&config, &dir, &[]).unwrap();
        assert!(plan.writable.is_empty() && plan.protected.is_empty() && plan.private_tmp);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_root_is_an_error_that_names_it() {
        let config = SandboxConfig {
            mode: Mode::WorkspaceWrite,
            writable_roots: Some(vec![PathBuf::from("/no/such/root")]),
            ..SandboxConfig::default()
        };
        let e = Plan::new(&config, Path::new("/"), &[]).unwrap_err();
        assert!(e.message.contains("/no/such/root"), "{e:?}");
    }
}
