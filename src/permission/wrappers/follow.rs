//! Commands that run another command: which of their words is the wrapped command.
//!
//! The walking code. Each wrapper's options are data in `wrapper_table.rs`, read by the
//! option parsers of `options.rs` the way the wrapper's own parser reads them; most
//! wrappers are read from their table row alone ([`unwrap_row`]). The few whose command
//! line has a shape no row describes have a function here, each saying why it is not
//! data: `env` and `sudo` (assignments among their options), `su`/`runuser`, `sg`,
//! `xargs` and `parallel` (words filled in from their input), `valgrind` (any `--name`
//! but a few families), `gdb` (options up to `--args`) and `find` (actions anywhere).
//! Anything a table does not know makes the command opaque rather than guessing where
//! the wrapped command starts.

use super::options::{EnvValue, Given, Parsed, Spec, informational, parse, parse_words};
use super::shells::{SHELLS, UNANALYSED_SHELLS, shell};
use super::table::*;
use super::unwrap::{Unwrap, basename, inner, script_at};
use crate::permission::words::arg::Arg;
use crate::permission::words::vars::{assignment_name, risky_setting};

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
    "parallel",
    "setsid",
    "ionice",
    "taskset",
    "numactl",
    "chrt",
    "prlimit",
    "cgexec",
    "watch",
    "flock",
    "strace",
    "ltrace",
    "valgrind",
    "catchsegv",
    "unbuffer",
    "rlwrap",
    "script",
    "busybox",
    "caffeinate",
    "fakeroot",
    "faketime",
    "eatmydata",
    "torsocks",
    "proxychains",
    "proxychains4",
];

/// Wrappers that are parts themselves and also contribute the wrapped command
/// (`sudo git` is both sudo and git; `find -exec rm` is both find and rm). These change
/// the user, the privileges, the root directory or the namespaces the command runs in,
/// or (`gdb --args`) control it.
pub const VISIBLE_WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "su",
    "runuser",
    "sg",
    "pkexec",
    "setpriv",
    "chroot",
    "unshare",
    "nsenter",
    "systemd-run",
    "bwrap",
    "gdb",
    "find",
];

/// Wrappers that are always opaque: their options or the way they start the command
/// cannot be followed reliably from the text.
pub const OPAQUE_WRAPPERS: &[&str] = &["firejail"];

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
    // Runs a command (`-C`) or expands its word list (`-W '$(...)'`).
    "compgen",
    "complete",
    // Binds keys to commands.
    "bind",
];

/// Builtins that assign variables named by their arguments.
const ASSIGNING_BUILTINS: &[&str] = &[
    "export", "declare", "typeset", "local", "readonly", "read", "printf", "getopts", "let", "unset",
];

/// How many wrappers deep the check of input-filled words follows a command.
const FEED_DEPTH: usize = 16;

/// Whether the command word `word` (a name or a path) names one of the [`SHELLS`].
pub(crate) fn is_shell(word: &str) -> bool {
    let name = basename(word);
    SHELLS.contains(&name) || UNANALYSED_SHELLS.contains(&name)
}

/// Whether the command named `name` runs other commands or code given in its arguments.
fn runs_arguments(name: &str) -> bool {
    TRANSPARENT_WRAPPERS.contains(&name)
        || VISIBLE_WRAPPERS.contains(&name)
        || OPAQUE_WRAPPERS.contains(&name)
        || is_shell(name)
        || OPAQUE_BUILTINS.contains(&name)
}

// ---------------------------------------------------------------------------------------
// Unwrapping

/// Skips the `NAME=VALUE` words `env` puts in the environment: every word containing
/// `=` (env does not check the name: `a-b=c` and `./x=y` are assignments too).
fn opaque_if_risky_assignments(args: &[Arg], mut i: usize) -> Result<usize, String> {
    while i < args.len() {
        let a = &args[i];
        let Some((name, _)) = a.text.split_once('=') else {
            break;
        };
        if !a.literal && (name.contains('$') || name.contains('`')) {
            return Err("an assignment name is produced by an expansion".into());
        }
        let value = a.literal.then(|| a.text.split_once('=').map_or("", |(_, v)| v));
        if let Some(reason) = risky_setting(assignment_name(&a.text).unwrap_or(name), value) {
            return Err(reason);
        }
        i += 1;
    }
    Ok(i)
}

