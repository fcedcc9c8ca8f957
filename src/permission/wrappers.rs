//! Commands that run another command: which of their words is the wrapped command.

use super::vars::{assignment_name, is_risky_variable};
use super::word::Arg;

/// Wrappers that are stripped: the wrapped command is the part (`nice git` is git).
pub const TRANSPARENT_WRAPPERS: &[&str] = &[
    "env",
    "command",
    "builtin",
    "exec",
    "nice",
    "nohup",
    "time",
    "timeout",
    "stdbuf",
    "xargs",
    "setsid",
    "ionice",
    "taskset",
    "watch",
    "flock",
    "strace",
    "ltrace",
    "unbuffer",
    "script",
    "busybox",
    "chrt",
    "caffeinate",
];

/// Wrappers that are parts themselves and also contribute the wrapped command
/// (`sudo git` is both sudo and git; `find -exec rm` is both find and rm).
pub const VISIBLE_WRAPPERS: &[&str] = &["sudo", "doas", "su", "chroot", "find"];

/// Shells whose `-c` string, here-document or here-string is parsed as shell code.
pub const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh"];

/// Builtins that run text as code or change how later names resolve: always opaque.
pub const OPAQUE_BUILTINS: &[&str] = &[
    "eval",
    "source",
    ".",
    "trap",
    "alias",
    "fc",
    "enable",
    "hash",
    "coproc",
    "mapfile",
    "readarray",
];

/// Builtins that assign variables named by their arguments.
const ASSIGNING_BUILTINS: &[&str] = &[
    "export", "declare", "typeset", "local", "readonly", "read", "printf", "getopts", "let", "unset",
];

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
}

/// The basename of a command word (`/usr/bin/env` → `env`).
pub(crate) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Option syntax of one wrapper: short letters and long names that take a value.
struct Opts {
    short_value: &'static str,
    long_value: &'static [&'static str],
}

/// Skips options from `i`; returns the index of the first operand, or an opaque reason.
fn skip_options(args: &[Arg], mut i: usize, opts: &Opts, seen: &mut Vec<char>) -> Result<usize, String> {
    while i < args.len() {
        let a = &args[i];
        if !a.literal {
            return Err(format!("an option of `{}` is produced by an expansion", args[0].text));
        }
        let t = a.text.as_str();
        if t == "--" {
            return Ok(i + 1);
        }
        if let Some(long) = t.strip_prefix("--") {
            if long.contains('=') || !opts.long_value.contains(&long) {
                i += 1;
            } else {
                i += 2;
            }
            seen.push('-');
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let letters: Vec<char> = t[1..].chars().collect();
            let mut step = 1;
            for (k, c) in letters.iter().enumerate() {
                seen.push(*c);
                if opts.short_value.contains(*c) {
                    if k + 1 == letters.len() {
                        step = 2;
                    }
                    break;
                }
            }
            i += step;
            continue;
        }
        return Ok(i);
    }
    Ok(i)
}

fn opaque_if_risky_assignments(args: &[Arg], mut i: usize) -> Result<usize, String> {
    while i < args.len() {
        let a = &args[i];
        let Some(name) = assignment_name(&a.text) else {
            break;
        };
        if !a.literal && a.text.find('$').is_some_and(|p| p < name.len()) {
            return Err("an assignment name is produced by an expansion".into());
        }
        if is_risky_variable(name) {
            return Err(format!("sets {name}, which changes what runs"));
        }
        i += 1;
    }
    Ok(i)
}

fn inner(args: &[Arg], start: usize, visible: bool) -> Unwrap {
    if start < args.len() {
        Unwrap::Inner { start, visible }
    } else {
        Unwrap::Command
    }
}

fn check(r: Result<usize, String>) -> Result<usize, Unwrap> {
    r.map_err(Unwrap::Opaque)
}

/// Decides what `args[0]` (a literal command word) does with `args[1..]`.
pub(crate) fn unwrap(args: &[Arg]) -> Unwrap {
    match unwrap_inner(args) {
        Ok(u) | Err(u) => u,
    }
}

