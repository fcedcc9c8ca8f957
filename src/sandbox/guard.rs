//! Guarded directories: how protected paths hold whether or not they exist,
//! whatever a command renames, and however the host replaces them.
//!
//! A protected path cannot be kept by binding it read-only alone: a path
//! that does not exist cannot be bound (`.git/commondir`), and a bind is
//! taken away when the host replaces the file under it by a rename (as
//! `git config` and editors save). So the directory that holds protected
//! names is what the kernel keeps: read-only (bubblewrap) or granted
//! nothing (Landlock), with each of its other subdirectories writable as a
//! whole again. What a command does directly in such a directory (creating
//! `index.lock` in `.git`, renaming it over `index`, writing `Cargo.toml`
//! in a root) the kernel refuses, and the seccomp handler does it instead
//! (see [`notify::mediate`](super::notify::mediate)), after checking the
//! name: never one of the protected names, whatever the command named.
//!
//! On bubblewrap the directories between a root and a guarded directory
//! are kept in place by being mount points of their own; Landlock has no
//! mount points, so they are mediated as well, up to the root.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::fsread::{self, Entry};
use super::plan::Plan;

/// What an entry of a mediated directory is to the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    /// Protected: the entry and everything beneath it stay as they are.
    Protected,
    /// It holds a guarded directory further down: it stays where it is
    /// (no rename, no removal); what is beneath it is decided there.
    Holds,
    /// A directory writable as a whole (bound read-write, or granted
    /// beneath): the kernel decides what happens inside it.
    WritableDir,
    /// A file Landlock lets the command write in place (its only link: a
    /// Landlock rule is on the inode, whatever the path).
    WritableFile,
}

/// A directory whose own entries only the handler changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mediated {
    pub dir: PathBuf,
    /// Device and inode when the plan was made: the handler acts only on
    /// the directory it finds with these.
    pub id: (u64, u64),
    /// Entries by name; any other name (a file, a directory made since,
    /// a new name) is the handler's to create, write, rename or remove.
    pub entries: BTreeMap<OsString, Kind>,
}

impl Mediated {
    pub fn kind(&self, name: &OsStr) -> Option<Kind> {
        self.entries.get(name).copied()
    }
}

/// Which backend a layout is for: bubblewrap keeps the directories on the
/// way to a guarded one in place as mount points; Landlock mediates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keeping {
    MountPoints,
    Mediation,
}

/// How a directory is bound onto itself under bubblewrap, the strictest
/// last: two binds of one path make one, the stricter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bind {
    /// Read-write if it still exists when bwrap starts (`--bind-try`): a
    /// writable subdirectory of a mediated directory, listed when the
    /// layout was made, which the host may remove before then (`rm -rf
    /// build`). Gone, it is not bound: its name is then an entry of the
    /// read-only mediated directory, which the kernel refuses to make
    /// again (the handler decides, as for a new name).
    WritableIfPresent,
    Writable,
    ReadOnly,
}

/// Every mediated directory of a plan, outermost first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    pub mediated: Vec<Mediated>,
    /// Directories between a root and a guarded directory, bound onto
    /// themselves (bubblewrap only).
    pub pinned: Vec<PathBuf>,
    /// The plan's hidden paths, and its protected paths no mediated
    /// directory holds (bound read-only on their own): nothing is done at
    /// or beneath them on a command's behalf.
    pub hidden: Vec<PathBuf>,
}

