//! What a plan reads in writable roots (git's configuration files, the
//! entries of a guarded directory), read so that nothing a sandboxed
//! command planted there redirects it or makes it wait: the path is made
//! canonical first, then opened with `openat2` and `RESOLVE_NO_SYMLINKS`
//! (a link planted after that check makes the open fail instead of being
//! followed), and only a regular file is read, without blocking on a fifo
//! (`O_NONBLOCK`), up to a bound.

use std::ffi::{CStr, OsString};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, ResolveFlags};

/// The most of one file a plan reads (git's configuration files are a few
/// kilobytes).
const MAX_READ: u64 = 1 << 20;

/// `path` made canonical, as [`Path::canonicalize`] makes it, in one call
/// when nothing on it is a link, as a plan's paths mostly are (an absolute
/// path without `..` or a link on it is its own canonical form); with the
/// full resolution, a `readlink` for each component, otherwise.
pub fn canonical(path: &Path) -> std::io::Result<PathBuf> {
    let plain = path.is_absolute() && !path.components().any(|c| c == Component::ParentDir);
    if plain {
        let flags = OFlags::PATH | OFlags::CLOEXEC;
        match rustix::fs::openat2(
            CWD,
            path,
            flags,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        ) {
            Ok(_) => return Ok(path.components().collect()),
            Err(rustix::io::Errno::NOENT) => return Err(std::io::Error::from_raw_os_error(libc::ENOENT)),
            // A link on the way, or anything else: the full resolution says.
            Err(_) => {}
        }
    }
    path.canonicalize()
}

/// `path` (absolute) opened without following a link on the way; a path
/// with a link on it is made canonical first and opened the same way.
fn open(path: &Path, flags: OFlags) -> Option<OwnedFd> {
    match open_unlinked(path, flags) {
        Err(rustix::io::Errno::LOOP) | Err(rustix::io::Errno::XDEV) => {
            open_unlinked(&canonical(path).ok()?, flags).ok()
        }
        other => other.ok(),
    }
}

/// `path` opened with `openat2` and `RESOLVE_NO_SYMLINKS`; the errno else.
fn open_unlinked(path: &Path, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat2(
        CWD,
        path,
        flags | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
}

fn stat(fd: impl AsFd, name: Option<&CStr>) -> Option<rustix::fs::Stat> {
    match name {
        Some(name) => rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW).ok(),
        None => rustix::fs::fstat(fd).ok(),
    }
}

/// The text of the regular file `path`, if it is one (and not larger than
/// the bound).
pub fn read_text(path: &Path) -> Option<String> {
    let fd = open(path, OFlags::RDONLY)?;
    let st = stat(&fd, None)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_size as u64 > MAX_READ {
        return None;
    }
    // Room for the whole file and one more byte: two reads, not a probe
    // that grows from 32 bytes.
    let mut text = String::with_capacity(st.st_size as usize + 1);
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
    let Some(fd) = open(path, OFlags::RDONLY | OFlags::DIRECTORY) else {
        return Vec::new();
    };
    // The stream owns the fd (`read_from` would reopen it) and lends it
    // back for the entries' `stat`s.
    let Ok(mut dir) = rustix::fs::Dir::new(fd) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    while let Some(entry) = dir.read() {
        let Ok(entry) = entry else { break };
        let Ok(fd) = dir.fd() else { break };
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Directory => Entry::Dir,
            FileType::Symlink
            | FileType::Fifo
            | FileType::Socket
            | FileType::CharacterDevice
            | FileType::BlockDevice => Entry::Other,
            // A regular file's links, or a type the file system did not say.
            _ => match stat(fd, Some(name)) {
                Some(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => Entry::Dir,
                Some(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile && st.st_nlink == 1 => {
                    Entry::SoleFile
                }
                _ => Entry::Other,
            },
        };
        out.push((OsString::from_vec(name.to_bytes().to_vec()), kind));
    }
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
        rustix::fs::mknodat(CWD, dir.join("fifo"), FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
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

    #[test]
    fn canonical_agrees_with_the_full_resolution() {
        let dir = std::env::temp_dir().join(format!("bm-canonical-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("real/sub")).unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.join("gone"), dir.join("dangling")).unwrap();
        let dir = dir.canonicalize().unwrap();
        for path in [
            dir.join("real/sub"),
            dir.join("real/sub/"),
            dir.join("real//sub"),
            dir.join("real/./sub"),
            dir.join("link/sub"),
            dir.join("link"),
            dir.join("real/sub/../sub"),
            dir.join("link/../real"),
            dir.join("missing/sub"),
            dir.join("dangling"),
            dir.join("dangling/sub"),
        ] {
            let full = path.canonicalize().map_err(|e| e.raw_os_error());
            assert_eq!(
                super::canonical(&path).map_err(|e| e.raw_os_error()),
                full,
                "{}",
                path.display()
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