fn unwrap_inner(args: &[Arg]) -> Result<Unwrap, Unwrap> {
    let name = basename(&args[0].text);
    let mut seen = Vec::new();
    let o = |short_value, long_value| Opts {
        short_value,
        long_value,
    };
    if OPAQUE_BUILTINS.contains(&args[0].text.as_str()) {
        if args[0].text == "hash" && !args.iter().any(|a| a.text.starts_with("-p")) {
            return Ok(Unwrap::Command);
        }
        return Ok(Unwrap::Opaque(format!(
            "`{}` runs code that is not visible in the text",
            args[0].text
        )));
    }
    if ASSIGNING_BUILTINS.contains(&args[0].text.as_str()) {
        for a in &args[1..] {
            if !a.literal && (args[0].text != "printf" && args[0].text != "let") {
                let name_part = a.text.split('=').next().unwrap_or("");
                if name_part.contains('$') || name_part.contains('`') {
                    return Ok(Unwrap::Opaque(format!(
                        "`{}` assigns a variable whose name is produced by an expansion",
                        args[0].text
                    )));
                }
            }
            let word = a.text.trim_start_matches('-');
            let candidate = assignment_name(&a.text).unwrap_or(word);
            if is_risky_variable(candidate) {
                return Ok(Unwrap::Opaque(format!("sets {candidate}, which changes what runs")));
            }
        }
        if args[0].text == "let" && args[1..].iter().any(|a| a.text.contains('$') || a.text.contains('`')) {
            return Ok(Unwrap::Opaque("`let` evaluates expanded text as arithmetic".into()));
        }
        return Ok(Unwrap::Command);
    }
    if SHELLS.contains(&name) {
        return Ok(shell(args));
    }
    let u = match name {
        "env" => {
            let i = check(skip_options(
                args,
                1,
                &o("uCS", &["unset", "chdir", "split-string"]),
                &mut seen,
            ))?;
            if seen.contains(&'S') || args.iter().any(|a| a.text.starts_with("--split-string")) {
                return Ok(Unwrap::Opaque("`env -S` splits a string into a command".into()));
            }
            let i = check(opaque_if_risky_assignments(args, i))?;
            inner(args, i, false)
        }
        "command" => {
            let i = check(skip_options(args, 1, &o("", &[]), &mut seen))?;
            if seen.contains(&'v') || seen.contains(&'V') {
                Unwrap::Command
            } else {
                inner(args, i, false)
            }
        }
        "builtin" => inner(args, 1, false),
        "busybox" => {
            if args.get(1).is_some_and(|a| a.text.starts_with('-')) {
                Unwrap::Command
            } else {
                inner(args, 1, false)
            }
        }
        "exec" => inner(args, check(skip_options(args, 1, &o("a", &[]), &mut seen))?, false),
        "nice" => inner(
            args,
            check(skip_options(args, 1, &o("n", &["adjustment"]), &mut seen))?,
            false,
        ),
        "nohup" | "setsid" | "unbuffer" | "caffeinate" => {
            inner(args, check(skip_options(args, 1, &o("", &[]), &mut seen))?, false)
        }
        "time" => inner(
            args,
            check(skip_options(args, 1, &o("of", &["output", "format"]), &mut seen))?,
            false,
        ),
        "timeout" => {
            let i = check(skip_options(args, 1, &o("sk", &["signal", "kill-after"]), &mut seen))?;
            inner(args, i + 1, false)
        }
        "stdbuf" => inner(
            args,
            check(skip_options(
                args,
                1,
                &o("ioe", &["input", "output", "error"]),
                &mut seen,
            ))?,
            false,
        ),
        "xargs" => {
            let long = &[
                "arg-file",
                "delimiter",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
            ];
            inner(
                args,
                check(skip_options(args, 1, &o("adEILnPs", long), &mut seen))?,
                false,
            )
        }
        "ionice" => {
            let i = check(skip_options(
                args,
                1,
                &o("cnpPu", &["class", "classdata", "pid", "pgid", "uid"]),
                &mut seen,
            ))?;
            if seen.iter().any(|c| matches!(c, 'p' | 'P' | 'u')) {
                Unwrap::Command
            } else {
                inner(args, i, false)
            }
        }
        "taskset" => {
            let i = check(skip_options(args, 1, &o("", &[]), &mut seen))?;
            if seen.contains(&'p') {
                Unwrap::Command
            } else {
                inner(args, i + 1, false)
            }
        }
        "chrt" => {
            let i = check(skip_options(
                args,
                1,
                &o("TPD", &["sched-runtime", "sched-period", "sched-deadline"]),
                &mut seen,
            ))?;
            if seen.contains(&'p') {
                Unwrap::Command
            } else {
                inner(args, i + 1, false)
            }
        }
        "strace" | "ltrace" => {
            let i = check(skip_options(
                args,
                1,
                &o("abeEIoOpPsSuUXn", &["output", "attach", "env", "user"]),
                &mut seen,
            ))?;
            inner(args, i, false)
        }
        "watch" => {
            let i = check(skip_options(args, 1, &o("nq", &["interval", "equexit"]), &mut seen))?;
            if i >= args.len() {
                Unwrap::Command
            } else if seen.contains(&'x') || args[1..i].iter().any(|a| a.text == "--exec") {
                Unwrap::Inner {
                    start: i,
                    visible: false,
                }
            } else {
                Unwrap::ScriptJoin {
                    start: i,
                    visible: false,
                }
            }
        }
        "flock" => {
            if let Some(p) = args.iter().position(|a| a.text == "-c" || a.text == "--command") {
                return Ok(script_at(args, p + 1, false));
            }
            let i = check(skip_options(
                args,
                1,
                &o("wE", &["timeout", "conflict-exit-code"]),
                &mut seen,
            ))?;
            inner(args, i + 1, false)
        }
        "script" => {
            if let Some(p) = args.iter().position(|a| a.text == "-c" || a.text == "--command") {
                script_at(args, p + 1, false)
            } else {
                Unwrap::Command
            }
        }
        "sudo" => {
            let long = &[
                "user",
                "group",
                "close-from",
                "chdir",
                "host",
                "prompt",
                "role",
                "type",
                "command-timeout",
                "other-user",
                "chroot",
            ];
            let i = check(skip_options(args, 1, &o("ugCDhprtTUR", long), &mut seen))?;
            if seen.iter().any(|c| matches!(c, 'e' | 'l' | 'v' | 'k' | 'K' | 'V')) && i >= args.len() {
                return Ok(Unwrap::Command);
            }
            if seen.contains(&'e') {
                return Ok(Unwrap::Command);
            }
            let i = check(opaque_if_risky_assignments(args, i))?;
            if (seen.contains(&'s') || seen.contains(&'i')) && i < args.len() {
                return Ok(Unwrap::ScriptJoin {
                    start: i,
                    visible: true,
                });
            }
            inner(args, i, true)
        }
        "doas" => {
            let i = check(skip_options(args, 1, &o("uC", &[]), &mut seen))?;
            inner(args, i, true)
        }
        "su" => {
            if let Some(p) = args.iter().position(|a| a.text == "-c" || a.text == "--command") {
                return Ok(script_at(args, p + 1, true));
            }
            if args
                .iter()
                .any(|a| a.text.starts_with("--command=") || a.text.starts_with("-c"))
            {
                return Ok(Unwrap::Opaque("`su` command given in an unusual form".into()));
            }
            Unwrap::Command
        }
        "chroot" => {
            let i = check(skip_options(args, 1, &o("", &["userspec", "groups"]), &mut seen))?;
            inner(args, i + 1, true)
        }
        "find" => find(args),
        _ => Unwrap::Command,
    };
    Ok(u)
}