impl Layout {
    /// The layout of `plan`: its guarded directories are the parents of its
    /// protected paths, and the parents of its absent protected paths that
    /// exist and are not a writable root themselves, or are the server's
    /// working directory (the project: a `.bash-mcp.toml` or `.envrc`
    /// planted there is kept out whether or not it holds a repository); a
    /// root is mediated when it holds a protected path or a guarded
    /// directory (mediating every root for names that may never appear
    /// there would mediate every temp dir).
    pub fn new(plan: &Plan, keeping: Keeping) -> Layout {
        let guarded = guarded_dirs(plan);
        let holding = holding_dirs(plan, &guarded);
        let (mut mediated_dirs, mut pinned) = mediated_dirs(plan, keeping, &guarded, &holding);
        keep_hidden_ways(plan, &mut mediated_dirs);
        // An absent protected name counts in every mediated directory (on
        // Landlock, the way down from a root is mediated anyway).
        for path in &plan.absent {
            if let (Some(parent), Some(name)) = (path.parent(), path.file_name())
                && let Some(entries) = mediated_dirs.get_mut(parent)
            {
                entries.entry(name.to_owned()).or_insert(Kind::Protected);
            }
        }
        let mut hidden: Vec<PathBuf> = plan.read_deny.iter().map(|d| d.path.clone()).collect();
        let mediated = list_mediated(mediated_dirs, &hidden, keeping);
        hidden.extend(
            plan.protected
                .iter()
                .filter(|p| !mediated.iter().any(|m| p.path.parent() == Some(m.dir.as_path())))
                .map(|p| p.path.clone()),
        );
        pinned.sort_by_key(|p| p.components().count());
        pinned.dedup();
        Layout {
            mediated,
            pinned,
            hidden,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.mediated.is_empty()
    }

    /// The paths of every entry of `kind` in a mediated directory.
    pub fn entries_of(&self, kind: Kind) -> Vec<PathBuf> {
        self.mediated
            .iter()
            .flat_map(|m| {
                m.entries
                    .iter()
                    .filter(|(_, k)| **k == kind)
                    .map(|(n, _)| m.dir.join(n))
            })
            .collect()
    }

    /// The innermost mediated directory `path` (absolute, normalized) lies
    /// strictly inside, with the rest of the path below it (`None` under a
    /// hidden path, whatever holds it).
    pub fn find<'a>(&self, path: &'a Path) -> Option<(&Mediated, &'a Path)> {
        if self.hidden.iter().any(|h| path.starts_with(h)) {
            return None;
        }
        self.mediated.iter().rev().find_map(|m| {
            path.strip_prefix(&m.dir)
                .ok()
                .filter(|r| !r.as_os_str().is_empty())
                .map(|r| (m, r))
        })
    }

    /// Every directory a bubblewrap command gets bound, in mount order
    /// (outer first), with how: the pinned directories read-write, the
    /// mediated directories read-only, and each mediated directory's
    /// writable subdirectories read-write if they still exist.
    pub fn binds(&self) -> Vec<(PathBuf, Bind)> {
        let mut binds: Vec<(PathBuf, Bind)> = self.pinned.iter().map(|p| (p.clone(), Bind::Writable)).collect();
        for m in &self.mediated {
            binds.push((m.dir.clone(), Bind::ReadOnly));
            for (name, kind) in &m.entries {
                if *kind == Kind::WritableDir {
                    binds.push((m.dir.join(name), Bind::WritableIfPresent));
                }
            }
        }
        binds.sort_by_key(|(p, _)| p.components().count());
        binds.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = kept.1.max(later.1);
            }
            same
        });
        binds
    }
}

/// Names of one directory, by directory.
type NamesByDir = BTreeMap<PathBuf, Vec<OsString>>;

/// The guarded directories of `plan` with the names guarded in each: the
/// parents of its protected paths, and the parents of its absent protected
/// paths that are guarded already, exist and are not a writable root, or are
/// the server's working directory.
fn guarded_dirs(plan: &Plan) -> NamesByDir {
    let mut guarded = NamesByDir::new();
    let is_root = |p: &Path| plan.writable.iter().any(|r| r == p);
    for path in plan.protected.iter().map(|p| p.path.as_path()) {
        if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
            guarded.entry(parent.to_path_buf()).or_default().push(name.to_owned());
        }
    }
    // Absent names share a few parents (a missing `.git`): each looked at once.
    let mut is_dir: BTreeMap<&Path, bool> = BTreeMap::new();
    for path in &plan.absent {
        if let (Some(parent), Some(name)) = (path.parent(), path.file_name())
            && (guarded.contains_key(parent)
                || (!is_root(parent) && *is_dir.entry(parent).or_insert_with(|| parent.is_dir()))
                || plan.workdir.as_deref() == Some(parent))
        {
            guarded.entry(parent.to_path_buf()).or_default().push(name.to_owned());
        }
    }
    guarded
}

/// The directories between each guarded one and the innermost writable root
/// holding it, with the name of the step down in each.
fn holding_dirs(plan: &Plan, guarded: &NamesByDir) -> NamesByDir {
    let mut holding = NamesByDir::new();
    for dir in guarded.keys() {
        let Some(root) = plan
            .writable
            .iter()
            .filter(|r| dir.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())
        else {
            continue;
        };
        let mut child = dir.as_path();
        while child != root.as_path() {
            let Some(parent) = child.parent() else { break };
            let name = child.file_name().unwrap_or_default().to_owned();
            holding.entry(parent.to_path_buf()).or_default().push(name);
            child = parent;
        }
    }
    holding
}

