//! The handler's part in guarded directories (see [`guard`]): the kernel
//! refuses a command every change to the entries of a mediated directory,
//! and the handler makes the changes a command may make itself, so that
//! git can take `index.lock` in a `.git` whose `commondir` nobody may create.
//!
//! Why this is sound although the command's memory is its own: the handler
//! reads the path once, decides on its own copy, and acts on that copy
//! through a directory it opened itself (found by device and inode when the
//! plan was made), walking down with `openat2` (`RESOLVE_BENEATH`, no
//! symbolic links): whatever the command changes in its memory afterwards
//! reaches nothing, because the kernel never runs its call. A call the
//! handler does not take over goes on into the kernel
//! (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`), which refuses anything in a
//! mediated directory whatever path the command's memory then names. An
//! opened file reaches the command through `SECCOMP_IOCTL_NOTIF_ADDFD`.
//!
//! [`guard`]: crate::sandbox::guard

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, CWD, FileType, Gid, Mode, OFlags, RenameFlags, ResolveFlags, Uid};

use super::calls::{Follows, PathArg};
use super::target::Target;
use crate::sandbox::guard::{Kind, Layout};

/// What the handler answers a call it looked at.
#[derive(Debug)]
pub enum Outcome {
    /// Into the kernel, which decides.
    Continue,
    /// Failed with this errno; `denied` when it was a protected path.
    Refuse { errno: i32, denied: Option<PathBuf> },
    /// Done by the handler, with this return value.
    Value(i64),
    /// Opened by the handler: the command gets this file.
    Fd { fd: OwnedFd, cloexec: bool },
}

/// A layout's mediated directories, each opened once by the handler.
#[derive(Debug)]
pub struct Mediator {
    layout: Layout,
    /// `fds[i]` is `layout.mediated[i]`, when it is still the directory
    /// the plan found (else the kernel decides everything in it: refused).
    fds: Vec<Option<OwnedFd>>,
    roots: Vec<PathBuf>,
    /// The errno of a refusal: the kernel's own for the backend (`EROFS`
    /// under bubblewrap's read-only mounts, `EACCES` under Landlock).
    refuse: i32,
}

/// Where one path argument leads.
enum Place {
    /// The kernel decides (not in a mediated directory, or inside one of
    /// its writable subdirectories).
    Kernel,
    /// A protected entry, or one on the way to a guarded directory.
    Refused,
    /// An entry the handler changes: its directory and name.
    At { parent: OwnedFd, name: CString },
}

impl Mediator {
    /// Opens the mediated directories of `layout` (in the handler thread,
    /// once per command). `roots` bound what a rename or link may bring in.
    pub fn new(layout: Layout, roots: Vec<PathBuf>, refuse: i32) -> Mediator {
        let fds = layout
            .mediated
            .iter()
            .map(|m| open_dir(CWD, &m.dir, ResolveFlags::NO_SYMLINKS).filter(|fd| identity(fd) == Some(m.id)))
            .collect();
        Mediator {
            layout,
            fds,
            roots,
            refuse,
        }
    }

    /// Sets the calling thread up to act for commands: its own umask (0;
    /// each command's is applied to the mode it asks for).
    pub fn prepare_thread() {
        // CLONE_FS gives this thread its own umask and working directory.
        let _ = crate::sandbox::process_calls::unshare(rustix::thread::UnshareFlags::FS);
        rustix::process::umask(Mode::empty());
    }

    /// Decides one notified call: `resolve` gives a path argument as the
    /// command sees it (absolute, `.` and `..` taken out).
    pub fn decide(
        &self,
        target: &Target<'_>,
        nr: i64,
        args: &[u64; 6],
        resolve: &dyn Fn(PathArg) -> Option<PathBuf>,
    ) -> Outcome {
        let Some(op) = Op::of(nr, args) else {
            return Outcome::Continue;
        };
        let mut paths = Vec::new();
        for arg in op.paths(nr) {
            match resolve(*arg) {
                Some(path) => paths.push(path),
                None => return Outcome::Continue,
            }
        }
        self.decide_op(target, op, &paths)
    }

