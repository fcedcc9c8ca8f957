//! What the variables and command substitutions of an argument may expand to: values
//! assigned earlier in the command (`d=/; rm -rf $d`), the home directory for `$HOME`,
//! empty for a variable the command never sets (`rm -rf "$DIR"/*` is `rm -rf /*` when
//! `DIR` is unset), and the output of the few commands that only print a path
//! (`$(echo ~)`, `$(dirname /x)`, `$(cd / && pwd)`).
//!
//! An expansion whose value is not known stays as written, so rules see `$X` and do
//! not match it as a path.

use std::collections::HashMap;

use super::super::redirect::normalize_path;
use super::super::walk::parse::Assigned;
use super::super::wrappers::unwrap::basename;
use super::super::{Analysis, Part, analyze};
use super::text::{Byte, Quotes};

/// At most this many forms of one argument are followed.
const MAX_FORMS: usize = 32;

/// Nested substitutions (`$(dirname $(dirname ~/x))`) are evaluated this deep.
const MAX_DEPTH: usize = 4;

/// At most this many command substitutions, holding at most this much code in all, are
/// evaluated per classification (each is parsed again); past that, their output is
/// unknown. A substitution that prints a path is short.
const MAX_EVALUATIONS: usize = 64;
const MAX_EVALUATED_BYTES: usize = 16 * 1024;

/// Variables that are never empty in a running shell: a command that does not assign
/// them cannot make them expand to nothing.
const NEVER_EMPTY: &[&str] = &[
    "PWD",
    "OLDPWD",
    "USER",
    "LOGNAME",
    "SHELL",
    "PATH",
    "HOSTNAME",
    "UID",
    "EUID",
    "PPID",
    "RANDOM",
    "SECONDS",
    "LINENO",
    "BASHPID",
    "BASH",
    "BASH_VERSION",
    "HOSTTYPE",
    "OSTYPE",
    "MACHTYPE",
    "SHLVL",
    "$",
    "?",
    "#",
    "!",
    "-",
    "0",
];

/// One value a variable may hold.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    /// Whatever it held when the command started: `~` for `HOME`, maybe empty for a
    /// variable that may be unset.
    Inherited,
    /// This text (its own expansions resolved where they could be).
    Text(String),
    /// Read at run time (`read d`): anything, also empty.
    Read,
}

/// The variables and working directory at one point of a command.
#[derive(Clone, Debug, Default)]
pub(super) struct Env {
    vars: HashMap<String, Vec<Val>>,
    /// The working directory, when a `cd` to a known directory set it.
    pub cwd: Option<String>,
    /// Command substitutions evaluated so far, and the bytes of their code.
    evaluations: usize,
    evaluated_bytes: usize,
}

impl Env {
    /// Applies the assignment `a`: its values replace the variable's earlier ones, or
    /// join them when it may not run or not last. With `always_join`, every assignment
    /// joins (the values a variable may have held at any point).
    pub(super) fn assign(&mut self, a: &Assigned, always_join: bool) {
        let mut values = Vec::new();
        for v in &a.values {
            match v {
                Some(text) => {
                    for form in self.expand(text) {
                        values.push(Val::Text(form));
                    }
                }
                None => values.push(Val::Read),
            }
        }
        let entry = self.vars.entry(a.name.clone()).or_insert_with(|| vec![Val::Inherited]);
        if a.replaces && !always_join {
            entry.clear();
        }
        for v in values {
            if entry.len() < MAX_FORMS && !entry.contains(&v) {
                entry.push(v);
            }
        }
    }

    /// `set -- a b`: the positional parameters become the words after the options.
    pub(super) fn set_positional(&mut self, args: &[String]) {
        let words: Vec<&String> = match args.iter().position(|a| a == "--") {
            Some(k) => args[k + 1..].iter().collect(),
            None => {
                let first = args.iter().position(|a| !a.starts_with(['-', '+']));
                match first {
                    Some(k) => args[k..].iter().collect(),
                    None => return,
                }
            }
        };
        for k in 1..10 {
            let value = words.get(k - 1).map_or_else(String::new, |w| (*w).clone());
            self.vars.insert(k.to_string(), vec![Val::Text(value)]);
        }
        let all: Vec<Val> = words.iter().take(MAX_FORMS).map(|w| Val::Text((*w).clone())).collect();
        self.vars.insert("@".into(), all.clone());
        self.vars.insert("*".into(), all);
    }

