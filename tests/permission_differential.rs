//! Differential test of the permission analysis against what real shells execute.
//!
//! Every command of `tests/data/permission_corpus.jsonl` and of
//! `tests/data/permission_adversarial.txt` whose pattern is not opaque is run under
//! `bash -c` and under `dash -c` (the `sh` of Debian-like systems) in a sandbox where every
//! external command is a logging stub. The property checked is issue 4's property 2 seen
//! from the outside: every program that actually ran is named by the pattern (its basename
//! is one of the pattern's command words), or is a transparent wrapper or a shell that the
//! command names (these are not named by design; what they run is checked). An opaque
//! pattern passes by definition and is not run. And every file the run created or changed
//! in the sandbox is one the analysis reports: a redirection that writes
//! (`Analysis::writes`) names it, literally, or has a target that may expand (reported as
//! not literal); a file written by a real wrapper itself (`flock FILE`) counts when the
//! command names it.
//!
//! The sandbox, per worker thread:
//!
//! - `bin/`: one stub per command word the inputs can name (collected from the analysis
//!   and a fixed list). A stub is a tiny script run by a private copy of `dash` that appends
//!   its name to a log and exits (0; `false` exits 1). Wrappers (`env`, `xargs`, `timeout`,
//!   `nice`, `sh`, `bash`, ...) log, then `exec` a private copy of the real program, so
//!   the wrapped command runs and logs too; `find -exec`, `sudo`, `su`, `chroot` and
//!   `parallel` are emulated by small scripts (log, then run the wrapped command).
//!   Only shells and those wrappers are real programs; they are copied into the sandbox and
//!   reached by absolute path, never through `PATH`.
//! - `cwd/` (the working directory, emptied before each run; `cwd/bin` links to the stubs
//!   and relative command words such as `./x.sh` are stubs too), `home/` (`HOME`), `tmp/`.
//! - The environment is cleared except `PATH` (the stub directory), `HOME`, `TMPDIR`,
//!   `SHELL` (the private `sh`), `LC_ALL=C` and a tag for the /proc survivor check; stdin is
//!   /dev/null; each run has a 2 s limit, after which its process group is killed.
//!
//! Safety. When the kernel allows it (root or user namespaces), each run gets its own
//! mount and PID namespace: the whole file system is read-only except the worker's
//! directory; `/bin`, `/sbin`, `/usr/bin`, `/usr/sbin`, `/usr/local/bin` and
//! `/usr/local/sbin` are covered by the (read-only) stub directory, so even `/bin/rm`,
//! `command -p rm` or `env -i rm` reach a stub; `/proc` is the namespace's own; and
//! `kill -9 -1` only reaches the run's own processes. Without namespaces the test falls
//! back to skip rules that alone keep it harmless (no absolute or `..` paths, no
//! redirection outside the sandbox, no `kill`, no `env` with options, no `command -p`, no
//! `chrt`/`taskset`/`ionice` of another process, ...); skips are counted and printed.
//! Some rules apply in both modes (`/dev/tcp`, `/proc`, writes to devices, fork bombs,
//! `enable -f`). `PERMDIFF_NO_NAMESPACES=1` forces the fallback.
//!
//! All findings are collected and the test fails once at the end, listing each run
//! (input line, shell, command, pattern, what ran, what the pattern does not name). Set
//! `PERMDIFF_ONLY=<substring>` to run only the matching commands and print every result.

mod common;
mod shellgen;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CStr, CString};
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bash_mcp::permission::{
    Analysis, Dialect, SHELLS, TRANSPARENT_WRAPPERS, analyze, analyze_in, command_pattern, command_pattern_in,
};

const TOOL: &str = "bash.execute";
const LIMIT: Duration = Duration::from_secs(2);
const WORKERS: usize = 3;

// ---------------------------------------------------------------------------------------
// Inputs

struct Input {
    source: &'static str,
    line: usize,
    command: String,
}

fn corpus() -> Vec<Input> {
    include_str!("data/permission_corpus.jsonl")
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let v: serde_json::Value = serde_json::from_str(l).expect("corpus line is JSON");
            Input {
                source: "corpus",
                line: i + 1,
                command: v["command"].as_str().expect("command").to_owned(),
            }
        })
        .collect()
}

/// Decodes one line of the adversarial list: `\n` newline, `\r` carriage return,
/// `\t` tab, `\\` one backslash; any other backslash is kept as written.
fn unescape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            _ => {
                out.push('\\');
                continue;
            }
        }
        chars.next();
    }
    out
}