/// Opaque when any `NAME=value` among `values` sets a risky variable.
fn opaque_if_risky_values<'a>(values: impl Iterator<Item = &'a str>) -> Result<(), String> {
    for v in values {
        let (name, value) = v.split_once('=').map_or((v, None), |(n, value)| (n, Some(value)));
        if let Some(reason) = risky_setting(name, value) {
            return Err(reason);
        }
    }
    Ok(())
}

/// How the wrapper builds the command: `check` when words it fills in at run time must
/// be checked (off while that check itself looks at nested wrappers).
#[derive(Clone, Copy)]
struct Ctx {
    check: bool,
}

/// Decides what `args[0]` (a literal command word) does with `args[1..]`.
pub(crate) fn unwrap(args: &[Arg]) -> Unwrap {
    unwrap_with(args, Ctx { check: true })
}

/// What `args[0]` does with its arguments, without checking where words filled in
/// from its input land (`xargs find` as if no words were added): what it runs at the
/// least.
pub(crate) fn unwrap_unchecked(args: &[Arg]) -> Unwrap {
    unwrap_with(args, Ctx { check: false })
}

fn unwrap_with(args: &[Arg], ctx: Ctx) -> Unwrap {
    match unwrap_inner(args, ctx) {
        Ok(u) | Err(u) => u,
    }
}

/// `Parsed` or the opaque reason.
fn opts(args: &[Arg], from: usize, spec: &Spec) -> Result<Parsed, Unwrap> {
    let p = parse(args, from, spec).map_err(Unwrap::Opaque)?;
    env_hazard(args, &p, spec.env)?;
    Ok(p)
}

/// Opaque when an option that sets a variable in the wrapped command's environment
/// (`env`: the keys and what their value holds) sets a risky one.
fn env_hazard(args: &[Arg], p: &Parsed, env: &[(&str, EnvValue)]) -> Result<(), Unwrap> {
    for (key, kind) in env {
        for v in p.values(key) {
            let (name, value) = match kind {
                EnvValue::Name => (v, None),
                EnvValue::Assignment => match v.split_once('=') {
                    Some((n, value)) => (n, Some(value)),
                    None => (v, None),
                },
            };
            if let Some(reason) = risky_setting(name, value) {
                return Err(Unwrap::Opaque(format!("`{}` {reason}", basename(&args[0].text))));
            }
        }
    }
    Ok(())
}

fn unwrap_inner(args: &[Arg], ctx: Ctx) -> Result<Unwrap, Unwrap> {
    let name = basename(&args[0].text);
    if OPAQUE_BUILTINS.contains(&args[0].text.as_str()) {
        // `hash` only changes what names run with `-p`, alone or bundled (`-rp`).
        let sets_path = args[1..]
            .iter()
            .any(|a| !a.literal || (a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains('p')));
        if args[0].text == "hash" && !sets_path {
            return Ok(Unwrap::Command);
        }
        return Ok(Unwrap::Opaque(format!(
            "`{}` runs code that is not visible in the text",
            args[0].text
        )));
    }
    if ASSIGNING_BUILTINS.contains(&args[0].text.as_str()) {
        let data_words = matches!(args[0].text.as_str(), "printf" | "let");
        // printf's first word may expand to `-v`, making the next one a name.
        let printf_name = args.get(1).is_some_and(|a| a.text == "-v") && args.get(2).is_some_and(|a| !a.literal);
        if args[0].text == "printf" && (args.get(1).is_some_and(|a| !a.literal) || printf_name) {
            return Ok(Unwrap::Opaque(
                "the first argument of `printf` is produced by an expansion and may be `-v NAME`".into(),
            ));
        }
        for a in &args[1..] {
            if !a.literal && !data_words {
                // A name part that is not plain may expand to any name (`{PATH,x}=1`,
                // `PAT?=x` matching a file, `$n=1`).
                let name_part = a.text.split('=').next().unwrap_or("");
                let plain = name_part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if !plain {
                    return Ok(Unwrap::Opaque(format!(
                        "`{}` assigns a variable whose name is produced by an expansion",
                        args[0].text
                    )));
                }
            }
            let word = a.text.trim_start_matches('-');
            let candidate = assignment_name(&a.text).unwrap_or(word);
            let value = a.text.split_once('=').filter(|_| a.literal).map(|(_, v)| v);
            if let Some(reason) = risky_setting(candidate, value) {
                return Ok(Unwrap::Opaque(reason));
            }
        }
        if args[0].text == "let" && args[1..].iter().any(|a| a.text.contains('$') || a.text.contains('`')) {
            return Ok(Unwrap::Opaque("`let` evaluates expanded text as arithmetic".into()));
        }
        return Ok(Unwrap::Command);
    }
    if is_shell(name) {
        return Ok(shell(args));
    }
    if OPAQUE_WRAPPERS.contains(&name) {
        return Ok(Unwrap::Opaque(format!(
            "`{name}` may run its command through a shell and loads profiles that change what runs"
        )));
    }
    if let Some(row) = ROWS.iter().find(|r| r.name == name) {
        return unwrap_row(args, row);
    }
    let u = match name {
        "env" => env(args)?,
        "xargs" => xargs(args, ctx)?,
        "parallel" => parallel(args, ctx)?,
        "valgrind" => valgrind(args)?,
        "su" | "runuser" => su(args, name == "runuser")?,
        "sg" => sg(args)?,
        "sudo" => sudo(args)?,
        "gdb" => gdb(args)?,
        "find" => find(args, ctx),
        _ => Unwrap::Command,
    };
    Ok(u)
}