    /// The forms `word` may take once its variables and command substitutions are
    /// expanded; the word itself when it has none.
    pub(super) fn expand(&mut self, word: &str) -> Vec<String> {
        self.expand_at(word, 0)
    }

    fn expand_at(&mut self, word: &str, depth: usize) -> Vec<String> {
        if !word.contains(['$', '`']) || depth > MAX_DEPTH {
            return vec![word.to_owned()];
        }
        let mut forms = vec![String::new()];
        let mut rest = word;
        while !rest.is_empty() {
            let (alternatives, used) = self.segment(rest, depth);
            rest = &rest[used..];
            let mut next = Vec::new();
            'outer: for f in &forms {
                for a in &alternatives {
                    if next.len() >= MAX_FORMS {
                        break 'outer;
                    }
                    let joined = format!("{f}{a}");
                    if !next.contains(&joined) {
                        next.push(joined);
                    }
                }
            }
            forms = next;
        }
        forms
    }

    /// The forms of the first piece of `text` (plain text up to the next expansion, or
    /// one expansion) and how many bytes it took.
    fn segment(&mut self, text: &str, depth: usize) -> (Vec<String>, usize) {
        let b = text.as_bytes();
        if b[0] == b'`' {
            // An unclosed substitution runs to the end of the word.
            let (end, code) = match text[1..].find('`') {
                Some(k) => (k + 2, &text[1..k + 1]),
                None => (text.len(), &text[1..]),
            };
            let code = code.to_owned();
            return (self.substitution(&text[..end], &code, depth), end);
        }
        if b[0] != b'$' {
            let end = text
                .char_indices()
                .skip(1)
                .find(|&(_, c)| c == '$' || c == '`')
                .map_or(text.len(), |(k, _)| k);
            return (vec![text[..end].to_owned()], end);
        }
        match b.get(1) {
            Some(b'(') if b.get(2) == Some(&b'(') => {
                // Arithmetic: a number, never a path.
                let end = closing(text, 1).map_or(text.len(), |k| k + 1);
                (vec![text[..end].to_owned()], end)
            }
            Some(b'(') => {
                let (end, code) = match closing(text, 1) {
                    Some(k) => (k + 1, &text[2..k]),
                    None => (text.len(), &text[2..]),
                };
                let code = code.to_owned();
                (self.substitution(&text[..end], &code, depth), end)
            }
            Some(b'{') => {
                let (end, inner) = match text[2..].find('}') {
                    Some(k) => (k + 3, &text[2..k + 2]),
                    None => (text.len(), &text[2..]),
                };
                (self.braced(&text[..end], inner, depth), end)
            }
            Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                let end = text[1..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(text.len(), |k| k + 1);
                (self.variable(&text[..end], &text[1..end], depth), end)
            }
            Some(c) if c.is_ascii_digit() || b"@*#?$!-".contains(c) => {
                (self.variable(&text[..2], &text[1..2], depth), 2)
            }
            _ => (vec!["$".to_owned()], 1),
        }
    }

    /// The forms of the variable `name`, written `written`.
    fn variable(&mut self, written: &str, name: &str, depth: usize) -> Vec<String> {
        let values = self.vars.get(name).cloned().unwrap_or_else(|| vec![Val::Inherited]);
        let mut out = Vec::new();
        for v in values {
            match v {
                Val::Text(t) => out.push(t),
                Val::Read => {
                    out.push(written.to_owned());
                    out.push(String::new());
                }
                Val::Inherited => match name {
                    "HOME" => out.push("~".to_owned()),
                    "PWD" if self.cwd.is_some() => out.extend(self.cwd.clone()),
                    _ if NEVER_EMPTY.contains(&name) => out.push(written.to_owned()),
                    _ => {
                        out.push(written.to_owned());
                        out.push(String::new());
                    }
                },
            }
        }
        let _ = depth;
        dedup(out)
    }

    /// The forms of `${inner}`, written `written`: `${d}`, `${d:-x}`, `${d:?}`, ...
    fn braced(&mut self, written: &str, inner: &str, depth: usize) -> Vec<String> {
        let name_end = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(inner.len());
        let (name, modifier) = inner.split_at(name_end);
        if name.is_empty() {
            // `${#x}`, `${!x}`, `${@}`: a length, an indirection or the positional
            // parameters; not followed.
            return vec![written.to_owned()];
        }
        let values = self.variable(&format!("${name}"), name, depth);
        let (colon, op) = match modifier.strip_prefix(':') {
            Some(rest) => (true, rest),
            None => (false, modifier),
        };
        let non_empty = || values.iter().filter(|v| !v.is_empty()).cloned().collect::<Vec<_>>();
        match op.chars().next() {
            None => values,
            // `${d:?}`, `${d?}`: the shell stops when it is unset (or empty).
            Some('?') => {
                let kept = non_empty();
                if kept.is_empty() {
                    vec![written.to_owned()]
                } else {
                    kept
                }
            }
            Some('-' | '=') => {
                let mut out = if colon { non_empty() } else { values.clone() };
                out.extend(self.expand_at(&op[1..], depth + 1));
                dedup(out)
            }
            Some('+') => {
                let mut out = self.expand_at(&op[1..], depth + 1);
                out.push(String::new());
                dedup(out)
            }
            // `${d%/}` and `${d%%/}` only drop a trailing slash, which paths ignore.
            Some('%') if matches!(op, "%/" | "%%/") => values,
            // `${d%/*}`: the directory part.
            Some('%') if op == "%/*" => values.iter().map(|v| dirname(v)).collect(),
            // Other operators cut or change the value; what is left is not known, but
            // it is empty when the value is.
            _ => {
                let mut out = vec![written.to_owned()];
                if values.iter().any(String::is_empty) {
                    out.push(String::new());
                }
                out
            }
        }
    }

    /// The forms of the command substitution `written` running `code`: what it prints
    /// when that is known, else the substitution as written.
    fn substitution(&mut self, written: &str, code: &str, depth: usize) -> Vec<String> {
        if self.evaluations >= MAX_EVALUATIONS
            || self.evaluated_bytes + code.len() > MAX_EVALUATED_BYTES
            || depth >= MAX_DEPTH
        {
            return vec![written.to_owned()];
        }
        self.evaluations += 1;
        self.evaluated_bytes += code.len();
        // `$(eval echo ~$USER)`: eval runs its words joined, which here are known.
        let code = code.trim_start();
        let code = code.strip_prefix("eval ").unwrap_or(code);
        let analysis = analyze(code);
        let mut child = self.clone();
        match child.output(&analysis, depth + 1) {
            Some(out) if !out.is_empty() => {
                (self.evaluations, self.evaluated_bytes) = (child.evaluations, child.evaluated_bytes);
                dedup(out)
            }
            _ => {
                (self.evaluations, self.evaluated_bytes) = (child.evaluations, child.evaluated_bytes);
                vec![written.to_owned()]
            }
        }
    }

    /// What the commands of `analysis` print, when each of them only prints a known
    /// path or word (or changes directory); `None` when any does something else.
    fn output(&mut self, analysis: &Analysis, depth: usize) -> Option<Vec<String>> {
        if analysis.is_opaque() {
            return None;
        }
        let mut printed = Vec::new();
        let mut assignments = analysis.assignments.iter().peekable();
        let parts = &analysis.parts;
        for (i, part) in parts.iter().enumerate() {
            while let Some(a) = assignments.next_if(|a| a.at <= i) {
                self.assign(a, false);
            }
            // Commands of a substitution in an argument run to make that argument; what
            // they print is not printed here.
            if part.in_substitution {
                continue;
            }
            let mut args = Vec::new();
            for a in part.args.iter().skip(1) {
                args.push(self.expand_at(a, depth));
            }
            let name = basename(&part.command_word);
            // `getent passwd NAME | cut -d: -f6`: that user's home.
            if name == "getent" && args.first().is_some_and(|a| a.iter().any(|w| w == "passwd")) {
                printed.extend(home_of(&parts[i + 1..], &args)?);
                break;
            }
            printed.extend(self.prints(name, &args, depth)?);
        }
        Some(printed)
    }

    /// What the command `name` given the argument forms `args` prints, when it only
    /// prints a known path or word (or changes directory); `None` otherwise.
    fn prints(&mut self, name: &str, args: &[Vec<String>], depth: usize) -> Option<Vec<String>> {
        let out = match name {
            "cd" | "pushd" => {
                let target = operands(args).next().cloned();
                self.cwd = match target.as_deref() {
                    None => Some("~".to_owned()),
                    Some([one]) if !one.contains(['$', '`', '*', '?', '[']) => absolute(one, self.cwd.as_deref()),
                    _ => None,
                };
                Vec::new()
            }
            "echo" => {
                let words: Vec<&Vec<String>> = args
                    .iter()
                    .skip_while(|a| a.iter().all(|w| is_echo_option(w)))
                    .collect();
                joined(&words)
            }
            "printf" => printf(args)?,
            "pwd" => vec![self.cwd.clone()?],
            "dirname" => operands(args).flatten().map(|p| dirname(p)).collect(),
            "basename" => operands(args)
                .take(1)
                .flatten()
                .map(|p| basename(p.trim_end_matches('/')).to_owned())
                .collect(),
            "realpath" => operands(args)
                .flatten()
                .filter_map(|p| absolute(p, self.cwd.as_deref()))
                .collect(),
            // Only `-f`, `-e` and `-m` make readlink print the path itself resolved.
            "readlink"
                if args.iter().flatten().any(|a| {
                    a.starts_with('-') && !a.starts_with("--") && a.contains(['f', 'e', 'm'])
                        || matches!(
                            a.as_str(),
                            "--canonicalize" | "--canonicalize-existing" | "--canonicalize-missing"
                        )
                }) =>
            {
                operands(args)
                    .flatten()
                    .filter_map(|p| absolute(p, self.cwd.as_deref()))
                    .collect()
            }
            "printenv" => {
                let names: Vec<String> = operands(args).flatten().cloned().collect();
                let mut out = Vec::new();
                for n in names {
                    out.extend(self.variable(&format!("${n}"), &n, depth));
                }
                out
            }
            "whoami" | "logname" => vec!["$USER".to_owned()],
            // `ls -d DIR` prints DIR.
            "ls" if args
                .iter()
                .flatten()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('d')) =>
            {
                operands(args).flatten().cloned().collect()
            }
            "id" if args.iter().flatten().any(|a| a == "-un" || a == "-nu") => vec!["$USER".to_owned()],
            "true" | ":" => Vec::new(),
            _ => return None,
        };
        Some(out)
    }
}