fn adversarial() -> Vec<Input> {
    include_str!("data/permission_adversarial.txt")
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty() && !l.starts_with("# ") && *l != "#")
        .map(|(i, l)| Input {
            source: "adversarial",
            line: i + 1,
            command: unescape(l),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The check (pure: what ran against what the analysis says)

/// Wrappers that start `sh -c` themselves (`watch`, `flock -c`, ...): the shell they start
/// is part of the wrapper.
const IMPLICIT_SHELL: &[&str] = &["watch", "script", "flock", "su", "sudo", "doas", "parallel"];

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The command words a pattern names, or `None` when it is opaque.
fn pattern_words(pattern: &str) -> Option<BTreeSet<String>> {
    let body = pattern.strip_prefix(TOOL)?.strip_prefix(':')?;
    let list = body.strip_suffix(" *")?;
    let words: Vec<&str> = match list.strip_prefix('{').and_then(|l| l.strip_suffix('}')) {
        Some(inner) => inner.split(',').collect(),
        None => vec![list],
    };
    Some(words.into_iter().map(|w| basename(w).to_owned()).collect())
}

/// Whether `name` occurs in `command` as a word (delimited by characters that cannot be
/// part of a command name; a path prefix such as `/bin/` counts as a delimiter).
fn mentions(command: &str, name: &str) -> bool {
    command
        .split(|c: char| !(c.is_ascii_alphanumeric() || "_.+@%:=-".contains(c)))
        .any(|w| w == name)
}

/// The wrappers the analysis stripped from the parts (basenames), however they were
/// quoted (`flo"ck" f cmd`).
fn stripped_wrappers(analysis: &Analysis) -> BTreeSet<&str> {
    analysis
        .parts
        .iter()
        .flat_map(|p| p.wrappers.iter().map(|w| basename(w)))
        .collect()
}

/// The programs in `ran` that `pattern` does not account for. Empty when the pattern is
/// opaque.
///
/// By design (README, "Wrappers" and the `sh -c` rules) the analysis does not name a
/// transparent wrapper (`env`, `nice`, `time`, ...) nor a shell whose code it parsed
/// (`sh -c CODE`, `bash <<EOF`): it names what they run. So a wrapper or shell that ran is
/// accounted for when the command text names it (`mentions`) or when it was started by a
/// wrapper that runs `sh -c` itself; everything such a program runs is logged by its own
/// stub and checked like any other program.
fn unnamed(command: &str, pattern: &str, analysis: &Analysis, ran: &[String]) -> Vec<String> {
    let Some(named) = pattern_words(pattern) else {
        return Vec::new();
    };
    let stripped = stripped_wrappers(analysis);
    let spawns_shell = IMPLICIT_SHELL
        .iter()
        .any(|w| named.contains(*w) || stripped.contains(w) || mentions(command, w));
    let mut out: Vec<String> = ran
        .iter()
        .filter(|name| {
            let n = name.as_str();
            let mechanism = TRANSPARENT_WRAPPERS.contains(&n) || SHELLS.contains(&n);
            !(named.contains(n)
                || (mechanism && (stripped.contains(n) || mentions(command, n)))
                || (spawns_shell && SHELLS.contains(&n)))
        })
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Programs the sandbox runs for real that write files themselves (`flock FILE`
/// creates its lock file, `script` its typescript): a file one of these may have written
/// is accounted for when the command text names it as a word.
const WRITING_PROGRAMS: &[&str] = &["flock", "script", "time", "strace", "ltrace"];

/// `path` with `.` and `name/..` components removed, lexically.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The file a literal write target names for a shell started in `cwd` with `home` as
/// `HOME`: `~` and `~/...` are in the home directory, relative paths in `cwd`.
fn target_path(target: &str, cwd: &Path, home: &Path) -> PathBuf {
    let path = if target == "~" {
        home.to_owned()
    } else if let Some(rest) = target.strip_prefix("~/") {
        home.join(rest)
    } else {
        cwd.join(target)
    };
    lexical(&path)
}

/// The files in `written` that the analysis does not report: no redirection that writes
/// names it. A redirection whose target may expand (`> $f`, `> *`) is reported as
/// unknown, so it accounts for any file; a literal target accounts only for the file it
/// names. Empty when the pattern is opaque.
fn unreported_writes(
    command: &str,
    pattern: &str,
    analysis: &Analysis,
    written: &[PathBuf],
    cwd: &Path,
    home: &Path,
) -> Vec<String> {
    if pattern_words(pattern).is_none() {
        return Vec::new();
    }
    let writes: Vec<_> = analysis.redirects.iter().filter(|r| r.mode.writes()).collect();
    if writes.iter().any(|r| !r.literal) {
        return Vec::new();
    }
    let named: BTreeSet<PathBuf> = writes.iter().map(|r| target_path(&r.target, cwd, home)).collect();
    // The parts' wrapper lists say which wrappers ran; the text catches one the analysis
    // did not strip.
    let stripped = stripped_wrappers(analysis);
    let wrote_itself = WRITING_PROGRAMS
        .iter()
        .any(|p| stripped.contains(p) || mentions(command, p));
    written
        .iter()
        .filter(|p| !named.contains(&lexical(p)))
        .filter(|p| {
            let name = p.strip_prefix(cwd).ok().and_then(|r| r.to_str()).unwrap_or("");
            !(wrote_itself && !name.is_empty() && mentions(command, name) || wrote_itself && name == "typescript")
        })
        .map(|p| {
            p.strip_prefix(cwd.parent().unwrap_or(cwd))
                .unwrap_or(p)
                .display()
                .to_string()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Skip rules

/// Why `command` is not run, if it is not (`isolated`: runs get their own namespaces).
fn skip_reason(command: &str, isolated: bool) -> Option<&'static str> {
    let has = |s: &str| command.contains(s);
    // Both modes.
    if has("/proc/") {
        return Some("/proc path");
    }
    if has("/dev/tcp") || has("/dev/udp") {
        return Some("network redirection");
    }
    if writes_outside(command, true) {
        return Some("redirection to a device or an absolute path");
    }
    if has(":|:") || has(": | :") || has("|:&") {
        return Some("fork bomb");
    }
    if has("enable -f") {
        return Some("loads a shared object");
    }
    if isolated {
        return None;
    }
    // Without namespaces only.
    const PROGRAM_DIRS: &[&str] = &[
        "/bin", "/sbin", "/usr", "/lib", "/opt", "/snap", "/nix", "/root", "/home", "/var", "/proc", "/sys", "/boot",
        "/etc", "/run", "/srv", "/mnt", "/media", "/tmp",
    ];
    if PROGRAM_DIRS.iter().any(|d| has(d)) {
        return Some("absolute path (no namespaces)");
    }
    if has("../") || has("bin/") && !has("./bin/") || has("cd ") || has("pushd") || has("-C") {
        return Some("relative path that may leave the sandbox (no namespaces)");
    }
    if words(command).any(|w| w == "kill") {
        return Some("kill builtin (no namespaces)");
    }
    let targets_pid = has(" -p") || has("--pid") || has(" -a") || has("--all-tasks");
    if words(command).any(|w| ["chrt", "taskset", "ionice"].contains(&w)) && targets_pid {
        return Some("changes another process (no namespaces)");
    }
    if has("PATH") || has("command -p") || has("command -vp") || has("type -P") {
        return Some("program search outside the stubs (no namespaces)");
    }
    if words(command).any(|w| w == "env") && has(" -") {
        return Some("env with options, which may clear PATH (no namespaces)");
    }
    if has("/*") || has("/?") || has("/[") || has("/{") || has("/$") || has("/\"") || has("/'") {
        return Some("path made by an expansion (no namespaces)");
    }
    if has("\\0") || has("\\x") || has("\\u") || has("$'") || has("PWD") || has("HOME") {
        return Some("text that may build a path (no namespaces)");
    }
    if writes_outside(command, false) {
        return Some("redirection that may leave the sandbox (no namespaces)");
    }
    None
}

fn clip(s: &str) -> String {
    if s.chars().count() <= 160 {
        return s.to_owned();
    }
    format!("{}...", s.chars().take(160).collect::<String>())
}

fn words(command: &str) -> impl Iterator<Item = &str> {
    command.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
}

/// Whether an output redirection in `command` targets a device other than the harmless
/// ones or an absolute path; unless `devices_only`, also anything starting with `~`, `$`,
/// a quote or a backslash, containing `..`, or inside the stub directory.
fn writes_outside(command: &str, devices_only: bool) -> bool {
    let bytes = command.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b != b'>' {
            continue;
        }
        let mut rest = &command[i + 1..];
        rest = rest.trim_start_matches(['>', '|', '&']);
        rest = rest.trim_start_matches([' ', '\t']);
        let target: String = rest
            .chars()
            .take_while(|c| !c.is_whitespace() && !";|&)<>".contains(*c))
            .collect();
        let fd = target
            .strip_prefix("/dev/fd/")
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        if fd || ["/dev/null", "/dev/stdout", "/dev/stderr"].contains(&target.as_str()) {
            continue;
        }
        if target.starts_with("/dev/") || target.starts_with("\"/dev") || target.starts_with("'/dev") {
            return true;
        }
        if devices_only {
            if target.starts_with('/') || target.starts_with("\"/") || target.starts_with("'/") {
                return true;
            }
            continue;
        }
        if target.starts_with(['/', '~', '$', '"', '\'', '`', '\\'])
            || target.contains("..")
            || target.trim_start_matches("./").starts_with("bin")
        {
            return true;
        }
    }
    false
}

// ---------------------------------------------------------------------------------------
// The sandbox

/// Real programs the sandbox copies in (found on the host), by name.
struct Reals {
    dir: PathBuf,
    found: BTreeSet<String>,
}

/// Shells analysed as [`Dialect::Other`]: a command exact in that dialect also runs under
/// each one installed (started as the server starts them, `SHELL -c CODE`).
const OTHER_SHELLS: &[&str] = &["zsh", "fish"];

/// Programs that run another program; their stub logs and then execs the real one.
const EXEC_WRAPPERS: &[&str] = &[
    "bash", "dash", "sh", "env", "xargs", "timeout", "nice", "nohup", "stdbuf", "setsid", "flock", "script", "ionice",
    "taskset", "chrt", "time", "watch", "rbash", "zsh", "fish",
];

/// Names that only a shell provides (bash builtins and keywords without a program of
/// that name on usual systems): no stub, so that `dash` finds nothing, as it would.
#[rustfmt::skip]
const NOT_PROGRAMS: &[&str] = &[
    "builtin", "declare", "typeset", "local", "export", "readonly", "let", "shopt", "source", ".", "alias",
    "unalias", "eval", "exec", "set", "unset", "shift", "trap", "return", "break", "continue", "exit", "hash",
    "enable", "fc", "history", "jobs", "fg", "bg", "disown", "suspend", "wait", "caller", "complete", "compgen",
    "compopt", "dirs", "pushd", "popd", "mapfile", "readarray", "bind", "help", "logout", "ulimit", "umask",
    "getopts", "read", "cd", "type", "command", "coproc", "select", "function", "[[", "]]", "times", "{", "}",
    "!", "if", "then", "else", "elif", "fi", "case", "esac", "for", "while", "until", "do", "done", "in",
];

/// Common programs, stubbed whether or not the inputs name them.
#[rustfmt::skip]
const COMMON: &[&str] = &[
    "git", "ls", "echo", "rm", "touch", "cat", "sh", "bash", "dash", "env", "xargs", "find", "sudo", "doas",
    "su", "chroot", "timeout", "nice", "nohup", "stdbuf", "setsid", "flock", "script", "ionice", "taskset",
    "chrt", "watch", "strace", "ltrace", "unbuffer", "busybox", "time", "parallel", "tar", "python", "python3",
    "perl", "ruby", "node", "npm", "npx", "cargo", "make", "curl", "wget", "ssh", "scp", "rsync", "dd", "mkfs",
    "head", "tail", "grep", "sed", "awk", "sort", "uniq", "wc", "cut", "tr", "tee", "cp", "mv", "mkdir",
    "rmdir", "chmod", "chown", "ln", "date", "sleep", "yes", "true", "false", "printf", "test", "[", "kill",
    "pkill", "killall", "ps", "id", "whoami", "uname", "base64", "which", "xxd", "od", "gzip", "zip", "unzip",
    "docker", "kubectl", "systemctl", "apt", "apt-get", "pip", "pip3", "less", "more", "vi", "vim", "ed", "pwd",
    "basename", "dirname", "readlink", "realpath", "mktemp", "stat", "du", "df", "diff", "patch", "jq", "zsh",
    "ksh", "mksh", "busybox", "getconf", "expr", "seq", "nl", "rev", "file", "hostname", "shutdown", "reboot",
    "mount", "umount", "chattr", "crontab", "at", "batch", "logger", "nc", "socat", "openssl", "gpg", "sqlite3",
    "psql", "mysql", "p", "x", "q6", "l", "foo", "bar", "evil", "pwned", "setpriv", "runuser", "nsenter",
    "unshare", "ip", "iptables", "go", "rustc", "gcc", "cc", "ld", "java", "javac", "php", "lua", "tclsh",
    "expect",
];

/// Whether `name` gets a stub. Names starting with `-` are left out: they come from
/// misparsed wrapper options (`time -a` in a pattern), no system has such a program, and a
/// stub would make `dash`'s `exec -a x cmd` (no `-a` there) run it.
fn is_stub_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name != "."
        && name != ".."
        && !NOT_PROGRAMS.contains(&name)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.+@%:=-[".contains(c))
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Copies the real programs the stubs may exec into `dir`.
fn copy_reals(dir: &Path) -> Option<Reals> {
    std::fs::create_dir_all(dir).ok()?;
    let search = ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"];
    let mut found = BTreeSet::new();
    for name in EXEC_WRAPPERS {
        let Some(src) = search.iter().map(|d| Path::new(d).join(name)).find(|p| p.is_file()) else {
            continue;
        };
        // Resolve links (`sh` -> `dash`) and copy the program itself.
        let src = std::fs::canonicalize(&src).ok()?;
        std::fs::copy(&src, dir.join(name)).ok()?;
        found.insert(name.to_string());
    }
    if !(found.contains("bash") && found.contains("dash") && found.contains("sh")) {
        return None;
    }
    Some(Reals {
        dir: dir.to_owned(),
        found,
    })
}

struct Worker {
    dir: PathBuf,
    bin: PathBuf,
    cwd: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
    log: PathBuf,
    /// Relative path command words (`./x.sh`) to create in `cwd` before each run.
    relative: Vec<String>,
    reals: PathBuf,
    /// The value of the tag variable for this worker's runs (one per worker, so that
    /// sweeping one run's leftovers never touches another worker's run).
    tag: String,
}

fn stub_script(name: &str, log: &Path, reals: &Reals) -> String {
    let dash = reals.dir.join("dash");
    let real = |n: &str| sh_quote(&reals.dir.join(n).to_string_lossy());
    let rsh = real("sh");
    let mut s = format!(
        "#!{}\nprintf '%s\\t%s\\n' {} \"${{0##*/}}\" >> {}\n",
        dash.display(),
        sh_quote(name),
        sh_quote(&log.to_string_lossy())
    );
    let tail = match name {
        "false" => "exit 1\n".to_string(),
        n if EXEC_WRAPPERS.contains(&n) && reals.found.contains(n) => format!("exec {} \"$@\"\n", real(n)),
        // find: run each -exec/-execdir/-ok/-okdir command once, `{}` replaced by `.`.
        "find" => r#"q() { r=; s=$1; while :; do case $s in *\'*) r="$r${s%%\'*}'\\''"; s=${s#*\'};; *) r="$r$s"; break;; esac; done; printf "'%s' " "$r"; }
cmd=
while [ $# -gt 0 ]; do
  a=$1; shift
  if [ -n "$in" ]; then
    case $a in
      ';'|'+') ( eval "$cmd" ) < /dev/null; cmd=; in=; continue;;
    esac
    while :; do case $a in *'{}'*) a="${a%%\{\}*}.${a#*\{\}}";; *) break;; esac; done
    cmd="$cmd$(q "$a")"
    continue
  fi
  case $a in -exec|-execdir|-ok|-okdir) in=1;; esac
done
exit 0
"#
        .to_string(),
        // sudo/doas: skip options; -s/-i with a command runs it through a shell.
        "sudo" | "doas" => format!(
            r#"while [ $# -gt 0 ]; do
  case $1 in
    --) shift; break;;
    -u|-g|-p|-C|-D|-h|-r|-t|-U|-T|-R|--user|--group|--prompt|--close-from|--chdir|--host|--role|--type|--other-user|--command-timeout|--chroot) shift 2;;
    -s|-i|--shell|--login) shell=1; shift;;
    -*) shift;;
    *=*) export "$1" 2>/dev/null; shift;;
    *) break;;
  esac
