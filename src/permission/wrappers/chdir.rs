//! Wrappers that start their command in another working directory (`env -C DIR`,
//! `sudo -D DIR`, `chroot`, `su -l`, ...): which directory, as data.
//!
//! The classifier makes the relative operands of file commands absolute against the
//! working directory (`cd / && rm -rf *` is `rm -rf /*`); a wrapper that changes it
//! must count the same way (`env -C / rm -rf *`). A wrapper that changes it to a
//! directory the text does not say (`nsenter -w`, the target's own) gives
//! [`Directory::Unknown`], so no earlier `cd` is followed into it.

use super::options::{Spec, parse};
use super::table::{CHROOT, ENV, NSENTER, SU, SUDO, SYSTEMD_RUN, UNSHARE};
use super::unwrap::basename;
use crate::permission::words::arg::Arg;

/// The working directory a wrapper starts its command in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Directory {
    /// This directory, as written (relative ones are relative to the wrapper's own).
    Path(String),
    /// One the text does not say.
    Unknown,
}

/// How one wrapper sets the directory.
enum How {
    /// The value of the last of these option keys (`env -C DIR`); an option given without
    /// its optional value (`nsenter -w`) is a directory the text does not say.
    Option(&'static [&'static str]),
    /// Always this directory, unless one of these option keys is given (`chroot` goes to
    /// the new `/` unless `--skip-chdir`).
    Fixed(&'static str, &'static [&'static str]),
    /// This directory when one of these option keys is given, or when the first operand
    /// is `-` (`su -l`, `su -`: the target user's home, matched as `~`).
    Login(&'static str, &'static [&'static str]),
}

/// Wrappers whose options change the working directory of the command they run.
const TABLE: &[(&str, &Spec, How)] = &[
    ("env", &ENV, How::Option(&["C"])),
    ("sudo", &SUDO, How::Option(&["D"])),
    ("unshare", &UNSHARE, How::Option(&["w"])),
    ("nsenter", &NSENTER, How::Option(&["w"])),
    ("systemd-run", &SYSTEMD_RUN, How::Option(&["working-directory"])),
    ("chroot", &CHROOT, How::Fixed("/", &["skip-chdir"])),
    ("su", &SU, How::Login("~", &["l"])),
    ("runuser", &SU, How::Login("~", &["l"])),
];

/// The working directory `args[0]` (a wrapper) starts its command in, when it changes
/// it; `None` when it keeps its own.
pub(crate) fn directory(args: &[Arg]) -> Option<Directory> {
    let name = basename(&args[0].text);
    match name {
        // `sudo -i` runs a login shell in the target user's home; `-D` still wins.
        "sudo" => {
            let p = parse(args, 1, &SUDO).ok()?;
            if let Some(dir) = p.values("D").last() {
                return Some(Directory::Path(dir.to_owned()));
            }
            return p.has("i").then(|| Directory::Path("~".into()));
        }
        // pkexec runs the program in the target user's home unless `--keep-cwd`.
        "pkexec" => {
            let keep = args[1..]
                .iter()
                .take_while(|a| a.text.starts_with('-'))
                .any(|a| a.text == "--keep-cwd");
            return (!keep).then(|| Directory::Path("~".into()));
        }
        // bwrap's options are one word each and exact; `--chdir DIR` takes one.
        "bwrap" => {
            let at = args.iter().rposition(|a| a.text == "--chdir")?;
            return args.get(at + 1).map(|d| Directory::Path(d.text.clone()));
        }
        _ => {}
    }
    let (_, spec, how) = TABLE.iter().find(|(n, _, _)| *n == name)?;
    let p = parse(args, 1, spec).ok()?;
    match how {
        How::Option(keys) => {
            let given = p.opts.iter().rev().find(|o| keys.contains(&o.key))?;
            Some(match &given.value {
                Some(dir) => Directory::Path(dir.clone()),
                None => Directory::Unknown,
            })
        }
        How::Fixed(dir, unless) => (!unless.iter().any(|k| p.has(k))).then(|| Directory::Path((*dir).into())),
        How::Login(dir, keys) => {
            let dash = p
                .operands
                .first()
                .or(Some(&p.first))
                .and_then(|&i| args.get(i))
                .is_some_and(|a| a.text == "-");
            (dash || keys.iter().any(|k| p.has(k))).then(|| Directory::Path((*dir).into()))
        }
    }
}

/// The directory `inner` (as a wrapper gives it) names, seen from `outer` (the
/// directory the wrapper runs in, `None` when unknown).
pub(crate) fn join(outer: Option<&str>, inner: &Directory) -> Option<String> {
    match inner {
        Directory::Unknown => None,
        Directory::Path(p) if p.starts_with(['/', '~']) || p.starts_with("$HOME") => Some(p.clone()),
        Directory::Path(p) => outer.map(|o| format!("{o}/{p}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(text: &str) -> Option<Directory> {
        let args: Vec<Arg> = text
            .split(' ')
            .map(|t| Arg {
                text: t.to_owned(),
                literal: true,
                inner: Vec::new(),
                compound: false,
            })
            .collect();
        directory(&args)
    }

    fn path(p: &str) -> Option<Directory> {
        Some(Directory::Path(p.into()))
    }

    #[test]
    fn wrappers_that_change_directory_say_which() {
        assert_eq!(dir("env -C / rm -rf *"), path("/"));
        assert_eq!(dir("env --chdir=/usr rm x"), path("/usr"));
        assert_eq!(dir("env --ch /usr rm x"), path("/usr"));
        assert_eq!(dir("env -iC/etc rm x"), path("/etc"));
        assert_eq!(dir("env -C / -C usr rm x"), path("usr"));
        assert_eq!(dir("sudo -D / rm x"), path("/"));
        assert_eq!(dir("sudo --chdir=/ rm x"), path("/"));
        assert_eq!(dir("sudo -i rm x"), path("~"));
        assert_eq!(dir("unshare --wd=/ rm x"), path("/"));
        assert_eq!(dir("nsenter -t 1 -w rm x"), Some(Directory::Unknown));
        assert_eq!(dir("nsenter -t 1 -w/ rm x"), path("/"));
        assert_eq!(dir("systemd-run --working-directory / rm x"), path("/"));
        assert_eq!(dir("chroot /mnt rm x"), path("/"));
        assert_eq!(dir("chroot --skip-chdir /mnt rm x"), None);
        assert_eq!(dir("su - -c x"), path("~"));
        assert_eq!(dir("su -l root -c x"), path("~"));
        assert_eq!(dir("su root -c x"), None);
        assert_eq!(dir("pkexec rm x"), path("~"));
        assert_eq!(dir("pkexec --keep-cwd rm x"), None);
        assert_eq!(dir("bwrap --bind / / --chdir / rm x"), path("/"));
        assert_eq!(dir("env X=1 rm x"), None);
        assert_eq!(dir("nice rm x"), None);
    }

    #[test]
    fn relative_directories_join_the_outer_one() {
        let p = |s: &str| Directory::Path(s.into());
        assert_eq!(join(Some("/"), &p("usr")), Some("//usr".into()));
        assert_eq!(join(None, &p("usr")), None);
        assert_eq!(join(None, &p("/etc")), Some("/etc".into()));
        assert_eq!(join(Some("/"), &Directory::Unknown), None);
    }
}