/// The home directory `getent passwd NAME` prints, when only filters (`cut`, `awk`,
/// ...) read it after (`rest`); `None` otherwise.
fn home_of(rest: &[Part], args: &[Vec<String>]) -> Option<Vec<String>> {
    if !rest
        .iter()
        .all(|p| matches!(basename(&p.command_word), "cut" | "awk" | "sed" | "head" | "tail"))
    {
        return None;
    }
    let users = args.get(1).cloned().unwrap_or_default();
    Some(
        users
            .iter()
            .map(|u| match u.as_str() {
                "$USER" | "$LOGNAME" | "" => "~".to_owned(),
                "root" => "/root".to_owned(),
                u => format!("/home/{u}"),
            })
            .collect(),
    )
}

/// The words of `args` after its options (the first `--` ends them).
fn operands(args: &[Vec<String>]) -> impl Iterator<Item = &Vec<String>> {
    let mut ended = false;
    args.iter().filter(move |a| {
        if ended {
            return true;
        }
        if a.iter().any(|w| w == "--") {
            ended = true;
            return false;
        }
        !a.iter().all(|w| w.starts_with('-') && w.len() > 1)
    })
}

/// `-n`, `-e`, `-E` and their bundles, which `echo` does not print.
fn is_echo_option(word: &str) -> bool {
    word.strip_prefix('-')
        .is_some_and(|f| !f.is_empty() && f.chars().all(|c| matches!(c, 'n' | 'e' | 'E')))
}

