//! Shells started by a command: how each reads its own command line, and which startup
//! files it reads before the code it is given.
//!
//! Each shell's options are data ([`SPECS`]): the option letters it takes without a
//! value, the letters that take the next word (once per occurrence in a bundle, as
//! `-oo errexit nounset` does), the `-o`/`-O` names that change nothing about what runs,
//! the long options it accepts, and the options that skip the user's startup files. An
//! option the table does not list, an option word produced by an expansion, or a shell
//! that reads a startup file the command may have written is opaque.

use super::unwrap::{Unwrap, basename, folded_path, script_at};
use crate::permission::words::arg::Arg;

/// Shells whose `-c` string, here-document or here-string is parsed as shell code.
pub const SHELLS: &[&str] = &[
    "sh", "bash", "rbash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish",
];

/// Shells whose language is not analysed at all: running one is opaque.
pub const UNANALYSED_SHELLS: &[&str] = &[
    "csh",
    "tcsh",
    "elvish",
    "nu",
    "xonsh",
    "pwsh",
    "powershell",
    "rc",
    "es",
    "ion",
    "osh",
    "oil",
    "ysh",
    "scsh",
    "ksh93",
    "lksh",
    "pdksh",
    "oksh",
    "nash",
    "murex",
];

/// `-o` names common to bash and dash that change nothing about what runs.
const SET_NAMES: &[&str] = &[
    "errexit",
    "nounset",
    "xtrace",
    "verbose",
    "noglob",
    "noclobber",
    "noexec",
    "allexport",
    "pipefail",
];

/// bash adds these `-o` names.
const BASH_SET_NAMES: &[&str] = &[
    "errexit",
    "nounset",
    "xtrace",
    "verbose",
    "noglob",
    "noclobber",
    "noexec",
    "allexport",
    "pipefail",
    "errtrace",
    "functrace",
];

/// `-O` (shopt) names bash may be started with that change nothing about what runs.
const BASH_SHOPT_NAMES: &[&str] = &[
    "nullglob",
    "failglob",
    "dotglob",
    "globstar",
    "nocaseglob",
    "inherit_errexit",
    "lastpipe",
];

/// How a shell reads its command line.
struct ShellSpec {
    names: &'static [&'static str],
    /// Option letters that take no value (`c`, `s`, `i` and `l` are handled apart).
    flags: &'static str,
    /// `-o NAME` (and `+o`) takes the next word; these names are followed.
    set_names: &'static [&'static str],
    /// `-O NAME` (bash's shopt) takes the next word; these names are followed.
    shopt_names: &'static [&'static str],
    /// Long options without a value, accepted only before the short ones (bash).
    long_flags: &'static [&'static str],
    /// Long options taking a value (zsh's `--emulate sh`); the values followed.
    long_values: &'static [(&'static str, &'static [&'static str])],
    /// The shell reads a startup file of the user's before any `-c` code or standard
    /// input (zsh's `~/.zshenv`) unless one of these letters or long options is given.
    clean_start: Option<(&'static str, &'static [&'static str], &'static str)>,
    /// `-n` and `-o noexec` make the shell read its `-c` code without running any of it
    /// (a syntax check), and nothing in that code can turn it off again: `set +n` is a
    /// command, and is not run either (checked with the real shells). Only the last of
    /// `-n`/`+n`/`-o noexec`/`+o noexec` counts. False for the shells where this was not
    /// checked, which are then analysed as if they ran their code.
    noexec: bool,
}

const SPECS: &[ShellSpec] = &[
    ShellSpec {
        names: &["bash", "rbash"],
        // No `k` (assignments anywhere on a command line go to its environment), `H`
        // (history expansion) or `i`/`l` (startup files).
        flags: "abefhmnptuvxBCEPTrD",
        set_names: BASH_SET_NAMES,
        shopt_names: BASH_SHOPT_NAMES,
        long_flags: &["--norc", "--noprofile", "--noediting", "--restricted", "--verbose"],
        long_values: &[],
        clean_start: None,
        noexec: true,
    },
    ShellSpec {
        // `sh` may be bash or dash: only what both read the same way.
        names: &["sh", "dash", "ash", "posh"],
        flags: "abCefhmnuvx",
        set_names: SET_NAMES,
        shopt_names: &[],
        long_flags: &[],
        long_values: &[],
        clean_start: None,
        noexec: true,
    },
    ShellSpec {
        names: &["ksh", "mksh", "yash"],
        flags: "efnuvx",
        set_names: SET_NAMES,
        shopt_names: &[],
        long_flags: &[],
        long_values: &[],
        clean_start: None,
        noexec: false,
    },
    ShellSpec {
        // zsh reads `$ZDOTDIR/.zshenv` (by default `~/.zshenv`) in every mode unless
        // started with `-f` (NO_RCS); /etc/zshenv is the system's.
        names: &["zsh"],
        flags: "efnuvxd",
        set_names: &[],
        shopt_names: &[],
        long_flags: &["--no-rcs", "--norcs"],
        long_values: &[("--emulate", &["sh", "ksh", "bash", "zsh"])],
        clean_start: Some(("f", &["--no-rcs", "--norcs"], "~/.zshenv")),
        noexec: false,
    },
];

