//! What a command word does with the rest of its argument list, and the helpers the
//! wrapper and shell tables share to say it.

use crate::permission::words::arg::Arg;

/// What a command word does with the rest of its argument list.
#[derive(Debug)]
pub(crate) enum Unwrap {
    /// Not a wrapper, or a wrapper given no command: the command itself is the part.
    Command,
    /// `args[start..]` is a command; `visible` when the wrapper is also a part.
    Inner { start: usize, visible: bool },
    /// `args[index]` is shell code (`sh -c CODE`, `su -c CODE`, `flock f -c CODE`).
    Script { index: usize, visible: bool },
    /// `args[start..]` joined by spaces is shell code (`watch`).
    ScriptJoin { start: usize, visible: bool },
    /// A shell reading its commands from standard input.
    Stdin,
    /// `find`: find itself runs, and each `(start, end)` slice is a command.
    Multi(Vec<(usize, usize)>),
    /// Unknowable; the reason.
    Opaque(String),
    /// Unknowable because words read from standard input become the command or its code
    /// (`xargs sh -c`, `parallel` without a command); the reason. What feeds the input
    /// feeds the code.
    InputCode(String),
}

/// The basename of a command word (`/usr/bin/env` → `env`).
pub(crate) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `args[start..]` is the command, or there is none: the wrapper itself is the part.
pub(crate) fn inner(args: &[Arg], start: usize, visible: bool) -> Unwrap {
    if start < args.len() {
        Unwrap::Inner { start, visible }
    } else {
        Unwrap::Command
    }
}

/// `args[index]` is shell code, or opaque when the code is missing.
pub(crate) fn script_at(args: &[Arg], index: usize, visible: bool) -> Unwrap {
    if index < args.len() {
        Unwrap::Script { index, visible }
    } else {
        Unwrap::Opaque(format!("`{}` expects a command string", args[0].text))
    }
}

/// A path with empty and `.` components dropped (`/dev//stdin` is
/// `/dev/stdin`); `None` when a component is `..`, which after a symlink
/// leads anywhere, so the text cannot tell what file it names.
pub(crate) fn folded_path(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    Some(if path.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    })
}