    fn decide_op(&self, target: &Target<'_>, op: Op, paths: &[PathBuf]) -> Outcome {
        if !paths.iter().any(|p| self.layout.find(p).is_some()) {
            return Outcome::Continue;
        }
        if !target.still_valid() {
            return Outcome::Continue;
        }
        let places: Vec<Place> = paths.iter().map(|p| self.locate(p)).collect();
        if let Some(i) = places.iter().position(|p| matches!(p, Place::Refused)) {
            return Outcome::Refuse {
                errno: self.refuse,
                denied: Some(paths[i].clone()),
            };
        }
        match places.as_slice() {
            [Place::At { parent, name }] => at_one(target, op, parent, name),
            [from, to] => self.at_two(op, from, to, paths),
            _ => Outcome::Continue,
        }
    }

    /// A rename or a link between two places (`paths`' own), at least one of
    /// them mediated.
    fn at_two(&self, op: Op, from: &Place, to: &Place, paths: &[PathBuf]) -> Outcome {
        match op {
            Op::Rename { flags } => self.two(from, &paths[0], to, &paths[1], |a, b| {
                let flags = RenameFlags::from_bits_retain(flags);
                rustix::fs::renameat_with(a.0, a.1.as_c_str(), b.0, b.1.as_c_str(), flags)
            }),
            Op::Link { flags } if flags & !libc::AT_SYMLINK_FOLLOW == 0 => {
                if flags & libc::AT_SYMLINK_FOLLOW != 0 {
                    // Following a link is the kernel's to do (into a mediated
                    // directory, it refuses): the handler links no file it
                    // did not find by name.
                    return Outcome::Continue;
                }
                self.two(from, &paths[0], to, &paths[1], |a, b| {
                    rustix::fs::linkat(a.0, a.1.as_c_str(), b.0, b.1.as_c_str(), AtFlags::empty())
                })
            }
            _ => Outcome::Continue,
        }
    }

    /// A call with two paths, at least one of them in a mediated directory:
    /// the handler does it when the other one is inside a writable root
    /// too; else it is the kernel's (which refuses it).
    fn two(
        &self,
        from: &Place,
        from_path: &Path,
        to: &Place,
        to_path: &Path,
        call: impl FnOnce((&OwnedFd, &CString), (&OwnedFd, &CString)) -> rustix::io::Result<()>,
    ) -> Outcome {
        let side = |place: &Place, path: &Path| -> Option<(OwnedFd, CString)> {
            match place {
                Place::At { parent, name } => Some((dup(parent)?, name.clone())),
                _ => self.outside(path),
            }
        };
        // Within one writable subdirectory, the kernel's. Across two (each a
        // mount of its own under bubblewrap, where the kernel would say
        // EXDEV), the handler's, as between any two places in the roots.
        if matches!((from, to), (Place::Kernel, Place::Kernel)) && self.subtree(from_path) == self.subtree(to_path) {
            return Outcome::Continue;
        }
        let (Some(a), Some(b)) = (side(from, from_path), side(to, to_path)) else {
            return Outcome::Refuse {
                errno: libc::EXDEV,
                denied: None,
            };
        };
        done(call((&a.0, &a.1), (&b.0, &b.1)))
    }

    /// The mediated directory and the first name below it that `path` lies
    /// in (`None` outside every mediated directory).
    fn subtree(&self, path: &Path) -> Option<(PathBuf, OsString)> {
        let (m, rest) = self.layout.find(path)?;
        Some((m.dir.clone(), rest.iter().next()?.to_owned()))
    }

