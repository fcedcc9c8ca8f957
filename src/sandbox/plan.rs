//! A sandbox configuration resolved for one command: absolute, existing,
//! canonical paths that a backend turns into its own rules.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use super::config::{Mode, SandboxConfig, expand_home};
use super::fsread;
use super::git;
use super::settled::{Found, Places};
use super::temp::Temp;

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
    /// Protected paths inside a writable root that do not exist (yet): the
    /// backends cannot bind what is not there (see docs/sandbox.md).
    pub absent: Vec<PathBuf>,
    /// The server's working directory (the project), when it is a writable
    /// root: its protected names are kept whether or not anything else in
    /// it is protected (see [`Layout`](super::guard::Layout)).
    pub workdir: Option<PathBuf>,
    /// Hidden paths, each with the directories between its writable root
    /// and it (kept in place, so that renaming a parent cannot move it out
    /// of sight of the next command).
    pub read_deny: Vec<Protected>,
    pub network: bool,
    /// The command's temp dir: its server's or its own, never the host's
    /// shared `/tmp` (see [`temp`](super::temp)).
    pub temp: Temp,
}

/// What is wrong with a configured path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanProblem {
    pub message: String,
    pub hint: String,
}

impl Plan {
    /// The plan for a command in `cwd` (already confined and canonical) on
    /// a server whose working directory is `working_dir`, with
    /// `extra_writable` (e.g. a session's private dir) added to the roots,
    /// and `temp` as its temp dir. Without configured roots, `working_dir`
    /// is writable, never `cwd` for being the command's: what is writable
    /// is the host's decision.
    pub fn new(
        config: &SandboxConfig,
        (cwd, working_dir): (&Path, &Path),
        extra_writable: &[PathBuf],
        temp: Temp,
    ) -> Result<Plan, PlanProblem> {
        let writable = match config.mode {
            Mode::WorkspaceWrite => {
                let mut roots = canonical_roots(&config.roots_for(working_dir))?;
                roots.extend(canonical_roots(extra_writable)?);
                roots
            }
            Mode::ReadOnly => canonical_roots(extra_writable)?,
            Mode::Off => Vec::new(),
        };
        let (protected, absent) = if config.mode == Mode::WorkspaceWrite {
            // Where sandboxed commands can write: the roots and the temp dir.
            let mut places = writable.clone();
            if let Temp::AtTmp(dir) | Temp::Granted(dir) = &temp {
                places.push(dir.clone());
            }
            let mut places = Places::new(places);
            let mut candidates = entry_paths(&config.protected, &writable);
            if protects_git(&config.protected) {
                let mut starts = writable.clone();
                starts.push(cwd.to_path_buf());
                candidates.extend(git::code_paths(&starts, &git::Home::from_env(), &mut places));
            }
            inside_roots(candidates, &writable, places)
        } else {
            (Vec::new(), Vec::new())
        };
        // Hidden wherever they are; inside a root, with their parents kept in place.
        let read_deny = config
            .read_deny
            .iter()
            .filter_map(|p| fsread::canonical(p).ok())
            .map(|path| match root_of(&path, &writable) {
                Some(root) => pinned(path, root),
                None => Protected {
                    path,
                    pinned_dirs: Vec::new(),
                },
            })
            .collect();
        // A root is canonical: the working dir found among them is too.
        let workdir = match writable.iter().find(|w| w.as_path() == working_dir) {
            Some(root) => Some(root.clone()),
            None => fsread::canonical(working_dir).ok().filter(|w| writable.contains(w)),
        };
        Ok(Plan {
            cwd: cwd.to_path_buf(),
            writable,
            protected,
            absent,
            workdir,
            read_deny,
            network: config.network.is_on(),
            temp,
        })
    }

