//! Redirections as the analysis reports them, and the normal form of a path that rules
//! about writes are matched against.

use serde::Serialize;

/// What a redirection does with its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedirectMode {
    /// `<`: reads the file.
    Read,
    /// `>`, `>|`, `&>`, `>&file`: truncates or creates the file and writes it.
    Write,
    /// `>>`, `&>>`: appends to the file.
    Append,
    /// `<>`: opens the file for reading and writing.
    ReadWrite,
    /// `>&N`, `<&N`, `>&-`: copies or closes a descriptor; the target is the descriptor.
    Duplicate,
}

impl RedirectMode {
    /// Whether the target file may be written.
    pub fn writes(self) -> bool {
        matches!(self, Self::Write | Self::Append | Self::ReadWrite)
    }
}

/// One redirection in the command text, in text order.
///
/// This is the stable record a differential test can hold the shell to: every file a
/// redirection of the text writes is the `target` of a `Redirect` whose mode
/// [`writes`](RedirectMode::writes) (see [`Analysis::writes`](super::Analysis::writes)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Redirect {
    /// The descriptor redirected (`2` in `2>x`; 0 or 1 when not written).
    pub fd: u32,
    /// What it does.
    pub mode: RedirectMode,
    /// The target as written, quoting removed, expansions as written (`$HOME/x`,
    /// `/dev/tcp/h/80`, `1` in `2>&1`).
    pub target: String,
    /// Whether the target is one literal word: no expansion can change it.
    pub literal: bool,
}

/// `path` in the form rules about files match: `$HOME`, `${HOME}` and `~` at the start
/// as `~`; repeated `/` as one; `.` components and a leading `./` removed; `a/..`
/// removed where `a` is a plain name; a trailing `/` removed.
///
/// ```
/// use bash_mcp::permission::normalize_path;
/// assert_eq!(normalize_path("/dev//sda"), "/dev/sda");
/// assert_eq!(normalize_path("/dev/./sda"), "/dev/sda");
/// assert_eq!(normalize_path("/usr/../etc/"), "/etc");
/// assert_eq!(normalize_path("${HOME}/.ssh//authorized_keys"), "~/.ssh/authorized_keys");
/// assert_eq!(normalize_path("./.git/hooks/../config"), ".git/config");
/// assert_eq!(normalize_path("/.."), "/");
/// assert_eq!(normalize_path("~/../.."), "~/../..");
/// ```
pub fn normalize_path(path: &str) -> String {
    let (root, rest) = split_root(path);
    let mut parts: Vec<&str> = Vec::new();
    for c in rest.split('/') {
        match c {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." && is_plain(last) => {
                    parts.pop();
                }
                // `/..` is `/`.
                None if root == "/" => {}
                _ => parts.push(c),
            },
            _ => parts.push(c),
        }
    }
    let body = parts.join("/");
    match root {
        "/" => format!("/{body}"),
        "~" if body.is_empty() => "~".to_owned(),
        "~" => format!("~/{body}"),
        _ if body.is_empty() && !path.is_empty() => ".".to_owned(),
        _ => body,
    }
}

/// The root of `path` (`/`, `~` for the home directory, or empty) and the rest.
fn split_root(path: &str) -> (&str, &str) {
    for home in ["${HOME}", "$HOME", "~"] {
        if let Some(rest) = path.strip_prefix(home)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return ("~", rest);
        }
    }
    if let Some(rest) = path.strip_prefix('/') {
        return ("/", rest);
    }
    ("", path)
}

/// A path component that names one directory: no glob or expansion that could make
/// `name/..` something else than where it started.
fn is_plain(name: &str) -> bool {
    !name.contains(['*', '?', '[', '$', '`', '{', '~'])
}