done
[ $# -eq 0 ] && exit 0
[ -n "$shell" ] && exec {rsh} -c "$*"
exec "$@"
"#
        ),
        // su: `-c CODE` anywhere runs CODE through a shell.
        "su" | "runuser" => format!(
            r#"while [ $# -gt 0 ]; do
  case $1 in
    -c|--command) exec {rsh} -c "$2";;
    --command=*) exec {rsh} -c "${{1#--command=}}";;
  esac
  shift
done
exit 0
"#
        ),
        // chroot DIR CMD...: run CMD (here, not in DIR).
        "chroot" => r#"while [ $# -gt 0 ]; do case $1 in --) shift; break;; -*) shift;; *) break;; esac; done
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && exec "$@"
exit 0
"#
        .to_string(),
        // parallel CMD ::: ARGS: run `CMD ARG` through a shell for each ARG.
        "parallel" => format!(
            r#"cmd=
while [ $# -gt 0 ]; do case $1 in -j|-P|-N|-n) shift 2;; -*) shift;; *) break;; esac; done
while [ $# -gt 0 ] && [ "$1" != ::: ]; do cmd="$cmd $1"; shift; done
[ $# -gt 0 ] && shift
for a in "$@"; do {rsh} -c "$cmd $a" < /dev/null; done
exit 0
"#
        ),
        _ => "exit 0\n".to_string(),
    };
    s.push_str(&tail);
    s
}

fn write_exec(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

impl Worker {
    fn new(dir: PathBuf, tag: String, names: &BTreeSet<String>, relative: &[String], reals: &Reals) -> Worker {
        let w = Worker {
            tag,
            bin: dir.join("bin"),
            cwd: dir.join("cwd"),
            home: dir.join("home"),
            tmp: dir.join("tmp"),
            log: dir.join("log"),
            dir,
            relative: relative.to_vec(),
            reals: reals.dir.clone(),
        };
        std::fs::create_dir_all(&w.bin).expect("bin");
        for name in names {
            write_exec(&w.bin.join(name), &stub_script(name, &w.log, reals));
        }
        w
    }

    /// Empties the working directory, home and log for the next run.
    fn reset(&self) {
        for d in [&self.cwd, &self.home, &self.tmp] {
            let _ = std::fs::remove_dir_all(d);
            std::fs::create_dir_all(d).expect("sandbox dir");
        }
        symlink(&self.bin, self.cwd.join("bin")).expect("bin link");
        for word in &self.relative {
            let path = self.cwd.join(word);
            if let Some(parent) = path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            let stub = self.bin.join(basename(word));
            if stub.is_file() && !path.exists() {
                let _ = std::fs::copy(&stub, &path);
            }
        }
        std::fs::write(&self.log, "").expect("log");
    }

    /// Every file under the worker's directory except the log and the stubs, with what
    /// tells a change (size, modification time, inode). Symbolic links are not followed.
    fn snapshot(&self) -> BTreeMap<PathBuf, (u64, i64, i64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let mut out = BTreeMap::new();
        let mut dirs = vec![self.dir.clone()];
        while let Some(d) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else { continue };
            for e in entries.flatten() {
                let path = e.path();
                if path == self.log || path == self.bin {
                    continue;
                }
                let Ok(m) = path.symlink_metadata() else { continue };
                if m.is_dir() {
                    dirs.push(path);
                } else {
                    out.insert(path, (m.len(), m.mtime(), m.mtime_nsec(), m.ino()));
                }
            }
        }
        out
    }

    /// The files created or changed since `before`.
    fn changed(&self, before: &BTreeMap<PathBuf, (u64, i64, i64, u64)>) -> Vec<PathBuf> {
        self.snapshot()
            .into_iter()
            .filter(|(p, state)| before.get(p) != Some(state))
            .map(|(p, _)| p)
            .collect()
    }

    fn logged(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split('\t').next())
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

// ---------------------------------------------------------------------------------------
// Running one command

struct Run {
    ran: Vec<String>,
    timed_out: bool,
    /// Files created or changed in the sandbox (under the worker's directory, the log
    /// and the stubs left out), as absolute paths.
    written: Vec<PathBuf>,
}

impl Run {
    /// What ran, each name once, in order of first appearance.
    fn distinct(&self) -> Vec<&str> {
        let mut seen = BTreeSet::new();
        self.ran
            .iter()
            .map(String::as_str)
            .filter(|n| seen.insert(*n))
            .collect()
    }
}

/// Everything the child needs, prepared before `fork` (the closure may not allocate).
struct Isolation {
    worker_dir: CString,
    bin: CString,
    cwd: CString,
    covered: Vec<CString>,
}

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 1;
const AT_RECURSIVE: libc::c_int = 0x8000;

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("path without NUL")
}

/// Program directories the stub directory covers inside the namespace.
fn covered_dirs() -> Vec<CString> {
    [
        "/bin",
        "/sbin",
        "/usr/bin",
        "/usr/sbin",
        "/usr/local/bin",
        "/usr/local/sbin",
    ]
    .iter()
    .map(Path::new)
    .filter(|p| p.symlink_metadata().map(|m| m.is_dir()).unwrap_or(false))
    .map(cstr)
    .collect()
}

fn set_attr(path: &CStr, flags: libc::c_int, set: u64, clear: u64) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: the path is a C string and `attr` a MountAttr, both live for the call; the
    // size passed is its size.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn bind(src: &CStr, dst: &CStr, flags: libc::c_ulong) -> std::io::Result<()> {
    // SAFETY: both paths are C strings live for the call; NULL type and data are allowed
    // for a bind mount.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | flags,
            std::ptr::null(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn close_from_3() {
    // SAFETY: runs in the forked child before exec: close_range and close are
    // async-signal-safe and close only fds of this process.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            for fd in 3..4096 {
                libc::close(fd);
            }
        }
    }
}

