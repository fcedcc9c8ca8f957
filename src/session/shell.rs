//! Per-shell start-up: the private rc file that installs the marker hooks,
//! the arguments that keep the user's own rc files and history out, and the
//! line typed to run each command.
//!
//! Nothing of the setup is typed into the shell: the hooks come from a
//! private rc file (`--rcfile` for bash, `ZDOTDIR` for zsh, `-C source` for
//! fish, `ENV` for sh) that is deleted once the shell is ready.

use std::path::Path;

/// The shells a session can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellKind {
    /// GNU bash (the default).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
    /// A POSIX sh (dash on Debian).
    Sh,
}

impl ShellKind {
    /// The kind for a shell name or path (`bash`, `/usr/bin/zsh`, `dash`, ...).
    pub fn from_name(name: &str) -> Option<Self> {
        let base = name.rsplit('/').next().unwrap_or(name);
        match base {
            "bash" => Some(Self::Bash),
            "zsh" => Some(Self::Zsh),
            "fish" => Some(Self::Fish),
            "sh" | "dash" | "ash" | "busybox" => Some(Self::Sh),
            _ => None,
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bash => "bash",
            Self::Zsh => "zsh",
            Self::Fish => "fish",
            Self::Sh => "sh",
        }
    }

    /// Whether the shell can add a command to its on-disk history.
    pub fn has_history(self) -> bool {
        self != Self::Sh
    }
}