/// `env [OPTIONS] [-] [NAME=VALUE]... CMD`. Not data: after its options come
/// assignments (any word with `=`), each checked for a risky variable, and a lone `-`
/// means `-i`; `-S` splits a string into a command.
fn env(args: &[Arg]) -> Result<Unwrap, Unwrap> {
    let mut p = opts(args, 1, &ENV)?;
    if informational(&p, "") {
        return Ok(Unwrap::Command);
    }
    if p.has("S") {
        return Ok(Unwrap::Opaque("`env -S` splits a string into a command".into()));
    }
    // A lone `-` after the options means -i.
    if args.get(p.first).is_some_and(|a| a.text == "-") {
        p.first += 1;
    }
    let i = opaque_if_risky_assignments(args, p.first).map_err(Unwrap::Opaque)?;
    Ok(inner(args, i, false))
}

/// `sg [-] GROUP [-c] CODE`. Not data: sg has no options of its own but an optional
/// `-` before the group and an optional `-c` before the code, which is always run by
/// `/bin/sh -c`; any other word starting with `-` is unknown.
fn sg(args: &[Arg]) -> Result<Unwrap, Unwrap> {
    // sg [-] GROUP [-c] COMMAND: the command is run by /bin/sh -c.
    let mut i = 1;
    if args.get(i).is_some_and(|a| a.text == "-") {
        i += 1;
    }
    i += 1;
    if args.get(i).is_some_and(|a| a.text == "-c") {
        i += 1;
    }
    if i >= args.len() {
        return Ok(Unwrap::Opaque(
            "`sg` without a command starts a shell that reads standard input".into(),
        ));
    }
    if args[1..]
        .iter()
        .any(|a| a.text.starts_with('-') && a.text != "-" && a.text != "-c")
    {
        return Ok(Unwrap::Opaque("`sg` given an option we do not know".into()));
    }
    Ok(script_at(args, i, true))
}

/// `sudo [OPTIONS] [NAME=VALUE]... [OPTIONS] CMD`. Not data: sudo reads assignments
/// among its options (and options again after them), `-h` is help alone but a host
/// name before more words, and `-s`/`-i` run the command words through a shell.
fn sudo(args: &[Arg]) -> Result<Unwrap, Unwrap> {
    // sudo reads NAME=VALUE words (any word with `=` not starting with `/`)
    // among its options, and options again after them.
    let mut p = opts(args, 1, &SUDO)?;
    let mut i = p.first;
    loop {
        let ended = i > 0 && args[i - 1].text == "--";
        let start = i;
        while !ended && i < args.len() && !args[i].text.starts_with('/') && args[i].text.contains('=') {
            opaque_if_risky_values(std::iter::once(args[i].text.as_str())).map_err(Unwrap::Opaque)?;
            i += 1;
        }
        if i > start && i < args.len() && args[i].text.starts_with('-') {
            let more = opts(args, i, &SUDO)?;
            p.opts.extend(more.opts);
            i = more.first;
            continue;
        }
        break;
    }
    if p.opts.iter().any(|o| o.key == "h" && o.value.is_none()) {
        // A bare -h is help, unless a word follows: sudo then takes that word
        // for a host name.
        if args.len() > 2 {
            return Ok(Unwrap::Opaque("`sudo -h` followed by words names a host".into()));
        }
        return Ok(Unwrap::Command);
    }
    if informational(&p, "V") {
        return Ok(Unwrap::Command);
    }
    if p.has("e") || p.has("l") || p.has("v") || p.has("K") {
        return Ok(Unwrap::Command);
    }
    if p.has("s") || p.has("i") {
        if i >= args.len() {
            return Ok(Unwrap::Opaque(
                "`sudo -s`/`-i` without a command starts a shell that reads standard input".into(),
            ));
        }
        return Ok(Unwrap::ScriptJoin {
            start: i,
            visible: true,
        });
    }
    Ok(inner(args, i, true))
}

