//! What plans find in directories no sandboxed command can write (the
//! home directory and `~/.config`, whose shell and tool files a plan
//! protects only where they lead into a writable root), kept from plan to
//! plan while each directory stays the same: one `statx` of the directory
//! instead of one of each name in it.
//!
//! Likewise the text of a file there (the user's git configuration), kept
//! while the file's identity, size and times stay the same.
//!
//! Creating, removing or renaming an entry sets its directory's change
//! time, and writing a file sets its own, which no user can set otherwise.
//! Timestamps are coarse, so a directory or file changed less than
//! [`SETTLED_FOR`] before it was read is looked at afresh: a later change
//! then moves the change time on. A link is never kept, since where it
//! leads can change elsewhere.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::fsread;

/// How long a directory must have been unchanged, when read, for what is
/// found in it to be kept.
const SETTLED_FOR: Duration = Duration::from_secs(1);

/// The most directories kept (a server sees its user's home, `~/.config`
/// and a few more); past it, all are forgotten.
const MAX_DIRS: usize = 64;

/// The most files whose text is kept (the user's git configuration and
/// what it includes); past it, all are forgotten.
const MAX_FILES: usize = 16;

/// What a name in a directory is, not following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Absent,
    NotALink,
    Link,
}

/// A directory or file as `statx` shows it: which one, how long, when last
/// written and changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: (u32, u32),
    ino: u64,
    size: u64,
    mtime: (i64, u32),
    ctime: (i64, u32),
}

struct Kept {
    identity: Identity,
    names: HashMap<OsString, Found>,
}

static KEPT: Mutex<Option<HashMap<PathBuf, Kept>>> = Mutex::new(None);

/// A file's text, with the identity it had when read.
type KeptText = (Identity, Arc<str>);

static TEXTS: Mutex<Option<HashMap<PathBuf, KeptText>>> = Mutex::new(None);

/// Where sandboxed commands can write, and what one plan keeps of the
/// rest: each question about a place outside the writable ones goes
/// through what is kept, the others to the file system.
pub struct Places {
    writable: Vec<PathBuf>,
    settled: Settled,
}

impl Places {
    /// `writable`: canonical directories sandboxed commands can write in.
    pub fn new(writable: Vec<PathBuf>) -> Places {
        Places {
            writable,
            settled: Settled::default(),
        }
    }

    /// Whether `path` lies in a place sandboxed commands can write.
    pub fn is_writable(&self, path: &Path) -> bool {
        self.writable.iter().any(|w| path.starts_with(w))
    }

    /// What `name` in the canonical directory `dir` is.
    pub fn entry(&mut self, dir: &Path, name: &OsStr) -> Found {
        match self.is_writable(dir) {
            true => look(dir, name),
            false => self.settled.entry(dir, name),
        }
    }

    /// The text of the regular file `path` (as [`fsread::read_text`] reads
    /// it), kept while the file stays the same where no sandboxed command
    /// can write.
    pub fn read_text(&self, path: &Path) -> Option<Arc<str>> {
        if self.is_writable(path) {
            return fsread::read_text(path).map(Arc::from);
        }
        let identity = match settled_file(path) {
            File::Absent => return None,
            File::Settled(identity) => Some(identity),
            File::Other => None,
        };
        if let Some(identity) = identity {
            let texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((_, text)) = texts
                .as_ref()
                .and_then(|t| t.get(path))
                .filter(|(kept, _)| *kept == identity)
            {
                return Some(text.clone());
            }
        }
        let text: Arc<str> = fsread::read_text(path)?.into();
        // Kept only when the file was settled before it was read, and is
        // the same one after.
        if let Some(identity) = identity
            && settled_file(path) == File::Settled(identity)
        {
            let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
            let texts = texts.get_or_insert_with(HashMap::new);
            if texts.len() >= MAX_FILES && !texts.contains_key(path) {
                texts.clear();
            }
            texts.insert(path.to_path_buf(), (identity, text.clone()));
        }
        Some(text)
    }
}

/// One plan's use: each directory's identity is read once per plan.
#[derive(Default)]
struct Settled {
    identities: HashMap<PathBuf, Option<Identity>>,
}

impl Settled {
    /// What `name` in `dir` is. `dir` must be canonical and lie outside
    /// every place a sandboxed command can write.
    pub fn entry(&mut self, dir: &Path, name: &OsStr) -> Found {
        let identity = match self.identities.get(dir) {
            Some(known) => *known,
            None => {
                let read = settled_identity(dir);
                self.identities.insert(dir.to_path_buf(), read);
                read
            }
        };
        let Some(identity) = identity else {
            return look(dir, name);
        };
        let kept = |all: &HashMap<PathBuf, Kept>| {
            let kept = all.get(dir).filter(|k| k.identity == identity)?;
            kept.names.get(name).copied()
        };
        if let Some(found) = KEPT
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(kept)
        {
            return found;
        }
        let found = look(dir, name);
        if found != Found::Link {
            let mut all = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
            let all = all.get_or_insert_with(HashMap::new);
            if all.len() >= MAX_DIRS && !all.contains_key(dir) {
                all.clear();
            }
            let kept = all.entry(dir.to_path_buf()).or_insert_with(|| Kept {
                identity,
                names: HashMap::new(),
            });
            if kept.identity != identity {
                *kept = Kept {
                    identity,
                    names: HashMap::new(),
                };
            }
            kept.names.insert(name.to_owned(), found);
        }
        found
    }
}

