//! Which shell will read the command text, and the text-level rules that follow from it.
//!
//! The analysis parses bash. Text that another shell reads differently can run commands
//! bash never sees (`echo hi &>/dev/null rm -rf ~` is `echo hi &` then `rm -rf ~` in
//! dash), so every construct whose meaning differs between bash and the shell that
//! will run the text makes the command opaque.

use std::path::Path;

/// The shell language a command text will be run by.
///
/// | dialect | shells | rule |
/// |---|---|---|
/// | [`Bash`](Dialect::Bash) | `bash` | parsed as bash |
/// | [`Posix`](Dialect::Posix) | `sh`, `dash`, `ash`, `busybox`, `posh`, `ksh`, `mksh`, `pdksh`, `oksh`, `lksh`, `yash` | bash-only constructs are opaque |
/// | [`Other`](Dialect::Other) | `zsh`, `fish`, `csh`, anything else | opaque unless the text is *plain*, and bash-only constructs are opaque |
/// | [`Unknown`](Dialect::Unknown) | not said | like `Posix`: opaque wherever bash and a POSIX `sh` would read the text differently |
///
/// `sh` is `Posix` even where `/bin/sh` is bash: the text must mean the same to both.
///
/// ```
/// use bash_mcp::permission::{Dialect, command_pattern_in};
/// assert_eq!(Dialect::for_shell("/bin/bash"), Dialect::Bash);
/// assert_eq!(Dialect::for_shell("/bin/sh"), Dialect::Posix);
/// assert_eq!(Dialect::for_shell("/usr/bin/zsh"), Dialect::Other);
/// let t = "[[ -f x ]] && ls";
/// assert_eq!(command_pattern_in("bash.execute", t, Dialect::Bash), "bash.execute:ls *");
/// assert_eq!(command_pattern_in("bash.execute", t, Dialect::Posix), "bash.execute:{unknown}");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Dialect {
    /// GNU bash.
    Bash,
    /// A POSIX shell (dash, ash, busybox sh, posh, the ksh family, yash).
    Posix,
    /// A shell with its own syntax (zsh, fish, csh, ...).
    Other,
    /// Not known: bash or a POSIX `sh`. The default.
    #[default]
    Unknown,
}

/// Shell basenames analysed as [`Dialect::Posix`].
pub const POSIX_SHELLS: &[&str] = &[
    "sh", "dash", "ash", "busybox", "posh", "ksh", "ksh93", "mksh", "pdksh", "oksh", "lksh", "yash",
];

/// Characters a [`Dialect::Other`] command may contain: what every shell reads the same
/// way. Besides these, a word may not start with `=`, `%`, or `-` alone (zsh expands
/// `=cmd` to a path, old fish expands `%name` to process ids, zsh's `-` is a
/// precommand modifier).
pub const PLAIN_CHARACTERS: &str = "A-Z a-z 0-9, blank, tab, newline and _ . / , : = @ % + - ; & |";

/// Command words that are keywords or precommand modifiers in zsh or fish and run or
/// change what follows (`not rm x` runs rm in fish; `set PATH /tmp` sets PATH in fish).
/// Opaque in [`Dialect::Other`].
pub const OTHER_SHELL_KEYWORDS: &[&str] = &[
    "-",
    "nocorrect",
    "noglob",
    "r",
    "not",
    "and",
    "or",
    "begin",
    "end",
    "function",
    "functions",
    "set",
    "setopt",
    "unsetopt",
    "emulate",
    "autoload",
    "zmodload",
    "sched",
    "abbr",
    "bind",
    "bindkey",
    "zle",
    "switch",
    "case",
    "repeat",
    "foreach",
    "funcsave",
    "vared",
    "zcompile",
    "hash",
    "disable",
    "enable",
    "integer",
    "float",
    "emit",
];