    /// The directory and name of `path` that no mediated directory decides
    /// on: only inside a writable root, not hidden, reached without links.
    fn outside(&self, path: &Path) -> Option<(OwnedFd, CString)> {
        if !self.roots.iter().any(|r| path.starts_with(r)) || self.layout.hidden.iter().any(|h| path.starts_with(h)) {
            return None;
        }
        let parent = open_dir(CWD, path.parent()?, ResolveFlags::NO_SYMLINKS)?;
        Some((parent, CString::new(path.file_name()?.as_bytes()).ok()?))
    }

    fn locate(&self, path: &Path) -> Place {
        let Some((m, rest)) = self.layout.find(path) else {
            return Place::Kernel;
        };
        let index = self
            .layout
            .mediated
            .iter()
            .position(|x| std::ptr::eq(x, m))
            .unwrap_or(0);
        let Some(dir) = self.fds.get(index).and_then(Option::as_ref) else {
            return Place::Kernel;
        };
        let mut names = rest.components().map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        });
        let Some(Some(first)) = names.next() else {
            return Place::Kernel;
        };
        let single = rest.components().count() == 1;
        match m.kind(first) {
            Some(Kind::Protected) => return Place::Refused,
            Some(Kind::Holds) if single => return Place::Refused,
            // Below a writable subdirectory, or below a directory on the way
            // to a deeper guarded one that is not mediated itself (under
            // bubblewrap, a mount point of its own: a repository in a
            // subdirectory of the root), the kernel decides.
            Some(Kind::WritableDir | Kind::Holds) if !single => return Place::Kernel,
            _ => {}
        }
        let Some(name) = rest.file_name().and_then(|n| CString::new(n.as_bytes()).ok()) else {
            return Place::Kernel;
        };
        let parent = if single {
            dup(dir)
        } else {
            let below = rest.parent().unwrap_or(Path::new(""));
            open_dir(
                dir,
                below,
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_XDEV,
            )
        };
        match parent {
            Some(parent) => Place::At { parent, name },
            // A link or a mount on the way, or nothing there: the kernel's.
            None => Place::Kernel,
        }
    }
}

/// One notified call, as the handler does it.
#[derive(Debug, Clone, Copy)]
enum Op {
    Open {
        flags: i32,
        mode: libc::mode_t,
    },
    MakeDir {
        mode: libc::mode_t,
    },
    MakeNode {
        mode: libc::mode_t,
        dev: libc::dev_t,
    },
    Remove {
        flags: i32,
    },
    Rename {
        flags: u32,
    },
    Link {
        flags: i32,
    },
    Symlink {
        target: u64,
    },
    Truncate {
        len: libc::off_t,
    },
    Chmod {
        mode: libc::mode_t,
    },
    Chown {
        uid: libc::uid_t,
        gid: libc::gid_t,
        flags: i32,
    },
}