/// What `name` in `dir` is now.
fn look(dir: &Path, name: &OsStr) -> Found {
    match dir.join(name).symlink_metadata() {
        Err(_) => Found::Absent,
        Ok(meta) if meta.file_type().is_symlink() => Found::Link,
        Ok(_) => Found::NotALink,
    }
}

/// What [`settled_file`] finds at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum File {
    /// Nothing, and no link on the way: nothing to read.
    Absent,
    /// A regular file unchanged for [`SETTLED_FOR`].
    Settled(Identity),
    /// Anything else: a link on the way, a file changed just now.
    Other,
}

/// `path`'s identity, if it is a regular file unchanged for
/// [`SETTLED_FOR`], reached without a link or `..` on the way: then where
/// it lies is what its path says, and [`Places::is_writable`] holds for it
/// exactly.
fn settled_file(path: &Path) -> File {
    use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, ResolveFlags};
    if !path.is_absolute() || path.components().any(|c| c == std::path::Component::ParentDir) {
        return File::Other;
    }
    let fd = match rustix::fs::openat2(
        CWD,
        path,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return File::Absent,
        Err(_) => return File::Other,
    };
    match rustix::fs::statx(&fd, "", AtFlags::EMPTY_PATH, WANTED) {
        Ok(stx) => settled(&stx, FileType::RegularFile).map_or(File::Other, File::Settled),
        Err(_) => File::Other,
    }
}

/// What an identity is read from.
const WANTED: rustix::fs::StatxFlags = rustix::fs::StatxFlags::TYPE
    .union(rustix::fs::StatxFlags::INO)
    .union(rustix::fs::StatxFlags::SIZE)
    .union(rustix::fs::StatxFlags::MTIME)
    .union(rustix::fs::StatxFlags::CTIME);

/// The identity `stx` shows, if it is a `kind` unchanged (written or
/// changed) for [`SETTLED_FOR`].
fn settled(stx: &rustix::fs::Statx, kind: rustix::fs::FileType) -> Option<Identity> {
    use rustix::fs::{FileType, StatxFlags};
    let settled = StatxFlags::from_bits_retain(stx.stx_mask).contains(WANTED)
        && FileType::from_raw_mode(stx.stx_mode.into()) == kind
        && unchanged_for_long(&stx.stx_ctime)
        && unchanged_for_long(&stx.stx_mtime);
    settled.then_some(Identity {
        dev: (stx.stx_dev_major, stx.stx_dev_minor),
        ino: stx.stx_ino,
        size: stx.stx_size,
        mtime: (stx.stx_mtime.tv_sec, stx.stx_mtime.tv_nsec),
        ctime: (stx.stx_ctime.tv_sec, stx.stx_ctime.tv_nsec),
    })
}

/// Whether `time` lies [`SETTLED_FOR`] or more in the past.
fn unchanged_for_long(time: &rustix::fs::StatxTimestamp) -> bool {
    let Ok(secs) = u64::try_from(time.tv_sec) else {
        return false;
    };
    let at = UNIX_EPOCH + Duration::new(secs, time.tv_nsec);
    SystemTime::now().duration_since(at).is_ok_and(|d| d >= SETTLED_FOR)
}

