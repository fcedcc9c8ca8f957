//! A structure-aware generator of shell commands for the differential fuzzer: commands are
//! assembled from pieces of shell grammar (words split into quoted and unquoted pieces,
//! brace expansions, globs, wrappers with option bundles and attached or separate values,
//! redirections, assignments, nested `-c` strings, lists, pipelines and compound
//! commands), not from random bytes. `touch p` is the payload: a run in which `touch`
//! executes while the pattern does not name it is a bypass.
//!
//! The generator is deterministic for a seed (splitmix64), so a CI run is repeatable.

/// A small deterministic random source (splitmix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `num / den`.
    fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Programs the generated commands run; each is stubbed by the sandbox.
pub const NAMES: &[&str] = &["touch", "git", "ls", "echo", "cat", "true"];

/// Writes `text` as one shell word that means `text`, split into pieces quoted in
/// different ways (`to"uch"`, `'t'ouch`, `t\ouch`, `$'touch'` in bash only).
fn split_word(rng: &mut Rng, text: &str, bash: bool) -> String {
    if text.is_empty() {
        return "''".into();
    }
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let len = 1 + rng.below(chars.len() - i);
        let piece: String = chars[i..i + len].iter().collect();
        i += len;
        let plain = piece.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=".contains(c));
        match rng.below(if bash { 5 } else { 4 }) {
            0 if plain => out.push_str(&piece),
            0 | 1 => out.push_str(&format!("'{}'", piece.replace('\'', "'\\''"))),
            2 => out.push_str(&format!("\"{}\"", double_escape(&piece))),
            3 => {
                for c in piece.chars() {
                    if c == '\n' {
                        out.push_str("'\n'");
                    } else {
                        out.push('\\');
                        out.push(c);
                    }
                }
            }
            _ => out.push_str(&format!("$'{}'", piece.replace('\\', "\\\\").replace('\'', "\\'"))),
        }
    }
    out
}

fn double_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\"$`\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A word that the shell may turn into `text` or into several words through an
/// expansion assembled from quoted and unquoted pieces.
fn expanding_word(rng: &mut Rng, text: &str) -> String {
    match rng.below(7) {
        // Brace expansion hiding a list of words: `{"touch",p}`.
        0 => format!("{{\"{text}\",p}}"),
        1 => format!("{{{text},}}"),
        // A bracket glob split by quotes: `["t"]ouch`; only matches an existing file.
        2 => {
            let mut c = text.chars();
            let first = c.next().unwrap_or('x');
            format!("[\"{first}\"]{}", c.as_str())
        }
        3 => format!("{text}{{,}}"),
        // A parameter with a default: `${x:-touch}`.
        4 => format!("${{x:-{text}}}"),
        5 => format!("$(echo {text})"),
        _ => format!("`echo {text}`"),
    }
}

/// An option word for `opt` (`-c`), perhaps hidden behind quotes or an expansion.
fn option_word(rng: &mut Rng, opt: &str, bash: bool) -> String {
    match rng.below(6) {
        0..=2 => opt.to_owned(),
        3 => split_word(rng, opt, bash),
        _ => expanding_word(rng, opt),
    }
}

/// Wrappers with their options, as the real programs take them.
const WRAPPERS: &[&str] = &[
    "env",
    "env -i",
    "env -u X",
    "env X=1",
    "env -- ",
    "nice",
    "nice -n 5",
    "nice -n5",
    "nice -5",
    "nice --adjustment=3",
    "timeout 5",
    "timeout -s KILL 5",
    "timeout -k1 5",
    "timeout --signal=TERM 5",
    "timeout -vk 1 5",
    "stdbuf -oL",
    "stdbuf -o L -e0",
    "setsid",
    "nohup",
    "time",
    "time -p",
    "command",
    "command --",
    "exec",
    "builtin",
    "flock f",
    "flock -n f",
    "flock -w1 f",
    "ionice -c3",
    "ionice -c 2 -n7",
    "xargs",
    "xargs -0",
    "xargs -n1",
    "xargs -n 1",
    "xargs -I{}",
    "xargs -r",
    "xargs --process-slot-var=SLOT",
];

/// A simple command running one of [`NAMES`] (mostly the payload), with arguments.
fn simple(rng: &mut Rng, bash: bool) -> String {
    let name = if rng.chance(2, 3) { "touch" } else { rng.pick(NAMES) };
    let word = match rng.below(5) {
        0 | 1 => name.to_owned(),
        2 | 3 => split_word(rng, name, bash),
        _ => expanding_word(rng, name),
    };
    let arg = match rng.below(4) {
        0 => "p".to_owned(),
        1 => expanding_word(rng, "p"),
        2 => "p q".to_owned(),
        _ => split_word(rng, "p", bash),
    };
    format!("{word} {arg}")
}

