//! The bubblewrap backend: the `bwrap` command line that runs one command
//! (or one session shell) in fresh mount, PID, IPC, UTS, user and (with
//! network off) network namespaces.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::guard::{Bind, Layout};
use super::plan::Plan;
use super::temp::Temp;

/// The oldest bubblewrap with `--disable-userns`, which keeps a command from
/// creating namespaces of its own.
pub const DISABLE_USERNS_SINCE: (u32, u32, u32) = (0, 8, 0);

/// Options of the bwrap run besides the plan.
#[derive(Debug, Clone, Copy)]
pub struct BwrapOptions {
    /// `--die-with-parent`: the sandbox dies with the thread that spawned
    /// it. Right for a call that waits for its command; wrong for a session
    /// shell, which outlives the call that started it.
    pub die_with_parent: bool,
    /// Whether this bwrap knows `--disable-userns`.
    pub disable_userns: bool,
    /// The sandbox runs a supervisor, which keeps the capabilities it needs
    /// to start commands inside (new PID and mount namespaces, dropping
    /// capabilities) and limits user namespaces itself; the commands it
    /// starts keep none.
    pub supervisor: bool,
    /// The fd bwrap reads the enforcing seccomp program from (see
    /// [`seccomp`](super::seccomp)), as the sandbox's processes see it.
    pub seccomp_fd: Option<i32>,
    /// Hidden paths become mode-000 stand-ins (bubblewrap 0.8.0 and later,
    /// which apply `--perms` to them): reading one fails with `EACCES`,
    /// whose error text names it. The number is the fd of the first hidden
    /// file's (empty) content, the next ones following, one per file (see
    /// [`stand_in_fds`]). `None`: `/dev/null` and empty directories in
    /// their place.
    pub stand_ins_from: Option<i32>,
}

/// The fd a command's own bwrap (or a session's) reads its seccomp program from.
pub const SECCOMP_FD: i32 = 3;

/// The capabilities a supervisor keeps inside its user namespace.
pub const SUPERVISOR_CAPS: &[&str] = &["CAP_SYS_ADMIN", "CAP_SETPCAP", "CAP_SYS_RESOURCE"];

/// The full argv: `bwrap <options> -- <command...>`, with the guarded
/// directories of `layout`.
pub fn argv(bwrap: &Path, plan: &Plan, layout: &Layout, options: BwrapOptions, command: &[CString]) -> Vec<CString> {
    argv_seeing(bwrap, plan, layout, &Seen::read(plan), options, command)
}

/// What a command line reads of the file system besides its plan and
/// layout: whether each hidden path is a directory (hidden by an empty
/// one, else by a file), and the attach directories there are to hide.
/// With the plan, the layout and the options, it decides the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    hidden_dirs: Vec<bool>,
    attach_dirs: Vec<PathBuf>,
}

impl Seen {
    pub fn read(plan: &Plan) -> Seen {
        Seen {
            hidden_dirs: plan.read_deny.iter().map(|d| d.path.is_dir()).collect(),
            attach_dirs: super::hidden::attach_dirs(plan),
        }
    }
}

/// [`argv`], with what it reads of the file system read already.
pub fn argv_seeing(
    bwrap: &Path,
    plan: &Plan,
    layout: &Layout,
    seen: &Seen,
    options: BwrapOptions,
    command: &[CString],
) -> Vec<CString> {
    let mut args = Args(vec![bwrap.as_os_str().to_owned()]);
    namespaces(&mut args, plan, options);
    file_system(&mut args, plan, layout, seen, options.stand_ins_from);
    args.push(["--chdir"]);
    args.path(&plan.cwd);
    args.push(["--"]);
    let mut argv: Vec<CString> = args.0.into_iter().map(c_string).collect();
    argv.extend(command.iter().cloned());
    argv
}

struct Args(Vec<OsString>);

impl Args {
    fn push<const N: usize>(&mut self, items: [&str; N]) {
        self.0.extend(items.iter().map(OsString::from));
    }
    fn path(&mut self, path: &Path) {
        self.0.push(path.as_os_str().to_owned());
    }
    /// `flag path path`: a mount of `path` onto itself.
    fn same(&mut self, flag: &str, path: &Path) {
        self.push([flag]);
        self.path(path);
        self.path(path);
    }
}

