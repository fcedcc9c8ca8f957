//! Commands that run another command: which of their words is the wrapped command.
//!
//! Each wrapper's options are parsed from a table of its real options (short letters,
//! long names and whether they take a value), the way its own option parser reads them:
//! bundled short options (`-qc CODE`), values attached or separate (`-n5`, `-n 5`,
//! `--signal=KILL`, `--signal KILL`) and, for programs whose long-option table is known
//! to be complete, GNU abbreviations (`--sig` is `--signal`). Anything the table does not
//! know (an unknown option, an ambiguous or unsupported abbreviation, a value where none
//! is taken) makes the command opaque rather than guessing where the wrapped command
//! starts.

use super::shells::{SHELLS, UNANALYSED_SHELLS, shell};
use super::vars::{assignment_name, risky_setting};
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
// Option tables

/// Whether an option takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arity {
    /// A flag.
    No,
    /// A value, attached (`-n5`, `--adjustment=5`) or in the next word.
    Req,
    /// An optional value, only when attached (`-e[EOF]`, `--replace[=R]`).
    Opt,
}

/// One long option: its name, its arity and the key it is recorded under (its short
/// letter when it has one, so `-S` and `--split-string` are the same option).
struct LongOpt {
    name: &'static str,
    arity: Arity,
    key: &'static str,
}

const fn lo(name: &'static str, arity: Arity, key: &'static str) -> LongOpt {
    LongOpt { name, arity, key }
}

use Arity::{No, Opt, Req};

/// The option syntax of one wrapper.
struct Spec {
    /// Short options in getopt syntax: a letter, then `:` for a value or `::` for an
    /// optional attached value.
    short: &'static str,
    /// Long options.
    long: &'static [LongOpt],
    /// Options may follow operands (GNU getopt without `+`); otherwise the first operand
    /// ends the options.
    permute: bool,
    /// `long` lists every long option of the program, so unique prefixes resolve as
    /// getopt resolves them. When false, only exact long names are accepted and an
    /// abbreviation is opaque (the program may have options the table lacks).
    complete: bool,
    /// Options (by key) whose value sets or unsets a variable in the environment of the
    /// command the wrapper runs (`xargs --process-slot-var=NAME`, `strace -E NAME=V`):
    /// a risky one makes the command opaque, whichever wrapper it is given to.
    env: &'static [(&'static str, EnvValue)],
}

/// What the value of an environment-setting option holds.
#[derive(Clone, Copy)]
enum EnvValue {
    /// A variable name (its value is set or removed by the wrapper).
    Name,
    /// `NAME=VALUE`, or `NAME` alone to remove it.
    Assignment,
}

/// One option as given.
struct Given {
    key: &'static str,
    value: Option<String>,
    /// The index of the word holding the value when it was a separate word.
    value_index: Option<usize>,
}

/// The options and operands of one wrapper invocation.
struct Parsed {
    opts: Vec<Given>,
    /// Indexes of the operands, in order (only for permuting wrappers; otherwise the
    /// operands are `first..`).
    operands: Vec<usize>,
    /// The first operand (or `args.len()`).
    first: usize,
}

impl Parsed {
    fn has(&self, key: &str) -> bool {
        self.opts.iter().any(|o| o.key == key)
    }
    fn last(&self, key: &str) -> Option<&Given> {
        self.opts.iter().rev().find(|o| o.key == key)
    }
    fn values(&self, key: &str) -> impl Iterator<Item = &str> {
        self.opts
            .iter()
            .filter(move |o| o.key == key)
            .filter_map(|o| o.value.as_deref())
    }
    /// The operands form one run at the end of the arguments.
    fn operands_at_end(&self, len: usize) -> bool {
        self.operands.iter().enumerate().all(|(k, &i)| i == self.first + k) && self.first + self.operands.len() == len
    }
}

/// The arity and key of the short option `c` in `spec`.
fn short_opt(spec: &'static str, c: char) -> Option<(Arity, &'static str)> {
    if c == ':' {
        return None;
    }
    let pos = spec.find(c)?;
    let key = &spec[pos..pos + c.len_utf8()];
    let rest = &spec[pos + c.len_utf8()..];
    let arity = if rest.starts_with("::") {
        Opt
    } else if rest.starts_with(':') {
        Req
    } else {
        No
    };
    Some((arity, key))
}

/// The long option `name` (without `--`), resolving abbreviations as getopt does.
fn long_opt(cmd: &str, spec: &Spec, name: &str) -> Result<&'static LongOpt, String> {
    if let Some(o) = spec.long.iter().find(|o| o.name == name) {
        return Ok(o);
    }
    let candidates: Vec<&'static LongOpt> = if name.is_empty() {
        Vec::new()
    } else {
        spec.long.iter().filter(|o| o.name.starts_with(name)).collect()
    };
    match candidates.as_slice() {
        [] => Err(format!("`{cmd}` has no option `--{name}` that we know")),
        _ if !spec.complete => Err(format!(
            "`--{name}` abbreviates an option of `{cmd}`, whose full option list we do not know"
        )),
        [one] => Ok(one),
        [first, rest @ ..] => {
            if rest.iter().all(|o| o.key == first.key && o.arity == first.arity) {
                Ok(first)
            } else {
                Err(format!("`--{name}` is an ambiguous abbreviation for `{cmd}`"))
            }
        }
    }
}