fn exit_code(status: libc::c_int) -> libc::c_int {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    }
}

/// Runs in the forked child before `exec`: new mount and PID namespaces, the file system
/// read-only except the worker's directory, program directories covered by the stubs;
/// then a process outside (waits, exits with the shell's status), PID 1 inside (reaps,
/// gives background jobs a moment to log) and the shell.
fn isolate(iso: &Isolation) -> std::io::Result<()> {
    let err = std::io::Error::last_os_error;
    // SAFETY: in the forked child before exec (see isolate's doc): unshare and mount are
    // plain system calls on static C strings; nothing allocates.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWPID) != 0 {
            return Err(err());
        }
        let root = c"/";
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(err());
        }
    }
    let root = c"/";
    bind(&iso.worker_dir, &iso.worker_dir, libc::MS_REC)?;
    set_attr(root, AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0)?;
    set_attr(&iso.worker_dir, AT_RECURSIVE, 0, MOUNT_ATTR_RDONLY)?;
    bind(&iso.bin, &iso.bin, 0)?;
    set_attr(&iso.bin, 0, MOUNT_ATTR_RDONLY, 0)?;
    for dir in &iso.covered {
        bind(&iso.bin, dir, 0)?;
        set_attr(dir, 0, MOUNT_ATTR_RDONLY, 0)?;
    }
    // SAFETY: in the forked child before exec: only async-signal-safe system calls
    // (chdir, fork, waitpid, mount, nanosleep, _exit) on C strings prepared before the
    // fork or static, and locals; nothing allocates or takes a lock.
    unsafe {
        if libc::chdir(iso.cwd.as_ptr()) != 0 {
            return Err(err());
        }
        // Outside the PID namespace: wait for its init and report the shell's status.
        let init = libc::fork();
        if init < 0 {
            return Err(err());
        }
        if init > 0 {
            close_from_3();
            let mut status = 0;
            while libc::waitpid(init, &mut status, 0) < 0 {}
            libc::_exit(exit_code(status));
        }
        // PID 1 of the namespace: a /proc of its own (read-only; the old one would lead
        // back to the outer mount namespace through /proc/1/root), then start the shell,
        // reap everything, leave when the shell is gone and the rest had 300 ms to finish
        // (the kernel kills the rest).
        let proc_dir = c"/proc";
        if libc::mount(
            c"proc".as_ptr(),
            proc_dir.as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
            std::ptr::null(),
        ) != 0
        {
            return Err(err());
        }
        let shell = libc::fork();
        if shell < 0 {
            libc::_exit(125);
        }
        if shell > 0 {
            close_from_3();
            let mut code = 0;
            let mut status = 0;
            loop {
                let pid = libc::waitpid(-1, &mut status, 0);
                if pid == shell {
                    code = exit_code(status);
                    break;
                }
                if pid < 0 && *libc::__errno_location() == libc::ECHILD {
                    libc::_exit(code);
                }
            }
            for _ in 0..60 {
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid < 0 {
                    break;
                }
                if pid == 0 {
                    let t = libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 5_000_000,
                    };
                    libc::nanosleep(&t, std::ptr::null_mut());
                }
            }
            libc::_exit(code);
        }
    }
    Ok(())
}