impl Op {
    /// The path arguments of call `nr`, in the order the operation takes
    /// them (a link's target is text, not a path).
    fn paths(self, nr: i64) -> &'static [PathArg] {
        /// The path as written: the handler resolves no link in it.
        const fn arg(dirfd: Option<u8>, path: u8) -> PathArg {
            PathArg {
                dirfd,
                path,
                follows: Follows::No,
            }
        }
        const CWD0: PathArg = arg(None, 0);
        const CWD1: PathArg = arg(None, 1);
        const AT01: PathArg = arg(Some(0), 1);
        const AT12: PathArg = arg(Some(1), 2);
        const AT23: PathArg = arg(Some(2), 3);
        match nr {
            #[cfg(target_arch = "x86_64")]
            libc::SYS_rename | libc::SYS_link => &[CWD0, CWD1],
            #[cfg(target_arch = "x86_64")]
            libc::SYS_symlink => &[CWD1],
            #[cfg(target_arch = "x86_64")]
            libc::SYS_open
            | libc::SYS_creat
            | libc::SYS_mkdir
            | libc::SYS_mknod
            | libc::SYS_unlink
            | libc::SYS_rmdir
            | libc::SYS_chmod
            | libc::SYS_chown
            | libc::SYS_lchown => &[CWD0],
            libc::SYS_truncate => &[CWD0],
            #[cfg(target_arch = "x86_64")]
            libc::SYS_renameat => &[AT01, AT23],
            libc::SYS_renameat2 | libc::SYS_linkat => &[AT01, AT23],
            libc::SYS_symlinkat => &[AT12],
            _ => &[AT01],
        }
    }

    /// The operation of call `nr` with `args` (`openat2` is decided by the
    /// caller, which reads its `open_how`).
    fn of(nr: i64, args: &[u64; 6]) -> Option<Op> {
        let int = |i: usize| args[i] as i32;
        let mode = |i: usize| args[i] as libc::mode_t;
        Some(match nr {
            #[cfg(target_arch = "x86_64")]
            libc::SYS_open => Op::Open {
                flags: int(1),
                mode: mode(2),
            },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_creat => Op::Open {
                flags: libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
                mode: mode(1),
            },
            libc::SYS_openat => Op::Open {
                flags: int(2),
                mode: mode(3),
            },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_mkdir => Op::MakeDir { mode: mode(1) },
            libc::SYS_mkdirat => Op::MakeDir { mode: mode(2) },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_mknod => Op::MakeNode {
                mode: mode(1),
                dev: args[2] as libc::dev_t,
            },
            libc::SYS_mknodat => Op::MakeNode {
                mode: mode(2),
                dev: args[3] as libc::dev_t,
            },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_unlink => Op::Remove { flags: 0 },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_rmdir => Op::Remove {
                flags: libc::AT_REMOVEDIR,
            },
            libc::SYS_unlinkat => Op::Remove {
                flags: int(2) & libc::AT_REMOVEDIR,
            },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_rename | libc::SYS_renameat => Op::Rename { flags: 0 },
            libc::SYS_renameat2 => Op::Rename { flags: args[4] as u32 },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_link => Op::Link { flags: 0 },
            libc::SYS_linkat => Op::Link { flags: int(4) },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_symlink => Op::Symlink { target: args[0] },
            libc::SYS_symlinkat => Op::Symlink { target: args[0] },
            libc::SYS_truncate => Op::Truncate {
                len: args[1] as libc::off_t,
            },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_chmod => Op::Chmod { mode: mode(1) },
            libc::SYS_fchmodat => Op::Chmod { mode: mode(2) },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_chown => Op::Chown {
                uid: args[1] as libc::uid_t,
                gid: args[2] as libc::gid_t,
                flags: 0,
            },
            #[cfg(target_arch = "x86_64")]
            libc::SYS_lchown => Op::Chown {
                uid: args[1] as libc::uid_t,
                gid: args[2] as libc::gid_t,
                flags: libc::AT_SYMLINK_NOFOLLOW,
            },
            libc::SYS_fchownat => Op::Chown {
                uid: args[2] as libc::uid_t,
                gid: args[3] as libc::gid_t,
                flags: int(4) & libc::AT_SYMLINK_NOFOLLOW,
            },
            _ => return None,
        })
    }
}

/// `openat2`'s operation, from its `open_how` (flags, mode, resolve): one
/// with `resolve` flags is left to the kernel.
pub fn openat2_op(how: &[u8]) -> Option<(i32, libc::mode_t)> {
    let word = |i: usize| -> Option<u64> { Some(u64::from_ne_bytes(how.get(i * 8..i * 8 + 8)?.try_into().ok()?)) };
    let (flags, mode, resolve) = (word(0)?, word(1)?, word(2)?);
    (resolve == 0).then_some((flags as i32, mode as libc::mode_t))
}

impl Mediator {
    /// Decides an `openat2` at `path`, its `open_how` read by the caller.
    pub fn decide_openat2(&self, target: &Target<'_>, flags: i32, mode: libc::mode_t, path: PathBuf) -> Outcome {
        self.decide_op(target, Op::Open { flags, mode }, &[path])
    }
}

