//! Files the server itself keeps in directories a sandboxed command may be
//! able to write (the temp dir, a session's private dir, an audit log
//! inside a writable root), reached so that nothing such a command planted
//! there can redirect them.
//!
//! A [`Dir`] is a directory held open. Every file in it is named by one
//! path component and reached with `openat`/`renameat`/`unlinkat` relative
//! to that descriptor, never by a path string: a directory renamed or
//! replaced after it was opened changes nothing, no name is followed if it
//! is a symbolic link (`O_NOFOLLOW`), a new file is created exclusively
//! (`O_CREAT | O_EXCL`, so a name planted first makes the creation fail),
//! and an existing file that is not a regular file (a fifo, a socket, a
//! device) is refused without blocking on it (`O_NONBLOCK`). A file another
//! name also points at (a hard link) is refused where the server appends.
//!
//! The directory itself is opened once, with `O_NOFOLLOW` on its last
//! component, and must belong to this user.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, Mode, OFlags};
use rustix::io::retry_on_intr;

/// A directory held open; every file operation in it goes through the
/// descriptor.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// What `fstatat` says about one name, without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
}

/// Size and identity of a regular file.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub identity: Identity,
    pub len: u64,
    pub kind: Kind,
}

/// The type of a file, as far as the server cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Regular,
    Directory,
    Symlink,
    /// A fifo, socket or device.
    Other,
}

impl Kind {
    fn of(mode: libc::mode_t) -> Self {
        match mode & libc::S_IFMT {
            libc::S_IFREG => Kind::Regular,
            libc::S_IFDIR => Kind::Directory,
            libc::S_IFLNK => Kind::Symlink,
            _ => Kind::Other,
        }
    }

    fn describe(mode: libc::mode_t) -> &'static str {
        match mode & libc::S_IFMT {
            libc::S_IFREG => "a regular file",
            libc::S_IFDIR => "a directory",
            libc::S_IFLNK => "a symbolic link",
            libc::S_IFIFO => "a fifo",
            libc::S_IFSOCK => "a socket",
            libc::S_IFCHR => "a character device",
            libc::S_IFBLK => "a block device",
            _ => "a file of unknown type",
        }
    }
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path contains a NUL byte"))
}

/// `name` as one path component: no `/`, not empty, `.` or `..`.
fn component(name: &OsStr) -> io::Result<CString> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a single file name"),
        ));
    }
    cstring(bytes)
}

fn fstat(fd: impl AsFd) -> io::Result<rustix::fs::Stat> {
    Ok(rustix::fs::fstat(fd)?)
}

fn euid() -> libc::uid_t {
    rustix::process::geteuid().as_raw()
}

/// Opens `name` relative to `dir` (or `AT_FDCWD` for a whole path) as a
/// directory, not following a symbolic link there.
fn open_dir_at(dir: impl AsFd, name: &CString) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(retry_on_intr(|| {
        rustix::fs::openat(&dir, name.as_c_str(), flags, Mode::empty())
    })?)
}