/// A redirection that writes a file, its target assembled from quoted and unquoted
/// pieces, braces, globs, tildes and variables: the differential test checks that every
/// file written is one the analysis reports.
pub fn write_redirect(rng: &mut Rng, bash: bool) -> String {
    let mut ops = vec![">", ">>", ">|", "<>", "2>", "3>", "1>>", ">&", "2>&"];
    if bash {
        ops.extend(["&>", "&>>"]);
    }
    let op = ops[rng.below(ops.len())];
    let target = match rng.below(if bash { 22 } else { 20 }) {
        0 => "f".to_owned(),
        1 => split_word(rng, "fx", bash),
        2 => "./f".to_owned(),
        3 => "\"f\"x".to_owned(),
        4 => "f{a,b}".to_owned(),
        5 => "{f,g}".to_owned(),
        6 => "f{,}".to_owned(),
        7 => "[f]a".to_owned(),
        8 => "f*".to_owned(),
        9 => "~/f".to_owned(),
        10 => "~+/f".to_owned(),
        11 => "~-/f".to_owned(),
        12 => "$x".to_owned(),
        13 => "${x:-f}".to_owned(),
        14 => "\"$HOME\"/f".to_owned(),
        15 => "f\\ g".to_owned(),
        16 => "f\\*".to_owned(),
        17 => "'f'\"g\"h".to_owned(),
        18 => "\"f\"[a]".to_owned(),
        19 => "${x=f}".to_owned(),
        20 => "$'f\\x41'".to_owned(),
        _ => "f$'\\n'".to_owned(),
    };
    let space = if rng.chance(1, 2) { " " } else { "" };
    // `>&` and `2>&` need a target that is not a number for a file to be written.
    format!("{op}{space}{target}")
}

/// A command of nesting `depth`: wrapped, through a shell, in a list or compound.
pub fn command(rng: &mut Rng, depth: usize, bash: bool) -> String {
    if depth == 0 {
        return simple(rng, bash);
    }
    let inner = |rng: &mut Rng| command(rng, depth - 1, bash);
    match rng.below(16) {
        0 | 1 => {
            let w = rng.pick(WRAPPERS);
            let w = if rng.chance(1, 3) {
                // Hide one word of the wrapper's options behind quotes or an expansion.
                let words: Vec<&str> = w.split(' ').collect();
                let k = rng.below(words.len());
                let mut out: Vec<String> = words.iter().map(|s| s.to_string()).collect();
                out[k] = option_word(rng, words[k], bash);
                out.join(" ")
            } else {
                w.to_owned()
            };
            let input = if w.starts_with("xargs") { "echo q | " } else { "" };
            format!("{input}{w} {}", simple(rng, bash))
        }
        2 | 3 => {
            let shell = rng.pick(&["sh", "bash", "dash"]);
            let flags = rng.pick(&[
                "",
                "-e ",
                "-eu ",
                "-oo errexit nounset ",
                "-o errexit ",
                "-x ",
                "+x ",
                "-- ",
                "-O nullglob ",
                "--norc ",
                "-ec",
                "-oc errexit",
            ]);
            let code = inner(rng);
            let c = option_word(rng, "-c", bash);
            let quoted = format!("'{}'", code.replace('\'', "'\\''"));
            match flags {
                "-ec" => format!("{shell} -ec {quoted}"),
                "-oc errexit" => format!("{shell} -oc errexit {quoted}"),
                _ => format!("{shell} {flags}{c} {quoted}"),
            }
        }
        4 => {
            let code = inner(rng);
            let shell = rng.pick(&["sh", "bash", "dash", "sh -s", "bash -s"]);
            match rng.below(3) {
                0 => format!("echo '{}' | {shell}", code.replace('\'', "'\\''")),
                1 => format!("{shell} <<'EOF'\n{code}\nEOF"),
                _ => format!("{shell} <<EOF\n{code}\nEOF"),
            }
        }
        5 => {
            let a = inner(rng);
            let b = inner(rng);
            let op = rng.pick(&["; ", " && ", " || ", " | ", "\n", " & "]);
            format!("{a}{op}{b}")
        }
        6 => format!("( {} )", inner(rng)),
        7 => format!("{{ {}; }}", inner(rng)),
        8 => format!("if true; then {}; fi", inner(rng)),
        9 => format!("for i in a; do {}; done", inner(rng)),
        10 => format!("case x in x) {};; esac", inner(rng)),
        11 if rng.chance(2, 3) => {
            let redir = write_redirect(rng, bash);
            match rng.below(4) {
                0 => format!("{} {redir}", inner(rng)),
                1 => format!("{redir} {}", inner(rng)),
                2 => format!("{{ {}; }} {redir}", inner(rng)),
                // Files for globs in the target to match.
                _ => format!(": > fa; : > fb; {} {redir}", inner(rng)),
            }
        }
        11 => {
            let redir = rng.pick(&[
                "> f",
                "2>/dev/null",
                ">>l",
                "< /dev/null",
                "&>/dev/null",
                ">&2",
                "2>&1",
                "> ./-c",
                "> ./-exec",
                "<<< x",
                "<<< \"$(echo x)\"",
                "3>&1",
                "2>&-",
            ]);
            if rng.chance(1, 2) {
                format!("{} {redir}", inner(rng))
            } else {
                format!("{redir} {}", inner(rng))
            }
        }
        12 => {
            let assign = rng.pick(&["X=1", "FOO=bar", "LC_ALL=C", "LANG=C.UTF-8", "A=~", "B={a,b}", "C=*"]);
            format!("{assign} {}", inner(rng))
        }
        13 => {
            let exec = option_word(rng, "-exec", bash);
            format!("find . -maxdepth 0 {exec} {} \\;", simple(rng, bash))
        }
        14 => {
            // Make a file whose name is an option, then use a glob that may match it.
            let name = rng.pick(&["-c", "-exec", "touch"]);
            format!(": > ./{name}; {}", inner(rng))
        }
        _ => {
            let sub = inner(rng);
            match rng.below(3) {
                0 => format!("echo \"$({sub})\""),
                1 => format!("echo `{}`", sub.replace('`', "")),
                _ => format!("x=$({sub}); echo $x"),
            }
        }
    }
}