/// Functions fish ships (`/usr/share/fish/functions`, fish 3.x) that a command word
/// reaches before any program of that name, and that run another program (`ll` and `la`
/// run `ls`, `help` and `open` a browser or `xdg-open`, `funced` an editor) or change
/// what runs later (`alias`, `export`, `trap`). Opaque in [`Dialect::Other`], as is every
/// word starting with `fish_` or `__fish` (fish's own helpers, some of which start
/// `python3`). Shipped functions that run the program of their own name (`ls`, `grep`,
/// `diff`, `man`, `realpath`, `seq`) stay exact.
pub const FISH_FUNCTIONS: &[&str] = &[
    "_",
    "N_",
    "_validate_int",
    "__terlar_git_prompt",
    "alias",
    "cdh",
    "contains_seq",
    "dirh",
    "down-or-search",
    "edit_command_buffer",
    "export",
    "funced",
    "help",
    "history",
    "isatty",
    "la",
    "ll",
    "nextd",
    "open",
    "prevd",
    "prompt_hostname",
    "prompt_login",
    "prompt_pwd",
    "psub",
    "setenv",
    "suspend",
    "trap",
    "umask",
    "up-or-search",
];

/// Why the command word `word` may not run the program of that name in zsh or fish;
/// `None` when it does.
pub(crate) fn other_shell_command_hazard(word: &str) -> Option<String> {
    if OTHER_SHELL_KEYWORDS.contains(&word) {
        return Some(format!(
            "`{word}` is a keyword or builtin of zsh or fish that changes what runs"
        ));
    }
    if FISH_FUNCTIONS.contains(&word) || word.starts_with("fish_") || word.starts_with("__fish") {
        return Some(format!(
            "`{word}` is a function fish ships, which runs other programs or changes what runs"
        ));
    }
    None
}

/// zsh's lowercase arrays tied to risky variables (`path` is `PATH`), and its prompt and
/// hook variables, which run code at every prompt.
const ZSH_TIED: &[&str] = &[
    "path",
    "cdpath",
    "fpath",
    "module_path",
    "manpath",
    "PROMPT",
    "PROMPT2",
    "PROMPT3",
    "PROMPT4",
    "RPROMPT",
    "RPROMPT2",
    "RPS1",
    "RPS2",
    "precmd_functions",
    "preexec_functions",
    "chpwd_functions",
    "periodic_functions",
    "zshaddhistory_functions",
    "zshexit_functions",
];

impl Dialect {
    /// The dialect of the shell at `path`, from its basename: `bash` is
    /// [`Bash`](Self::Bash), `sh`, `dash`, `ash`, `busybox`, `posh`, the ksh family and
    /// `yash` are [`Posix`](Self::Posix), anything else (`zsh`, `fish`, ...) is
    /// [`Other`](Self::Other).
    pub fn for_shell(path: impl AsRef<Path>) -> Dialect {
        let name = path.as_ref().file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "bash" || name == "rbash" {
            Dialect::Bash
        } else if POSIX_SHELLS.contains(&name) {
            Dialect::Posix
        } else {
            Dialect::Other
        }
    }

    /// True when bash-only constructs make the command opaque.
    pub(crate) fn bash_only_is_opaque(self) -> bool {
        self != Dialect::Bash
    }

    /// The lowercase name (`bash`, `posix`, `other`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Bash => "bash",
            Dialect::Posix => "posix",
            Dialect::Other => "other",
            Dialect::Unknown => "unknown",
        }
    }
}

/// Why `text` is not plain, for [`Dialect::Other`]; `None` when it is.
pub(crate) fn not_plain(text: &str) -> Option<String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || " \t\n_./,:=@%+-;&|".contains(c);
    if let Some(c) = text.chars().find(|c| !plain(*c)) {
        return Some(format!(
            "`{}` may mean something else to this shell (only {PLAIN_CHARACTERS} are read the same by every shell)",
            c.escape_default()
        ));
    }
    for word in text.split(|c: char| " \t\n;&|".contains(c)).filter(|w| !w.is_empty()) {
        if word.starts_with('=') || word.starts_with('%') || word == "-" {
            return Some(format!("the word `{word}` may be expanded by this shell"));
        }
        // A risky name given as a word (`read path`, `for path in`, `set PATH`,
        // `export path=x`) may be assigned: these shells have their own ways to do it.
        let name = word.split('=').next().unwrap_or(word).trim_end_matches('+');
        let is_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if is_name && (super::words::vars::is_risky_variable(name) || ZSH_TIED.contains(&name)) {
            return Some(format!("`{word}` may set {name}, which changes what runs"));
        }
    }
    None
}
