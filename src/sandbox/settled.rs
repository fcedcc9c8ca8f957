//! What plans find in directories no sandboxed command can write (the
//! home directory and `~/.config`, whose shell and tool files a plan
//! protects only where they lead into a writable root), kept from plan to
//! plan while each directory stays the same: one `statx` of the directory
//! instead of one of each name in it.
//!
//! Creating, removing or renaming an entry sets its directory's change
//! time, which no user can set otherwise. Timestamps are coarse, so a
//! directory changed less than [`SETTLED_FOR`] before it was read is
//! looked at afresh: a later change then moves the change time on. A link
//! is never kept, since where it leads can change elsewhere.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a directory must have been unchanged, when read, for what is
/// found in it to be kept.
const SETTLED_FOR: Duration = Duration::from_secs(1);

/// The most directories kept (a server sees its user's home, `~/.config`
/// and a few more); past it, all are forgotten.
const MAX_DIRS: usize = 64;

/// What a name in a directory is, not following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Absent,
    NotALink,
    Link,
}

/// A directory as `statx` shows it: which one, and when it last changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: (u32, u32),
    ino: u64,
    ctime: (i64, u32),
}

struct Kept {
    identity: Identity,
    names: HashMap<OsString, Found>,
}

static KEPT: Mutex<Option<HashMap<PathBuf, Kept>>> = Mutex::new(None);

/// One plan's use: each directory's identity is read once per plan.
#[derive(Default)]
pub struct Settled {
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
pub fn look(dir: &Path, name: &OsStr) -> Found {
    match dir.join(name).symlink_metadata() {
        Err(_) => Found::Absent,
        Ok(meta) if meta.file_type().is_symlink() => Found::Link,
        Ok(_) => Found::NotALink,
    }
}

/// `dir`'s identity, if it is a directory unchanged for [`SETTLED_FOR`].
fn settled_identity(dir: &Path) -> Option<Identity> {
    use rustix::fs::{AtFlags, CWD, FileType, StatxFlags};
    let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT;
    let want = StatxFlags::TYPE | StatxFlags::INO | StatxFlags::CTIME;
    let stx = rustix::fs::statx(CWD, dir, flags, want).ok()?;
    if !StatxFlags::from_bits_retain(stx.stx_mask).contains(want)
        || FileType::from_raw_mode(stx.stx_mode.into()) != FileType::Directory
    {
        return None;
    }
    let changed = UNIX_EPOCH + Duration::new(u64::try_from(stx.stx_ctime.tv_sec).ok()?, stx.stx_ctime.tv_nsec);
    let unchanged_for = SystemTime::now().duration_since(changed).ok()?;
    (unchanged_for >= SETTLED_FOR).then_some(Identity {
        dev: (stx.stx_dev_major, stx.stx_dev_minor),
        ino: stx.stx_ino,
        ctime: (stx.stx_ctime.tv_sec, stx.stx_ctime.tv_nsec),
    })
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
}