fn c_string(s: OsString) -> CString {
    // Plan paths come from validated configuration without NUL bytes.
    CString::new(s.into_vec()).unwrap_or_else(|_| CString::from(c"/nonexistent-path-with-nul"))
}

fn namespaces(args: &mut Args, plan: &Plan, options: BwrapOptions) {
    // A user namespace even for root: the mounts below become locked (a
    // process inside cannot unmount or remount them), and `--cap-drop ALL`
    // leaves no capability in it.
    args.push([
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]);
    if !plan.network {
        args.push(["--unshare-net"]);
    }
    if options.disable_userns && !options.supervisor {
        args.push(["--disable-userns"]);
    }
    args.push(["--cap-drop", "ALL"]);
    if options.supervisor {
        for cap in SUPERVISOR_CAPS {
            args.push(["--cap-add", cap]);
        }
    }
    if options.die_with_parent {
        args.push(["--die-with-parent"]);
    }
    if let Some(fd) = options.seccomp_fd {
        args.push(["--seccomp"]);
        args.0.push(fd.to_string().into());
    }
}

fn file_system(args: &mut Args, plan: &Plan, layout: &Layout, seen: &Seen, stand_ins_from: Option<i32>) {
    args.same("--ro-bind", Path::new("/"));
    args.push(["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm"]);
    // The command's temp dir, not the host's shared /tmp.
    match &plan.temp {
        Temp::AtTmp(dir) => {
            args.push(["--bind"]);
            args.path(dir);
            args.push(["/tmp"]);
        }
        Temp::Fresh | Temp::Granted(_) => args.push(["--tmpfs", "/tmp"]),
    }
    // A working dir under /tmp stays visible (read-only) above the new /tmp.
    if plan.cwd_bound_over_tmp() {
        args.same("--ro-bind", &plan.cwd);
    }
    // Outer mounts first: a bind covers whatever was bound below it before.
    for (path, bind) in mounts(plan, layout) {
        let flag = match bind {
            Bind::ReadOnly => "--ro-bind",
            Bind::Writable => "--bind",
            // Bound only if the host has not removed it since the layout.
            Bind::WritableIfPresent => "--bind-try",
        };
        args.same(flag, &path);
    }
    let mut data_fd = stand_ins_from;
    for (denied, is_dir) in plan.read_deny.iter().map(|d| d.path.as_path()).zip(&seen.hidden_dirs) {
        if stand_ins_from.is_some() {
            args.push(["--perms", "0000"]);
        }
        if *is_dir {
            empty_read_only(args, denied);
        } else if let Some(fd) = data_fd.as_mut() {
            args.push([STAND_IN]);
            args.0.push(fd.to_string().into());
            args.path(denied);
            *fd += 1;
        } else {
            args.push(["--ro-bind", "/dev/null"]);
            args.path(denied);
        }
    }
    // Last, so that no bind of a parent (a writable root, a pinned
    // directory) covers it again.
    for dir in &seen.attach_dirs {
        empty_read_only(args, dir);
    }
}

/// An empty, read-only tmpfs over the directory `dir`.
fn empty_read_only(args: &mut Args, dir: &Path) {
    args.push(["--tmpfs"]);
    args.path(dir);
    args.push(["--remount-ro"]);
    args.path(dir);
}

/// The option that makes a hidden file's stand-in from an fd's content.
const STAND_IN: &str = "--ro-bind-data";

/// How many fds of empty content `argv` (from [`argv`]) reads its hidden
/// files' stand-ins from: bwrap consumes one per file.
pub fn stand_in_fds(argv: &[CString]) -> usize {
    argv.iter().filter(|a| a.as_bytes() == STAND_IN.as_bytes()).count()
}