fn script_at(args: &[Arg], index: usize, visible: bool) -> Unwrap {
    if index < args.len() {
        Unwrap::Script { index, visible }
    } else {
        Unwrap::Opaque(format!("`{}` expects a command string", args[0].text))
    }
}

/// `find ... -exec CMD ... ;` and friends.
fn find(args: &[Arg]) -> Unwrap {
    let mut ranges = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let t = args[i].text.as_str();
        if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && args[end].text != ";" && args[end].text != "+" {
                end += 1;
            }
            if end > start {
                ranges.push((start, end));
            }
            i = end + 1;
        } else {
            i += 1;
        }
    }
    // Arguments of an executed command may come from expansions; anything else could
    // expand to an action such as -exec.
    let in_command = |k: usize| ranges.iter().any(|&(s, e)| k > s && k < e);
    if let Some((_, bad)) = args.iter().enumerate().find(|(k, a)| !a.literal && !in_command(*k)) {
        return Unwrap::Opaque(format!(
            "`find` gets the argument `{}` from an expansion, which could add an action such as -exec",
            super::word::clip(&bad.text)
        ));
    }
    if ranges.is_empty() {
        Unwrap::Command
    } else {
        Unwrap::Multi(ranges)
    }
}

/// `sh`/`bash`/... : `-c CODE`, stdin, or a script file.
fn shell(args: &[Arg]) -> Unwrap {
    let mut i = 1;
    let mut command_mode = false;
    let mut stdin_mode = false;
    while i < args.len() {
        let a = &args[i];
        if !a.literal {
            break;
        }
        let t = a.text.as_str();
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            i += if matches!(long, "rcfile" | "init-file") { 2 } else { 1 };
            continue;
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            let mut step = 1;
            for c in t[1..].chars() {
                match c {
                    'c' => command_mode = true,
                    's' => stdin_mode = true,
                    'o' | 'O' => step = 2,
                    _ => {}
                }
            }
            i += step;
            continue;
        }
        break;
    }
    if command_mode {
        return script_at(args, i, false);
    }
    if stdin_mode || i >= args.len() {
        return Unwrap::Stdin;
    }
    if !args[i].literal {
        return Unwrap::Opaque(format!(
            "`{}` runs a script whose name is produced by an expansion",
            args[0].text
        ));
    }
    Unwrap::Command
}
