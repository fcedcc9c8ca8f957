//! Reading `strace -ff -y` output: which calls the server's own code made
//! (its threads, and its children up to their `exec`), and which of the
//! paths they name a sandboxed command could have redirected.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

/// One system call as strace printed it.
#[derive(Debug, Clone)]
pub struct Call {
    pub tid: u32,
    pub name: String,
    pub args: Vec<String>,
    pub ret: String,
    pub line: String,
}

/// Splits one strace line into the call's name, its arguments and its
/// return value; `None` for a line that is not a call.
fn parse_line(tid: u32, line: &str) -> Option<Call> {
    let open = line.find('(')?;
    let name = &line[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let mut args = Vec::new();
    // Open brackets; `<` only where strace annotates an fd (`3<...>`,
    // `AT_FDCWD<...>`), so the `=>` of a changed argument is no bracket.
    let mut open_brackets: Vec<char> = Vec::new();
    let mut quoted = false;
    let mut escaped = false;
    let mut current = String::new();
    let mut end = None;
    let mut previous = '(';
    for (i, c) in line[open + 1..].char_indices() {
        if quoted {
            current.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                quoted = false;
            }
            previous = c;
            continue;
        }
        match c {
            '"' => quoted = true,
            '(' | '{' | '[' => open_brackets.push(c),
            '<' if previous.is_ascii_alphanumeric() => open_brackets.push(c),
            ')' if open_brackets.is_empty() => {
                end = Some(open + 1 + i);
                break;
            }
            ')' | '}' | ']' => {
                open_brackets.pop();
            }
            '>' if open_brackets.last() == Some(&'<') => {
                open_brackets.pop();
            }
            ',' if open_brackets.is_empty() => {
                args.push(std::mem::take(&mut current).trim().to_owned());
                previous = c;
                continue;
            }
            _ => {}
        }
        current.push(c);
        previous = c;
    }
    let end = end?;
    if !current.trim().is_empty() {
        args.push(current.trim().to_owned());
    }
    let ret = line[end + 1..].trim().trim_start_matches('=').trim().to_owned();
    Some(Call {
        tid,
        name: name.to_owned(),
        args,
        ret,
        line: line.to_owned(),
    })
}

/// The calls of every thread, by thread id, from the files `<prefix>.<tid>`.
pub fn read_traces(dir: &Path, prefix: &str) -> BTreeMap<u32, Vec<Call>> {
    let mut traces = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(tid) = name.strip_prefix(prefix).and_then(|t| t.parse::<u32>().ok()) else {
            continue;
        };
        let text = String::from_utf8_lossy(&std::fs::read(entry.path()).unwrap()).into_owned();
        let calls = text.lines().filter_map(|l| parse_line(tid, l)).collect();
        traces.insert(tid, calls);
    }
    traces
}

/// The thread or process a `clone`, `clone3`, `fork` or `vfork` made, and
/// whether it is a thread of the caller.
fn child_of(call: &Call) -> Option<(u32, bool)> {
    if !matches!(call.name.as_str(), "clone" | "clone3" | "fork" | "vfork") {
        return None;
    }
    let child = call.ret.split_whitespace().next()?.parse::<u32>().ok()?;
    Some((child, call.line.contains("CLONE_THREAD")))
}

/// The calls the server's own code made: every call of its threads (the
/// process started as `root`, and the threads it made), and each call a
/// child process of theirs made before its first successful `exec` (code
/// of the server's, with its rights). What runs after an `exec` is a
/// sandbox (bwrap, the Landlock helper, a shell) and not the server's.
pub fn server_calls(traces: &BTreeMap<u32, Vec<Call>>, root: u32) -> Vec<&Call> {
    let mut threads = BTreeSet::from([root]);
    let mut children = BTreeSet::new();
    let mut pending = vec![root];
    while let Some(tid) = pending.pop() {
        for call in traces.get(&tid).into_iter().flatten() {
            if let Some((child, thread)) = child_of(call) {
                if thread && threads.insert(child) {
                    pending.push(child);
                } else if !thread {
                    children.insert(child);
                }
            }
        }
    }
    let mut calls = Vec::new();
    for tid in &threads {
        calls.extend(traces.get(tid).into_iter().flatten());
    }
    for tid in &children {
        for call in traces.get(tid).into_iter().flatten() {
            if call.name.starts_with("execve") && call.ret.starts_with('0') {
                break;
            }
            calls.push(call);
        }
    }
    calls
}

/// Where sandboxed commands (and other users) may write: the sandbox's
/// writable roots, and any world-writable directory.
pub struct Writable {
    pub roots: Vec<PathBuf>,
}

impl Writable {
    /// Whether a name in directory `dir` could be replaced by a sandboxed
    /// command or another user.
    fn contains(&self, dir: &Path) -> bool {
        let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        self.roots.iter().any(|root| real.starts_with(root))
            || std::fs::metadata(&real).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o002 != 0)
    }
}