/// A wrapper read from its row alone.
fn unwrap_row(args: &[Arg], row: &Row) -> Result<Unwrap, Unwrap> {
    // `nice -10 cmd`, `nice --10 cmd`, `nice -+10 cmd`: an adjustment, not options.
    let adjustment = row.adjustment
        && args.get(1).is_some_and(|a| {
            let t = a.text.as_str();
            let digits = t
                .strip_prefix("--")
                .or_else(|| t.strip_prefix("-+"))
                .or_else(|| t.strip_prefix('-'))
                .unwrap_or("");
            a.literal && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
        });
    let from = if adjustment { 2 } else { 1 };
    let p = match row.options {
        Options::Getopt(spec) => opts(args, from, spec)?,
        Options::Words(words) => {
            let p = parse_words(args, from, words).map_err(Unwrap::Opaque)?;
            env_hazard(args, &p, words.env)?;
            p
        }
    };
    if let Some((_, reason)) = row.opaque.iter().find(|(key, _)| p.has(key)) {
        return Ok(Unwrap::Opaque((*reason).to_owned()));
    }
    for (key, prefixes, reason) in row.opaque_values {
        if p.values(key).any(|v| prefixes.iter().any(|x| v.starts_with(x))) {
            return Ok(Unwrap::Opaque((*reason).to_owned()));
        }
    }
    for (key, names) in row.only_values {
        if let Some(v) = p
            .values(key)
            .find(|v| !names.contains(&v.split('=').next().unwrap_or(v)))
        {
            let name = v.split('=').next().unwrap_or(v);
            return Ok(Unwrap::Opaque(format!(
                "`{} -{key} {name}=` may change what runs",
                row.name
            )));
        }
    }
    if informational(&p, "") || row.runs_nothing.iter().any(|key| p.has(key)) {
        return Ok(Unwrap::Command);
    }
    if args
        .get(p.first)
        .is_some_and(|a| row.subcommands.contains(&a.text.as_str()))
    {
        return Ok(Unwrap::Command);
    }
    let start = p.first + row.skip;
    if row.needs_command && start >= args.len() {
        return Ok(Unwrap::Opaque(format!(
            "`{}` without a command starts a shell that reads standard input",
            row.name
        )));
    }
    Ok(match row.code {
        Code::Command => inner(args, start, row.visible),
        Code::Joined { direct } if start < args.len() && !direct.iter().any(|k| p.has(k)) => Unwrap::ScriptJoin {
            start,
            visible: row.visible,
        },
        Code::Joined { .. } => inner(args, start, row.visible),
        Code::AfterWord(words) => match args.get(start) {
            Some(a) if a.literal && words.contains(&a.text.as_str()) => script_at(args, start + 1, row.visible),
            _ => inner(args, start, row.visible),
        },
        Code::OptionValue(key) => match p.last(key) {
            Some(Given {
                value_index: Some(k), ..
            }) => script_at(args, *k, row.visible),
            Some(_) => Unwrap::Opaque(format!("`{}` command string attached to its option", row.name)),
            None => Unwrap::Stdin,
        },
    })
}