fn run(worker: &Worker, shell: &str, command: &str, isolated: bool) -> std::io::Result<Run> {
    let tag = worker.tag.as_str();
    worker.reset();
    let before = worker.snapshot();
    let mut cmd = Command::new(worker.reals.join(shell));
    cmd.arg("-c")
        .arg(command)
        .current_dir(&worker.cwd)
        .env_clear()
        .env("PATH", &worker.bin)
        .env("HOME", &worker.home)
        .env("TMPDIR", &worker.tmp)
        .env("SHELL", worker.reals.join("sh"))
        .env("LC_ALL", "C")
        .env(common::TAG_VAR, tag)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    if std::env::var_os("PERMDIFF_ONLY").is_some() {
        cmd.stderr(Stdio::inherit());
    }
    if isolated {
        let iso = Isolation {
            worker_dir: cstr(&worker.dir),
            bin: cstr(&worker.bin),
            cwd: cstr(&worker.cwd),
            covered: covered_dirs(),
        };
        // SAFETY: `isolate` runs between fork and exec and only makes system calls on
        // memory `iso` prepared before the fork; it does not allocate.
        unsafe {
            cmd.pre_exec(move || isolate(&iso));
        }
    }
    let mut child = cmd.spawn()?;
    let pgid = child.id() as i32;
    let start = Instant::now();
    let mut timed_out = false;
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if start.elapsed() > LIMIT {
            timed_out = true;
            // SAFETY: kill takes no pointer; `-pgid` is the group of the child this test started.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            child.wait()?;
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if !isolated {
        // Background jobs: a moment to finish, then the group and any escapee go.
        let t = Instant::now();
        // SAFETY: as above; signal 0 only checks that the group exists.
        while unsafe { libc::kill(-pgid, 0) } == 0 && t.elapsed() < Duration::from_millis(300) {
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        common::kill_tagged(tag);
    } else {
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    Ok(Run {
        ran: worker.logged(),
        timed_out,
        written: worker.changed(&before),
    })
}

// ---------------------------------------------------------------------------------------
// The test

struct Sandbox {
    root: PathBuf,
    reals: Reals,
    isolated: bool,
    tag: String,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn sandbox(name: &str) -> Option<Sandbox> {
    for shell in ["bash", "dash"] {
        let found = ["/usr/bin", "/bin"].iter().any(|d| Path::new(d).join(shell).is_file());
        if !found {
            common::skip_missing(shell);
            return None;
        }
    }
    let tag = common::unique_tag(name);
    let root = std::env::temp_dir().join(format!("bash-mcp-{tag}"));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("sandbox root");
    let Some(reals) = copy_reals(&root.join("real")) else {
        let _ = std::fs::remove_dir_all(&root);
        common::skip("could not copy bash, dash and sh into the sandbox");
        return None;
    };
    for shell in OTHER_SHELLS.iter().filter(|s| !reals.found.contains(**s)) {
        common::skip(format_args!(
            "{shell} is not installed (`apt-get install {shell}`; .ci/run installs it): commands exact for zsh and fish do not run under it"
        ));
    }
    Some(Sandbox {
        root,
        reals,
        isolated: false,
        tag,
    })
}

/// Whether runs can have namespaces here: one probe run must work and see `/bin/git` as
/// a stub.
fn probe_isolation(sb: &Sandbox) -> bool {
    let names: BTreeSet<String> = ["git", "sh"].iter().map(|s| s.to_string()).collect();
    let w = Worker::new(sb.root.join("probe"), sb.tag.clone(), &names, &[], &sb.reals);
    let ok = matches!(
        run(&w, "dash", "echo x > /dev/null && /bin/git x && : > f", true),
        Ok(r) if r.ran == ["git"]
    );
    let _ = std::fs::remove_dir_all(&w.dir);
    ok
}

struct Job<'a> {
    input: &'a Input,
    pattern: String,
    analysis: Analysis,
}

#[derive(Default)]
struct Tally {
    run: usize,
    /// Runs per shell.
    by_shell: BTreeMap<&'static str, usize>,
    opaque: usize,
    skipped: BTreeMap<&'static str, usize>,
    findings: Vec<String>,
    timed_out: Vec<String>,
}

fn stub_names_and_relative(inputs: &[&Input]) -> (BTreeSet<String>, Vec<String>) {
    let mut names: BTreeSet<String> = COMMON.iter().map(|s| s.to_string()).collect();
    let mut relative = BTreeSet::new();
    for input in inputs {
        for part in analyze(&input.command).parts {
            let word = part.command_word;
            names.insert(basename(&word).to_owned());
            for w in &part.wrappers {
                names.insert(basename(w).to_owned());
            }
            if word.contains('/')
                && !word.starts_with('/')
                && !word.starts_with('~')
                && !word.split('/').any(|c| c == "..")
                && !word.starts_with("bin/")
                && !word.starts_with("./bin/")
            {
                relative.insert(word);
            }
        }
    }
    names.retain(|n| is_stub_name(n));
    relative.retain(|r| is_stub_name(basename(r)) && r.split('/').count() <= 4);
    (names, relative.into_iter().collect())
}

fn differential(inputs: Vec<Input>, sb: &Sandbox, tally: &Mutex<Tally>) {
    let only = std::env::var("PERMDIFF_ONLY").ok();
    let all: Vec<&Input> = inputs.iter().collect();
    let (names, relative) = stub_names_and_relative(&all);
    let mut jobs = Vec::new();
    for input in &inputs {
        if only.as_deref().is_some_and(|o| !input.command.contains(o)) {
            continue;
        }
        let pattern = command_pattern(TOOL, &input.command);
        if pattern_words(&pattern).is_none() {
            tally.lock().unwrap().opaque += 1;
            continue;
        }
        if let Some(reason) = skip_reason(&input.command, sb.isolated) {
            *tally.lock().unwrap().skipped.entry(reason).or_default() += 1;
            continue;
        }
        for shell in ["bash", "dash"] {
            jobs.push((
                shell,
                Job {
                    input,
                    pattern: pattern.clone(),
                    analysis: analyze(&input.command),
                },
            ));
        }
        // What is exact for zsh and fish (plain text) must hold in both.
        let other = command_pattern_in(TOOL, &input.command, Dialect::Other);
        if pattern_words(&other).is_some() {
            for shell in OTHER_SHELLS.iter().filter(|s| sb.reals.found.contains(**s)) {
                jobs.push((
                    *shell,
                    Job {
                        input,
                        pattern: other.clone(),
                        analysis: analyze_in(&input.command, Dialect::Other),
                    },
                ));
            }
        }
    }
    let verbose = only.is_some();
    let next = AtomicUsize::new(0);
    let workers: Vec<Worker> = (0..WORKERS)
        .map(|i| {
            Worker::new(
                sb.root.join(format!("w{i}")),
                format!("{}-w{i}", sb.tag),
                &names,
                &relative,
                &sb.reals,
            )
        })
        .collect();
    std::thread::scope(|s| {
        for worker in &workers {
            let (next, jobs, tally) = (&next, &jobs, tally);
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((shell, job)) = jobs.get(i) else { break };
                    let r = run(worker, shell, &job.input.command, sb.isolated)
                        .unwrap_or_else(|e| panic!("cannot run {shell}: {e}"));
                    let missing = unnamed(&job.input.command, &job.pattern, &job.analysis, &r.ran);
                    let unreported = unreported_writes(
                        &job.input.command,
                        &job.pattern,
                        &job.analysis,
                        &r.written,
                        &worker.cwd,
                        &worker.home,
                    );
                    let mut t = tally.lock().unwrap();
                    t.run += 1;
                    *t.by_shell.entry(shell).or_default() += 1;
                    if r.timed_out {
                        t.timed_out.push(format!("[{shell}] {:?}", clip(&job.input.command)));
                    }
                    if verbose {
                        println!(
                            "{shell:4} {:?}\n     pattern {} {:?}\n     ran {:?}{}",
                            clip(&job.input.command),
                            job.pattern,
                            job.analysis
                                .parts
                                .iter()
                                .map(|p| (&p.command_word, &p.wrappers))
                                .collect::<Vec<_>>(),
                            r.distinct(),
                            if r.timed_out { " (timed out)" } else { "" }
                        );
                    }
                    if !missing.is_empty() {
                        let mut text = String::new();
                        let _ = write!(
                            text,
                            "{}:{} [{shell}] {:?}\n    pattern {}\n    ran {:?}, not named: {:?}{}",
                            job.input.source,
                            job.input.line,
                            clip(&job.input.command),
                            job.pattern,
                            r.distinct(),
                            missing,
                            if r.timed_out { " (timed out)" } else { "" }
                        );
                        t.findings.push(text);
                    }
                    if !unreported.is_empty() {
                        let reported: Vec<_> = job.analysis.redirects.iter().map(|r| (&r.target, r.mode, r.literal)).collect();
                        t.findings.push(format!(
                            "{}:{} [{shell}] {:?}\n    reported writes {reported:?}\n    wrote {unreported:?}, not reported",
                            job.input.source,
                            job.input.line,
                            clip(&job.input.command),
                        ));
                    }
                }
            });
        }
    });
    for worker in &workers {
        common::assert_no_survivors(&worker.tag);
    }
}