/// Parses the options of `args[0]` from `args[from]` with `spec`.
fn parse(args: &[Arg], from: usize, spec: &Spec) -> Result<Parsed, String> {
    let cmd = basename(&args[0].text);
    let mut p = Parsed {
        opts: Vec::new(),
        operands: Vec::new(),
        first: args.len(),
    };
    let value_word = |i: usize, what: &str| -> Result<String, String> {
        match args.get(i) {
            Some(a) if a.literal => Ok(a.text.clone()),
            Some(_) => Err(format!("the value of `{what}` for `{cmd}` is produced by an expansion")),
            None => Err(format!("`{what}` of `{cmd}` needs a value")),
        }
    };
    let mut i = from;
    while i < args.len() {
        let a = &args[i];
        if !a.literal {
            return Err(format!("an argument of `{cmd}` is produced by an expansion"));
        }
        let t = a.text.as_str();
        if t == "--" {
            if p.operands.is_empty() {
                p.first = i + 1;
            }
            if spec.permute {
                p.operands.extend(i + 1..args.len());
                if args[i + 1..].iter().any(|w| !w.literal) {
                    return Err(format!("an argument of `{cmd}` is produced by an expansion"));
                }
            }
            return Ok(p);
        }
        if let Some(body) = t.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (body, None),
            };
            let o = long_opt(cmd, spec, name)?;
            match o.arity {
                No => {
                    if attached.is_some() {
                        return Err(format!("`--{name}` of `{cmd}` takes no value"));
                    }
                    p.opts.push(Given {
                        key: o.key,
                        value: None,
                        value_index: None,
                    });
                }
                Opt => p.opts.push(Given {
                    key: o.key,
                    value: attached,
                    value_index: None,
                }),
                Req => {
                    if attached.is_some() {
                        p.opts.push(Given {
                            key: o.key,
                            value: attached,
                            value_index: None,
                        });
                    } else {
                        let v = value_word(i + 1, t)?;
                        p.opts.push(Given {
                            key: o.key,
                            value: Some(v),
                            value_index: Some(i + 1),
                        });
                        i += 1;
                    }
                }
            }
            i += 1;
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let mut step = 1;
            for (off, c) in t[1..].char_indices() {
                let Some((arity, key)) = short_opt(spec.short, c) else {
                    return Err(format!("`{cmd}` has no option `-{c}` that we know"));
                };
                let rest = &t[1 + off + c.len_utf8()..];
                match arity {
                    No => p.opts.push(Given {
                        key,
                        value: None,
                        value_index: None,
                    }),
                    Opt => {
                        p.opts.push(Given {
                            key,
                            value: (!rest.is_empty()).then(|| rest.to_owned()),
                            value_index: None,
                        });
                        break;
                    }
                    Req => {
                        if rest.is_empty() {
                            let v = value_word(i + 1, &format!("-{c}"))?;
                            p.opts.push(Given {
                                key,
                                value: Some(v),
                                value_index: Some(i + 1),
                            });
                            step = 2;
                        } else {
                            p.opts.push(Given {
                                key,
                                value: Some(rest.to_owned()),
                                value_index: None,
                            });
                        }
                        break;
                    }
                }
            }
            i += step;
            continue;
        }
        if p.operands.is_empty() {
            p.first = i;
        }
        if !spec.permute {
            return Ok(p);
        }
        p.operands.push(i);
        i += 1;
    }
    Ok(p)
}

const HELP: LongOpt = lo("help", No, "help");
const VERSION: LongOpt = lo("version", No, "version");

/// Whether the invocation only prints help or version information.
fn informational(p: &Parsed, letters: &str) -> bool {
    p.has("help") || p.has("version") || p.opts.iter().any(|o| o.key.len() == 1 && letters.contains(o.key))
}

const ENV: Spec = Spec {
    short: "a:C:iS:u:v0",
    long: &[
        lo("argv0", Req, "a"),
        lo("ignore-environment", No, "i"),
        lo("null", No, "0"),
        lo("unset", Req, "u"),
        lo("chdir", Req, "C"),
        lo("debug", No, "v"),
        lo("split-string", Req, "S"),
        lo("block-signal", Opt, "block-signal"),
        lo("default-signal", Opt, "default-signal"),
        lo("ignore-signal", Opt, "ignore-signal"),
        lo("list-signal-handling", No, "list-signal-handling"),
        HELP,
        VERSION,
    ],
    permute: false,
    complete: true,
    env: &[("u", EnvValue::Name)],
};

const TIMEOUT: Spec = Spec {
    short: "fk:ps:v",
    long: &[
        lo("foreground", No, "f"),
        lo("kill-after", Req, "k"),
        lo("preserve-status", No, "p"),
        lo("signal", Req, "s"),
        lo("verbose", No, "v"),
        HELP,
        VERSION,
    ],
    permute: false,
    complete: true,
    env: &[],
};

const NICE: Spec = Spec {
    short: "n:",
    long: &[lo("adjustment", Req, "n"), HELP, VERSION],
    permute: false,
    complete: true,
    env: &[],
};

const NO_OPTIONS: Spec = Spec {
    short: "",
    long: &[HELP, VERSION],
    permute: false,
    complete: true,
    env: &[],
};

const STDBUF: Spec = Spec {
    short: "i:o:e:",
    long: &[
        lo("input", Req, "i"),
        lo("output", Req, "o"),
        lo("error", Req, "e"),
        HELP,
        VERSION,
    ],
    permute: false,
    complete: true,
    env: &[],
};

const TIME: Spec = Spec {
    short: "af:o:pqvV",
    long: &[
        lo("append", No, "a"),
        lo("format", Req, "f"),
        lo("output", Req, "o"),
        lo("portability", No, "p"),
        lo("quiet", No, "q"),
        lo("verbose", No, "v"),
        lo("version", No, "V"),
        HELP,
    ],
    permute: false,
    complete: true,
    env: &[],
};

const XARGS: Spec = Spec {
    short: "0a:d:E:e::I:i::L:l::n:oP:prs:tx",
    long: &[
        lo("null", No, "0"),
        lo("arg-file", Req, "a"),
        lo("delimiter", Req, "d"),
        lo("eof", Opt, "e"),
        lo("replace", Opt, "i"),
        lo("max-lines", Opt, "l"),
        lo("max-args", Req, "n"),
        lo("open-tty", No, "o"),
        lo("interactive", No, "p"),
        lo("no-run-if-empty", No, "r"),
        lo("max-chars", Req, "s"),
        lo("verbose", No, "t"),
        lo("show-limits", No, "show-limits"),
        lo("exit", No, "x"),
        lo("max-procs", Req, "P"),
        lo("process-slot-var", Req, "process-slot-var"),
        HELP,
        VERSION,
    ],
    permute: false,
    complete: true,
    env: &[("process-slot-var", EnvValue::Name)],
};

