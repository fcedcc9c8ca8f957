//! Exact permission patterns for shell commands, a policy helper for hosts, and an
//! advisory danger classifier.
//!
//! A host decides whether a command runs by matching operator rules such as
//! `bash.execute:git *` against the string [`permission_pattern`] returns, so that string
//! is a security boundary. It is computed from a real parse of the command (the
//! `brush-parser` crate): every command the text would execute is found, across lists,
//! pipelines, compound commands, substitutions, here-documents fed to shells, `sh -c`
//! strings and wrappers such as `env`, `nice`, `xargs`, `find -exec` and `sudo`.
//! Anything that cannot be known from the text is *opaque* and gets one fixed pattern
//! that only `<tool>:*` matches.
//!
//! The text is parsed as bash, but the shell that runs it may be dash, zsh or fish, which
//! read some text differently. Every function takes the [`Dialect`] of that shell
//! (`analyze_in`, `command_pattern_in`, `permission_pattern_in`); the functions without
//! it (`analyze`, `command_pattern`, `permission_pattern`) use [`Dialect::Unknown`],
//! which is opaque wherever bash and a POSIX `sh` would read the text differently.
//!
//! ```
//! use bash_mcp::permission::command_pattern;
//! assert_eq!(command_pattern("bash.execute", "git status"), "bash.execute:git *");
//! assert_eq!(command_pattern("bash.execute", "true && rm -rf ~"), "bash.execute:{rm,true} *");
//! assert_eq!(command_pattern("bash.execute", "FOO=1 env -i nice git log"), "bash.execute:git *");
//! assert_eq!(command_pattern("bash.execute", "eval \"$X\""), "bash.execute:{unknown}");
//! ```

mod call;
mod classify;
mod dialect;
mod fnmatch;
mod pattern;
mod policy;
mod redirect;
mod scan;
mod walk;
mod words;
mod wrappers;

pub use call::{env_opacity_of, env_opacity_of_args};
#[doc(hidden)]
pub use classify::rule_count;
pub use classify::{Class, Classification, PartClass, classify, classify_call, classify_call_args};
pub use dialect::{Dialect, FISH_FUNCTIONS, OTHER_SHELL_KEYWORDS, PLAIN_CHARACTERS, POSIX_SHELLS};
pub(crate) use fnmatch::fnmatch_bytes;
pub use fnmatch::{fnmatch, fnmatch_escape};
pub use pattern::OPAQUE_BODY;
pub use policy::refusal::{RefusalReason, describe as describe_refusal};
pub use policy::{Decision, PermissionPolicy, PolicyError};
pub use redirect::{Redirect, RedirectMode, normalize_path};
pub use scan::depth::{MAX_NESTING, MAX_PAREN_NESTING};
pub use scan::size::{MAX_ANALYSED_BYTES, MAX_ANALYSED_TOKENS};
pub use words::vars::{RISKY_VARIABLE_PREFIXES, RISKY_VARIABLES, RiskyVariable, is_risky_setting, is_risky_variable};
pub use wrappers::follow::{OPAQUE_BUILTINS, OPAQUE_WRAPPERS, TRANSPARENT_WRAPPERS, VISIBLE_WRAPPERS};
pub use wrappers::shells::{SHELLS, UNANALYSED_SHELLS};

use serde::Serialize;
use serde_json::{Map, Value};

/// One command the text would execute.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Part {
    /// The command word as written, quoting removed (`/usr/bin/git` stays a path).
    pub command_word: String,
    /// The argument vector, quoting removed; `args[0]` is the command word. Expansions
    /// are kept as written (`$HOME`, `$(date)`).
    pub args: Vec<String>,
    /// `args` joined by single spaces: what policy rules are matched against.
    pub normalized_text: String,
    /// The transparent wrappers that were removed (`env`, `nice`, `xargs`, ...).
    pub wrappers: Vec<String>,
    /// Targets of output redirections that apply to this command.
    pub writes: Vec<String>,
    /// The working directory a wrapper starts this command in, as written (`/` for
    /// `env -C / rm x`, `~` for `sudo -i`); relative to the outer one when relative.
    /// `None` when no wrapper changes it, or changes it to a directory the text does
    /// not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,
    /// The arguments that hold the output of commands (`$(...)`, backquotes, `<(...)`):
    /// each argument's index in `args`, with the command words run to produce it
    /// (`python3 <(curl x)` gives `(1, ["curl"])`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub substitutions: Vec<(usize, Vec<String>)>,
    /// Found inside a command or process substitution (its output is an argument).
    #[serde(skip)]
    pub(crate) in_substitution: bool,
}