#[test]
fn what_runs_is_named_by_the_pattern() {
    let Some(mut sb) = sandbox("permdiff") else { return };
    // PERMDIFF_NO_NAMESPACES=1 exercises the fallback.
    sb.isolated = std::env::var_os("PERMDIFF_NO_NAMESPACES").is_none() && probe_isolation(&sb);
    println!(
        "{}",
        if sb.isolated {
            "runs isolated in mount and PID namespaces"
        } else {
            "no namespaces: skip rules only"
        }
    );
    let started = Instant::now();
    let mut inputs = corpus();
    inputs.extend(adversarial());
    let tally = Mutex::new(Tally::default());
    differential(inputs, &sb, &tally);
    common::assert_no_survivors(&sb.tag);
    let mut t = tally.into_inner().unwrap();
    t.findings.sort();
    println!(
        "{} runs {:?} in {:.1?} ({} timed out); {} opaque commands not run; skipped: {:?}",
        t.run,
        t.by_shell,
        started.elapsed(),
        t.timed_out.len(),
        t.opaque,
        t.skipped
    );
    for t in &t.timed_out {
        println!("timed out: {t}");
    }
    assert!(
        t.findings.is_empty(),
        "{} runs executed programs their pattern does not name or wrote files the analysis does not report:\n{}",
        t.findings.len(),
        t.findings.join("\n")
    );
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number; unset it or give one")),
        Err(_) => default,
    }
}