    /// Whether the command may write at `path` (absolute, as it sees it)
    /// by the plan's roots and temp dir, protected paths aside.
    pub fn in_writable_place(&self, path: &Path) -> bool {
        let own_shm = matches!(self.temp, Temp::AtTmp(_) | Temp::Fresh) && path.starts_with("/dev/shm");
        own_shm
            || self.writable.iter().any(|root| path.starts_with(root))
            || (path.starts_with(self.temp.seen_at()) && !(self.cwd_bound_over_tmp() && path.starts_with(&self.cwd)))
    }

    /// Whether `path` is (or lies in) a protected path.
    pub fn is_protected(&self, path: &Path) -> bool {
        self.protected.iter().any(|p| path.starts_with(&p.path))
    }

    /// Whether the working dir lies under `/tmp` outside every writable
    /// root while `/tmp` is the sandbox's own (bubblewrap), so that it is
    /// bound there, read-only, to stay visible.
    pub fn cwd_bound_over_tmp(&self) -> bool {
        matches!(self.temp, Temp::AtTmp(_) | Temp::Fresh)
            && self.cwd.starts_with("/tmp")
            && !self.writable.iter().any(|root| self.cwd.starts_with(root))
    }

    /// Whether the command sees the host's own `path` there: always, but
    /// under a `/tmp` of the sandbox's own only inside a root or the
    /// working dir bound over it.
    pub fn host_path_at(&self, path: &Path) -> bool {
        !(matches!(self.temp, Temp::AtTmp(_) | Temp::Fresh) && path.starts_with("/tmp"))
            || self.writable.iter().any(|root| path.starts_with(root))
            || (self.cwd_bound_over_tmp() && path.starts_with(&self.cwd))
    }
}

fn canonical_roots(roots: &[PathBuf]) -> Result<Vec<PathBuf>, PlanProblem> {
    let mut out: Vec<PathBuf> = Vec::new();
    for root in roots {
        let canonical = fsread::canonical(root).map_err(|e| PlanProblem {
            message: format!("sandbox writable root {} cannot be used: {e}", root.display()),
            hint: "list existing directories in `sandbox.writable_roots`".into(),
        })?;
        if !out.contains(&canonical) {
            out.push(canonical);
        }
    }
    Ok(out)
}

/// The paths the `protected` entries name: relative entries in every root,
/// `~/` ones in the home directory, absolute ones as they are.
fn entry_paths(entries: &[String], roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in entries {
        match expand_home(entry) {
            Some(path) if path.is_absolute() => out.push(path),
            Some(_) | None if entry.starts_with("~/") => {}
            _ => out.extend(roots.iter().map(|r| r.join(entry))),
        }
    }
    out
}

/// Whether the entries ask for git's files to be kept: then every path git
/// reads hooks, configuration and programs from is (see [`git`]).
fn protects_git(entries: &[String]) -> bool {
    entries.iter().any(|e| e == ".git/hooks" || e == ".git/config")
}

/// Of `candidates`, those inside a writable root (not a root itself):
/// existing ones canonical (a protected symlink protects what it points
/// at), with the directories between their root and them; and those that
/// do not exist, with their existing part canonical.
fn inside_roots(candidates: Vec<PathBuf>, roots: &[PathBuf], places: Places) -> (Vec<Protected>, Vec<PathBuf>) {
    let mut out: Vec<Protected> = Vec::new();
    let mut absent: Vec<PathBuf> = Vec::new();
    let mut resolver = Resolver {
        dirs: HashMap::new(),
        places,
    };
    // The roots are canonical already.
    for root in roots {
        resolver.dirs.insert(root.clone(), Some(root.clone()));
    }
    for candidate in candidates {
        match resolver.resolve(&candidate) {
            Resolved::Exists(path) => {
                if let Some(root) = root_of(&path, roots)
                    && !out.iter().any(|p| p.path == path)
                {
                    out.push(pinned(path, root));
                }
            }
            Resolved::Absent(path) => {
                if root_of(&path, roots).is_some() && !absent.contains(&path) {
                    absent.push(path);
                }
            }
            // A dangling symlink: what it would create is not known here.
            Resolved::Dangling => {}
        }
    }
    (out, absent)
}

