//! What a plan reads in writable roots (git's configuration files, the
//! entries of a guarded directory), read so that nothing a sandboxed
//! command planted there redirects it or makes it wait: the path is made
//! canonical first, then opened with `openat2` and `RESOLVE_NO_SYMLINKS`
//! (a link planted after that check makes the open fail instead of being
//! followed), and only a regular file is read, without blocking on a fifo
//! (`O_NONBLOCK`), up to a bound.

use std::ffi::{CString, OsString};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// The most of one file a plan reads (git's configuration files are a few
/// kilobytes).
const MAX_READ: u64 = 1 << 20;

/// `path` (absolute) opened without following a link on the way; a path
/// with a link on it is made canonical first and opened the same way.
fn open(path: &Path, flags: i32) -> Option<OwnedFd> {
    match open_unlinked(path, flags) {
        Err(libc::ELOOP) | Err(libc::EXDEV) => open_unlinked(&path.canonicalize().ok()?, flags).ok(),
        other => other.ok(),
    }
}

/// `path` opened with `openat2` and `RESOLVE_NO_SYMLINKS`; the errno else.
fn open_unlinked(path: &Path, flags: i32) -> Result<OwnedFd, i32> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| libc::EINVAL)?;
    /// `struct open_how` (linux/openat2.h).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK) as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: openat2 reads `how` (of the size given) and the path.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
    }
    // SAFETY: a non-negative result is a fresh fd that is ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

fn stat(fd: RawFd, name: Option<&CString>) -> Option<libc::stat> {
    // SAFETY: stat is plain data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = match name {
        // SAFETY: fstatat on our fd with a NUL-terminated name, not following it.
        Some(name) => unsafe { libc::fstatat(fd, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) },
        // SAFETY: fstat on our fd.
        None => unsafe { libc::fstat(fd, &mut st) },
    };
    (rc == 0).then_some(st)
}

/// The text of the regular file `path`, if it is one (and not larger than
/// the bound).
pub fn read_text(path: &Path) -> Option<String> {
    let fd = open(path, libc::O_RDONLY)?;
    let st = stat(fd.as_raw_fd(), None)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_size as u64 > MAX_READ {
        return None;
    }
    let mut text = String::new();
    std::fs::File::from(fd).take(MAX_READ).read_to_string(&mut text).ok()?;
    Some(text)
}

/// What one entry of a directory is (not following a link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Dir,
    /// A regular file with only this link.
    SoleFile,
    /// A link, a file with other links, anything else.
    Other,
}

/// The entries of the directory `path`.
pub fn list(path: &Path) -> Vec<(OsString, Entry)> {
    let Some(fd) = open(path, libc::O_RDONLY | libc::O_DIRECTORY) else {
        return Vec::new();
    };
    let dir_fd = fd.as_raw_fd();
    // SAFETY: fdopendir takes ownership of a directory fd (ours, released
    // here) and is closed by closedir below.
    let dir = unsafe { libc::fdopendir(std::os::fd::IntoRawFd::into_raw_fd(fd)) };
    if dir.is_null() {
        return Vec::new();
    }
    let mut out = Vec::new();
    loop {
        // SAFETY: readdir on the stream opened above; the entry it returns
        // is valid until the next call, and copied before it.
        let entry = unsafe { libc::readdir(dir) };
        if entry.is_null() {
            break;
        }
        // SAFETY: d_name is a NUL-terminated array inside the entry.
        let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) }.to_owned();
        if name.as_bytes() == b"." || name.as_bytes() == b".." {
            continue;
        }
        // SAFETY: d_type is plain data inside the entry.
        let d_type = unsafe { (*entry).d_type };
        let kind = match d_type {
            libc::DT_DIR => Entry::Dir,
            libc::DT_LNK | libc::DT_FIFO | libc::DT_SOCK | libc::DT_CHR | libc::DT_BLK => Entry::Other,
            // A regular file's links, or a type the file system did not say.
            _ => match stat(dir_fd, Some(&name)) {
                Some(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => Entry::Dir,
                Some(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_nlink == 1 => Entry::SoleFile,
                _ => Entry::Other,
            },
        };
        out.push((OsString::from_vec(name.into_bytes()), kind));
    }
    // SAFETY: closes the stream (and its fd) opened above.
    unsafe { libc::closedir(dir) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_or_a_link_to_one_is_not_read_and_does_not_block() {
        let dir = std::env::temp_dir().join(format!("bm-fsread-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("config"), "[core]\n").unwrap();
        let fifo = CString::new(dir.join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::symlink(dir.join("fifo"), dir.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.join("config"), dir.join("config-link")).unwrap();
        assert_eq!(read_text(&dir.join("config")).as_deref(), Some("[core]\n"));
        assert_eq!(read_text(&dir.join("config-link")).as_deref(), Some("[core]\n"));
        assert_eq!(read_text(&dir.join("fifo")), None);
        assert_eq!(read_text(&dir.join("link")), None);
        let mut entries = list(&dir);
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let kinds: Vec<(&str, Entry)> = entries.iter().map(|(n, k)| (n.to_str().unwrap(), *k)).collect();
        assert_eq!(
            kinds,
            [
                ("config", Entry::SoleFile),
                ("config-link", Entry::Other),
                ("fifo", Entry::Other),
                ("link", Entry::Other),
                ("sub", Entry::Dir),
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