/// The generative differential fuzzer: commands assembled from shell grammar pieces
/// (`tests/shellgen`) from the seed `PERMFUZZ_SEED` (default 1) run under bash and dash
/// like the corpus. It stops after `PERMFUZZ_COUNT` commands (default 400) or, when
/// `PERMFUZZ_SECONDS` is set, after that many seconds. Each find is printed with its
/// command; add it to `tests/data/permission_adversarial.txt` once understood.
#[test]
fn generated_commands_run_only_what_the_pattern_names() {
    let Some(mut sb) = sandbox("permfuzz") else { return };
    sb.isolated = std::env::var_os("PERMDIFF_NO_NAMESPACES").is_none() && probe_isolation(&sb);
    let seed = env_number("PERMFUZZ_SEED", 1);
    let seconds = std::env::var_os("PERMFUZZ_SECONDS").map(|_| env_number("PERMFUZZ_SECONDS", 0));
    let count = env_number("PERMFUZZ_COUNT", 400) as usize;
    let mut rng = shellgen::Rng::new(seed);
    let tally = Mutex::new(Tally::default());
    let started = Instant::now();
    let mut generated = 0usize;
    loop {
        let done = match seconds {
            Some(s) => started.elapsed() >= Duration::from_secs(s),
            None => generated >= count,
        };
        if done {
            break;
        }
        let batch: Vec<Input> = (0..200)
            .map(|k| Input {
                source: "generated",
                line: generated + k + 1,
                command: shellgen::generate(&mut rng),
            })
            .collect();
        generated += batch.len();
        differential(batch, &sb, &tally);
    }
    common::assert_no_survivors(&sb.tag);
    let mut t = tally.into_inner().unwrap();
    t.findings.sort();
    println!(
        "seed {seed}: {generated} commands generated, {} executions {:?} in {:.1?} ({} timed out); {} opaque commands not run; skipped: {:?}",
        t.run,
        t.by_shell,
        started.elapsed(),
        t.timed_out.len(),
        t.opaque,
        t.skipped
    );
    assert!(
        t.findings.is_empty(),
        "{} runs executed programs their pattern does not name or wrote files the analysis does not report:\n{}",
        t.findings.len(),
        t.findings.join("\n")
    );
}