/// Where a candidate path leads.
enum Resolved {
    Exists(PathBuf),
    Absent(PathBuf),
    /// A dangling link: what it would create is not known here.
    Dangling,
}

/// Canonicalizes paths, each parent directory once (most candidates share
/// a few: the roots, a `.git`), so a plan costs one `lstat` per candidate
/// rather than a `readlink` per component of each; in a directory no
/// command can write (the home directory), one `statx` of the directory
/// while it stays the same (see [`Places`]).
struct Resolver {
    dirs: HashMap<PathBuf, Option<PathBuf>>,
    places: Places,
}

impl Resolver {
    /// `dir` canonical, if it exists.
    fn dir(&mut self, dir: &Path) -> Option<PathBuf> {
        if let Some(known) = self.dirs.get(dir) {
            return known.clone();
        }
        let canonical = match self.outside_writable_places(dir) {
            Some(found) => found,
            None => fsread::canonical(dir).ok(),
        };
        self.dirs.insert(dir.to_path_buf(), canonical.clone());
        canonical
    }

    /// `dir` canonical from what is kept of the directories above it, when
    /// it lies outside every writable place and neither it nor its parent
    /// is a link (`None` otherwise: the file system says).
    fn outside_writable_places(&mut self, dir: &Path) -> Option<Option<PathBuf>> {
        if dir == Path::new("/") {
            return Some(Some(dir.to_path_buf()));
        }
        let plain = dir.is_absolute()
            && dir
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::RootDir));
        let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
            return None;
        };
        if !plain || self.places.is_writable(dir) || self.dir(parent).as_deref() != Some(parent) {
            return None;
        }
        match self.places.entry(parent, name) {
            Found::NotALink => Some(Some(dir.to_path_buf())),
            Found::Absent => Some(None),
            Found::Link => None,
        }
    }

    /// `path` (absolute, its parent known not to resolve) with `.` and
    /// `..` resolved and its longest existing ancestor canonical
    /// (candidates in a missing `.git` share their ancestors).
    fn existing_part_canonical(&mut self, path: &Path) -> Option<PathBuf> {
        let path = super::lexical::normalize(path);
        let mut rest = vec![path.file_name()?.to_owned()];
        for ancestor in path.ancestors().skip(1) {
            if let Some(real) = self.dir(ancestor) {
                return Some(rest.iter().rev().fold(real, |p: PathBuf, name| p.join(name)));
            }
            rest.push(ancestor.file_name()?.to_owned());
        }
        None
    }

    fn resolve(&mut self, path: &Path) -> Resolved {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return match fsread::canonical(path) {
                Ok(p) => Resolved::Exists(p),
                Err(_) => Resolved::Dangling,
            };
        };
        let Some(parent) = self.dir(parent) else {
            return self
                .existing_part_canonical(path)
                .map_or(Resolved::Dangling, Resolved::Absent);
        };
        let found = self.places.entry(&parent, name);
        let full = parent.join(name);
        match found {
            Found::Absent => Resolved::Absent(full),
            Found::Link => match fsread::canonical(&full) {
                Ok(p) => Resolved::Exists(p),
                Err(_) => Resolved::Dangling,
            },
            Found::NotALink => Resolved::Exists(full),
        }
    }
}

/// The innermost writable root that holds `path` and is not `path` itself.
fn root_of<'a>(path: &Path, roots: &'a [PathBuf]) -> Option<&'a Path> {
    roots
        .iter()
        .filter(|r| path.starts_with(r) && path != r.as_path())
        .max_by_key(|r| r.as_os_str().len())
        .map(PathBuf::as_path)
}