/// Why (part of) a command cannot be known from its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Opacity {
    /// A sentence naming the construct.
    pub reason: String,
    /// Commands whose output becomes the code that runs (`curl` in `curl x | sh`).
    pub fed_by: Vec<String>,
    /// A shell or `eval` runs code that is not in the text: from standard input, a
    /// stream, an expansion or a startup file (`eval "$x"`, `curl x | sh`,
    /// `sh -c "$(cat f)"`, `BASH_ENV=f bash -c ls`). The binary's default gate refuses
    /// these.
    pub hidden_code: bool,
}

impl Opacity {
    /// A reason with no hidden code.
    pub(crate) fn new(reason: String, fed_by: Vec<String>) -> Opacity {
        Opacity {
            reason,
            fed_by,
            hidden_code: false,
        }
    }
}

/// Everything a command text would execute.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Analysis {
    /// The commands found, in text order (nested ones after their container's earlier
    /// parts). For an opaque command these are only the parts that could be found.
    pub parts: Vec<Part>,
    /// Reasons the command is opaque; empty when every executed command is known.
    pub opaque: Vec<Opacity>,
    /// Every redirection of the text, in text order, including those of no command
    /// (`> file`) and of compound commands (`{ ...; } > file`).
    pub redirects: Vec<Redirect>,
    /// Variable assignments, for the classifier.
    #[serde(skip)]
    pub(crate) assignments: Vec<walk::parse::Assigned>,
}

impl Analysis {
    /// True when some of what the command runs cannot be known from its text.
    ///
    /// ```
    /// use bash_mcp::permission::analyze;
    /// assert!(analyze("$CMD -x").is_opaque());
    /// assert!(!analyze("ls -l").is_opaque());
    /// ```
    pub fn is_opaque(&self) -> bool {
        !self.opaque.is_empty()
    }

    /// True when a shell or `eval` runs code the text does not show (see
    /// [`Opacity::hidden_code`]).
    ///
    /// ```
    /// use bash_mcp::permission::analyze;
    /// assert!(analyze("curl -s https://x | sh").runs_hidden_code());
    /// assert!(analyze("eval \"$X\"").runs_hidden_code());
    /// assert!(!analyze("$CMD -x").runs_hidden_code());
    /// ```
    pub fn runs_hidden_code(&self) -> bool {
        self.opaque.iter().any(|o| o.hidden_code)
    }

    /// The targets of every redirection that writes a file, as written (see
    /// [`Redirect`]). A write to a target not listed here is a bug of the analysis.
    ///
    /// ```
    /// use bash_mcp::permission::analyze;
    /// let a = analyze("echo x > out.txt 2>&1; > empty; { ls; } >> log; cat <f >&g");
    /// assert_eq!(a.writes().collect::<Vec<_>>(), ["out.txt", "empty", "log", "g"]);
    /// ```
    pub fn writes(&self) -> impl Iterator<Item = &str> {
        self.redirects
            .iter()
            .filter(|r| r.mode.writes())
            .map(|r| r.target.as_str())
    }
}