/// One path a call names, and how the call treats its last component.
struct Named {
    /// The directory a relative path starts from (the fd's path, or the
    /// working directory), as strace printed it.
    base: Option<PathBuf>,
    path: PathBuf,
    /// Whether the call follows a symbolic link at the last component.
    follows_last: bool,
    /// Whether the call refuses links anywhere in the path (`RESOLVE_NO_SYMLINKS`).
    no_links: bool,
}

/// The path `"…"` of strace's quoting, unescaped.
fn unquote(arg: &str) -> Option<PathBuf> {
    let inner = arg.strip_prefix('"')?.strip_suffix('"').or_else(|| {
        // A string strace cut short ends in `"...`.
        arg.strip_prefix('"')?.strip_suffix("\"...")
    })?;
    let mut bytes = Vec::new();
    let mut chars = inner.bytes().peekable();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match chars.next() {
            Some(b'n') => bytes.push(b'\n'),
            Some(b't') => bytes.push(b'\t'),
            Some(b'x') => {
                let hex: String = [chars.next(), chars.next()]
                    .into_iter()
                    .flatten()
                    .map(char::from)
                    .collect();
                bytes.push(u8::from_str_radix(&hex, 16).unwrap_or(b'?'));
            }
            Some(d @ b'0'..=b'7') => {
                let mut value = u32::from(d - b'0');
                while let Some(&n @ b'0'..=b'7') = chars.peek() {
                    value = value * 8 + u32::from(n - b'0');
                    chars.next();
                }
                bytes.push(value as u8);
            }
            Some(other) => bytes.push(other),
            None => {}
        }
    }
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

/// The directory an fd argument names (`3</tmp/x>`, `AT_FDCWD</cwd>`).
fn fd_path(arg: &str) -> Option<PathBuf> {
    let start = arg.find('<')?;
    let inner = arg[start + 1..].strip_suffix('>')?;
    inner.starts_with('/').then(|| PathBuf::from(inner))
}

fn has_flag(arg: &str, flag: &str) -> bool {
    arg.split(['|', ',', '{', '}', ' ', '=']).any(|f| f == flag)
}

/// The paths a call names, or nothing for a call that names none (or one
/// this check does not judge).
fn named_paths(call: &Call) -> Vec<Named> {
    let a = |i: usize| call.args.get(i).map(String::as_str).unwrap_or_default();
    let path = |i: usize| unquote(a(i));
    // A call without a dirfd resolves a relative path from the working
    // directory: `judge` looks it up (`None` here).
    let cwd = || None;
    let named = |base: Option<PathBuf>, p: Option<PathBuf>, follows_last: bool| {
        p.filter(|p| !p.as_os_str().is_empty()).map(|path| Named {
            base,
            path,
            follows_last,
            no_links: false,
        })
    };
    let opens =
        |flags: &str| !(has_flag(flags, "O_NOFOLLOW") || (has_flag(flags, "O_CREAT") && has_flag(flags, "O_EXCL")));
    let found: Vec<Option<Named>> = match call.name.as_str() {
        "open" => vec![named(cwd(), path(0), opens(a(1)))],
        "openat" => vec![named(fd_path(a(0)), path(1), opens(a(2)))],
        "openat2" => {
            let no_links = has_flag(a(2), "RESOLVE_NO_SYMLINKS");
            vec![named(fd_path(a(0)), path(1), opens(a(2)) && !no_links).map(|mut n| {
                n.no_links = no_links;
                n
            })]
        }
        "creat" | "truncate" | "chmod" | "chown" => vec![named(cwd(), path(0), true)],
        "execve" => vec![named(cwd(), path(0), true)],
        "execveat" => vec![named(fd_path(a(0)), path(1), !has_flag(a(4), "AT_SYMLINK_NOFOLLOW"))],
        "fchmodat" | "fchmodat2" => vec![named(fd_path(a(0)), path(1), !has_flag(a(3), "AT_SYMLINK_NOFOLLOW"))],
        "fchownat" => vec![named(fd_path(a(0)), path(1), !has_flag(a(4), "AT_SYMLINK_NOFOLLOW"))],
        "lchown" | "mkdir" | "mknod" | "unlink" | "rmdir" => vec![named(cwd(), path(0), false)],
        "mkdirat" | "mknodat" | "unlinkat" => vec![named(fd_path(a(0)), path(1), false)],
        "rename" | "link" => vec![named(cwd(), path(0), false), named(cwd(), path(1), false)],
        "renameat" | "renameat2" => vec![
            named(fd_path(a(0)), path(1), false),
            named(fd_path(a(2)), path(3), false),
        ],
        "linkat" => vec![
            named(fd_path(a(0)), path(1), has_flag(a(4), "AT_SYMLINK_FOLLOW")),
            named(fd_path(a(2)), path(3), false),
        ],
        "symlink" => vec![named(cwd(), path(1), false)],
        "symlinkat" => vec![named(fd_path(a(1)), path(2), false)],
        "connect" | "bind" => {
            let address = a(1);
            let sun_path = address
                .find("sun_path=\"")
                .and_then(|i| unquote(address[i + "sun_path=".len()..].split(['}', ',']).next()?.trim()));
            vec![named(None, sun_path, call.name == "connect")]
        }
        _ => Vec::new(),
    };
    found.into_iter().flatten().collect()
}