/// Command words that zsh or fish may read as something other than a program: their
/// keywords, precommand modifiers and builtins, functions fish ships, and words the
/// shells expand (`=touch`, `%1`).
const OTHER_SHELL_WORDS: &[&str] = &[
    "not",
    "and",
    "or",
    "begin",
    "end",
    "set",
    "noglob",
    "nocorrect",
    "-",
    "r",
    "builtin",
    "command",
    "exec",
    "eval",
    "source",
    "emulate",
    "alias",
    "function",
    "functions",
    "abbr",
    "psub",
    "trap",
    "export",
    "ll",
    "la",
    "fish_config",
    "__fish_print_hostnames",
    "isatty",
    "time",
    "repeat",
    "foreach",
    "sched",
    "=touch",
    "%1",
    "if",
    "while",
    "switch",
    "case",
    "autoload",
    "zmodload",
    "fc",
    "history",
    "setenv",
    "vared",
];

/// Arguments in plain text: the payload, options, words that name variables, and
/// assignments.
const PLAIN_ARGS: &[&str] = &[
    "p",
    "touch",
    "touch p",
    "-c touch",
    "-c",
    "PATH=bin",
    "path",
    "path=bin",
    "a=b",
    "x",
    "-n 1",
    "-- touch",
    "%1",
    "=touch",
    "-gx PATH bin",
    "fpath",
    "PROMPT=x",
    "1",
    "true",
];

/// Joins parts of a list in plain text.
const PLAIN_OPERATORS: &[&str] = &["; ", " && ", " || ", " | ", " & ", "\n"];

/// One command in plain text (only `PLAIN_CHARACTERS`): what the analysis may give an
/// exact pattern for zsh and fish, so the differential test runs it under both. Mostly
/// the payload behind a word zsh or fish reads its own way.
fn plain(rng: &mut Rng) -> String {
    let mut out = String::new();
    for i in 0..1 + rng.below(3) {
        if i > 0 {
            out.push_str(rng.pick(PLAIN_OPERATORS));
        }
        if rng.chance(1, 4) {
            out.push_str(rng.pick(WRAPPERS).trim_end());
            out.push(' ');
        }
        let word = if rng.chance(1, 2) {
            rng.pick(OTHER_SHELL_WORDS)
        } else {
            rng.pick(NAMES)
        };
        out.push_str(word);
        for _ in 0..rng.below(3) {
            out.push(' ');
            out.push_str(rng.pick(PLAIN_ARGS));
        }
    }
    out
}

/// One generated command: one in four is plain text for zsh and fish; the rest have
/// depth 1 to 3, bash-only pieces in about half of them.
pub fn generate(rng: &mut Rng) -> String {
    if rng.chance(1, 4) {
        return plain(rng);
    }
    let bash = rng.chance(1, 2);
    let depth = 1 + rng.below(3);
    command(rng, depth, bash)
}
