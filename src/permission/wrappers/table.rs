//! Wrapper tables, as data: the options each wrapper takes ([`Spec`] for getopt-like
//! parsers, [`Words`] for those that compare whole words), and for the wrappers that
//! need nothing else, a [`Row`] saying which options make it run nothing or make it
//! opaque, how many operands come before the command, whether it is a part itself and
//! how it runs what follows (a command, shell code joined from its words, the value of
//! an option). The walking code is in `wrappers.rs`; the option readers in `options.rs`.

use super::options::Arity::{No, Opt, Req};
use super::options::{EnvValue, HELP, Spec, VERSION, Words, lo};

pub(crate) const ENV: Spec = Spec {
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

pub(crate) const TIMEOUT: Spec = Spec {
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

pub(crate) const NICE: Spec = Spec {
    short: "n:",
    long: &[lo("adjustment", Req, "n"), HELP, VERSION],
    permute: false,
    complete: true,
    env: &[],
};

pub(crate) const NO_OPTIONS: Spec = Spec {
    short: "",
    long: &[HELP, VERSION],
    permute: false,
    complete: true,
    env: &[],
};

pub(crate) const STDBUF: Spec = Spec {
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

pub(crate) const TIME: Spec = Spec {
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

pub(crate) const XARGS: Spec = Spec {
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

pub(crate) const SETSID: Spec = Spec {
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

pub(crate) const IONICE: Spec = Spec {
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

pub(crate) const TASKSET: Spec = Spec {
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

pub(crate) const CHRT: Spec = Spec {
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

pub(crate) const NUMACTL: Spec = Spec {
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

pub(crate) const PRLIMIT: Spec = Spec {
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

pub(crate) const CGEXEC: Spec = Spec {
    short: "g:h",
    long: &[lo("sticky", No, "sticky")],
    permute: false,
    complete: false,
    env: &[],
};

pub(crate) const WATCH: Spec = Spec {
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

pub(crate) const FLOCK: Spec = Spec {
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

pub(crate) const STRACE: Spec = Spec {
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

pub(crate) const LTRACE: Spec = Spec {
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

pub(crate) const SCRIPT: Spec = Spec {
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

pub(crate) const SU: Spec = Spec {
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

pub(crate) const SUDO: Spec = Spec {
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

pub(crate) const DOAS: Spec = Spec {
    short: "a:C:Lnsu:",
    long: &[],
    permute: false,
    complete: true,
    env: &[],
};

pub(crate) const CHROOT: Spec = Spec {
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

pub(crate) const SETPRIV: Spec = Spec {
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

pub(crate) const UNSHARE: Spec = Spec {
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

pub(crate) const NSENTER: Spec = Spec {
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

pub(crate) const SYSTEMD_RUN: Spec = Spec {
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
pub(crate) const SYSTEMD_RUN_PROPERTIES: &[&str] = &[
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

pub(crate) const FAKEROOT: Spec = Spec {
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

pub(crate) const FAKETIME: Spec = Spec {
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

pub(crate) const TORSOCKS: Spec = Spec {
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

pub(crate) const RLWRAP: Spec = Spec {
    short: "Aa::b:cC:D:e:f:F:g:H:iIl:m::M:nNoO:p::P:q:rRs:S:t:UvWw:",
    long: &[],
    permute: false,
    complete: false,
    env: &[],
};

pub(crate) const CAFFEINATE: Spec = Spec {
    short: "dhimsut:w:",
    long: &[],
    permute: false,
    complete: true,
    env: &[],
};

pub(crate) const CATCHSEGV: Spec = Spec {
    short: "",
    long: &[HELP, VERSION],
    permute: false,
    complete: false,
    env: &[],
};

pub(crate) const UNBUFFER: Spec = Spec {
    short: "p",
    long: &[],
    permute: false,
    complete: false,
    env: &[],
};

pub(crate) const EXEC: Spec = Spec {
    short: "cla:",
    long: &[],
    permute: false,
    complete: true,
    env: &[],
};

pub(crate) const COMMAND: Spec = Spec {
    short: "pvV",
    long: &[],
    permute: false,
    complete: true,
    env: &[],
};

/// No options at all; `--` ends them (`builtin`, `eatmydata`).
pub(crate) const BARE: Spec = Spec {
    short: "",
    long: &[],
    permute: false,
    complete: true,
    env: &[],
};

/// busybox's own options all run nothing (they list or install applets); anything else
/// starting with `-` is unknown.
pub(crate) const BUSYBOX: Spec = Spec {
    short: "",
    long: &[
        lo("list", No, "list"),
        lo("list-full", No, "list"),
        lo("install", No, "install"),
        lo("show", Req, "show"),
        HELP,
    ],
    permute: false,
    complete: false,
    env: &[],
};

/// pkexec compares whole words.
pub(crate) const PKEXEC: Words = Words {
    words: &[
        ("--user", 1, "user"),
        ("-u", 1, "user"),
        ("--disable-internal-agent", 0, "disable-internal-agent"),
        ("--keep-cwd", 0, "keep-cwd"),
        ("--help", 0, "help"),
        ("--version", 0, "version"),
    ],
    env: &[],
};

/// proxychains(-ng) looks at `-q` and `-f FILE` word by word (`-qf` is not a bundle).
pub(crate) const PROXYCHAINS: Words = Words {
    words: &[("-q", 0, "q"), ("-f", 1, "f")],
    env: &[],
};

/// bubblewrap: every option is one `--` word taking a fixed number of words.
pub(crate) const BWRAP: Words = Words {
    words: &[
        ("--help", 0, "help"),
        ("--version", 0, "version"),
        ("--unshare-all", 0, "unshare-all"),
        ("--share-net", 0, "share-net"),
        ("--unshare-user", 0, "unshare-user"),
        ("--unshare-user-try", 0, "unshare-user-try"),
        ("--unshare-ipc", 0, "unshare-ipc"),
        ("--unshare-pid", 0, "unshare-pid"),
        ("--unshare-net", 0, "unshare-net"),
        ("--unshare-uts", 0, "unshare-uts"),
        ("--unshare-cgroup", 0, "unshare-cgroup"),
        ("--unshare-cgroup-try", 0, "unshare-cgroup-try"),
        ("--clearenv", 0, "clearenv"),
        ("--new-session", 0, "new-session"),
        ("--die-with-parent", 0, "die-with-parent"),
        ("--as-pid-1", 0, "as-pid-1"),
        ("--disable-userns", 0, "disable-userns"),
        ("--assert-userns-disabled", 0, "assert-userns-disabled"),
        ("--level-prefix", 0, "level-prefix"),
        ("--argv0", 1, "argv0"),
        ("--userns", 1, "userns"),
        ("--userns2", 1, "userns2"),
        ("--pidns", 1, "pidns"),
        ("--uid", 1, "uid"),
        ("--gid", 1, "gid"),
        ("--hostname", 1, "hostname"),
        ("--chdir", 1, "chdir"),
        ("--unsetenv", 1, "unsetenv"),
        ("--lock-file", 1, "lock-file"),
        ("--sync-fd", 1, "sync-fd"),
        ("--remount-ro", 1, "remount-ro"),
        ("--exec-label", 1, "exec-label"),
        ("--file-label", 1, "file-label"),
        ("--proc", 1, "proc"),
        ("--dev", 1, "dev"),
        ("--tmpfs", 1, "tmpfs"),
        ("--mqueue", 1, "mqueue"),
        ("--dir", 1, "dir"),
        ("--seccomp", 1, "seccomp"),
        ("--add-seccomp-fd", 1, "add-seccomp-fd"),
        ("--block-fd", 1, "block-fd"),
        ("--userns-block-fd", 1, "userns-block-fd"),
        ("--info-fd", 1, "info-fd"),
        ("--json-status-fd", 1, "json-status-fd"),
        ("--cap-add", 1, "cap-add"),
        ("--cap-drop", 1, "cap-drop"),
        ("--perms", 1, "perms"),
        ("--size", 1, "size"),
        ("--overlay-src", 1, "overlay-src"),
        ("--tmp-overlay", 1, "tmp-overlay"),
        ("--ro-overlay", 1, "ro-overlay"),
        ("--setenv", 2, "setenv"),
        ("--bind", 2, "bind"),
        ("--bind-try", 2, "bind-try"),
        ("--dev-bind", 2, "dev-bind"),
        ("--dev-bind-try", 2, "dev-bind-try"),
        ("--ro-bind", 2, "ro-bind"),
        ("--ro-bind-try", 2, "ro-bind-try"),
        ("--bind-fd", 2, "bind-fd"),
        ("--ro-bind-fd", 2, "ro-bind-fd"),
        ("--file", 2, "file"),
        ("--bind-data", 2, "bind-data"),
        ("--ro-bind-data", 2, "ro-bind-data"),
        ("--symlink", 2, "symlink"),
        ("--chmod", 2, "chmod"),
        ("--overlay", 3, "overlay"),
    ],
    env: &[("setenv", EnvValue::Assignment), ("unsetenv", EnvValue::Name)],
};

/// How a wrapper reads its options.
pub(crate) enum Options {
    /// getopt-like (bundles, attached values, long options).
    Getopt(&'static Spec),
    /// Whole words.
    Words(&'static Words),
}

/// How a wrapper runs what follows its options and fixed operands.
pub(crate) enum Code {
    /// The next word is a command (`nice CMD`).
    Command,
    /// The words are joined by spaces and run by `sh -c` (`watch CMD...`), unless one
    /// of these option keys is given (`watch -x`: then they are a command).
    Joined { direct: &'static [&'static str] },
    /// When the next word is one of these, the word after it is shell code
    /// (`flock FILE -c CODE`); otherwise the next word is a command.
    AfterWord(&'static [&'static str]),
    /// The value of this option, given as a separate word, is shell code
    /// (`script -c CODE`); attached it is opaque, and without it the shell the wrapper
    /// starts reads standard input.
    OptionValue(&'static str),
}

/// A wrapper whose behaviour its row says in full: read its options, then what follows
/// the fixed operands (`skip`) is what it runs, as `code` says.
pub(crate) struct Row {
    pub(crate) name: &'static str,
    pub(crate) options: Options,
    /// Options (keys) with which it runs no command: it prints information or acts on
    /// another process. `--help` and `--version` always count.
    pub(crate) runs_nothing: &'static [&'static str],
    /// First operands with which it runs no command (its own subcommands).
    pub(crate) subcommands: &'static [&'static str],
    /// Options (keys) that make it opaque, and why.
    pub(crate) opaque: &'static [(&'static str, &'static str)],
    /// Options (keys) whose value, starting with one of the prefixes, makes it opaque.
    pub(crate) opaque_values: &'static [(&'static str, &'static [&'static str], &'static str)],
    /// Options (keys) whose value, up to its first `=`, must be one of these names
    /// (`systemd-run -p MemoryMax=1G`); any other makes it opaque.
    pub(crate) only_values: &'static [(&'static str, &'static [&'static str])],
    /// A first word `-N`, `--N` or `-+N` (digits) is a value, not options (nice's old
    /// form `nice -10 CMD`).
    pub(crate) adjustment: bool,
    /// Operands before the command (`timeout DURATION`, `chroot NEWROOT`).
    pub(crate) skip: usize,
    /// It is a part itself: it changes the user, the root or the namespaces.
    pub(crate) visible: bool,
    /// Without a command it starts a shell that reads standard input.
    pub(crate) needs_command: bool,
    /// How it runs what follows.
    pub(crate) code: Code,
}

const fn row(name: &'static str, spec: &'static Spec, runs_nothing: &'static [&'static str]) -> Row {
    Row {
        name,
        options: Options::Getopt(spec),
        runs_nothing,
        subcommands: &[],
        opaque: &[],
        opaque_values: &[],
        only_values: &[],
        adjustment: false,
        skip: 0,
        visible: false,
        needs_command: false,
        code: Code::Command,
    }
}

const fn words_row(name: &'static str, words: &'static Words) -> Row {
    Row {
        options: Options::Words(words),
        ..row(name, &BARE, &[])
    }
}

/// The wrappers read from their rows alone.
pub(crate) const ROWS: &[Row] = &[
    row("nohup", &NO_OPTIONS, &["h"]),
    row("caffeinate", &CAFFEINATE, &["h"]),
    row("catchsegv", &CATCHSEGV, &[]),
    row("unbuffer", &UNBUFFER, &[]),
    row("setsid", &SETSID, &["h", "V"]),
    row("time", &TIME, &["V"]),
    Row {
        skip: 1,
        ..row("timeout", &TIMEOUT, &[])
    },
    row("stdbuf", &STDBUF, &[]),
    row("ionice", &IONICE, &["h", "V", "p", "P", "u"]),
    Row {
        skip: 1,
        ..row("taskset", &TASKSET, &["h", "V", "p"])
    },
    Row {
        skip: 1,
        ..row("chrt", &CHRT, &["h", "V", "p", "m"])
    },
    row("numactl", &NUMACTL, &["s", "H"]),
    row("prlimit", &PRLIMIT, &["h", "V", "p"]),
    row("cgexec", &CGEXEC, &["h"]),
    row("ltrace", &LTRACE, &["h", "V"]),
    row("command", &COMMAND, &["v", "V"]),
    Row {
        opaque_values: &[("o", &["|", "!"], "`strace -o |CMD` pipes the trace into a command")],
        ..row("strace", &STRACE, &["h", "V"])
    },
    Row {
        visible: true,
        ..row("setpriv", &SETPRIV, &["d", "h", "V"])
    },
    Row {
        skip: 1,
        visible: true,
        needs_command: true,
        ..row("chroot", &CHROOT, &[])
    },
    Row {
        visible: true,
        needs_command: true,
        ..row("unshare", &UNSHARE, &["h", "V"])
    },
    Row {
        visible: true,
        needs_command: true,
        ..row("nsenter", &NSENTER, &["h", "V"])
    },
    Row {
        opaque: &[
            ("l", "`fakeroot --lib` loads another program"),
            ("f", "`fakeroot --faked` runs another program"),
        ],
        ..row("fakeroot", &FAKEROOT, &["h", "v"])
    },
    Row {
        skip: 1,
        opaque: &[("date-prog", "`faketime --date-prog` runs another program")],
        ..row("faketime", &FAKETIME, &["h", "v"])
    },
    Row {
        visible: true,
        opaque: &[("s", "`doas -s` starts a shell that reads standard input")],
        ..row("doas", &DOAS, &["C", "L"])
    },
    Row {
        opaque: &[("z", "`rlwrap -z` runs a filter program")],
        ..row("rlwrap", &RLWRAP, &["v"])
    },
    Row {
        subcommands: &["on", "off", "show", "sh"],
        opaque: &[("shell", "`torsocks --shell` starts a shell that reads standard input")],
        ..row("torsocks", &TORSOCKS, &["h"])
    },
    row("builtin", &BARE, &[]),
    row("eatmydata", &BARE, &[]),
    row("busybox", &BUSYBOX, &["list", "install", "show"]),
    Row {
        adjustment: true,
        ..row("nice", &NICE, &[])
    },
    Row {
        opaque: &[("l", "`exec -l` starts a login shell, which runs the user's profile")],
        opaque_values: &[(
            "a",
            &["-"],
            "`exec -a -name` starts a login shell, which runs the user's profile",
        )],
        ..row("exec", &EXEC, &[])
    },
    Row {
        code: Code::Joined { direct: &["x"] },
        ..row("watch", &WATCH, &["h", "v"])
    },
    Row {
        skip: 1,
        code: Code::AfterWord(&["-c", "--command"]),
        ..row("flock", &FLOCK, &["h", "V"])
    },
    Row {
        code: Code::OptionValue("c"),
        ..row("script", &SCRIPT, &["h", "V"])
    },
    Row {
        visible: true,
        opaque: &[("S", "`systemd-run --shell` starts a shell that reads standard input")],
        only_values: &[("p", SYSTEMD_RUN_PROPERTIES)],
        ..row("systemd-run", &SYSTEMD_RUN, &[])
    },
    Row {
        visible: true,
        needs_command: true,
        ..words_row("pkexec", &PKEXEC)
    },
    words_row("proxychains", &PROXYCHAINS),
    words_row("proxychains4", &PROXYCHAINS),
    Row {
        visible: true,
        ..words_row("bwrap", &BWRAP)
    },
];