/// A path the server named that a sandboxed command could have redirected.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub syscall: String,
    pub path: PathBuf,
    pub why: String,
    pub line: String,
}

/// Judges every path of `calls`: a component whose directory is writable
/// may be a link a command planted. A call is safe when such a component
/// is the last one and the call does not follow it there (`O_NOFOLLOW`, an
/// exclusive create, `mkdir`, `unlink`, `rename`, `bind`); anything else
/// (an earlier component, or a call that follows the last one, such as an
/// `open` without `O_NOFOLLOW` or a `connect`) is a finding.
pub fn judge(calls: &[&Call], writable: &Writable, cwd_of: &dyn Fn(u32) -> Option<PathBuf>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for call in calls {
        for named in named_paths(call) {
            let base = if named.path.is_absolute() {
                Some(PathBuf::from("/"))
            } else {
                named.base.clone().or_else(|| cwd_of(call.tid))
            };
            let Some(base) = base else {
                findings.push(Finding {
                    syscall: call.name.clone(),
                    path: named.path.clone(),
                    why: "relative to a directory strace could not name".into(),
                    line: call.line.clone(),
                });
                continue;
            };
            let components: Vec<Component> = named.path.components().collect();
            let mut dir = base;
            for (i, component) in components.iter().enumerate() {
                let last = i + 1 == components.len();
                match component {
                    Component::RootDir => {
                        dir = PathBuf::from("/");
                        continue;
                    }
                    Component::CurDir => continue,
                    Component::ParentDir => {
                        dir.pop();
                        continue;
                    }
                    Component::Prefix(_) => continue,
                    Component::Normal(name) => {
                        if writable.contains(&dir) && !named.no_links && (!last || named.follows_last) {
                            let why = if last {
                                format!(
                                    "follows whatever is at its last component, in {}, which sandboxed commands can write",
                                    dir.display()
                                )
                            } else {
                                format!(
                                    "goes through {}, a name in {}, which sandboxed commands can write (it may be a link they planted)",
                                    dir.join(name).display(),
                                    dir.display()
                                )
                            };
                            findings.push(Finding {
                                syscall: call.name.clone(),
                                path: named.path.clone(),
                                why,
                                line: call.line.clone(),
                            });
                            break;
                        }
                        let next = dir.join(name);
                        dir = next.canonicalize().unwrap_or(next);
                    }
                }
            }
        }
    }
    findings.sort();
    findings.dedup_by(|a, b| a.syscall == b.syscall && a.path == b.path);
    findings
}

/// The working directory of `tid` as strace saw it on an `AT_FDCWD` argument.
pub fn cwd_from(traces: &BTreeMap<u32, Vec<Call>>) -> impl Fn(u32) -> Option<PathBuf> + '_ {
    move |tid| {
        traces.get(&tid)?.iter().find_map(|call| {
            call.args
                .iter()
                .find(|a| a.starts_with("AT_FDCWD<"))
                .and_then(|a| fd_path(a))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_into_name_arguments_and_result() {
        let call = parse_line(
            7,
            r#"openat(3</tmp/a,b>, "x\"y", O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600) = 4</tmp/x>"#,
        )
        .unwrap();
        assert_eq!(call.name, "openat");
        assert_eq!(call.args.len(), 4, "{:?}", call.args);
        assert_eq!(unquote(&call.args[1]).unwrap(), PathBuf::from("x\"y"));
        assert_eq!(fd_path(&call.args[0]).unwrap(), PathBuf::from("/tmp/a,b"));
        assert_eq!(call.ret, "4</tmp/x>");
        let clone = parse_line(
            1,
            r#"clone3({flags=CLONE_VM|CLONE_THREAD, child_tid=0x1, parent_tid=0x1} => {parent_tid=[9076]}, 88) = 9076"#,
        )
        .unwrap();
        assert_eq!((clone.args.len(), clone.ret.as_str()), (2, "9076"));
        assert_eq!(child_of(&clone), Some((9076, true)));
        let connect = parse_line(
            1,
            r#"connect(5<socket:[1]>, {sa_family=AF_UNIX, sun_path="/run/x.sock"}, 22) = -1 ENOENT (No such file or directory)"#,
        )
        .unwrap();
        let named = named_paths(&connect);
        assert_eq!(named[0].path, PathBuf::from("/run/x.sock"));
        assert!(named[0].follows_last);
    }
}