/// `su` and `runuser`: `-c CODE` is run by the user's shell; without it the shell reads
/// standard input; `runuser -u USER CMD` runs CMD directly. Not data: which of these
/// applies depends on several options together, extra operands go to the user's shell,
/// and `-s SHELL` must name a known shell.
fn su(args: &[Arg], runuser: bool) -> Result<Unwrap, Unwrap> {
    let name = basename(&args[0].text);
    let p = opts(args, 1, &SU)?;
    if informational(&p, "hV") {
        return Ok(Unwrap::Command);
    }
    if let Some(shell) = p.last("s").and_then(|g| g.value.as_deref())
        && !is_shell(shell)
    {
        return Ok(Unwrap::Opaque(format!(
            "`{name} -s {shell}` runs a program we do not know"
        )));
    }
    if runuser && p.has("u") {
        if p.operands.is_empty() {
            return Ok(Unwrap::Command);
        }
        if !p.operands_at_end(args.len()) {
            return Ok(Unwrap::Opaque(format!(
                "`{name}` takes options from among the command's words"
            )));
        }
        return Ok(inner(args, p.first, true));
    }
    if p.has("u") {
        return Ok(Unwrap::Command);
    }
    let mut operands = p.operands.clone();
    if operands.first().is_some_and(|&i| args[i].text == "-") {
        operands.remove(0);
    }
    match p.last("c") {
        Some(Given {
            value_index: Some(k), ..
        }) => Ok(script_at(args, *k, true)),
        Some(_) => Ok(Unwrap::Opaque(format!(
            "`{name}` command string attached to its option"
        ))),
        None if operands.len() > 1 => Ok(Unwrap::Opaque(format!(
            "`{name}` passes its extra arguments to the user's shell"
        ))),
        None => Ok(Unwrap::Opaque(format!(
            "`{name}` without -c starts the user's shell, which reads standard input"
        ))),
    }
}

/// `xargs`: the command gets words from the input, appended or in place of the
/// replace-string. Not data: where its input words land (the command word, a nested
/// wrapper's options, shell code) decides whether the command is known.
fn xargs(args: &[Arg], ctx: Ctx) -> Result<Unwrap, Unwrap> {
    let p = opts(args, 1, &XARGS)?;
    // `--show-limits` prints the limits and still runs the command.
    if informational(&p, "") {
        return Ok(Unwrap::Command);
    }
    if p.first >= args.len() {
        return Ok(Unwrap::Opaque(
            "`xargs` without a command runs `echo` with words read from its input".into(),
        ));
    }
    if ctx.check {
        // -I R, -i[R], --replace[=R]; the last one given wins; default `{}`.
        let replace = p
            .opts
            .iter()
            .rev()
            .find(|o| o.key == "I" || o.key == "i")
            .map(|o| o.value.clone().unwrap_or_else(|| "{}".to_owned()));
        let feed = match &replace {
            Some(r) => Feed::Replaced(r),
            None => Feed::Appended,
        };
        if let Some(reason) = feed_hazard(&args[p.first..], &feed, FEED_DEPTH) {
            return Ok(Unwrap::InputCode(format!("`xargs` {reason}")));
        }
    }
    Ok(inner(args, p.first, false))
}

/// `parallel CMD ::: ARGS`: the command words are joined by spaces and run by a shell,
/// with each input in place of the replacement strings (`{}`, `{.}`, ...) or appended.
/// Not data: its own syntax (`:::`), the words joined for a shell, and the input words
/// checked like xargs's.
fn parallel(args: &[Arg], ctx: Ctx) -> Result<Unwrap, Unwrap> {
    let mut i = 1;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if !t.starts_with('-') || t == "-" {
            break;
        }
        let is_count = |v: &str| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || "+-%".contains(c));
        match t {
            "--" => {
                i += 1;
                break;
            }
            "-k" | "--keep-order" | "-0" | "--null" | "-v" | "--bar" | "--progress" | "--eta" | "--will-cite"
            | "--tag" | "--dry-run" => i += 1,
            "-j" | "--jobs" | "-n" | "--max-args" | "-N" => {
                if !args.get(i + 1).is_some_and(|v| v.literal && is_count(&v.text)) {
                    return Ok(Unwrap::Opaque(format!("`parallel {t}` given an unusual value")));
                }
                i += 2;
            }
            _ => {
                let value = t
                    .strip_prefix("--jobs=")
                    .or_else(|| t.strip_prefix("-j"))
                    .or_else(|| t.strip_prefix("--max-args="));
                if value.is_some_and(is_count) {
                    i += 1;
                } else {
                    return Ok(Unwrap::Opaque(format!(
                        "`parallel` has options we do not follow, such as `{}`",
                        crate::permission::words::arg::clip(t)
                    )));
                }
            }
        }
    }
    let end = args[i..]
        .iter()
        .position(|a| matches!(a.text.as_str(), ":::" | "::::" | ":::+" | "::::+"))
        .map_or(args.len(), |p| i + p);
    if end == i {
        return Ok(Unwrap::InputCode(
            "`parallel` without a command runs its inputs as commands".into(),
        ));
    }
    let words = &args[i..end];
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./+@%:=-{}".contains(c);
    if let Some(bad) = words.iter().find(|a| !a.literal || !a.text.chars().all(plain)) {
        return Ok(Unwrap::Opaque(format!(
            "`parallel` joins its command words and runs them with a shell; `{}` is not a plain word",
            crate::permission::words::arg::clip(&bad.text)
        )));
    }
    if words.iter().any(|a| a.text.contains("{=")) {
        return Ok(Unwrap::Opaque("`parallel {= =}` runs Perl code".into()));
    }
    if ctx.check {
        let feed = if words.iter().any(|a| a.text.contains('{')) {
            Feed::Replaced("{")
        } else {
            Feed::Appended
        };
        if let Some(reason) = feed_hazard(words, &feed, FEED_DEPTH) {
            return Ok(Unwrap::InputCode(format!("`parallel` {reason}")));
        }
    }
    // The words after `:::` are data appended to the command, like input words.
    Ok(Unwrap::Inner {
        start: i,
        visible: false,
    })
}