/// A call on one name `name` of the mediated directory `parent`, done by the
/// handler on the target's behalf.
fn at_one(target: &Target<'_>, op: Op, parent: &OwnedFd, name: &CString) -> Outcome {
    match op {
        Op::Open { flags, mode } => open(target, parent, name, flags, mode),
        Op::MakeDir { mode } => {
            let mode = mode & !umask(target) & 0o7777;
            done(rustix::fs::mkdirat(parent, name.as_c_str(), Mode::from_raw_mode(mode)))
        }
        Op::MakeNode { mode, dev } => make_node(target, parent, name, mode, dev),
        Op::Remove { flags } => done(rustix::fs::unlinkat(
            parent,
            name.as_c_str(),
            AtFlags::from_bits_retain(flags as u32),
        )),
        Op::Symlink { target: link_target } => {
            let Some(text) = target.string(link_target).and_then(|t| CString::new(t.into_vec()).ok()) else {
                return Outcome::Continue;
            };
            done(rustix::fs::symlinkat(text.as_c_str(), parent, name.as_c_str()))
        }
        Op::Truncate { len } => truncate(parent, name, len),
        Op::Chmod { mode } => chmod(parent, name, mode),
        Op::Chown { uid, gid, flags } => chown(parent, name, uid, gid, flags),
        _ => Outcome::Continue,
    }
}

/// mknod, with the target's umask; a type of zero is a regular file.
fn make_node(target: &Target<'_>, parent: &OwnedFd, name: &CString, mode: libc::mode_t, dev: libc::dev_t) -> Outcome {
    let mode = (mode & libc::S_IFMT) | (mode & !umask(target) & 0o7777);
    // A type of zero is a regular file, as for the kernel.
    let kind = match mode & libc::S_IFMT {
        0 => FileType::RegularFile,
        bits => FileType::from_raw_mode(bits),
    };
    done(rustix::fs::mknodat(
        parent,
        name.as_c_str(),
        kind,
        Mode::from_raw_mode(mode),
        dev,
    ))
}

/// truncate, of no link: a link is the kernel's to follow.
fn truncate(parent: &OwnedFd, name: &CString, len: libc::off_t) -> Outcome {
    if is_symlink(parent, name) {
        return Outcome::Continue;
    }
    let flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(parent, name.as_c_str(), flags, Mode::empty()) {
        // A negative length reaches the kernel as it was asked
        // (which refuses it).
        Ok(fd) => done(rustix::fs::ftruncate(&fd, len as u64)),
        Err(e) => refuse(e),
    }
}

/// chmod, on the very file found, not on a link put in its place since.
fn chmod(parent: &OwnedFd, name: &CString, mode: libc::mode_t) -> Outcome {
    let file = match open_unfollowed(parent, name) {
        Ok(file) => file,
        Err(e) => return refuse(e),
    };
    if file.symlink {
        return Outcome::Continue;
    }
    let path = proc_fd_path(&file.fd);
    done(rustix::fs::chmod(path.as_c_str(), Mode::from_raw_mode(mode)))
}

/// chown, or lchown with `AT_SYMLINK_NOFOLLOW`, on the very file found.
fn chown(parent: &OwnedFd, name: &CString, uid: libc::uid_t, gid: libc::gid_t, flags: i32) -> Outcome {
    let file = match open_unfollowed(parent, name) {
        Ok(file) => file,
        Err(e) => return refuse(e),
    };
    if file.symlink && flags & libc::AT_SYMLINK_NOFOLLOW == 0 {
        return Outcome::Continue;
    }
    // -1 leaves the owner or the group as it is.
    let uid = (uid != u32::MAX).then(|| Uid::from_raw(uid));
    let gid = (gid != u32::MAX).then(|| Gid::from_raw(gid));
    done(rustix::fs::chownat(&file.fd, c"", uid, gid, AtFlags::EMPTY_PATH))
}