/// The generator assembles the pieces it is meant to: quotes split across words, braces,
/// globs, wrappers, nested `-c` strings, redirections and assignments all occur.
#[test]
fn generator_covers_the_grammar_pieces() {
    let mut rng = shellgen::Rng::new(1);
    let all: Vec<String> = (0..2000).map(|_| shellgen::generate(&mut rng)).collect();
    let text = all.join("\n");
    for piece in [
        "\"",
        "'",
        "{\"",
        "[\"",
        " -c ",
        "-oo errexit",
        "timeout",
        "xargs",
        "find .",
        "> ",
        "LC_ALL=C",
        "| ",
        "$(",
        ">>",
        "<>",
        ">|",
        "~/f",
        "f{a,b}",
        "f*",
        "&>",
        "ll",
        "=touch",
        "not ",
    ] {
        assert!(text.contains(piece), "no generated command holds {piece:?}");
    }
    let mut again = shellgen::Rng::new(1);
    assert_eq!(
        shellgen::generate(&mut again),
        all[0],
        "the generator is deterministic for a seed"
    );
}

/// The harness can see an execution the pattern does not name, and does not report one
/// the pattern names.
#[test]
fn harness_detects_an_unnamed_execution() {
    // The pure check.
    let c = "git status; touch p";
    let a = analyze(c);
    let ran = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(unnamed(c, "bash.execute:git *", &a, &ran(&["git", "touch"])), ["touch"]);
    assert!(unnamed(c, "bash.execute:{git,touch} *", &a, &ran(&["git", "touch"])).is_empty());
    assert!(unnamed(c, "bash.execute:{unknown}", &a, &ran(&["rm"])).is_empty());
    assert!(unnamed(c, "bash.execute:./bin/touch *", &a, &ran(&["touch"])).is_empty());
    assert_eq!(
        unnamed(c, "bash.execute:git *", &a, &ran(&["env", "sh"])),
        ["env", "sh"]
    );
    let c = "env -i nice sh -c 'git log'";
    let a = analyze(c);
    assert!(unnamed(c, "bash.execute:git *", &a, &ran(&["env", "nice", "sh", "git"])).is_empty());
    assert_eq!(
        unnamed(c, "bash.execute:git *", &a, &ran(&["bash", "git", "rm"])),
        ["bash", "rm"]
    );

    // Writes: a file no redirection reports is found; a reported one, or one behind a
    // target that may expand, is not.
    let (cwd, home) = (Path::new("/s/cwd"), Path::new("/s/home"));
    let wrote = |paths: &[&str]| paths.iter().map(PathBuf::from).collect::<Vec<_>>();
    let check = |c: &str, paths: &[&str]| {
        unreported_writes(c, &command_pattern(TOOL, c), &analyze(c), &wrote(paths), cwd, home)
    };
    assert_eq!(check("echo x", &["/s/cwd/f"]), ["cwd/f"]);
    assert!(check("echo x > f", &["/s/cwd/f"]).is_empty());
    assert!(check("echo x > ./d/../f", &["/s/cwd/f"]).is_empty());
    assert!(check("echo x >> ~/f", &["/s/home/f"]).is_empty());
    assert_eq!(check("echo x > f", &["/s/cwd/g"]), ["cwd/g"]);
    assert!(check("echo x > $F", &["/s/cwd/g"]).is_empty());
    assert!(check("flock f true", &["/s/cwd/f"]).is_empty());
    assert!(
        check("'f'loc\"k\" f touch p", &["/s/cwd/f"]).is_empty(),
        "a quoted wrapper is still the wrapper"
    );
    assert_eq!(check("'f'loc\"k\" f touch p", &["/s/cwd/g"]), ["cwd/g"]);
    assert!(
        check("eval 'echo > f'", &["/s/cwd/f"]).is_empty(),
        "opaque: not checked"
    );

    // End to end: real shells, real stubs, a deliberately wrong pattern.
    let Some(mut sb) = sandbox("permdiff-self") else { return };
    sb.isolated = std::env::var_os("PERMDIFF_NO_NAMESPACES").is_none() && probe_isolation(&sb);
    let names: BTreeSet<String> = COMMON.iter().map(|s| s.to_string()).collect();
    let w = Worker::new(sb.root.join("w"), sb.tag.clone(), &names, &[], &sb.reals);
    for shell in ["bash", "dash"] {
        let cases = [
            ("git status; touch p", "bash.execute:git *", vec!["touch"]),
            ("git status && git log", "bash.execute:git *", vec![]),
            ("echo $(touch p) | sh -c 'cat'", "bash.execute:{cat,sh,touch} *", vec![]),
            (
                "env nice timeout 5 touch p",
                "bash.execute:touch *",
                vec!["env", "nice", "timeout"],
            ),
            (
                "find . -exec sh -c 'touch {}' \\;",
                "bash.execute:find *",
                vec!["sh", "touch"],
            ),
            ("echo a | xargs git", "bash.execute:echo *", vec!["git", "xargs"]),
            ("command -v git; type git; hash git", "bash.execute:true *", vec![]),
        ];
        for (command, pattern, want) in cases {
            let r = run(&w, shell, command, sb.isolated).expect("run");
            let got = unnamed("true", pattern, &analyze("true"), &r.ran);
            assert_eq!(got, want, "[{shell}] {command}: ran {:?}", r.ran);
        }
        // A write the run made is seen, against the analysis of another text.
        let r = run(&w, shell, "echo x > f; : >> g", sb.isolated).expect("run");
        let got = unreported_writes(
            "true",
            "bash.execute:true *",
            &analyze("true"),
            &r.written,
            &w.cwd,
            &w.home,
        );
        assert_eq!(got, ["cwd/f", "cwd/g"], "[{shell}] writes seen: {:?}", r.written);
        let c = "echo x > f; : >> g";
        let got = unreported_writes(c, &command_pattern(TOOL, c), &analyze(c), &r.written, &w.cwd, &w.home);
        assert!(got.is_empty(), "[{shell}] reported writes: {got:?}");
    }
    common::assert_no_survivors(&sb.tag);
}