/// `path` with the directories between `root` and it, outermost first.
fn pinned(path: PathBuf, root: &Path) -> Protected {
    let mut pinned_dirs: Vec<PathBuf> = path
        .ancestors()
        .skip(1)
        .take_while(|a| *a != root)
        .map(Path::to_path_buf)
        .collect();
    pinned_dirs.reverse();
    Protected { path, pinned_dirs }
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
    fn a_directory_outside_writable_places_resolves_as_the_file_system_says() {
        let base = temp_tree();
        let (outside, root) = (base.join("outside"), base.join("root"));
        std::fs::create_dir_all(outside.join("real")).unwrap();
        std::fs::create_dir_all(root.join("inner")).unwrap();
        std::os::unix::fs::symlink(&root, outside.join("link")).unwrap();
        let mut resolver = Resolver {
            dirs: HashMap::new(),
            places: Places::new(vec![root.clone()]),
        };
        let mut dir = |path: PathBuf| resolver.dir(&path);
        assert_eq!(dir(outside.join("real")), Some(outside.join("real")));
        assert_eq!(dir(outside.join("link")), Some(root.clone()), "a link is followed");
        assert_eq!(dir(outside.join("link/inner")), Some(root.join("inner")));
        assert_eq!(dir(outside.join("missing")), None);
        assert_eq!(dir(outside.join("missing/below")), None);
        assert_eq!(dir(outside.join("real/../link")), Some(root.clone()));
        assert_eq!(dir(PathBuf::from("/")), Some(PathBuf::from("/")));
        std::fs::remove_dir_all(&base).unwrap();
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
        let plan = Plan::new(&config, (&dir, &dir), &[], Temp::Fresh).unwrap();
        assert_eq!(plan.writable, vec![dir.clone()]);
        let paths: Vec<_> = plan.protected.iter().map(|p| p.path.clone()).collect();
        assert_eq!(paths, vec![dir.join(".git/hooks"), dir.join(".git/config")]);
        assert_eq!(plan.protected[0].pinned_dirs, vec![dir.join(".git")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_git_files_are_absent_and_hidden_paths_keep_their_parents() {
        let dir = temp_tree();
        std::fs::create_dir_all(dir.join("conf/keys")).unwrap();
        let config = SandboxConfig {
            mode: Mode::WorkspaceWrite,
            writable_roots: Some(vec![dir.clone()]),
            read_deny: vec![dir.join("conf/keys"), PathBuf::from("/no/such/secret")],
            ..SandboxConfig::default()
        };
        let plan = Plan::new(&config, (&dir, &dir), &[], Temp::Fresh).unwrap();
        for missing in [".git/commondir", ".git/config.worktree", ".envrc"] {
            assert!(plan.absent.contains(&dir.join(missing)), "{missing}: {:?}", plan.absent);
        }
        assert_eq!(plan.read_deny.len(), 1, "{:?}", plan.read_deny);
        assert_eq!(plan.read_deny[0].path, dir.join("conf/keys"));
        assert_eq!(plan.read_deny[0].pinned_dirs, vec![dir.join("conf")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_only_has_no_roots() {
        let dir = temp_tree();
        let config = SandboxConfig {
            mode: Mode::ReadOnly,
            ..SandboxConfig::default()
        };
        let plan = Plan::new(&config, (&dir, &dir), &[], Temp::Fresh).unwrap();
        assert!(plan.writable.is_empty() && plan.protected.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn default_roots_are_the_servers_working_dir_not_the_commands() {
        let dir = temp_tree();
        let config = SandboxConfig {
            mode: Mode::WorkspaceWrite,
            ..SandboxConfig::default()
        };
        let plan = Plan::new(&config, (Path::new("/etc"), &dir), &[], Temp::Fresh).unwrap();
        assert_eq!(plan.cwd, Path::new("/etc"));
        assert_eq!(plan.writable, std::slice::from_ref(&dir));
        assert!(!plan.writable.iter().any(|r| r.starts_with("/etc")), "{plan:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_root_is_an_error_that_names_it() {
        let config = SandboxConfig {
            mode: Mode::WorkspaceWrite,
            writable_roots: Some(vec![PathBuf::from("/no/such/root")]),
            ..SandboxConfig::default()
        };
        let e = Plan::new(&config, (Path::new("/"), Path::new("/")), &[], Temp::Fresh).unwrap_err();
        assert!(e.message.contains("/no/such/root"), "{e:?}");
    }
}