/// Why running the shell named `name` with `args` cannot be followed, or how its code
/// is given.
pub(crate) fn shell(args: &[Arg]) -> Unwrap {
    let name = basename(&args[0].text);
    if UNANALYSED_SHELLS.contains(&name) {
        return Unwrap::Opaque(format!("`{name}` is a shell whose language is not analysed"));
    }
    if name == "fish" {
        return fish(args);
    }
    let Some(spec) = SPECS.iter().find(|s| s.names.contains(&name)) else {
        return Unwrap::Opaque(format!("`{name}` is a shell whose options are not known"));
    };
    match read_options(args, spec) {
        Ok(mode) => mode_unwrap(args, spec, mode),
        Err(reason) => Unwrap::Opaque(reason),
    }
}

/// What the options said: where the operands start, and the mode.
struct Mode {
    first_operand: usize,
    command: bool,
    stdin: bool,
    clean: bool,
    /// The last of `-n`/`+n`/`-o noexec`/`+o noexec` turned "read, do not run" on.
    noexec: bool,
}

fn read_options(args: &[Arg], spec: &ShellSpec) -> Result<Mode, String> {
    let name = &args[0].text;
    let mut mode = Mode {
        first_operand: args.len(),
        command: false,
        stdin: false,
        clean: false,
        noexec: false,
    };
    let mut seen_short = false;
    let mut i = 1;
    while let Some(a) = args.get(i) {
        if !a.literal {
            return Err(format!(
                "an argument of `{name}` is produced by an expansion, so its options are unknown"
            ));
        }
        let t = a.text.as_str();
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if t.starts_with("--") {
            if seen_short {
                return Err(format!("`{name}` given the long option `{t}` after short ones"));
            }
            i += long_option(args, i, spec, &mut mode)?;
            continue;
        }
        if !(t.starts_with('-') || t.starts_with('+')) || t.len() < 2 {
            break;
        }
        seen_short = true;
        i += short_bundle(args, i, spec, &mut mode)?;
    }
    mode.first_operand = i;
    Ok(mode)
}

/// Reads the long option at `args[i]`; returns how many words it took.
fn long_option(args: &[Arg], i: usize, spec: &ShellSpec, mode: &mut Mode) -> Result<usize, String> {
    let name = &args[0].text;
    let t = args[i].text.as_str();
    if let Some((_, clean_long, _)) = spec.clean_start
        && clean_long.contains(&t)
    {
        mode.clean = true;
    }
    if spec.long_flags.contains(&t) {
        return Ok(1);
    }
    let (option, attached) = match t.split_once('=') {
        Some((o, v)) => (o, Some(v)),
        None => (t, None),
    };
    let Some((_, allowed)) = spec.long_values.iter().find(|(o, _)| *o == option) else {
        return Err(match t {
            "--login" | "--rcfile" | "--init-file" => format!("`{name} {t}` runs the user's startup files"),
            _ => format!("`{name}` given the option `{t}`, which is not followed"),
        });
    };
    let (value, took) = match attached {
        Some(v) => (Some(v), 1),
        None => (args.get(i + 1).filter(|a| a.literal).map(|a| a.text.as_str()), 2),
    };
    match value {
        Some(v) if allowed.contains(&v) => Ok(took),
        _ => Err(format!("`{name} {option}` given a value that is not followed")),
    }
}