/// Every bind of `plan`'s paths onto themselves, outer first, with how: the
/// roots; the guarded directories read-only with their other
/// subdirectories writable again if still there ([`Layout::binds`]); the directories
/// between a root and a guarded directory or a hidden path, kept in place
/// as mount points of their own (so `mv .git elsewhere` fails with "Device
/// or resource busy", and a hidden path cannot be moved out of sight of the
/// next command's plan); and a protected path no guarded directory holds,
/// read-only itself.
fn mounts(plan: &Plan, layout: &Layout) -> Vec<(PathBuf, Bind)> {
    let mut mounts: Vec<(PathBuf, Bind)> = plan.writable.iter().map(|r| (r.clone(), Bind::Writable)).collect();
    mounts.extend(layout.binds());
    for p in &plan.read_deny {
        mounts.extend(p.pinned_dirs.iter().map(|d| (d.clone(), Bind::Writable)));
    }
    for p in plan.protected.iter().filter(|p| layout.find(&p.path).is_none()) {
        mounts.extend(p.pinned_dirs.iter().map(|d| (d.clone(), Bind::Writable)));
        mounts.push((p.path.clone(), Bind::ReadOnly));
    }
    // Stable: at one depth, a root before the guarded directory it is.
    mounts.sort_by_key(|(p, _)| p.components().count());
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<(PathBuf, Bind)> = Vec::new();
    for (path, bind) in mounts {
        if seen.insert(path.clone()) {
            out.push((path, bind));
        } else if let Some(known) = out.iter_mut().find(|(p, _)| *p == path) {
            // A root that is a guarded directory too is read-only; a
            // listed subdirectory that is a root too must be there.
            known.1 = known.1.max(bind);
        }
    }
    out
}

/// The paths the plan mounts that a replacement on the host would take the
/// mount away from.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BoundPaths {
    /// The roots, the guarded directories, the directories kept in place,
    /// the protected and the hidden paths: each must still be a mount.
    pub always: Vec<PathBuf>,
    /// The guarded directories' writable subdirectories (bound with
    /// `--bind-try`): each must be a mount if it exists; the host may
    /// remove one, but not put another in its place.
    pub if_present: Vec<PathBuf>,
}

/// Every path the plan mounts, as [`BoundPaths`] sorts them.
pub fn bound_paths(plan: &Plan, layout: &Layout) -> BoundPaths {
    let mut bound = BoundPaths::default();
    for (path, bind) in mounts(plan, layout) {
        match bind {
            Bind::WritableIfPresent => bound.if_present.push(path),
            Bind::Writable | Bind::ReadOnly => bound.always.push(path),
        }
    }
    bound.always.extend(plan.read_deny.iter().map(|d| d.path.clone()));
    for paths in [&mut bound.always, &mut bound.if_present] {
        // What lies inside a hidden path is not there to check.
        paths.retain(|p| !plan.read_deny.iter().any(|d| p.starts_with(&d.path) && *p != d.path));
        paths.sort();
        paths.dedup();
    }
    bound
}

/// Where the plan mounts something at or below `base` (the working dir,
/// roots, guarded directories, directories kept in place, protected and
/// hidden paths), outermost first and without the ones inside another:
/// what must be carried over when `base` gets a fresh tmpfs, with whether
/// it is mounted only if present (see [`Bind::WritableIfPresent`]).
pub fn mounts_under(plan: &Plan, layout: &Layout, base: &Path) -> Vec<(PathBuf, bool)> {
    let cwd = plan.cwd_bound_over_tmp().then(|| plan.cwd.clone());
    let mut all: Vec<(PathBuf, bool)> = cwd
        .into_iter()
        .map(|p| (p, false))
        .chain(
            mounts(plan, layout)
                .into_iter()
                .map(|(p, bind)| (p, bind == Bind::WritableIfPresent)),
        )
        .chain(plan.read_deny.iter().map(|d| (d.path.clone(), false)))
        .filter(|(p, _)| p.starts_with(base) && p.as_path() != base)
        .collect();
    all.sort_by_key(|(p, _)| p.components().count());
    let mut outermost: Vec<(PathBuf, bool)> = Vec::new();
    for (path, if_present) in all {
        if !outermost.iter().any(|(o, _)| path.starts_with(o)) {
            outermost.push((path, if_present));
        }
    }
    outermost
}

/// `bwrap --version` output (`bubblewrap 0.8.0`) as a version triple.
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let word = text
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
    let mut parts = word.split('.').map(|p| p.parse::<u32>().ok());
    Some((
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
        parts.next().flatten().unwrap_or(0),
    ))
}