/// `valgrind [options] prog args`: valgrind options are always one word (`-q`,
/// `--tool=memcheck`); valgrind matches them exactly. Not data: it accepts any
/// `--name=value` except the families that run programs (`--db-*`, `--vgdb*`), a rule
/// on names no fixed table holds.
fn valgrind(args: &[Arg]) -> Result<Unwrap, Unwrap> {
    let mut i = 1;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if !a.literal {
            return Ok(Unwrap::Opaque(
                "an argument of `valgrind` is produced by an expansion".into(),
            ));
        }
        if !t.starts_with('-') {
            break;
        }
        let name = t.trim_start_matches('-').split('=').next().unwrap_or("");
        if matches!(t, "-h" | "--help" | "--help-debug" | "--version") {
            return Ok(Unwrap::Command);
        }
        let short_ok = matches!(t, "-q" | "-v" | "-d" | "-s");
        let long_ok = t.starts_with("--") && !name.is_empty() && !name.starts_with("db-") && !name.starts_with("vgdb");
        if !short_ok && !long_ok {
            return Ok(Unwrap::Opaque(format!("`valgrind` given the option `{t}`")));
        }
        i += 1;
    }
    Ok(inner(args, i, false))
}

/// `gdb [options] --args prog args`: gdb is a part, and so is the program it loads.
/// Not data: the program starts after `--args`, wherever it is, and options before it
/// take `=` values or the next word by name.
fn gdb(args: &[Arg]) -> Result<Unwrap, Unwrap> {
    const FLAGS: &[&str] = &[
        "q",
        "quiet",
        "silent",
        "batch",
        "batch-silent",
        "nx",
        "n",
        "nh",
        "tui",
        "readnow",
        "readnever",
        "write",
        "statistics",
        "return-child-result",
    ];
    const VALUES: &[&str] = &[
        "ex",
        "iex",
        "x",
        "ix",
        "eval-command",
        "init-eval-command",
        "command",
        "init-command",
        "cd",
        "d",
        "directory",
        "p",
        "pid",
        "se",
        "s",
        "symbols",
        "e",
        "exec",
        "c",
        "core",
        "data-directory",
        "D",
        "tty",
        "b",
        "l",
    ];
    let Some(at) = args.iter().position(|a| a.text == "--args" || a.text == "-args") else {
        return Ok(Unwrap::Command);
    };
    let mut i = 1;
    while i < at {
        let a = &args[i];
        let t = a.text.trim_start_matches('-');
        let name = t.split('=').next().unwrap_or(t);
        if !a.literal || !a.text.starts_with('-') {
            return Ok(Unwrap::Opaque(
                "`gdb` given arguments before --args that we do not follow".into(),
            ));
        }
        if FLAGS.contains(&name) {
            i += 1;
        } else if VALUES.contains(&name) {
            i += if t.contains('=') { 1 } else { 2 };
        } else {
            return Ok(Unwrap::Opaque(format!("`gdb` given the option `{}`", a.text)));
        }
    }
    if i != at {
        return Ok(Unwrap::Opaque("`gdb` options run into --args".into()));
    }
    Ok(inner(args, at + 1, true))
}

/// How a wrapper fills in words of the command it runs at run time.
enum Feed<'a> {
    /// Input words are appended to the command (`xargs cmd`, `parallel cmd`).
    Appended,
    /// Every occurrence of the string is replaced (`xargs -I R`, `find -exec ... {}`).
    Replaced(&'a str),
}