/// `dir`'s identity, if it is a directory unchanged for [`SETTLED_FOR`].
fn settled_identity(dir: &Path) -> Option<Identity> {
    use rustix::fs::{AtFlags, CWD, FileType};
    let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT;
    settled(&rustix::fs::statx(CWD, dir, flags, WANTED).ok()?, FileType::Directory)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bm-settled-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    /// Waits until `dir` has been unchanged for [`SETTLED_FOR`] (a hang
    /// guard far above it).
    fn until_settled(dir: &Path) {
        for _ in 0..300 {
            if settled_identity(dir).is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{} never settled", dir.display());
    }

    /// What a new plan finds of `names` in `dir`.
    fn read(dir: &Path, names: &[&str]) -> Vec<Found> {
        let mut settled = Settled::default();
        names.iter().map(|n| settled.entry(dir, OsStr::new(n))).collect()
    }

    #[test]
    fn a_directory_changed_just_now_is_looked_at_each_time() {
        let dir = dir("fresh");
        assert_eq!(settled_identity(&dir), None);
        assert_eq!(read(&dir, &["a"]), [Found::Absent]);
        std::fs::write(dir.join("a"), "").unwrap();
        assert_eq!(read(&dir, &["a"]), [Found::NotALink]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn what_a_settled_directory_holds_is_kept_until_an_entry_changes_and_links_never() {
        let dir = dir("settled");
        let names = ["file", "link", "missing"];
        std::os::unix::fs::symlink("/etc/hostname", dir.join("link")).unwrap();
        std::fs::write(dir.join("file"), "").unwrap();
        until_settled(&dir);
        assert_eq!(read(&dir, &names), [Found::NotALink, Found::Link, Found::Absent]);
        let kept = |dir: &Path| {
            let all = KEPT.lock().unwrap();
            let mut names: Vec<_> = all.as_ref().unwrap()[dir]
                .names
                .iter()
                .map(|(n, f)| (n.clone(), *f))
                .collect();
            names.sort_by(|a, b| a.0.cmp(&b.0));
            names
        };
        let expected = [("file".into(), Found::NotALink), ("missing".into(), Found::Absent)];
        assert_eq!(kept(&dir), expected);
        // Each change to an entry is seen at once, and once the directory
        // settled again, what was kept before is not used.
        std::fs::remove_file(dir.join("file")).unwrap();
        std::fs::write(dir.join("missing"), "").unwrap();
        assert_eq!(read(&dir, &names), [Found::Absent, Found::Link, Found::NotALink]);
        until_settled(&dir);
        assert_eq!(read(&dir, &names), [Found::Absent, Found::Link, Found::NotALink]);
        std::fs::remove_file(dir.join("link")).unwrap();
        std::fs::write(dir.join("link"), "").unwrap();
        until_settled(&dir);
        assert_eq!(read(&dir, &["link"]), [Found::NotALink]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Waits until `file` has been unchanged for [`SETTLED_FOR`].
    fn until_file_settled(file: &Path) {
        for _ in 0..300 {
            if matches!(settled_file(file), File::Settled(_)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{} never settled", file.display());
    }

    fn text_kept(file: &Path) -> Option<String> {
        let texts = TEXTS.lock().unwrap();
        texts.as_ref()?.get(file).map(|(_, text)| text.to_string())
    }

    #[test]
    fn a_settled_files_text_is_kept_until_the_file_is_written_or_replaced() {
        let dir = dir("text");
        let file = dir.join("gitconfig");
        std::fs::write(&file, "[core]\n\tpager = a\n").unwrap();
        let places = Places::new(Vec::new());
        assert_eq!(places.read_text(&dir.join("none")), None);
        assert_eq!(places.read_text(&file).as_deref(), Some("[core]\n\tpager = a\n"));
        assert_eq!(text_kept(&file), None, "written just now: not kept");
        until_file_settled(&file);
        assert_eq!(places.read_text(&file).as_deref(), Some("[core]\n\tpager = a\n"));
        assert_eq!(text_kept(&file).as_deref(), Some("[core]\n\tpager = a\n"));
        // The same length, written in place: seen at once.
        std::fs::write(&file, "[core]\n\tpager = b\n").unwrap();
        assert_eq!(places.read_text(&file).as_deref(), Some("[core]\n\tpager = b\n"));
        // Replaced by another file, settled: its own text.
        let other = dir.join("other");
        std::fs::write(&other, "[core]\n\tpager = c\n").unwrap();
        std::fs::rename(&other, &file).unwrap();
        until_file_settled(&file);
        assert_eq!(places.read_text(&file).as_deref(), Some("[core]\n\tpager = c\n"));
        // Replaced by a link: what it leads to, read each time.
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&other, "[core]\n\tpager = d\n").unwrap();
        std::os::unix::fs::symlink(&other, &file).unwrap();
        until_file_settled(&other);
        assert_eq!(places.read_text(&file).as_deref(), Some("[core]\n\tpager = d\n"));
        // A link on the way: the same.
        let linked_dir = dir.with_file_name(format!("bm-settled-link-{}", std::process::id()));
        let _ = std::fs::remove_file(&linked_dir);
        std::os::unix::fs::symlink(&dir, &linked_dir).unwrap();
        assert_eq!(
            places.read_text(&linked_dir.join("other")).as_deref(),
            Some("[core]\n\tpager = d\n")
        );
        assert_eq!(text_kept(&linked_dir.join("other")), None);
        std::fs::remove_file(&linked_dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_writable_place_is_asked_of_the_file_system_each_time() {
        let dir = dir("writable");
        let file = dir.join("config");
        std::fs::write(&file, "x").unwrap();
        until_file_settled(&file);
        let mut places = Places::new(vec![dir.clone()]);
        assert_eq!(places.entry(&dir, OsStr::new("config")), Found::NotALink);
        assert_eq!(places.entry(&dir, OsStr::new("missing")), Found::Absent);
        assert_eq!(places.read_text(&file).as_deref(), Some("x"));
        assert_eq!(text_kept(&file), None);
        let kept = KEPT.lock().unwrap();
        assert!(kept.as_ref().is_none_or(|all| !all.contains_key(&dir)));
        drop(kept);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