/// Every way of joining one form of each word with spaces.
fn joined(words: &[&Vec<String>]) -> Vec<String> {
    let mut out = vec![String::new()];
    for (k, forms) in words.iter().enumerate() {
        let mut next = Vec::new();
        for o in &out {
            for f in forms.iter() {
                if next.len() < MAX_FORMS {
                    next.push(if k == 0 { f.clone() } else { format!("{o} {f}") });
                }
            }
        }
        out = next;
    }
    out
}

/// What `printf FORMAT ARGS` prints, for formats with only `%s`, `%%` and `\n`.
fn printf(args: &[Vec<String>]) -> Option<Vec<String>> {
    let (format, rest) = args.split_first()?;
    let mut out = Vec::new();
    for f in format {
        let mut values = rest.iter();
        let mut text = String::new();
        let mut chars = f.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek()) {
                ('%', Some('s')) => {
                    chars.next();
                    text.push_str(values.next().and_then(|v| v.first()).map_or("", String::as_str));
                }
                ('%', Some('%')) => {
                    chars.next();
                    text.push('%');
                }
                ('%', _) => return None,
                ('\\', Some('n')) => {
                    chars.next();
                }
                _ => text.push(c),
            }
        }
        out.push(text);
    }
    Some(out)
}

/// `dirname PATH`: the directory part (`/x` → `/`, `~/x` → `~`, `x` → `.`); the
/// parent of a home directory is written `~/..`, which reaches `/`.
fn dirname(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".to_owned();
    }
    if trimmed == "~" {
        return "~/..".to_owned();
    }
    match trimmed.rsplit_once('/') {
        None => ".".to_owned(),
        Some((dir, _)) => {
            let dir = dir.trim_end_matches('/');
            if dir.is_empty() { "/".to_owned() } else { dir.to_owned() }
        }
    }
}