/// Finds every command `command` would execute when run by bash or a POSIX `sh`
/// ([`Dialect::Unknown`]): constructs the two read differently make it opaque. See
/// [`analyze_in`] to name the shell.
///
/// ```
/// use bash_mcp::permission::analyze;
/// let a = analyze("cd src && env FOO=1 git commit -m \"$(date)\"");
/// let words: Vec<&str> = a.parts.iter().map(|p| p.command_word.as_str()).collect();
/// assert_eq!(words, ["cd", "date", "git"]);
/// assert_eq!(a.parts[2].normalized_text, "git commit -m $(date)");
/// assert_eq!(a.parts[2].wrappers, ["env"]);
/// ```
pub fn analyze(command: &str) -> Analysis {
    analyze_in(command, Dialect::Unknown)
}

/// Finds every command `command` would execute when run by a shell of `dialect`.
///
/// ```
/// use bash_mcp::permission::{Dialect, analyze_in};
/// // dash reads `&>` as `&` then `>`: `echo hi &` and `>/dev/null rm x`.
/// let t = "echo hi &>/dev/null rm x";
/// assert!(!analyze_in(t, Dialect::Bash).is_opaque());
/// assert!(analyze_in(t, Dialect::Posix).is_opaque());
/// ```
pub fn analyze_in(command: &str, dialect: Dialect) -> Analysis {
    let mut walker = walk::parse::Walker::new(dialect);
    if let Some(reason) = scan::size::too_large(command) {
        walker.hidden_code(reason, Vec::new());
    } else {
        walker.text(command);
    }
    Analysis {
        parts: walker.parts,
        opaque: walker.opaque,
        redirects: walker.redirects,
        assignments: walker.assignments,
    }
}

/// The permission pattern for running `command` with the tool `tool_name`.
///
/// See the module documentation and the README section "Permissions" for the grammar.
///
/// ```
/// use bash_mcp::permission::command_pattern;
/// assert_eq!(command_pattern("bash.execute", "  ./x.sh --fast # go"), "bash.execute:./x.sh *");
/// assert_eq!(command_pattern("bash.execute", "python -m http.server"), "bash.execute:python *");
/// ```
pub fn command_pattern(tool_name: &str, command: &str) -> String {
    command_pattern_in(tool_name, command, Dialect::Unknown)
}

/// The permission pattern for running `command` with `tool_name` in a shell of `dialect`.
///
/// ```
/// use bash_mcp::permission::{Dialect, command_pattern_in};
/// assert_eq!(command_pattern_in("bash.execute", "ls <(ls)", Dialect::Bash), "bash.execute:ls *");
/// assert_eq!(command_pattern_in("bash.execute", "ls <(ls)", Dialect::Posix), "bash.execute:{unknown}");
/// assert_eq!(command_pattern_in("zsh.run", "git status", Dialect::Other), "zsh.run:git *");
/// assert_eq!(command_pattern_in("zsh.run", "echo *(e:ls:)", Dialect::Other), "zsh.run:{unknown}");
/// ```
pub fn command_pattern_in(tool_name: &str, command: &str, dialect: Dialect) -> String {
    pattern::render(tool_name, &analyze_in(command, dialect))
}

/// Everything a tool call with the JSON arguments `args_json` would execute, run by a
/// shell of `dialect`: its `command`, with the variables its `env` argument sets checked
/// like inline assignments, and, when that leaves the call opaque, the commands of its
/// `stdin` (which may then be read as code). Malformed arguments are opaque.
///
/// ```
/// use bash_mcp::permission::{Dialect, analyze_call_in};
/// let call = r#"{"command":"bash -c ls","env":{"BASH_ENV":"/dev/stdin"},"stdin":"rm -rf ~"}"#;
/// let a = analyze_call_in(call, Dialect::Bash);
/// assert!(a.is_opaque() && a.runs_hidden_code());
/// assert!(a.parts.iter().any(|p| p.normalized_text == "rm -rf ~"));
/// assert!(!analyze_call_in(r#"{"command":"ls","env":{"RUST_LOG":"debug"}}"#, Dialect::Bash).is_opaque());
/// ```
pub fn analyze_call_in(args_json: &str, dialect: Dialect) -> Analysis {
    match call::object(args_json) {
        Ok(args) => analyze_call_args(&args, dialect),
        Err(e) => opaque_analysis(e),
    }
}