impl Dir {
    /// Opens the directory at `path`, whose last component must not be a
    /// symbolic link.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let c = cstring(path.as_os_str().as_bytes())?;
        let fd = open_dir_at(CWD, &c).map_err(|e| explain_open(path, e))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// Creates `path` and the directories missing above it (with `mode`),
    /// then opens it as [`Dir::open`] does. The part that exists is reached
    /// by its path; every directory made is made and entered relative to
    /// the one above it, never through a link.
    pub fn create_all(path: &Path, mode: libc::mode_t) -> io::Result<Dir> {
        let mut missing = Vec::new();
        let mut existing = path;
        while let Err(e) = std::fs::symlink_metadata(existing) {
            if e.kind() != io::ErrorKind::NotFound {
                return Err(e);
            }
            let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                return Err(e);
            };
            missing.push(name);
            existing = parent;
        }
        let mut dir = Dir::open(if existing.as_os_str().is_empty() {
            Path::new(".")
        } else {
            existing
        })?;
        for name in missing.into_iter().rev() {
            dir = match dir.make_dir(name, mode) {
                Ok(made) => made,
                // Made by another process meanwhile: enter it all the same.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => dir.open_dir(name)?,
                Err(e) => return Err(e),
            };
        }
        Ok(dir)
    }

    /// Makes a new private directory `name` in `parent` (mode 0700, created
    /// exclusively: a name that exists already is an error), and opens it.
    pub fn create_private(parent: &Path, name: &OsStr) -> io::Result<Dir> {
        let c = cstring(parent.as_os_str().as_bytes())?;
        // The parent (the temp dir, /dev/shm) is the host's: its path is
        // followed as the system resolves it.
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = retry_on_intr(|| rustix::fs::openat(CWD, c.as_c_str(), flags, Mode::empty())).map_err(|e| {
            io::Error::new(
                io::Error::from(e).kind(),
                format!("cannot open {}: {e}", parent.display()),
            )
        })?;
        let parent = Dir {
            fd,
            path: parent.to_path_buf(),
        };
        let dir = parent.make_dir(name, 0o700)?;
        // The mode the umask may have narrowed, exactly.
        rustix::fs::fchmod(&dir.fd, Mode::from_raw_mode(0o700))?;
        Ok(dir)
    }

    /// Makes the directory `name` in this one (exclusively) and opens it.
    fn make_dir(&self, name: &OsStr, mode: libc::mode_t) -> io::Result<Dir> {
        let c = component(name)?;
        // mkdirat does not follow a link at the last component.
        retry_on_intr(|| rustix::fs::mkdirat(&self.fd, c.as_c_str(), Mode::from_raw_mode(mode))).map_err(|e| {
            io::Error::new(
                io::Error::from(e).kind(),
                format!("cannot create {}: {e}", self.path.join(name).display()),
            )
        })?;
        self.open_dir(name)
    }

    /// Opens the directory `name` in this one, not through a link.
    fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let c = component(name)?;
        let path = self.path.join(name);
        let fd = open_dir_at(&self.fd, &c).map_err(|e| explain_open(&path, e))?;
        let dir = Dir { fd, path };
        dir.check_owner()?;
        Ok(dir)
    }

    fn check_owner(&self) -> io::Result<()> {
        let st = fstat(&self.fd)?;
        let me = euid();
        if st.st_uid != me {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} belongs to uid {}, not to this user (uid {me}); remove it or give it to this user",
                    self.path.display(),
                    st.st_uid
                ),
            ));
        }
        Ok(())
    }

    /// Fails unless the directory is this user's and no one else may
    /// enter it (no access for group or others), as the held descriptor
    /// says.
    pub fn check_private(&self) -> io::Result<()> {
        self.check_owner()?;
        let st = fstat(&self.fd)?;
        if st.st_mode & 0o077 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is open to other users (mode {:o}); it must have mode 0700: remove it or chmod 700 it",
                    self.path.display(),
                    st.st_mode & 0o7777
                ),
            ));
        }
        Ok(())
    }

    /// A path that reaches `name` in this directory through the held
    /// descriptor (`/proc/self/fd/<fd>/<name>`), for a call that takes
    /// only a path, such as binding a Unix socket: a directory swapped for
    /// another or for a link after it was opened changes nothing, and a
    /// call that creates `name` does not follow a link planted there.
    pub fn fd_path(&self, name: &OsStr) -> io::Result<PathBuf> {
        component(name)?;
        Ok(PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd())).join(name))
    }

    /// Whether the directory was removed since it was opened.
    pub fn is_removed(&self) -> bool {
        fstat(&self.fd).is_ok_and(|st| st.st_nlink == 0)
    }

    /// The path the directory was opened at (for messages; it may have
    /// moved since).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the new file `name` (mode `mode`), open for reading and
    /// writing; fails if the name exists in any form.
    pub fn create_file(&self, name: &OsStr, mode: libc::mode_t) -> io::Result<File> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        self.open_at(name, flags, mode)
    }

    /// Opens the existing regular file `name` for reading.
    pub fn open_read(&self, name: &OsStr) -> io::Result<File> {
        let file = self.open_at(name, OFlags::RDONLY | NOT_THROUGH, 0)?;
        self.check_kind(name, &file, Accept::Regular)?;
        Ok(file)
    }

    /// Opens the existing regular file `name` for reading and writing.
    pub fn open_write(&self, name: &OsStr) -> io::Result<File> {
        let file = self.open_at(name, OFlags::RDWR | NOT_THROUGH, 0)?;
        self.check_kind(name, &file, Accept::Regular)?;
        Ok(file)
    }

    /// Opens `name` for appending, creating it (mode `mode`) if it does not
    /// exist. It must be a regular file with no other name, or a character
    /// device (`/dev/null`, `/dev/full`: no sandboxed command can make one).
    pub fn open_append(&self, name: &OsStr, mode: libc::mode_t) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | NOT_THROUGH;
        let file = self.open_at(name, flags, mode)?;
        self.check_kind(name, &file, Accept::SingleRegularOrCharDevice)?;
        Ok(file)
    }

    fn open_at(&self, name: &OsStr, flags: OFlags, mode: libc::mode_t) -> io::Result<File> {
        let c = component(name)?;
        let fd = retry_on_intr(|| rustix::fs::openat(&self.fd, c.as_c_str(), flags, Mode::from_raw_mode(mode)))
            .map_err(|e| explain_open(&self.path.join(name), e.into()))?;
        Ok(File::from(fd))
    }

    fn check_kind(&self, name: &OsStr, file: &File, accept: Accept) -> io::Result<()> {
        let st = fstat(file)?;
        let path = self.path.join(name);
        let single = accept == Accept::SingleRegularOrCharDevice;
        if single && st.st_mode & libc::S_IFMT == libc::S_IFCHR {
            return Ok(());
        }
        if Kind::of(st.st_mode) != Kind::Regular {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} is {}, not a regular file: something other than this server put it there, so it is not used",
                    path.display(),
                    Kind::describe(st.st_mode)
                ),
            ));
        }
        if single && st.st_nlink > 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} has {} names (hard links): another file may be written through it, so it is not used; remove the extra names",
                    path.display(),
                    st.st_nlink
                ),
            ));
        }
        Ok(())
    }

    /// What `name` is, without following it.
    pub fn stat(&self, name: &OsStr) -> io::Result<Stat> {
        let c = component(name)?;
        let st = retry_on_intr(|| rustix::fs::statat(&self.fd, c.as_c_str(), AtFlags::SYMLINK_NOFOLLOW))?;
        Ok(stat_of(&st))
    }

    /// Renames `from` to `to` within this directory (replacing `to`).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (f, t) = (component(from)?, component(to)?);
        // renameat follows no link at either name.
        retry_on_intr(|| rustix::fs::renameat(&self.fd, f.as_c_str(), &self.fd, t.as_c_str()))?;
        Ok(())
    }

    /// Removes the file (or empty directory, with `dir`) `name`.
    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        let c = component(name)?;
        // unlinkat removes the name itself, never what a link points at.
        retry_on_intr(|| rustix::fs::unlinkat(&self.fd, c.as_c_str(), AtFlags::empty()))?;
        Ok(())
    }

    /// Removes the directory and everything in it, by its path, without
    /// following links (the standard library's `remove_dir_all` works
    /// through descriptors and removes a link, not what it points at).
    pub fn remove_all(&self) -> io::Result<()> {
        std::fs::remove_dir_all(&self.path)
    }
}

