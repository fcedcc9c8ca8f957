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
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

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
            .map(|m| {
                open_dir(libc::AT_FDCWD, &m.dir, libc::RESOLVE_NO_SYMLINKS)
                    .filter(|fd| identity(fd.as_raw_fd()) == Some(m.id))
            })
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
        // SAFETY: unshare(CLONE_FS) gives this thread its own umask and
        // working directory; umask takes a plain integer.
        unsafe {
            libc::unshare(libc::CLONE_FS);
            libc::umask(0);
        }
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
        match (Some(op), places.as_slice()) {
            (Some(Op::Open { flags, mode }), [Place::At { parent, name }]) => open(target, parent, name, flags, mode),
            (Some(Op::MakeDir { mode }), [Place::At { parent, name }]) => {
                let mode = mode & !umask(target) & 0o7777;
                // SAFETY: mkdirat with our own fd and a NUL-terminated name.
                value(unsafe { libc::mkdirat(parent.as_raw_fd(), name.as_ptr(), mode) })
            }
            (Some(Op::MakeNode { mode, dev }), [Place::At { parent, name }]) => {
                let mode = (mode & libc::S_IFMT) | (mode & !umask(target) & 0o7777);
                // SAFETY: mknodat with our own fd and a NUL-terminated name.
                value(unsafe { libc::mknodat(parent.as_raw_fd(), name.as_ptr(), mode, dev) })
            }
            (Some(Op::Remove { flags }), [Place::At { parent, name }]) => {
                // SAFETY: unlinkat with our own fd and a NUL-terminated name.
                value(unsafe { libc::unlinkat(parent.as_raw_fd(), name.as_ptr(), flags) })
            }
            (Some(Op::Symlink { target: link_target }), [Place::At { parent, name }]) => {
                let Some(text) = target.string(link_target).and_then(|t| CString::new(t.into_vec()).ok()) else {
                    return Outcome::Continue;
                };
                // SAFETY: symlinkat with NUL-terminated strings and our own fd.
                value(unsafe { libc::symlinkat(text.as_ptr(), parent.as_raw_fd(), name.as_ptr()) })
            }
            (Some(Op::Truncate { len }), [Place::At { parent, name }]) => {
                if is_symlink(parent, name) {
                    return Outcome::Continue;
                }
                // SAFETY: openat with our own fd and a NUL-terminated name.
                let fd = unsafe {
                    libc::openat(
                        parent.as_raw_fd(),
                        name.as_ptr(),
                        libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                    )
                };
                if fd < 0 {
                    return errno_outcome();
                }
                // SAFETY: the fd was just opened and is ours.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                // SAFETY: ftruncate on our own fd.
                value(unsafe { libc::ftruncate(fd.as_raw_fd(), len) })
            }
            (Some(Op::Chmod { mode }), [Place::At { parent, name }]) => {
                // On the very file found, not on a link put in its place since.
                let Some(file) = open_unfollowed(parent, name) else {
                    return errno_outcome();
                };
                if file.symlink {
                    return Outcome::Continue;
                }
                let path = proc_fd_path(&file.fd);
                // SAFETY: chmod through our own fd's /proc entry (a NUL-terminated path).
                value(unsafe { libc::chmod(path.as_ptr(), mode) })
            }
            (Some(Op::Chown { uid, gid, flags }), [Place::At { parent, name }]) => {
                let Some(file) = open_unfollowed(parent, name) else {
                    return errno_outcome();
                };
                if file.symlink && flags & libc::AT_SYMLINK_NOFOLLOW == 0 {
                    return Outcome::Continue;
                }
                // SAFETY: fchownat on our own O_PATH fd with an empty path.
                value(unsafe { libc::fchownat(file.fd.as_raw_fd(), c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH) })
            }
            (Some(Op::Rename { flags }), [from, to]) => self.two(from, &paths[0], to, &paths[1], |a, b| {
                // SAFETY: renameat2 with our own fds and NUL-terminated names.
                unsafe {
                    libc::syscall(
                        libc::SYS_renameat2,
                        a.0.as_raw_fd(),
                        a.1.as_ptr(),
                        b.0.as_raw_fd(),
                        b.1.as_ptr(),
                        flags,
                    ) as libc::c_int
                }
            }),
            (Some(Op::Link { flags }), [from, to]) if flags & !libc::AT_SYMLINK_FOLLOW == 0 => {
                if flags & libc::AT_SYMLINK_FOLLOW != 0 {
                    // Following a link is the kernel's to do (into a mediated
                    // directory, it refuses): the handler links no file it
                    // did not find by name.
                    return Outcome::Continue;
                }
                self.two(from, &paths[0], to, &paths[1], |a, b| {
                    // SAFETY: linkat with our own fds and NUL-terminated names.
                    unsafe { libc::linkat(a.0.as_raw_fd(), a.1.as_ptr(), b.0.as_raw_fd(), b.1.as_ptr(), 0) }
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
        call: impl FnOnce((&OwnedFd, &CString), (&OwnedFd, &CString)) -> libc::c_int,
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
        value(call((&a.0, &a.1), (&b.0, &b.1)))
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
        let parent = open_dir(libc::AT_FDCWD, path.parent()?, libc::RESOLVE_NO_SYMLINKS)?;
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
                dir.as_raw_fd(),
                below,
                libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_XDEV,
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
    // SAFETY: openat with our own fd and a NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            parent.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode,
        )
    };
    if fd < 0 {
        return errno_outcome();
    }
    Outcome::Fd {
        // SAFETY: the fd was just opened and is ours.
        fd: unsafe { OwnedFd::from_raw_fd(fd) },
        cloexec: flags & libc::O_CLOEXEC != 0,
    }
}

/// `path` opened as a directory (`O_PATH`) from `dir`, with `resolve`.
fn open_dir(dir: RawFd, path: &Path, resolve: u64) -> Option<OwnedFd> {
    let path = if path.as_os_str().is_empty() {
        OsStr::new(".")
    } else {
        path.as_os_str()
    };
    let path = CString::new(path.as_bytes()).ok()?;
    /// `struct open_how` (linux/openat2.h).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOFOLLOW) as u64,
        mode: 0,
        resolve: resolve | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: openat2 reads `how` (of the size given) and the path.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    // SAFETY: a non-negative result is a fresh fd that is ours.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// An entry opened `O_PATH` without following it.
struct Unfollowed {
    fd: OwnedFd,
    symlink: bool,
}

fn open_unfollowed(parent: &OwnedFd, name: &CString) -> Option<Unfollowed> {
    // SAFETY: openat with our own fd and a NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            parent.as_raw_fd(),
            name.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: the fd was just opened and is ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: stat is plain data; fstat writes one we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on our own fd.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    Some(Unfollowed {
        fd,
        symlink: st.st_mode & libc::S_IFMT == libc::S_IFLNK,
    })
}

/// `/proc/self/fd/<fd>`: a path to exactly the file `fd` holds.
fn proc_fd_path(fd: &OwnedFd) -> CString {
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL in a number")
}

fn dup(fd: &OwnedFd) -> Option<OwnedFd> {
    fd.try_clone().ok()
}

fn identity(fd: RawFd) -> Option<(u64, u64)> {
    // SAFETY: stat is plain data; fstat writes one we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on an fd we hold.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

fn is_symlink(parent: &OwnedFd, name: &CString) -> bool {
    // SAFETY: stat is plain data; fstatat writes one we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat with our own fd and a NUL-terminated name.
    let rc = unsafe { libc::fstatat(parent.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    rc == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
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

fn value(rc: libc::c_int) -> Outcome {
    if rc < 0 {
        errno_outcome()
    } else {
        Outcome::Value(rc as i64)
    }
}

fn errno_outcome() -> Outcome {
    Outcome::Refuse {
        errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO),
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