/// How to start a shell.
pub(crate) struct Launch {
    pub argv: Vec<String>,
    /// Variables set (after the caller's env has been applied).
    pub env_set: Vec<(String, String)>,
    /// Variables removed from the environment.
    pub env_remove: Vec<&'static str>,
    /// Variables set only when neither the host nor the call set them.
    pub env_default: Vec<(String, String)>,
    /// Files to write in the private dir before spawning (by name), deleted once ready.
    pub files: Vec<(&'static str, String)>,
}

const BASH_RC: &str = "rc";
const FISH_RC: &str = "rc.fish";
const SH_RC: &str = "rc.sh";

/// Quotes for POSIX shells (bash, zsh, sh).
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn fish_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The start-up of `kind` at `program`, with the hooks in `dir`.
pub(crate) fn launch(
    kind: ShellKind,
    program: &Path,
    dir: &Path,
    nonce: &str,
    read_rc_files: bool,
    private_history: bool,
    hist_target: Option<&Path>,
) -> Launch {
    let prog = program.display().to_string();
    let d = dir.display().to_string();
    let hf = hist_target.map(|p| p.display().to_string()).unwrap_or_default();
    match kind {
        ShellKind::Bash => {
            let rc_path = dir.join(BASH_RC);
            let user_rc = if read_rc_files {
                "[ -r /etc/bash.bashrc ] && . /etc/bash.bashrc\n[ -r ~/.bashrc ] && . ~/.bashrc\n"
            } else {
                ""
            };
            let rc = format!(
                r#"{user_rc}unset HISTFILE
HISTCONTROL="ignorespace${{HISTCONTROL:+:$HISTCONTROL}}"
__bm_n={nonce}; __bm_d={d}; __bm_hf={hf}; __bm_rc=
__bm_prompt() {{ local s=$? ; s=${{__bm_rc:-$s}}; __bm_rc=; builtin printf '\033]633;D;%s;%s;%s\033]633;E;%s\007' "$__bm_n" "$s" "$PWD" "$__bm_n"; }}
__bm_keep() {{ local c; IFS= read -r -d '' c < "$__bm_d/h"; builtin history -a /dev/null; builtin history -s -- "$c"; builtin history -a -- "$__bm_hf"; }}
PROMPT_COMMAND="__bm_prompt${{PROMPT_COMMAND:+; $PROMPT_COMMAND}}"
PS1=''; PS2=''; PS0='\e]633;C;{nonce}\a'
"#,
                d = sh_quote(&d),
                hf = sh_quote(&hf),
            );
            Launch {
                argv: vec![
                    prog,
                    "--noprofile".into(),
                    "--rcfile".into(),
                    rc_path.display().to_string(),
                    "--noediting".into(),
                    "-i".into(),
                ],
                env_set: Vec::new(),
                env_remove: vec!["HISTFILE", "PROMPT_COMMAND", "PS0", "PS1", "BASH_ENV", "ENV"],
                env_default: Vec::new(),
                files: vec![(BASH_RC, rc)],
            }
        }
        ShellKind::Zsh => {
            let user_rc = if read_rc_files {
                "[[ -r ~/.zshenv ]] && . ~/.zshenv\n[[ -r ~/.zshrc ]] && . ~/.zshrc\n"
            } else {
                ""
            };
            let env = "unsetopt global_rcs\n".to_owned();
            let rc = format!(
                r#"unset ZDOTDIR
{user_rc}unsetopt zle prompt_sp prompt_cr prompt_subst
setopt hist_ignore_space
unset HISTFILE; HISTSIZE=10000; SAVEHIST=10000
__bm_n={nonce}; __bm_d={d}; __bm_hf={hf}; __bm_rc=
__bm_prompt() {{ local s=$? ; s=${{__bm_rc:-$s}}; __bm_rc=; builtin printf '\033]633;D;%s;%s;%s\033]633;E;%s\007' "$__bm_n" "$s" "$PWD" "$__bm_n"; }}
__bm_pre() {{ builtin printf '\033]633;C;%s\007' "$__bm_n"; }}
__bm_keep() {{ local c; c="$(<"$__bm_d/h")"; builtin fc -AI "$__bm_d/w"; builtin print -rs -- "$c"; builtin fc -AI "$__bm_hf"; : >| "$__bm_d/w"; }}
precmd_functions=(__bm_prompt $precmd_functions)
preexec_functions=(__bm_pre $preexec_functions)
PS1=''; PS2=''; RPS1=''; RPROMPT=''
"#,
                d = sh_quote(&d),
                hf = sh_quote(&hf),
            );
            Launch {
                argv: vec![prog, "-i".into()],
                env_set: vec![("ZDOTDIR".into(), d.clone())],
                env_remove: vec!["HISTFILE", "ENV"],
                env_default: Vec::new(),
                files: vec![(".zshenv", env), (".zshrc", rc)],
            }
        }
        ShellKind::Fish => {
            let rc_path = dir.join(FISH_RC);
            let rc = format!(
                r#"set -g fish_greeting ''
set -g __bm_n {nonce}; set -g __bm_d {d}; set -g __bm_hf {hf}; set -g __bm_s 0
function __bm_keep; set -l h (string replace -r '/[^/]*$' '' -- $__bm_hf); test -d $h; or command mkdir -p -- $h; string collect -N < $__bm_d/h >> $__bm_hf; end
function __bm_pre --on-event fish_preexec; printf '\e]633;C;%s\a' $__bm_n; end
function __bm_post --on-event fish_postexec; set -l s $status; if set -q __bm_exiting; printf '\e]633;F;%s\a' $__bm_n; else; printf '\e]633;D;%s;%s;%s\e]633;E;%s\a' $__bm_n $s $PWD $__bm_n; end; end
function __bm_stay --on-event fish_prompt; set -l s $status; set -q __bm_exiting; or return; set -e __bm_exiting; set -e __bm_x; printf '\e]633;D;%s;%s;%s\e]633;E;%s\a' $__bm_n $s $PWD $__bm_n; end
function fish_prompt; end
function fish_right_prompt; end
function fish_mode_prompt; end
function fish_title; end
function exit; set -g __bm_x 1; builtin exit $argv; end
function __bm_ret; return $argv[1]; end
printf '\e]633;D;%s;0;%s\e]633;E;%s\a' $__bm_n $PWD $__bm_n
"#,
                d = fish_quote(&d),
                hf = fish_quote(&hf),
            );
            let mut argv = vec![prog];
            if !read_rc_files {
                argv.push("--no-config".into());
            }
            if private_history {
                argv.push("--private".into());
            }
            argv.extend([
                "-i".into(),
                "-C".into(),
                format!("source {}", fish_quote(&rc_path.display().to_string())),
            ]);
            Launch {
                argv,
                env_set: Vec::new(),
                env_remove: vec!["ENV"],
                // Without XDG_RUNTIME_DIR fish makes /tmp/fish.<user> for its universal
                // variables' notifier and leaves it there: the private directory goes
                // with the session.
                env_default: vec![("XDG_RUNTIME_DIR".into(), dir.display().to_string())],
                files: vec![(FISH_RC, rc)],
            }
        }
        ShellKind::Sh => {
            let rc_path = dir.join(SH_RC);
            let user_rc = if read_rc_files {
                "[ -r \"$HOME/.shrc\" ] && . \"$HOME/.shrc\"\n"
            } else {
                ""
            };
            let rc = format!(
                r#"unset ENV
{user_rc}__bm_n={nonce}; __bm_d={d}; __bm_rc=
__bm_c() {{ printf '\033]633;C;%s\007' "$__bm_n"; }}
PS1='$(__bm_s=$?; printf "\033]633;D;%s;%s;%s\033]633;E;%s\007" "$__bm_n" "${{__bm_rc:-$__bm_s}}" "$PWD" "$__bm_n")'
PS2=''
"#,
                d = sh_quote(&d),
            );
            Launch {
                argv: vec![prog, "-i".into()],
                env_set: vec![("ENV".into(), rc_path.display().to_string())],
                env_remove: vec!["HISTFILE"],
                env_default: Vec::new(),
                files: vec![(SH_RC, rc)],
            }
        }
    }
}

/// The contents of the command file the typed line sources.
///
/// POSIX shells get the command inside `{ ... }` so the whole of it is parsed
/// before any of it runs: a command with an unbalanced quote fails with the
/// shell's own syntax error and nothing of it runs.
///
/// For `sh` (dash) the file defines a function instead, called from the typed
/// line: dash drops the `&&`/`||` context inside `.` scripts, so `set -e`
/// there would end the shell, but keeps it inside functions. The end marker
/// lives in `PS1`, so the function makes `PS1` local: a command that sets it
/// (`. venv/bin/activate`, `PS1='x> '`) changes it only while it runs, even
/// when interrupted.
///
/// The command starts on the file's first line, so `$LINENO` and the line
/// numbers in the shell's error messages are the command's own.
pub(crate) fn command_file(kind: ShellKind, command: &str) -> String {
    match kind {
        ShellKind::Fish => format!("{command}\n"),
        ShellKind::Sh => format!("__bm_f() {{ local PS1; {command}\n}}\n"),
        _ => format!("{{ {command}\n}}\n"),
    }
}

/// The line typed into the shell to run the command file. It starts with a
/// space (so `ignorespace`/`hist_ignore_space` keep it out of history), and
/// the command runs inside an `&&`/`||` list so a failure under `set -e`
/// cannot end the shell (bash, zsh). `__bm_rc` starts empty so a line the
/// shell abandons (a parse error, or SIGINT) reports the shell's own `$?`.
pub(crate) fn command_line(kind: ShellKind, keep_history: bool) -> String {
    let keep = if keep_history { "__bm_keep; " } else { "" };
    match kind {
        ShellKind::Bash | ShellKind::Zsh => format!(" {keep}__bm_rc=; . \"$__bm_d/c\" && __bm_rc=0 || __bm_rc=$?\n"),
        ShellKind::Sh => " __bm_c; __bm_rc=; . \"$__bm_d/c\" && __bm_f && __bm_rc=0 || __bm_rc=$?\n".to_owned(),
        // `exit` in a sourced file only leaves the file: the `exit` wrapper
        // marks it, and the line then ends the shell; else the line ends
        // with the command's own status. The mark is cleared first, since
        // anything may call `exit` between lines (a virtualenv's prompt
        // function restores `$status` with `echo "exit $s" | .`). While
        // exiting, the end marker waits for the next prompt: there is none
        // if the shell exits, and one if fish refuses (jobs still running).
        ShellKind::Fish => {
            format!(
                " {keep}set -e __bm_x; __bm_ret $__bm_s; source $__bm_d/c; set -g __bm_s $status; if set -q __bm_x; set -g __bm_exiting; builtin exit $__bm_s; end; __bm_ret $__bm_s\n"
            )
        }
    }
}

/// One record of fish's history file format: what a kept command puts in
/// the history file, for fish's `__bm_keep` to append to its history.
pub(crate) fn fish_history_record(command: &str, when: u64) -> String {
    let escaped = command.replace('\\', "\\\\").replace('\n', "\\n");
    format!("- cmd: {escaped}\n  when: {when}\n")
}