/// `path` made absolute against `cwd` and normalised; `None` when it is relative and
/// the working directory is not known.
fn absolute(path: &str, cwd: Option<&str>) -> Option<String> {
    if path.starts_with(['/', '~']) {
        Some(normalize_path(path))
    } else {
        Some(normalize_path(&format!("{}/{path}", cwd?)))
    }
}

/// The index of the `)` that closes the `(` at `open`, outside quotes; `None` when
/// it is not closed.
fn closing(text: &str, open: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut quotes = Quotes::default();
    let mut i = open;
    while i < b.len() {
        let c = b[i];
        match quotes.take(c) {
            Byte::Escape => i += 1,
            Byte::Quoted => {}
            Byte::Plain => match c {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

fn dedup(mut v: Vec<String>) -> Vec<String> {
    let mut seen = Vec::new();
    v.retain(|x| {
        if seen.contains(x) {
            false
        } else {
            seen.push(x.clone());
            true
        }
    });
    v.truncate(MAX_FORMS);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forms(word: &str) -> Vec<String> {
        Env::default().expand(word)
    }

    #[test]
    fn home_and_unset_variables() {
        assert_eq!(forms("$HOME"), ["~"]);
        assert_eq!(forms("${HOME}/x"), ["~/x"]);
        assert_eq!(forms("${HOME:?}"), ["~"]);
        assert_eq!(forms("$DIR/*"), ["$DIR/*", "/*"]);
        assert_eq!(forms("${DIR:?}/*"), ["$DIR/*"]);
        assert_eq!(forms("${DIR:-/tmp}"), ["$DIR", "/tmp"]);
        assert_eq!(forms("$USER"), ["$USER"]);
    }

    #[test]
    fn substitutions_that_only_print() {
        assert_eq!(forms("$(echo ~)"), ["~"]);
        assert_eq!(forms("`dirname /x`"), ["/"]);
        assert_eq!(forms("$(dirname $(dirname ~/a/b))"), ["~"]);
        assert_eq!(forms("$(cd / && pwd)"), ["/"]);
        assert_eq!(forms("$(printf %s /)"), ["/"]);
        assert_eq!(forms("$(realpath ~/..)"), ["~/.."]);
        assert_eq!(forms("$(date)"), ["$(date)"]);
        assert_eq!(forms("$(dirname ~)"), ["~/.."]);
    }
}