/// The argv as one readable line (for logs and error messages).
pub fn display(argv: &[CString]) -> String {
    argv.iter()
        .map(|a| OsStr::from_bytes(a.as_bytes()).to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::plan::Protected;

    fn plan() -> Plan {
        Plan {
            cwd: PathBuf::from("/w"),
            writable: vec![PathBuf::from("/w"), PathBuf::from("/tmp")],
            protected: vec![Protected {
                path: PathBuf::from("/w/.git/hooks"),
                pinned_dirs: vec![PathBuf::from("/w/.git")],
            }],
            workdir: None,
            absent: vec![],
            read_deny: vec![],
            network: false,
            temp: Temp::AtTmp(PathBuf::from("/tmp/bash-mcp-tmp-x")),
        }
    }

    fn line(plan: &Plan, options: BwrapOptions) -> String {
        display(&argv(
            Path::new("/usr/bin/bwrap"),
            plan,
            &Layout::default(),
            options,
            &[c"true".to_owned()],
        ))
    }

    const OPTS: BwrapOptions = BwrapOptions {
        die_with_parent: true,
        disable_userns: true,
        supervisor: false,
        seccomp_fd: Some(SECCOMP_FD),
        stand_ins_from: Some(4),
    };

    #[test]
    fn network_off_pid_namespace_and_no_capabilities() {
        let l = line(&plan(), OPTS);
        for flag in [
            "--unshare-net",
            "--unshare-pid",
            "--unshare-user",
            "--cap-drop ALL",
            "--die-with-parent",
            "--disable-userns",
            "--seccomp 3",
        ] {
            assert!(l.contains(flag), "{flag} missing in {l}");
        }
        assert!(l.ends_with("--chdir /w -- true"), "{l}");
        let mut p = plan();
        p.network = true;
        assert!(!line(&p, OPTS).contains("--unshare-net"));
    }

    #[test]
    fn protected_paths_come_after_their_writable_root() {
        let l = line(&plan(), OPTS);
        let root = l.find("--bind /w /w").expect("root bound");
        let pin = l.find("--bind /w/.git /w/.git").expect("parent pinned");
        let ro = l
            .find("--ro-bind /w/.git/hooks /w/.git/hooks")
            .expect("protected re-bound");
        assert!(root < pin && pin < ro, "{l}");
        assert!(l.starts_with("/usr/bin/bwrap --unshare-user"), "{l}");
        assert!(l.find("--ro-bind / /").unwrap() < root, "{l}");
    }

    #[test]
    fn every_pin_comes_before_every_read_only_bind() {
        let mut p = plan();
        p.protected.push(Protected {
            path: PathBuf::from("/w/.git/config"),
            pinned_dirs: vec![PathBuf::from("/w/.git")],
        });
        let l = line(&p, OPTS);
        assert_eq!(l.matches("--bind /w/.git /w/.git").count(), 1, "{l}");
        let pin = l.find("--bind /w/.git /w/.git").unwrap();
        assert!(
            pin < l.find("--ro-bind /w/.git/hooks").unwrap() && pin < l.find("--ro-bind /w/.git/config").unwrap(),
            "{l}"
        );
    }

    #[test]
    fn read_only_mode_keeps_a_cwd_under_tmp_visible() {
        let mut p = plan();
        p.writable.clear();
        p.protected.clear();
        p.temp = Temp::Fresh;
        p.cwd = PathBuf::from("/tmp/x");
        let l = line(&p, OPTS);
        let tmp = l.find("--tmpfs /tmp").unwrap();
        assert!(l.find("--ro-bind /tmp/x /tmp/x").unwrap() > tmp, "{l}");
        assert!(!l.contains("--bind /w"), "{l}");
    }

    #[test]
    fn the_attach_directory_is_covered_last() {
        let l = line(&plan(), OPTS);
        let dir = crate::process::ids::attach_dir();
        let cover = format!("--tmpfs {0} --remount-ro {0}", dir.display());
        let at = l.find(&cover).unwrap_or_else(|| panic!("{cover} missing in {l}"));
        assert!(at > l.find("--bind /tmp /tmp").unwrap(), "{l}");
        assert!(at > l.find("--ro-bind /w/.git/hooks").unwrap(), "{l}");
    }

    #[test]
    fn tmp_is_the_servers_temp_dir_with_roots_and_cwd_under_it_bound_above() {
        let mut p = plan();
        p.writable = vec![PathBuf::from("/tmp/project")];
        p.protected.clear();
        p.cwd = PathBuf::from("/tmp/elsewhere");
        let l = line(&p, OPTS);
        let tmp = l
            .find("--bind /tmp/bash-mcp-tmp-x /tmp ")
            .expect("the server's temp dir at /tmp");
        assert!(!l.contains("--tmpfs /tmp"), "{l}");
        let cwd = l
            .find("--ro-bind /tmp/elsewhere /tmp/elsewhere")
            .expect("the cwd stays visible");
        let root = l
            .find("--bind /tmp/project /tmp/project")
            .expect("the root stays writable");
        assert!(tmp < cwd && cwd < root, "{l}");
        p.cwd = PathBuf::from("/tmp/project/sub");
        assert!(
            !line(&p, OPTS).contains("--ro-bind /tmp/project/sub"),
            "inside a root: no bind of its own"
        );
    }

    #[test]
    fn mounts_under_a_fresh_tmpfs_are_the_outermost_ones() {
        let mut p = plan();
        p.writable = vec![PathBuf::from("/tmp/w"), PathBuf::from("/srv")];
        p.protected = vec![Protected {
            path: PathBuf::from("/tmp/w/.git/hooks"),
            pinned_dirs: vec![PathBuf::from("/tmp/w/.git")],
        }];
        p.read_deny = vec![Protected {
            path: PathBuf::from("/dev/shm/secret"),
            pinned_dirs: vec![],
        }];
        p.cwd = PathBuf::from("/tmp/elsewhere");
        assert_eq!(
            mounts_under(&p, &Layout::default(), Path::new("/tmp")),
            [
                (PathBuf::from("/tmp/elsewhere"), false),
                (PathBuf::from("/tmp/w"), false)
            ]
        );
        assert_eq!(
            mounts_under(&p, &Layout::default(), Path::new("/dev/shm")),
            [(PathBuf::from("/dev/shm/secret"), false)]
        );
    }

    /// A layout of `/w` (the root, guarded: `.git` on the way down, `src`
    /// and `build` listed writable) and of `/w/.git` (`hooks` protected,
    /// `objects` listed writable), with `/w/sub` pinned.
    fn guarded_layout() -> Layout {
        use crate::sandbox::guard::{Kind, Mediated};
        let mediated = |dir: &str, entries: &[(&str, Kind)]| Mediated {
            dir: PathBuf::from(dir),
            id: (0, 0),
            entries: entries.iter().map(|(n, k)| (OsString::from(n), *k)).collect(),
        };
        Layout {
            mediated: vec![
                mediated(
                    "/w",
                    &[
                        (".git", Kind::Holds),
                        (".envrc", Kind::Protected),
                        ("build", Kind::WritableDir),
                        ("src", Kind::WritableDir),
                    ],
                ),
                mediated("/w/.git", &[("hooks", Kind::Protected), ("objects", Kind::WritableDir)]),
            ],
            pinned: vec![PathBuf::from("/w/sub")],
            hidden: Vec::new(),
        }
    }

    #[test]
    fn only_listed_writable_subdirectories_are_bound_if_present() {
        let mut p = plan();
        // `build` is a root of its own as well: it must be there.
        p.writable.push(PathBuf::from("/w/build"));
        let layout = guarded_layout();
        let l = display(&argv(
            Path::new("/usr/bin/bwrap"),
            &p,
            &layout,
            OPTS,
            &[c"true".to_owned()],
        ));
        for try_bind in ["--bind-try /w/src /w/src", "--bind-try /w/.git/objects /w/.git/objects"] {
            assert!(l.contains(try_bind), "{try_bind} missing in {l}");
        }
        for strict in [
            // The root is guarded: read-only, its subdirectories bound over it.
            "--ro-bind /w /w",
            "--bind /w/build /w/build",
            "--bind /w/sub /w/sub",
            "--ro-bind /w/.git /w/.git",
        ] {
            assert!(l.contains(strict), "{strict} missing in {l}");
        }
        assert_eq!(l.matches("--bind-try").count(), 2, "{l}");
        // A writable subdirectory is bound over its read-only parent.
        assert!(
            l.find("--ro-bind /w/.git /w/.git").unwrap() < l.find("--bind-try /w/.git/objects").unwrap(),
            "{l}"
        );
        let bound = bound_paths(&p, &layout);
        assert_eq!(
            bound.if_present,
            [PathBuf::from("/w/.git/objects"), PathBuf::from("/w/src")]
        );
        for strict in ["/w", "/w/build", "/w/sub", "/w/.git"] {
            assert!(bound.always.contains(&PathBuf::from(strict)), "{strict}: {bound:?}");
        }
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("bubblewrap 0.8.0\n"), Some((0, 8, 0)));
        assert_eq!(parse_version("bubblewrap 0.11"), Some((0, 11, 0)));
        assert_eq!(parse_version("nothing"), None);
    }
}