/// Reads the bundle of short options at `args[i]`; returns how many words it took
/// (each `o`/`O` in the bundle takes the next unused word, as the shells do).
fn short_bundle(args: &[Arg], i: usize, spec: &ShellSpec, mode: &mut Mode) -> Result<usize, String> {
    let name = &args[0].text;
    let t = args[i].text.as_str();
    let plus = t.starts_with('+');
    let mut took = 1;
    for c in t[1..].chars() {
        let names = match c {
            'o' => Some(spec.set_names),
            'O' if !spec.shopt_names.is_empty() => Some(spec.shopt_names),
            _ => None,
        };
        if let Some(names) = names {
            let value = args.get(i + took).filter(|a| a.literal).map(|a| a.text.as_str());
            match value {
                Some(v) if names.contains(&v) => {
                    if c == 'o' && v == "noexec" {
                        mode.noexec = !plus;
                    }
                    took += 1;
                }
                Some(v) => return Err(format!("`{name} {}{c} {v}` is an option that is not followed", &t[..1])),
                None => return Err(format!("`{name} {}{c}` without a name lists or is unknown", &t[..1])),
            }
            continue;
        }
        match c {
            'c' => mode.command = true,
            's' => mode.stdin = true,
            'n' if spec.flags.contains('n') => mode.noexec = !plus,
            'i' | 'l' => {
                return Err(format!(
                    "`{name} -{c}` (interactive or login) runs the user's startup files"
                ));
            }
            _ if spec.clean_start.is_some_and(|(letters, _, _)| letters.contains(c)) => {
                mode.clean |= !plus;
            }
            _ if spec.flags.contains(c) => {}
            _ => {
                return Err(format!(
                    "`{name}` given the option `{}{c}`, which is not followed",
                    &t[..1]
                ));
            }
        }
    }
    Ok(took)
}

fn mode_unwrap(args: &[Arg], spec: &ShellSpec, mode: Mode) -> Unwrap {
    let name = &args[0].text;
    let i = mode.first_operand;
    let reads_code = mode.command || mode.stdin || i >= args.len();
    if let Some((letter, _, file)) = spec.clean_start
        && reads_code
        && !mode.clean
    {
        return Unwrap::Opaque(format!(
            "`{name}` first runs the user's `{file}`, which may hold anything (start it with `-{letter}`)"
        ));
    }
    if mode.command {
        // A syntax check runs nothing of its code. Only for `-c`: a shell reading
        // standard input from a terminal is interactive, and an interactive shell
        // ignores `-n`.
        if mode.noexec && spec.noexec {
            return Unwrap::Command;
        }
        return script_at(args, i, false);
    }
    if mode.stdin || i >= args.len() {
        return Unwrap::Stdin;
    }
    script_file(args, i)
}

/// A shell given a script file at `args[i]`: itself the command, unless the "file" is
/// really a stream, which makes it read commands from input.
fn script_file(args: &[Arg], i: usize) -> Unwrap {
    let name = &args[0].text;
    if !args[i].literal {
        return Unwrap::Opaque(format!("`{name}` runs a script whose name is produced by an expansion"));
    }
    // Compare the path with `//` and `/./` folded (`/dev//stdin`).
    let Some(script) = folded_path(&args[i].text) else {
        return Unwrap::Opaque(format!(
            "`{name}` runs a script whose path has `..`: through a symlink it may be any file, or a stream such as /dev/stdin"
        ));
    };
    if script == "/dev/stdin" || script == "/dev/tty" || script.starts_with("/dev/fd/") || script.starts_with("/proc/")
    {
        return Unwrap::Stdin;
    }
    Unwrap::Command
}

/// fish reads `config.fish` and `conf.d` at every start unless given `-N`
/// (`--no-config`); its code is given as the value of `-c`/`--command`.
fn fish(args: &[Arg]) -> Unwrap {
    let mut clean = false;
    let mut code = None;
    let mut i = 1;
    while let Some(a) = args.get(i) {
        if !a.literal {
            return Unwrap::Opaque("an argument of `fish` is produced by an expansion".into());
        }
        match a.text.as_str() {
            "-N" | "--no-config" => clean = true,
            "-n" | "--no-execute" | "-P" | "--private" => {}
            "-c" | "--command" if code.is_none() => {
                code = Some(i + 1);
                i += 1;
            }
            "--" => {
                i += 1;
                break;
            }
            t if t.starts_with('-') => {
                return Unwrap::Opaque(format!("`fish` given the option `{t}`, which is not followed"));
            }
            _ => break,
        }
        i += 1;
    }
    if !clean {
        return Unwrap::Opaque(
            "`fish` first runs the user's `config.fish`, which may hold anything (start it with `-N`)".into(),
        );
    }
    match code {
        Some(k) => script_at(args, k, false),
        None if i >= args.len() => Unwrap::Stdin,
        None => script_file(args, i),
    }
}