impl Feed<'_> {
    fn in_any(&self, words: &[Arg]) -> bool {
        match self {
            Feed::Appended => false,
            Feed::Replaced(r) => words.iter().any(|w| w.text.contains(r)),
        }
    }
}

/// Why words a wrapper fills in at run time would decide what runs in `args` (the
/// wrapped command), or `None` when they only become arguments of a known command:
/// the replace-string in a command word, in a wrapper's options or operands, or in a
/// shell's code string; appended words that would become the command, a wrapper's
/// operands or shell code.
fn feed_hazard(args: &[Arg], feed: &Feed, depth: usize) -> Option<String> {
    let what = match feed {
        Feed::Appended => "appends its input words".to_owned(),
        Feed::Replaced(r) => format!("replaces `{r}` with its input"),
    };
    let mut a = args;
    for _ in 0..depth {
        let word = a.first()?;
        if feed.in_any(&a[..1]) {
            return Some(format!("{what}, which is in the command word"));
        }
        if !word.literal {
            return None;
        }
        let name = basename(&word.text);
        match unwrap_with(a, Ctx { check: false }) {
            Unwrap::Command => {
                let hazard = runs_arguments(name) && (matches!(feed, Feed::Appended) || feed.in_any(a));
                return hazard.then(|| format!("{what} to `{name}`, which then decides what runs"));
            }
            Unwrap::Inner { start, .. } => {
                if feed.in_any(&a[1..start]) {
                    return Some(format!("{what}, which is in the options of `{name}`"));
                }
                a = &a[start..];
            }
            Unwrap::Script { index, .. } => {
                return feed
                    .in_any(&a[1..=index])
                    .then(|| format!("{what}, which is in the code `{name}` runs"));
            }
            Unwrap::ScriptJoin { .. } | Unwrap::Stdin => {
                let hazard = matches!(feed, Feed::Appended) || feed.in_any(a);
                return hazard.then(|| format!("{what} to `{name}`, which runs them as code"));
            }
            Unwrap::Multi(ranges) => {
                if matches!(feed, Feed::Appended) {
                    return Some(format!("{what} to `{name}`, which could add an action such as -exec"));
                }
                let inside = |k: usize| ranges.iter().any(|&(s, e)| k >= s && k < e);
                if a.iter()
                    .enumerate()
                    .any(|(k, w)| !inside(k) && feed.in_any(std::slice::from_ref(w)))
                {
                    return Some(format!("{what}, which is in the arguments of `{name}`"));
                }
                return ranges
                    .iter()
                    .find_map(|&(s, e)| feed_hazard(&a[s..e], feed, depth.saturating_sub(1)));
            }
            // Opaque here may be only for want of the words filled in later
            // (`parallel sh -c ::: CODE`), so it counts.
            Unwrap::Opaque(reason) | Unwrap::InputCode(reason) => {
                return Some(format!("{what} to a command that is opaque: {reason}"));
            }
        }
    }
    Some(format!("{what} to commands nested deeper than {depth} wrappers"))
}

/// `find ... -exec CMD ... ;` and friends. Not data: actions may come anywhere among
/// find's arguments, each command ends at `;` or `+`, and `{}` is filled in.
fn find(args: &[Arg], ctx: Ctx) -> Unwrap {
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
    // A tilde word (`~`, `~/src`, `~user`) expands to one absolute path, never an action.
    let in_command = |k: usize| ranges.iter().any(|&(s, e)| k > s && k < e);
    let tilde_path = |a: &Arg| {
        a.text.starts_with('~')
            && a.inner.is_empty()
            && a.text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "~/._-+".contains(c))
    };
    if let Some((_, bad)) = args
        .iter()
        .enumerate()
        .find(|(k, a)| !a.literal && !in_command(*k) && !tilde_path(a))
    {
        return Unwrap::Opaque(format!(
            "`find` gets the argument `{}` from an expansion, which could add an action such as -exec",
            crate::permission::words::arg::clip(&bad.text)
        ));
    }
    if ctx.check {
        for &(s, e) in &ranges {
            if let Some(reason) = feed_hazard(&args[s..e], &Feed::Replaced("{}"), FEED_DEPTH) {
                return Unwrap::Opaque(format!("`find -exec` {reason}"));
            }
        }
    }
    if ranges.is_empty() {
        Unwrap::Command
    } else {
        Unwrap::Multi(ranges)
    }
}