/// The mediated directories with their protected and holding entries, and
/// the paths pinned as mount points (with [`Keeping::MountPoints`]).
fn mediated_dirs(
    plan: &Plan,
    keeping: Keeping,
    guarded: &NamesByDir,
    holding: &NamesByDir,
) -> (BTreeMap<PathBuf, BTreeMap<OsString, Kind>>, Vec<PathBuf>) {
    let is_root = |p: &Path| plan.writable.iter().any(|r| r == p);
    let mut mediated_dirs: BTreeMap<PathBuf, BTreeMap<OsString, Kind>> = BTreeMap::new();
    for (dir, names) in guarded {
        let entries = mediated_dirs.entry(dir.clone()).or_default();
        for name in names {
            entries.insert(name.clone(), Kind::Protected);
        }
    }
    let mut pinned = Vec::new();
    for (dir, names) in holding {
        // A root that holds a guarded directory is mediated too: the
        // names protected in it hold whether or not they exist.
        let is_mediated = match keeping {
            Keeping::Mediation => true,
            Keeping::MountPoints => guarded.contains_key(dir) || is_root(dir),
        };
        if is_mediated {
            let entries = mediated_dirs.entry(dir.clone()).or_default();
            for name in names {
                entries.entry(name.clone()).or_insert(Kind::Holds);
            }
        }
        if keeping == Keeping::MountPoints {
            pinned.extend(names.iter().map(|n| dir.join(n)).filter(|p| !guarded.contains_key(p)));
        }
    }
    (mediated_dirs, pinned)
}

/// A hidden path, and every directory on the way to it, stays where it is:
/// the handler renames on the host, where no mount point holds them, and one
/// renamed would take the hidden path out of sight of the next command's plan.
fn keep_hidden_ways(plan: &Plan, mediated_dirs: &mut BTreeMap<PathBuf, BTreeMap<OsString, Kind>>) {
    for hidden in &plan.read_deny {
        let mut child = hidden.path.as_path();
        while let (Some(parent), Some(name)) = (child.parent(), child.file_name()) {
            if let Some(entries) = mediated_dirs.get_mut(parent) {
                entries.entry(name.to_owned()).or_insert(Kind::Holds);
            }
            child = parent;
        }
    }
}

/// Each mediated directory that exists, with the writable entries it holds
/// now beside the named ones, outermost first.
fn list_mediated(
    mediated_dirs: BTreeMap<PathBuf, BTreeMap<OsString, Kind>>,
    hidden: &[PathBuf],
    keeping: Keeping,
) -> Vec<Mediated> {
    let mut mediated = Vec::new();
    for (dir, mut entries) in mediated_dirs {
        let Some(id) = identity(&dir) else { continue };
        for (name, child) in fsread::list(&dir) {
            let path = dir.join(&name);
            if entries.contains_key(&name) || hidden.contains(&path) {
                continue;
            }
            match child {
                Entry::Dir => {
                    entries.insert(name, Kind::WritableDir);
                }
                Entry::SoleFile if keeping == Keeping::Mediation => {
                    entries.insert(name, Kind::WritableFile);
                }
                _ => {}
            }
        }
        mediated.push(Mediated { dir, id, entries });
    }
    mediated.sort_by_key(|m| m.dir.components().count());
    mediated
}

fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    path.symlink_metadata()
        .ok()
        .filter(|m| m.is_dir())
        .map(|m| (m.dev(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::plan::Protected;

    fn tree() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "bm-guard-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in [".git/hooks", ".git/objects", ".git/refs", "src", "sub/deep/.git/refs"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        std::fs::write(dir.join(".git/config"), "").unwrap();
        std::fs::write(dir.join("README"), "").unwrap();
        dir.canonicalize().unwrap()
    }

    fn plan(dir: &Path) -> Plan {
        let protected = |p: &str| Protected {
            path: dir.join(p),
            pinned_dirs: Vec::new(),
        };
        Plan {
            cwd: dir.to_path_buf(),
            writable: vec![dir.to_path_buf()],
            protected: vec![protected(".git/hooks"), protected(".git/config")],
            workdir: None,
            absent: vec![
                dir.join(".git/commondir"),
                dir.join(".envrc"),
                dir.join("sub/deep/.git/config"),
            ],
            read_deny: Vec::new(),
            network: false,
            temp: crate::sandbox::temp::Temp::Fresh,
        }
    }

    #[test]
    fn the_way_to_a_hidden_path_in_a_guarded_root_stays_in_place() {
        let dir = tree();
        std::fs::create_dir_all(dir.join("src/secrets")).unwrap();
        let mut hiding = plan(&dir);
        hiding.read_deny = vec![Protected {
            path: dir.join("src/secrets"),
            pinned_dirs: vec![dir.join("src")],
        }];
        for keeping in [Keeping::MountPoints, Keeping::Mediation] {
            let layout = Layout::new(&hiding, keeping);
            let root = layout
                .mediated
                .iter()
                .find(|m| m.dir == dir)
                .expect("the root is mediated");
            // Renaming `src` would move the secrets out of sight.
            assert_eq!(root.kind(OsStr::new("src")), Some(Kind::Holds), "{keeping:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_servers_working_directory_keeps_its_absent_protected_names() {
        let dir = tree();
        let mut plain = plan(&dir);
        plain.protected.clear();
        plain.absent = vec![dir.join(".bash-mcp.toml")];
        assert!(Layout::new(&plain, Keeping::MountPoints).mediated.is_empty());
        plain.workdir = Some(dir.clone());
        let layout = Layout::new(&plain, Keeping::MountPoints);
        let root = layout
            .mediated
            .iter()
            .find(|m| m.dir == dir)
            .expect("the working dir is mediated");
        assert_eq!(root.kind(OsStr::new(".bash-mcp.toml")), Some(Kind::Protected));
        assert_eq!(root.kind(OsStr::new("src")), Some(Kind::WritableDir));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn git_dirs_are_guarded_with_their_other_subdirectories_writable() {
        let dir = tree();
        let layout = Layout::new(&plan(&dir), Keeping::MountPoints);
        let dirs: Vec<_> = layout.mediated.iter().map(|m| m.dir.clone()).collect();
        assert_eq!(dirs, [dir.clone(), dir.join(".git"), dir.join("sub/deep/.git")]);
        let git = &layout.mediated[1];
        for (name, kind) in [
            ("hooks", Kind::Protected),
            ("config", Kind::Protected),
            ("commondir", Kind::Protected),
            ("objects", Kind::WritableDir),
            ("refs", Kind::WritableDir),
        ] {
            assert_eq!(git.kind(OsStr::new(name)), Some(kind), "{name}");
        }
        assert_eq!(layout.pinned, [dir.join("sub"), dir.join("sub/deep")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_root_is_mediated_when_it_holds_a_guarded_directory_and_not_for_absent_names_alone() {
        let dir = tree();
        let layout = Layout::new(&plan(&dir), Keeping::MountPoints);
        let root = layout
            .mediated
            .iter()
            .find(|m| m.dir == dir)
            .expect("the root is mediated");
        assert_eq!(root.kind(OsStr::new(".envrc")), Some(Kind::Protected));
        assert_eq!(root.kind(OsStr::new(".git")), Some(Kind::Holds));
        assert_eq!(root.kind(OsStr::new("sub")), Some(Kind::Holds));
        assert_eq!(root.kind(OsStr::new("src")), Some(Kind::WritableDir));
        let mut bare = plan(&dir);
        bare.protected.clear();
        bare.absent = vec![dir.join(".envrc")];
        assert!(
            Layout::new(&bare, Keeping::MountPoints).is_empty(),
            "a temp dir is not mediated for names that may never appear"
        );
        let binds = layout.binds();
        let git_at = binds
            .iter()
            .position(|b| b == &(dir.join(".git"), Bind::ReadOnly))
            .unwrap();
        let objects_at = binds
            .iter()
            .position(|b| b == &(dir.join(".git/objects"), Bind::WritableIfPresent))
            .unwrap();
        assert!(git_at < objects_at, "{binds:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn landlock_mediates_the_way_down_from_the_root() {
        let dir = tree();
        let layout = Layout::new(&plan(&dir), Keeping::Mediation);
        let root = layout
            .mediated
            .iter()
            .find(|m| m.dir == dir)
            .expect("the root is mediated");
        assert_eq!(root.kind(OsStr::new(".git")), Some(Kind::Holds));
        assert_eq!(root.kind(OsStr::new("sub")), Some(Kind::Holds));
        assert_eq!(root.kind(OsStr::new("src")), Some(Kind::WritableDir));
        assert_eq!(root.kind(OsStr::new(".envrc")), Some(Kind::Protected));
        assert!(layout.pinned.is_empty());
        let hook = dir.join(".git/hooks/pre-commit");
        let (m, rest) = layout.find(&hook).unwrap();
        assert_eq!((m.dir.clone(), rest), (dir.join(".git"), Path::new("hooks/pre-commit")));
        assert_eq!(
            layout.find(&dir.join("sub/deep/x")).unwrap().0.dir,
            dir.join("sub/deep")
        );
        assert!(layout.find(&dir).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