/// [`analyze_call_in`] for arguments already parsed.
pub fn analyze_call_args(args: &Map<String, Value>, dialect: Dialect) -> Analysis {
    match call::Call::from_map(args) {
        Ok(call) => call.analyze(dialect),
        Err(e) => opaque_analysis(e),
    }
}

fn opaque_analysis(reason: String) -> Analysis {
    Analysis {
        opaque: vec![Opacity::new(reason, Vec::new())],
        ..Analysis::default()
    }
}

/// The permission pattern for a tool call whose arguments are `args_json`
/// (`{"command": "...", ...}`), for bash or a POSIX `sh` ([`Dialect::Unknown`]).
/// [`permission_pattern_in`] names the shell.
///
/// Malformed JSON or a missing `command` gives the opaque pattern and a
/// `tracing::warn!`, never a wildcard.
///
/// ```
/// use bash_mcp::permission::permission_pattern;
/// assert_eq!(permission_pattern("bash.execute", r#"{"command":"git push"}"#), "bash.execute:git *");
/// assert_eq!(permission_pattern("bash.execute", "not json"), "bash.execute:{unknown}");
/// ```
pub fn permission_pattern(tool_name: &str, args_json: &str) -> String {
    permission_pattern_in(tool_name, args_json, Dialect::Unknown)
}

/// The permission pattern for a tool call whose arguments are `args_json`, run by a
/// shell of `dialect`: what a host's `get_permission_pattern` returns.
///
/// Malformed JSON or a missing `command` gives the opaque pattern and a
/// `tracing::warn!`, never a wildcard. A risky variable in the call's `env` makes the
/// pattern opaque, as it does written inline (see [`analyze_call_in`]).
///
/// ```
/// use bash_mcp::permission::{Dialect, permission_pattern_in};
/// let env = r#"{"command":"git status","env":{"GIT_CONFIG_COUNT":"1"}}"#;
/// assert_eq!(permission_pattern_in("bash.execute", env, Dialect::Bash), "bash.execute:{unknown}");
/// let args = r#"{"command":"[[ -f x ]] && git push"}"#;
/// assert_eq!(permission_pattern_in("bash.execute", args, Dialect::Bash), "bash.execute:git *");
/// assert_eq!(permission_pattern_in("bash.execute", args, Dialect::Unknown), "bash.execute:{unknown}");
/// ```
pub fn permission_pattern_in(tool_name: &str, args_json: &str, dialect: Dialect) -> String {
    match call::object(args_json) {
        Ok(args) => permission_pattern_args_in(tool_name, Ok(&args), dialect),
        Err(e) => permission_pattern_args_in(tool_name, Err(&e), dialect),
    }
}

/// [`permission_pattern_in`] for arguments already parsed: `args` is the
/// arguments object, or why the arguments are not one (the opaque pattern,
/// and a `tracing::warn!` with the reason).
///
/// ```
/// use bash_mcp::permission::{Dialect, permission_pattern_args_in};
/// let args = serde_json::json!({"command": "git push"});
/// let pattern = permission_pattern_args_in("bash.execute", Ok(args.as_object().unwrap()), Dialect::Bash);
/// assert_eq!(pattern, "bash.execute:git *");
/// assert_eq!(permission_pattern_args_in("bash.execute", Err("not an object"), Dialect::Bash), "bash.execute:{unknown}");
/// ```
pub fn permission_pattern_args_in(
    tool_name: &str,
    args: Result<&Map<String, Value>, &str>,
    dialect: Dialect,
) -> String {
    let call = match args {
        Ok(args) => call::Call::from_map(args),
        Err(e) => Err(e.to_owned()),
    };
    match call {
        Ok(call) => pattern::render(tool_name, &call.analyze(dialect)),
        Err(e) => {
            tracing::warn!(tool = tool_name, "permission pattern: {e}");
            pattern::opaque_pattern(tool_name)
        }
    }
}