/// What an open of an existing name accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Accept {
    Regular,
    /// A regular file with one name, or a character device.
    SingleRegularOrCharDevice,
}

/// `O_NOFOLLOW`, and `O_NONBLOCK` so that a fifo planted in place of a file
/// cannot hold the open.
const NOT_THROUGH: OFlags = OFlags::NOFOLLOW
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);

fn stat_of(st: &rustix::fs::Stat) -> Stat {
    Stat {
        identity: Identity {
            dev: st.st_dev,
            ino: st.st_ino,
        },
        len: st.st_size as u64,
        kind: Kind::of(st.st_mode),
    }
}

/// The identity and size of an open file.
pub fn stat_file(file: &File) -> io::Result<Stat> {
    Ok(stat_of(&fstat(file)?))
}

/// A failed open, worded for a person: `ELOOP` from `O_NOFOLLOW` means a link
/// was found where the server's own file should be.
fn explain_open(path: &Path, e: io::Error) -> io::Error {
    // `O_DIRECTORY | O_NOFOLLOW` on a link fails with ENOTDIR.
    let link = match e.raw_os_error() {
        Some(libc::ELOOP) => true,
        Some(libc::ENOTDIR) => std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()),
        _ => false,
    };
    if link {
        return io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is a symbolic link where this server keeps a file or directory of its own; it does not follow it (remove the link)",
                path.display()
            ),
        );
    }
    if e.raw_os_error() == Some(libc::ENXIO) {
        return io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is a socket or a fifo with no reader, not a regular file; it is not used",
                path.display()
            ),
        );
    }
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_socket_bound_through_the_held_directory_lands_there_whatever_replaced_its_path() {
        let base = scratch();
        let held = base.join("sockets");
        std::fs::create_dir(&held).unwrap();
        std::fs::set_permissions(&held, std::fs::Permissions::from_mode(0o700)).unwrap();
        let dir = Dir::open(&held).unwrap();
        dir.check_private().unwrap();
        // The path now names another directory; the held one moved away.
        let moved = base.join("moved");
        std::fs::rename(&held, &moved).unwrap();
        let elsewhere = base.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &held).unwrap();
        let name = OsStr::new("s.sock");
        let listener = std::os::unix::net::UnixListener::bind(dir.fd_path(name).unwrap()).unwrap();
        assert!(moved.join("s.sock").exists() && !elsewhere.join("s.sock").exists());
        drop(listener);
        // A link planted at the name is not followed: the bind fails.
        dir.remove(name).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("t.sock"), moved.join("s.sock")).unwrap();
        assert!(std::os::unix::net::UnixListener::bind(dir.fd_path(name).unwrap()).is_err());
        assert!(!elsewhere.join("t.sock").exists());
        // A directory others may enter is refused.
        std::fs::set_permissions(&moved, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(dir.check_private().is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }

    fn scratch() -> PathBuf {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("bash-mcp-dirfd-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        dir
    }

    #[test]
    fn files_are_created_exclusively_and_links_are_not_followed() {
        let base = scratch();
        let dir = Dir::create_private(&base, OsStr::new("private")).unwrap();
        assert_eq!(
            std::fs::metadata(base.join("private")).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let target = base.join("target");
        std::fs::write(&target, "untouched").unwrap();
        std::os::unix::fs::symlink(&target, base.join("private/link")).unwrap();
        let e = dir.create_file(OsStr::new("link"), 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
        let e = dir.open_read(OsStr::new("link")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = dir.open_append(OsStr::new("link"), 0o600).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        let mut file = dir.create_file(OsStr::new("mine"), 0o600).unwrap();
        file.write_all(b"ours").unwrap();
        let mut text = String::new();
        dir.open_read(OsStr::new("mine"))
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "ours");
        dir.remove_all().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_fifo_socket_or_hard_link_is_refused_without_blocking() {
        let base = scratch();
        let dir = Dir::open(&base).unwrap();
        let fifo = cstring(base.join("fifo").as_os_str().as_bytes()).unwrap();
        rustix::fs::mknodat(
            CWD,
            fifo.as_c_str(),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = dir.open_read(OsStr::new("fifo")).unwrap_err();
        assert!(e.to_string().contains("a fifo"), "{e}");
        let e = dir.open_append(OsStr::new("fifo"), 0o600).unwrap_err();
        assert!(e.to_string().contains("fifo"), "{e}");
        let _listener = std::os::unix::net::UnixListener::bind(base.join("sock")).unwrap();
        let e = dir.open_read(OsStr::new("sock")).unwrap_err();
        assert!(e.to_string().contains("socket"), "{e}");
        std::fs::write(base.join("one"), "x").unwrap();
        std::fs::hard_link(base.join("one"), base.join("two")).unwrap();
        let e = dir.open_append(OsStr::new("two"), 0o600).unwrap_err();
        assert!(e.to_string().contains("hard links"), "{e}");
        assert_eq!(std::fs::read_to_string(base.join("one")).unwrap(), "x");
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_directory_that_is_a_link_is_refused_and_create_all_makes_the_rest() {
        let base = scratch();
        std::os::unix::fs::symlink("/", base.join("up")).unwrap();
        let e = Dir::open(&base.join("up")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(Dir::create_all(&base.join("up/x"), 0o700).is_err());
        let dir = Dir::create_all(&base.join("a/b/c"), 0o700).unwrap();
        dir.create_file(OsStr::new("f"), 0o600).unwrap();
        assert!(base.join("a/b/c/f").is_file());
        let e = dir.create_file(OsStr::new("../f"), 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        std::fs::remove_dir_all(base).unwrap();
    }
}