fn open(target: &Target<'_>, parent: &OwnedFd, name: &CString, flags: i32, mode: libc::mode_t) -> Outcome {
    // A link is followed by the kernel, which decides where it leads.
    if flags & libc::O_NOFOLLOW == 0
        && flags & (libc::O_CREAT | libc::O_EXCL) != libc::O_CREAT | libc::O_EXCL
        && is_symlink(parent, name)
    {
        return Outcome::Continue;
    }
    let mode = if flags & libc::O_CREAT != 0 || flags & libc::O_TMPFILE == libc::O_TMPFILE {
        mode & !umask(target) & 0o7777
    } else {
        0
    };
    let opened = rustix::fs::openat(
        parent,
        name.as_c_str(),
        OFlags::from_bits_retain(flags as u32) | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    );
    match opened {
        Ok(fd) => Outcome::Fd {
            fd,
            cloexec: flags & libc::O_CLOEXEC != 0,
        },
        Err(e) => refuse(e),
    }
}

/// `path` opened as a directory (`O_PATH`) from `dir`, with `resolve`.
fn open_dir(dir: impl AsFd, path: &Path, resolve: ResolveFlags) -> Option<OwnedFd> {
    let path = if path.as_os_str().is_empty() {
        OsStr::new(".")
    } else {
        path.as_os_str()
    };
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    rustix::fs::openat2(dir, path, flags, Mode::empty(), resolve | ResolveFlags::NO_MAGICLINKS).ok()
}

/// An entry opened `O_PATH` without following it.
struct Unfollowed {
    fd: OwnedFd,
    symlink: bool,
}

fn open_unfollowed(parent: &OwnedFd, name: &CString) -> rustix::io::Result<Unfollowed> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(parent, name.as_c_str(), flags, Mode::empty())?;
    let st = rustix::fs::fstat(&fd)?;
    Ok(Unfollowed {
        fd,
        symlink: FileType::from_raw_mode(st.st_mode) == FileType::Symlink,
    })
}

/// `/proc/self/fd/<fd>`: a path to exactly the file `fd` holds.
fn proc_fd_path(fd: &OwnedFd) -> CString {
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL in a number")
}

fn dup(fd: &OwnedFd) -> Option<OwnedFd> {
    fd.try_clone().ok()
}

fn identity(fd: &OwnedFd) -> Option<(u64, u64)> {
    let st = rustix::fs::fstat(fd).ok()?;
    Some((st.st_dev, st.st_ino))
}

fn is_symlink(parent: &OwnedFd, name: &CString) -> bool {
    rustix::fs::statat(parent, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
}

/// The command's umask (from `/proc/<pid>/status`; 022 if unreadable).
fn umask(target: &Target<'_>) -> libc::mode_t {
    std::fs::read_to_string(format!("/proc/{}/status", target.pid))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| libc::mode_t::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// A call done for the command: its value 0, or its errno.
fn done(result: rustix::io::Result<()>) -> Outcome {
    match result {
        Ok(()) => Outcome::Value(0),
        Err(e) => refuse(e),
    }
}

fn refuse(e: rustix::io::Errno) -> Outcome {
    Outcome::Refuse {
        errno: e.raw_os_error(),
        denied: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openat2_with_resolve_flags_is_the_kernels() {
        let how = |flags: u64, mode: u64, resolve: u64| -> Vec<u8> {
            [flags, mode, resolve].iter().flat_map(|w| w.to_ne_bytes()).collect()
        };
        assert_eq!(
            openat2_op(&how(libc::O_CREAT as u64, 0o644, 0)),
            Some((libc::O_CREAT, 0o644))
        );
        assert_eq!(
            openat2_op(&how(libc::O_CREAT as u64, 0o644, libc::RESOLVE_BENEATH)),
            None
        );
    }
}