const SETSID: Spec = Spec {
    short: "cfwhV",
    long: &[
        lo("ctty", No, "c"),
        lo("fork", No, "f"),
        lo("wait", No, "w"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: true,
    env: &[],
};

const IONICE: Spec = Spec {
    short: "c:n:p:P:tu:hV",
    long: &[
        lo("class", Req, "c"),
        lo("classdata", Req, "n"),
        lo("pid", Req, "p"),
        lo("pgid", Req, "P"),
        lo("ignore", No, "t"),
        lo("uid", Req, "u"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: true,
    env: &[],
};

const TASKSET: Spec = Spec {
    short: "acphV",
    long: &[
        lo("all-tasks", No, "a"),
        lo("cpu-list", No, "c"),
        lo("pid", No, "p"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: true,
    env: &[],
};

const CHRT: Spec = Spec {
    short: "abdD:efimoP:prRT:vhV",
    long: &[
        lo("all-tasks", No, "a"),
        lo("batch", No, "b"),
        lo("deadline", No, "d"),
        lo("ext", No, "e"),
        lo("fifo", No, "f"),
        lo("idle", No, "i"),
        lo("max", No, "m"),
        lo("other", No, "o"),
        lo("pid", No, "p"),
        lo("rr", No, "r"),
        lo("reset-on-fork", No, "R"),
        lo("sched-runtime", Req, "T"),
        lo("sched-period", Req, "P"),
        lo("sched-deadline", Req, "D"),
        lo("verbose", No, "v"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const NUMACTL: Spec = Spec {
    short: "ai:m:N:C:p:lsH",
    long: &[
        lo("all", No, "a"),
        lo("interleave", Req, "i"),
        lo("membind", Req, "m"),
        lo("cpunodebind", Req, "N"),
        lo("physcpubind", Req, "C"),
        lo("preferred", Req, "p"),
        lo("localalloc", No, "l"),
        lo("show", No, "s"),
        lo("hardware", No, "H"),
        HELP,
    ],
    permute: false,
    complete: false,
    env: &[],
};

const PRLIMIT: Spec = Spec {
    short: "c::d::e::f::i::l::m::n::q::r::s::t::u::v::x::y::p:o:hV",
    long: &[
        lo("core", Opt, "c"),
        lo("data", Opt, "d"),
        lo("nice", Opt, "e"),
        lo("fsize", Opt, "f"),
        lo("sigpending", Opt, "i"),
        lo("memlock", Opt, "l"),
        lo("rss", Opt, "m"),
        lo("nofile", Opt, "n"),
        lo("msgqueue", Opt, "q"),
        lo("rtprio", Opt, "r"),
        lo("stack", Opt, "s"),
        lo("cpu", Opt, "t"),
        lo("nproc", Opt, "u"),
        lo("as", Opt, "v"),
        lo("locks", Opt, "x"),
        lo("rttime", Opt, "y"),
        lo("pid", Req, "p"),
        lo("output", Req, "o"),
        lo("noheadings", No, "noheadings"),
        lo("raw", No, "raw"),
        lo("verbose", No, "verbose"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const CGEXEC: Spec = Spec {
    short: "g:h",
    long: &[lo("sticky", No, "sticky")],
    permute: false,
    complete: false,
    env: &[],
};

const WATCH: Spec = Spec {
    short: "bcCd::efghn:pq:rs:tvwx",
    long: &[
        lo("beep", No, "b"),
        lo("color", No, "c"),
        lo("no-color", No, "C"),
        lo("differences", Opt, "d"),
        lo("errexit", No, "e"),
        lo("follow", No, "f"),
        lo("chgexit", No, "g"),
        lo("shotsdir", Req, "s"),
        lo("interval", Req, "n"),
        lo("precise", No, "p"),
        lo("equexit", Req, "q"),
        lo("no-rerun", No, "r"),
        lo("no-title", No, "t"),
        lo("no-wrap", No, "w"),
        lo("exec", No, "x"),
        lo("help", No, "h"),
        lo("version", No, "v"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const FLOCK: Spec = Spec {
    short: "sexnoFuw:E:hV",
    long: &[
        lo("shared", No, "s"),
        lo("exclusive", No, "x"),
        lo("unlock", No, "u"),
        lo("nonblocking", No, "n"),
        lo("nb", No, "n"),
        lo("timeout", Req, "w"),
        lo("wait", Req, "w"),
        lo("conflict-exit-code", Req, "E"),
        lo("close", No, "o"),
        lo("no-fork", No, "F"),
        lo("verbose", No, "verbose"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const STRACE: Spec = Spec {
    short: "a:Ab:cCdDe:E:fFhiI:knNo:O:p:P:qrs:S:tTu:U:vVwxX:yYzZ",
    long: &[
        lo("columns", Req, "a"),
        lo("output-append-mode", No, "A"),
        lo("detach-on", Req, "b"),
        lo("summary-only", No, "c"),
        lo("summary", No, "C"),
        lo("debug", No, "d"),
        lo("daemonize", Opt, "D"),
        lo("env", Req, "E"),
        lo("follow-forks", No, "f"),
        lo("output-separately", No, "output-separately"),
        lo("instruction-pointer", No, "i"),
        lo("interruptible", Req, "I"),
        lo("stack-trace", No, "k"),
        lo("stack-traces", No, "k"),
        lo("output", Req, "o"),
        lo("summary-syscall-overhead", Req, "O"),
        lo("attach", Req, "p"),
        lo("trace-path", Req, "P"),
        lo("quiet", Opt, "quiet"),
        lo("relative-timestamps", Opt, "r"),
        lo("string-limit", Req, "s"),
        lo("summary-sort-by", Req, "S"),
        lo("absolute-timestamps", Opt, "absolute-timestamps"),
        lo("timestamps", Opt, "timestamps"),
        lo("syscall-times", Opt, "T"),
        lo("user", Req, "u"),
        lo("summary-columns", Req, "U"),
        lo("no-abbrev", No, "v"),
        lo("summary-wall-clock", No, "w"),
        lo("const-print-style", Req, "X"),
        lo("decode-fds", Opt, "decode-fds"),
        lo("decode-pids", Req, "decode-pids"),
        lo("successful-only", No, "z"),
        lo("failed-only", No, "Z"),
        lo("seccomp-bpf", No, "seccomp-bpf"),
        lo("trace", Req, "trace"),
        lo("signal", Req, "signal"),
        lo("status", Req, "status"),
        lo("abbrev", Req, "abbrev"),
        lo("verbose", Req, "verbose"),
        lo("raw", Req, "raw"),
        lo("read", Req, "read"),
        lo("write", Req, "write"),
        lo("fault", Req, "fault"),
        lo("inject", Req, "inject"),
        lo("kvm", Req, "kvm"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: false,
    env: &[("E", EnvValue::Assignment)],
};

const LTRACE: Spec = Spec {
    short: "a:A:bcCD:e:fF:hiil:Ln:o:p:rs:StTu:Vw:x:",
    long: &[
        lo("align", Req, "a"),
        lo("demangle", No, "C"),
        lo("debug", Req, "D"),
        lo("config", Req, "F"),
        lo("indent", Req, "n"),
        lo("library", Req, "l"),
        lo("output", Req, "o"),
        lo("no-signals", No, "b"),
        lo("where", Req, "w"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const SCRIPT: Spec = Spec {
    short: "ac:eE:fhI:O:B:T:t::m:o:qV",
    long: &[
        lo("append", No, "a"),
        lo("command", Req, "c"),
        lo("echo", Req, "E"),
        lo("return", No, "e"),
        lo("flush", No, "f"),
        lo("force", No, "force"),
        lo("quiet", No, "q"),
        lo("log-in", Req, "I"),
        lo("log-out", Req, "O"),
        lo("log-io", Req, "B"),
        lo("log-timing", Req, "T"),
        lo("logging-format", Req, "m"),
        lo("output-limit", Req, "o"),
        lo("timing", Opt, "t"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: true,
    complete: false,
    env: &[],
};

const SU: Spec = Spec {
    short: "c:fg:G:lmpPTs:u:hVw:",
    long: &[
        lo("command", Req, "c"),
        lo("session-command", Req, "c"),
        lo("fast", No, "f"),
        lo("login", No, "l"),
        lo("preserve-environment", No, "p"),
        lo("pty", No, "P"),
        lo("no-pty", No, "T"),
        lo("shell", Req, "s"),
        lo("group", Req, "g"),
        lo("supp-group", Req, "G"),
        lo("user", Req, "u"),
        lo("whitelist-environment", Req, "w"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: true,
    complete: false,
    env: &[],
};

const SUDO: Spec = Spec {
    short: "Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv",
    long: &[
        lo("askpass", No, "A"),
        lo("background", No, "b"),
        lo("bell", No, "B"),
        lo("close-from", Req, "C"),
        lo("chdir", Req, "D"),
        lo("preserve-env", Opt, "E"),
        lo("edit", No, "e"),
        lo("group", Req, "g"),
        lo("set-home", No, "H"),
        lo("help", No, "help"),
        lo("host", Req, "host"),
        lo("login", No, "i"),
        lo("remove-timestamp", No, "K"),
        lo("reset-timestamp", No, "k"),
        lo("list", No, "l"),
        lo("non-interactive", No, "n"),
        lo("preserve-groups", No, "P"),
        lo("prompt", Req, "p"),
        lo("chroot", Req, "R"),
        lo("role", Req, "r"),
        lo("stdin", No, "S"),
        lo("shell", No, "s"),
        lo("type", Req, "t"),
        lo("command-timeout", Req, "T"),
        lo("other-user", Req, "U"),
        lo("user", Req, "u"),
        lo("version", No, "V"),
        lo("validate", No, "v"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const DOAS: Spec = Spec {
    short: "a:C:Lnsu:",
    long: &[],
    permute: false,
    complete: true,
    env: &[],
};

const CHROOT: Spec = Spec {
    short: "",
    long: &[
        lo("userspec", Req, "userspec"),
        lo("groups", Req, "groups"),
        lo("skip-chdir", No, "skip-chdir"),
        HELP,
        VERSION,
    ],
    permute: false,
    complete: true,
    env: &[],
};

const SETPRIV: Spec = Spec {
    short: "dhV",
    long: &[
        lo("dump", No, "d"),
        lo("nnp", No, "nnp"),
        lo("no-new-privs", No, "nnp"),
        lo("inh-caps", Req, "inh-caps"),
        lo("ambient-caps", Req, "ambient-caps"),
        lo("bounding-set", Req, "bounding-set"),
        lo("ruid", Req, "ruid"),
        lo("euid", Req, "euid"),
        lo("rgid", Req, "rgid"),
        lo("egid", Req, "egid"),
        lo("reuid", Req, "reuid"),
        lo("regid", Req, "regid"),
        lo("clear-groups", No, "clear-groups"),
        lo("keep-groups", No, "keep-groups"),
        lo("init-groups", No, "init-groups"),
        lo("groups", Req, "groups"),
        lo("securebits", Req, "securebits"),
        lo("pdeathsig", Req, "pdeathsig"),
        lo("selinux-label", Req, "selinux-label"),
        lo("apparmor-profile", Req, "apparmor-profile"),
        lo("landlock-access", Req, "landlock-access"),
        lo("landlock-rule", Req, "landlock-rule"),
        lo("reset-env", No, "reset-env"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const UNSHARE: Spec = Spec {
    short: "muinpCTUfrcl:R:w:S:G:hV",
    long: &[
        lo("mount", Opt, "m"),
        lo("uts", Opt, "u"),
        lo("ipc", Opt, "i"),
        lo("net", Opt, "n"),
        lo("pid", Opt, "p"),
        lo("cgroup", Opt, "C"),
        lo("time", Opt, "T"),
        lo("user", Opt, "U"),
        lo("fork", No, "f"),
        lo("kill-child", Opt, "kill-child"),
        lo("mount-proc", Opt, "mount-proc"),
        lo("map-root-user", No, "r"),
        lo("map-current-user", No, "c"),
        lo("map-user", Req, "map-user"),
        lo("map-group", Req, "map-group"),
        lo("map-users", Req, "map-users"),
        lo("map-groups", Req, "map-groups"),
        lo("map-auto", No, "map-auto"),
        lo("propagation", Req, "propagation"),
        lo("setgroups", Req, "setgroups"),
        lo("keep-caps", No, "keep-caps"),
        lo("setuid", Req, "S"),
        lo("setgid", Req, "G"),
        lo("root", Req, "R"),
        lo("wd", Req, "w"),
        lo("monotonic", Req, "monotonic"),
        lo("boottime", Req, "boottime"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const NSENTER: Spec = Spec {
    short: "at:m::u::i::n::N:p::C::U::T::S:G:r::w::W::eFZchV",
    long: &[
        lo("all", No, "a"),
        lo("target", Req, "t"),
        lo("mount", Opt, "m"),
        lo("uts", Opt, "u"),
        lo("ipc", Opt, "i"),
        lo("net", Opt, "n"),
        lo("net-socket", Req, "N"),
        lo("pid", Opt, "p"),
        lo("cgroup", Opt, "C"),
        lo("user", Opt, "U"),
        lo("time", Opt, "T"),
        lo("setuid", Req, "S"),
        lo("setgid", Req, "G"),
        lo("preserve-credentials", No, "preserve-credentials"),
        lo("root", Opt, "r"),
        lo("wd", Opt, "w"),
        lo("wdns", Req, "W"),
        lo("env", No, "e"),
        lo("no-fork", No, "F"),
        lo("follow-context", No, "Z"),
        lo("keep-caps", No, "c"),
        lo("help", No, "h"),
        lo("version", No, "V"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const SYSTEMD_RUN: Spec = Spec {
    short: "u:p:E:H:M:tPqGdrS",
    long: &[
        lo("unit", Req, "u"),
        lo("property", Req, "p"),
        lo("setenv", Req, "E"),
        lo("host", Req, "H"),
        lo("machine", Req, "M"),
        lo("pty", No, "t"),
        lo("pipe", No, "P"),
        lo("quiet", No, "q"),
        lo("collect", No, "G"),
        lo("same-dir", No, "d"),
        lo("remain-after-exit", No, "r"),
        lo("shell", No, "S"),
        lo("user", No, "user"),
        lo("system", No, "system"),
        lo("scope", No, "scope"),
        lo("wait", No, "wait"),
        lo("no-block", No, "no-block"),
        lo("no-ask-password", No, "no-ask-password"),
        lo("description", Req, "description"),
        lo("slice", Req, "slice"),
        lo("uid", Req, "uid"),
        lo("gid", Req, "gid"),
        lo("nice", Req, "nice"),
        lo("working-directory", Req, "working-directory"),
        lo("service-type", Req, "service-type"),
        lo("send-sighup", No, "send-sighup"),
        HELP,
        VERSION,
    ],
    permute: false,
    complete: false,
    env: &[("E", EnvValue::Assignment)],
};

/// Unit properties `systemd-run -p` may set: resource limits that do not change what
/// runs. Any other property (`ExecStartPre=`, `Environment=`, `RootDirectory=`, ...) is
/// opaque.
const SYSTEMD_RUN_PROPERTIES: &[&str] = &[
    "MemoryMax",
    "MemoryHigh",
    "MemoryLow",
    "MemorySwapMax",
    "CPUQuota",
    "CPUWeight",
    "IOWeight",
    "TasksMax",
    "RuntimeMaxSec",
    "TimeoutStopSec",
    "Nice",
    "LimitNOFILE",
    "LimitCORE",
];

const FAKEROOT: Spec = Spec {
    short: "l:f:s:i:ub:hv",
    long: &[
        lo("lib", Req, "l"),
        lo("faked", Req, "f"),
        lo("unknown-is-real", No, "u"),
        lo("help", No, "h"),
        lo("version", No, "v"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const FAKETIME: Spec = Spec {
    short: "mfp:hv",
    long: &[
        lo("exclude-monotonic", No, "exclude-monotonic"),
        lo("disable-shm", No, "disable-shm"),
        lo("date-prog", Req, "date-prog"),
        lo("help", No, "h"),
        lo("version", No, "v"),
    ],
    permute: false,
    complete: false,
    env: &[],
};

const TORSOCKS: Spec = Spec {
    short: "u:p:a:P:idqh",
    long: &[
        lo("user", Req, "u"),
        lo("pass", Req, "p"),
        lo("address", Req, "a"),
        lo("port", Req, "P"),
        lo("isolate", No, "i"),
        lo("debug", No, "d"),
        lo("quiet", No, "q"),
        lo("shell", No, "shell"),
        lo("help", No, "h"),
        VERSION,
    ],
    permute: false,
    complete: false,
    env: &[],
};

const RLWRAP: Spec = Spec {
    short: "Aa::b:cC:D:e:f:F:g:H:iIl:m::M:nNoO:p::P:q:rRs:S:t:UvWw:",
    long: &[],
    permute: false,
    complete: false,
    env: &[],
};

const CAFFEINATE: Spec = Spec {
    short: "dhimsut:w:",
    long: &[],
    permute: false,
    complete: true,
    env: &[],
};

const CATCHSEGV: Spec = Spec {
    short: "",
    long: &[HELP, VERSION],
    permute: false,
    complete: false,
    env: &[],
};

const UNBUFFER: Spec = Spec {
    short: "p",
    long: &[],
    permute: false,
    complete: false,
    env: &[],
};

const EXEC: Spec = Spec {
    short: "cla:",
    long: &[],
    permute: false,
    complete: true,
    env: &[],
};

const COMMAND: Spec = Spec {
    short: "pvV",
    long: &[],
    permute: false,
    complete: true,
    env: &[],
};

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

fn inner(args: &[Arg], start: usize, visible: bool) -> Unwrap {
    if start < args.len() {
        Unwrap::Inner { start, visible }
    } else {
        Unwrap::Command
    }
}

/// Decides what `args[0]` (a literal command word) does with `args[1..]`.
pub(crate) fn unwrap(args: &[Arg]) -> Unwrap {
    unwrap_with(args, Ctx { check: true })
}

fn unwrap_with(args: &[Arg], ctx: Ctx) -> Unwrap {
    match unwrap_inner(args, ctx) {
        Ok(u) | Err(u) => u,
    }
}

/// `Parsed` or the opaque reason.
fn opts(args: &[Arg], from: usize, spec: &Spec) -> Result<Parsed, Unwrap> {
    let p = parse(args, from, spec).map_err(Unwrap::Opaque)?;
    for (key, kind) in spec.env {
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
    Ok(p)
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
    let u = match name {
        "env" => {
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
            inner(args, i, false)
        }
        "command" => {
            let p = opts(args, 1, &COMMAND)?;
            if p.has("v") || p.has("V") {
                Unwrap::Command
            } else {
                inner(args, p.first, false)
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
        "exec" => {
            let p = opts(args, 1, &EXEC)?;
            // `-l`, or a name starting with `-`, makes a shell a login shell,
            // which first runs the user's profile (perhaps written a moment ago).
            if p.has("l")
                || p.last("a")
                    .is_some_and(|a| a.value.as_deref().is_some_and(|v| v.starts_with('-')))
            {
                return Ok(Unwrap::Opaque(
                    "`exec -l` (or `-a -name`) starts a login shell, which runs the user's profile".into(),
                ));
            }
            inner(args, p.first, false)
        }
        "nice" => {
            // `nice -10 cmd`, `nice --10 cmd`, `nice -+10 cmd`: an adjustment, not options.
            let old_style = args.get(1).is_some_and(|a| {
                let t = a.text.as_str();
                let digits = t
                    .strip_prefix("--")
                    .or_else(|| t.strip_prefix("-+"))
                    .or_else(|| t.strip_prefix('-'))
                    .unwrap_or("");
                a.literal && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
            });
            let p = opts(args, if old_style { 2 } else { 1 }, &NICE)?;
            if informational(&p, "") {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first, false)
        }
        "nohup" | "caffeinate" => {
            let p = opts(args, 1, if name == "nohup" { &NO_OPTIONS } else { &CAFFEINATE })?;
            if informational(&p, "h") {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first, false)
        }
        "catchsegv" => {
            let p = opts(args, 1, &CATCHSEGV)?;
            if informational(&p, "") {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first, false)
        }
        "unbuffer" => {
            let p = opts(args, 1, &UNBUFFER)?;
            inner(args, p.first, false)
        }
        "eatmydata" => {
            let first = match args.get(1) {
                Some(a) if a.literal && a.text == "--" => 2,
                Some(a) if a.literal && a.text.starts_with('-') => {
                    return Ok(Unwrap::Opaque(format!("`eatmydata` given the option `{}`", a.text)));
                }
                _ => 1,
            };
            inner(args, first, false)
        }
        "setsid" => {
            let p = opts(args, 1, &SETSID)?;
            if informational(&p, "hV") {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first, false)
        }
        "time" => {
            let p = opts(args, 1, &TIME)?;
            if informational(&p, "V") {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first, false)
        }
        "timeout" => {
            let p = opts(args, 1, &TIMEOUT)?;
            if informational(&p, "") {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first + 1, false)
        }
        "stdbuf" => {
            let p = opts(args, 1, &STDBUF)?;
            if informational(&p, "") {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first, false)
        }
        "xargs" => xargs(args, ctx)?,
        "parallel" => parallel(args, ctx)?,
        "ionice" => {
            let p = opts(args, 1, &IONICE)?;
            if informational(&p, "hV") || p.has("p") || p.has("P") || p.has("u") {
                Unwrap::Command
            } else {
                inner(args, p.first, false)
            }
        }
        "taskset" => {
            let p = opts(args, 1, &TASKSET)?;
            if informational(&p, "hV") || p.has("p") {
                Unwrap::Command
            } else {
                inner(args, p.first + 1, false)
            }
        }
        "chrt" => {
            let p = opts(args, 1, &CHRT)?;
            if informational(&p, "hV") || p.has("p") || p.has("m") {
                Unwrap::Command
            } else {
                inner(args, p.first + 1, false)
            }
        }
        "numactl" => {
            let p = opts(args, 1, &NUMACTL)?;
            if informational(&p, "sH") {
                Unwrap::Command
            } else {
                inner(args, p.first, false)
            }
        }
        "prlimit" => {
            let p = opts(args, 1, &PRLIMIT)?;
            if informational(&p, "hV") || p.has("p") {
                Unwrap::Command
            } else {
                inner(args, p.first, false)
            }
        }
        "cgexec" => {
            let p = opts(args, 1, &CGEXEC)?;
            if informational(&p, "h") {
                Unwrap::Command
            } else {
                inner(args, p.first, false)
            }
        }
        "strace" => {
            let p = opts(args, 1, &STRACE)?;
            if informational(&p, "hV") {
                return Ok(Unwrap::Command);
            }
            if p.values("o").any(|v| v.starts_with('|') || v.starts_with('!')) {
                return Ok(Unwrap::Opaque("`strace -o |CMD` pipes the trace into a command".into()));
            }
            inner(args, p.first, false)
        }
        "ltrace" => {
            let p = opts(args, 1, &LTRACE)?;
            if informational(&p, "hV") {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first, false)
        }
        "valgrind" => valgrind(args)?,
        "watch" => {
            let p = opts(args, 1, &WATCH)?;
            if informational(&p, "hv") || p.first >= args.len() {
                Unwrap::Command
            } else if p.has("x") {
                Unwrap::Inner {
                    start: p.first,
                    visible: false,
                }
            } else {
                Unwrap::ScriptJoin {
                    start: p.first,
                    visible: false,
                }
            }
        }
        "flock" => {
            let p = opts(args, 1, &FLOCK)?;
            if informational(&p, "hV") {
                return Ok(Unwrap::Command);
            }
            // `-c`/`--command` counts only right after the lock file, written in full.
            let after = p.first + 1;
            match args.get(after) {
                Some(a) if a.literal && (a.text == "-c" || a.text == "--command") => script_at(args, after + 1, false),
                _ => inner(args, after, false),
            }
        }
        "script" => {
            let p = opts(args, 1, &SCRIPT)?;
            if informational(&p, "hV") {
                return Ok(Unwrap::Command);
            }
            match p.last("c") {
                Some(Given {
                    value_index: Some(k), ..
                }) => script_at(args, *k, false),
                Some(_) => {
                    return Ok(Unwrap::Opaque("`script` command string attached to its option".into()));
                }
                None => Unwrap::Stdin,
            }
        }
        "su" | "runuser" => su(args, name == "runuser")?,
        "sg" => {
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
            script_at(args, i, true)
        }
        "sudo" => {
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
            inner(args, i, true)
        }
        "doas" => {
            let p = opts(args, 1, &DOAS)?;
            if p.has("C") || p.has("L") {
                return Ok(Unwrap::Command);
            }
            if p.has("s") {
                return Ok(Unwrap::Opaque(
                    "`doas -s` starts a shell that reads standard input".into(),
                ));
            }
            inner(args, p.first, true)
        }
        "pkexec" => {
            // pkexec reads exact `--` options itself, `--user` taking the next word.
            let mut i = 1;
            while let Some(a) = args.get(i) {
                match a.text.as_str() {
                    "--user" | "-u" => i += 2,
                    "--disable-internal-agent" | "--keep-cwd" => i += 1,
                    "--help" | "--version" => return Ok(Unwrap::Command),
                    t if t.starts_with('-') => {
                        return Ok(Unwrap::Opaque(format!("`pkexec` given the option `{t}`")));
                    }
                    _ => break,
                }
            }
            if i >= args.len() {
                return Ok(Unwrap::Opaque(
                    "`pkexec` without a program starts a shell that reads standard input".into(),
                ));
            }
            inner(args, i, true)
        }
        "setpriv" => {
            let p = opts(args, 1, &SETPRIV)?;
            if informational(&p, "dhV") {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first, true)
        }
        "chroot" => {
            let p = opts(args, 1, &CHROOT)?;
            if informational(&p, "") {
                return Ok(Unwrap::Command);
            }
            if p.first + 1 >= args.len() && p.first < args.len() {
                return Ok(Unwrap::Opaque(
                    "`chroot` without a command starts a shell that reads standard input".into(),
                ));
            }
            inner(args, p.first + 1, true)
        }
        "unshare" | "nsenter" => {
            let p = opts(args, 1, if name == "unshare" { &UNSHARE } else { &NSENTER })?;
            if informational(&p, "hV") {
                return Ok(Unwrap::Command);
            }
            if p.first >= args.len() {
                return Ok(Unwrap::Opaque(format!(
                    "`{name}` without a command starts a shell that reads standard input"
                )));
            }
            inner(args, p.first, true)
        }
        "systemd-run" => {
            let p = opts(args, 1, &SYSTEMD_RUN)?;
            if informational(&p, "") {
                return Ok(Unwrap::Command);
            }
            if p.has("S") {
                return Ok(Unwrap::Opaque(
                    "`systemd-run --shell` starts a shell that reads standard input".into(),
                ));
            }
            for v in p.values("p") {
                let prop = v.split('=').next().unwrap_or(v);
                if !SYSTEMD_RUN_PROPERTIES.contains(&prop) {
                    return Ok(Unwrap::Opaque(format!("`systemd-run -p {prop}=` may change what runs")));
                }
            }
            inner(args, p.first, true)
        }
        "bwrap" => bwrap(args)?,
        "gdb" => gdb(args)?,
        "fakeroot" => {
            let p = opts(args, 1, &FAKEROOT)?;
            if informational(&p, "hv") {
                return Ok(Unwrap::Command);
            }
            if p.has("l") || p.has("f") {
                return Ok(Unwrap::Opaque(
                    "`fakeroot --lib`/`--faked` loads another program".into(),
                ));
            }
            inner(args, p.first, false)
        }
        "faketime" => {
            let p = opts(args, 1, &FAKETIME)?;
            if informational(&p, "hv") {
                return Ok(Unwrap::Command);
            }
            if p.has("date-prog") {
                return Ok(Unwrap::Opaque("`faketime --date-prog` runs another program".into()));
            }
            inner(args, p.first + 1, false)
        }
        "torsocks" => {
            let p = opts(args, 1, &TORSOCKS)?;
            if informational(&p, "h") {
                return Ok(Unwrap::Command);
            }
            if p.has("shell") {
                return Ok(Unwrap::Opaque(
                    "`torsocks --shell` starts a shell that reads standard input".into(),
                ));
            }
            // `torsocks on|off|show|sh` are its own subcommands.
            if args
                .get(p.first)
                .is_some_and(|a| matches!(a.text.as_str(), "on" | "off" | "show" | "sh"))
            {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first, false)
        }
        "proxychains" | "proxychains4" => {
            let mut i = 1;
            while let Some(a) = args.get(i) {
                match a.text.as_str() {
                    "-q" => i += 1,
                    "-f" => i += 2,
                    t if t.starts_with('-') => {
                        return Ok(Unwrap::Opaque(format!("`{name}` given the option `{t}`")));
                    }
                    _ => break,
                }
            }
            inner(args, i, false)
        }
        "rlwrap" => {
            let p = opts(args, 1, &RLWRAP)?;
            if p.has("z") {
                return Ok(Unwrap::Opaque("`rlwrap -z` runs a filter program".into()));
            }
            if p.has("v") {
                return Ok(Unwrap::Command);
            }
            inner(args, p.first, false)
        }
        "find" => find(args, ctx),
        _ => Unwrap::Command,
    };
    Ok(u)
}

pub(crate) fn script_at(args: &[Arg], index: usize, visible: bool) -> Unwrap {
    if index < args.len() {
        Unwrap::Script { index, visible }
    } else {
        Unwrap::Opaque(format!("`{}` expects a command string", args[0].text))
    }
}

/// `su` and `runuser`: `-c CODE` is run by the user's shell; without it the shell reads
/// standard input; `runuser -u USER CMD` runs CMD directly.
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
/// replace-string.
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
            return Ok(Unwrap::Opaque(format!("`xargs` {reason}")));
        }
    }
    Ok(inner(args, p.first, false))
}

/// `parallel CMD ::: ARGS`: the command words are joined by spaces and run by a shell,
/// with each input in place of the replacement strings (`{}`, `{.}`, ...) or appended.
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
                        super::word::clip(t)
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
        return Ok(Unwrap::Opaque(
            "`parallel` without a command runs its inputs as commands".into(),
        ));
    }
    let words = &args[i..end];
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./+@%:=-{}".contains(c);
    if let Some(bad) = words.iter().find(|a| !a.literal || !a.text.chars().all(plain)) {
        return Ok(Unwrap::Opaque(format!(
            "`parallel` joins its command words and runs them with a shell; `{}` is not a plain word",
            super::word::clip(&bad.text)
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
            return Ok(Unwrap::Opaque(format!("`parallel` {reason}")));
        }
    }
    // The words after `:::` are data appended to the command, like input words.
    Ok(Unwrap::Inner {
        start: i,
        visible: false,
    })
}

/// `valgrind [options] prog args`: valgrind options are always one word (`-q`,
/// `--tool=memcheck`); valgrind matches them exactly.
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

/// `bwrap [options] cmd args`: options take a fixed number of words.
fn bwrap(args: &[Arg]) -> Result<Unwrap, Unwrap> {
    const ZERO: &[&str] = &[
        "--unshare-all",
        "--share-net",
        "--unshare-user",
        "--unshare-user-try",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup",
        "--unshare-cgroup-try",
        "--clearenv",
        "--new-session",
        "--die-with-parent",
        "--as-pid-1",
        "--disable-userns",
        "--assert-userns-disabled",
        "--level-prefix",
    ];
    const ONE: &[&str] = &[
        "--argv0",
        "--userns",
        "--userns2",
        "--pidns",
        "--uid",
        "--gid",
        "--hostname",
        "--chdir",
        "--unsetenv",
        "--lock-file",
        "--sync-fd",
        "--remount-ro",
        "--exec-label",
        "--file-label",
        "--proc",
        "--dev",
        "--tmpfs",
        "--mqueue",
        "--dir",
        "--seccomp",
        "--add-seccomp-fd",
        "--block-fd",
        "--userns-block-fd",
        "--info-fd",
        "--json-status-fd",
        "--cap-add",
        "--cap-drop",
        "--perms",
        "--size",
        "--overlay-src",
        "--tmp-overlay",
        "--ro-overlay",
    ];
    const TWO: &[&str] = &[
        "--setenv",
        "--bind",
        "--bind-try",
        "--dev-bind",
        "--dev-bind-try",
        "--ro-bind",
        "--ro-bind-try",
        "--bind-fd",
        "--ro-bind-fd",
        "--file",
        "--bind-data",
        "--ro-bind-data",
        "--symlink",
        "--chmod",
    ];
    let mut i = 1;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if !a.literal {
            return Ok(Unwrap::Opaque(
                "an argument of `bwrap` is produced by an expansion".into(),
            ));
        }
        if matches!(t, "--help" | "--version") {
            return Ok(Unwrap::Command);
        }
        if !t.starts_with("--") {
            break;
        }
        let n = if ZERO.contains(&t) {
            0
        } else if ONE.contains(&t) {
            1
        } else if TWO.contains(&t) {
            2
        } else if t == "--overlay" {
            3
        } else {
            return Ok(Unwrap::Opaque(format!(
                "`bwrap` given the option `{}`, which we do not follow",
                super::word::clip(t)
            )));
        };
        let value = args
            .get(i + 2)
            .filter(|v| t == "--setenv" && v.literal)
            .map(|v| v.text.as_str());
        if matches!(t, "--setenv" | "--unsetenv")
            && let Some(var) = args.get(i + 1)
            && let Some(reason) = risky_setting(&var.text, value)
        {
            return Ok(Unwrap::Opaque(reason));
        }
        if args[i + 1..].len() < n {
            return Ok(Unwrap::Opaque(format!("`bwrap {t}` is missing its arguments")));
        }
        i += 1 + n;
    }
    if i >= args.len() {
        return Ok(Unwrap::Command);
    }
    Ok(Unwrap::Inner {
        start: i,
        visible: true,
    })
}

/// `gdb [options] --args prog args`: gdb is a part, and so is the program it loads.
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
            Unwrap::Opaque(reason) => return Some(format!("{what} to a command that is opaque: {reason}")),
        }
    }
    Some(format!("{what} to commands nested deeper than {depth} wrappers"))
}

/// `find ... -exec CMD ... ;` and friends.
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
            super::word::clip(&bad.text)
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
