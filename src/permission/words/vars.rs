//! Environment variables that change what a command runs or how it runs.
//!
//! Assigning any of these (as a `VAR=value` prefix, a standalone assignment, through
//! `env`, `sudo`, `export`, `declare`, `read`, `for VAR in`, ...) makes the command opaque:
//! `PATH=/tmp/evil git status` may not run git at all.

/// A variable (or family of variables) that changes what a command runs or how, with
/// the documentation that says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RiskyVariable {
    /// The name, or for [`RISKY_VARIABLE_PREFIXES`] the prefix.
    pub name: &'static str,
    /// Where its effect is documented, and what it does.
    pub source: &'static str,
}

const fn v(name: &'static str, source: &'static str) -> RiskyVariable {
    RiskyVariable { name, source }
}

/// Variables matched by exact name, each with its source.
pub const RISKY_VARIABLES: &[RiskyVariable] = &[
    // bash(1), sections INVOCATION and Shell Variables; dash(1) ENVIRONMENT; zsh(1)
    // STARTUP/SHUTDOWN FILES and zshparam(1) PARAMETERS USED BY THE SHELL.
    v(
        "PATH",
        "bash(1), dash(1), execvp(3): the directories searched for the command word",
    ),
    v(
        "BASH_ENV",
        "bash(1) INVOCATION: a non-interactive bash sources this file before the command",
    ),
    v(
        "ENV",
        "bash(1) INVOCATION (posix mode, sh), dash(1), zsh(1) in sh emulation: file sourced at startup",
    ),
    v("IFS", "bash(1), dash(1): word splitting of expansions"),
    v(
        "TEXTDOMAIN",
        "bash(1) QUOTING and Shell Variables: the message catalog that translates $\"...\"; the translation is expanded like a double-quoted string, so $(...) in it runs",
    ),
    v(
        "TEXTDOMAINDIR",
        "bash(1) Shell Variables: the directory of the $\"...\" message catalogs (a catalog written by the command runs code, see TEXTDOMAIN)",
    ),
    v(
        "LANGUAGE",
        "gettext(3) and the GNU gettext manual, \"The LANGUAGE variable\": the catalogs $\"...\" translations come from, a path component under TEXTDOMAINDIR",
    ),
    v(
        "PS0",
        "bash(1) PROMPTING: expanded (command substitution) before each command of an interactive shell",
    ),
    v(
        "PS1",
        "bash(1), dash(1), zsh(1): the prompt, expanded with command substitution",
    ),
    v("PS2", "bash(1), dash(1): the continuation prompt, expanded"),
    v("PS3", "bash(1): the `select` prompt"),
    v(
        "PS4",
        "bash(1), dash(1): expanded before each traced command under `set -x`",
    ),
    v(
        "SHELLOPTS",
        "bash(1): options (xtrace, posix, ...) a starting bash turns on from the environment",
    ),
    v(
        "BASHOPTS",
        "bash(1): shopt options (extglob, expand_aliases, ...) a starting bash turns on",
    ),
    v(
        "POSIXLY_CORRECT",
        "bash(1): starts bash in posix mode, which then reads ENV; GNU tools change behaviour",
    ),
    v("CDPATH", "bash(1), dash(1): where `cd` looks for a relative directory"),
    v(
        "GLOBIGNORE",
        "bash(1): names pathname expansion leaves out (also turns on dotglob)",
    ),
    v("EXECIGNORE", "bash(1): executables the PATH search ignores"),
    v(
        "PROMPT_COMMAND",
        "bash(1): run before each prompt of an interactive shell",
    ),
    v(
        "HOME",
        "bash(1) Tilde Expansion, and every program's ~/.config, ~/.gitconfig, ~/.bashrc",
    ),
    v("SHELL", "make(1), script(1), editors: the shell other programs start"),
    v(
        "SHLVL",
        "Debian's bash: with SSH_CLIENT, decides whether a non-interactive bash reads ~/.bashrc",
    ),
    v(
        "SSH_CLIENT",
        "Debian's bash (SSH_SOURCE_BASHRC): a non-interactive bash started by sshd reads ~/.bashrc",
    ),
    v("SSH2_CLIENT", "Debian's bash (SSH_SOURCE_BASHRC), as SSH_CLIENT"),
    v(
        "BASH",
        "bash(1): the path of the running bash; some scripts re-execute it",
    ),
    v(
        "HISTFILE",
        "bash(1), zsh(1): the file an interactive shell writes its history to",
    ),
    v(
        "INPUTRC",
        "readline(3): the init file of an interactive bash (macros bound to keys)",
    ),
    v(
        "auto_resume",
        "bash(1) JOB CONTROL: a simple command may resume a stopped job instead of running",
    ),
    v(
        "histchars",
        "bash(1), zsh(1): the history expansion characters of an interactive shell",
    ),
    v("HISTCHARS", "zshparam(1): the history expansion characters"),
    v(
        "ZDOTDIR",
        "zsh(1) STARTUP/SHUTDOWN FILES: where zsh reads .zshenv and the other startup files",
    ),
    v("FPATH", "zshparam(1), ksh: where autoloaded functions are found"),
    v("fpath", "zshparam(1): the array tied to FPATH"),
    v("MODULE_PATH", "zshparam(1): where zsh loads binary modules from"),
    v("module_path", "zshparam(1): the array tied to MODULE_PATH"),
    v(
        "NULLCMD",
        "zshparam(1): the command run for a redirection without a command (`> file`)",
    ),
    v(
        "READNULLCMD",
        "zshparam(1): the command run for an input redirection without a command (`< file`)",
    ),
    v("STTY", "zshparam(1): zsh runs `stty $STTY` before an external command"),
    v("PROMPT", "zshparam(1): the prompt, expanded under PROMPT_SUBST"),
    v("PROMPT2", "zshparam(1): a prompt, expanded under PROMPT_SUBST"),
    v("PROMPT3", "zshparam(1): a prompt, expanded under PROMPT_SUBST"),
    v("PROMPT4", "zshparam(1): the trace prompt, expanded under PROMPT_SUBST"),
    v("RPROMPT", "zshparam(1): a prompt, expanded under PROMPT_SUBST"),
    v("RPS1", "zshparam(1): a prompt, expanded under PROMPT_SUBST"),
    v("SPROMPT", "zshparam(1): the correction prompt"),
    v(
        "TMPPREFIX",
        "zshparam(1): where zsh writes here-documents and =(...) files",
    ),
    v(
        "XDG_CONFIG_HOME",
        "XDG Base Directory spec; git-config(1) reads $XDG_CONFIG_HOME/git/config",
    ),
    v("FCEDIT", "bash(1) fc: the editor fc runs"),
    // Programs that other programs start: editors, pagers, askpass helpers.
    v("EDITOR", "git-var(1), crontab(1), visudo(8), fc: the editor run"),
    v("VISUAL", "git-var(1), crontab(1): the editor run"),
    v("SUDO_EDITOR", "sudo(8) sudoedit: the editor run"),
    v("PAGER", "man(1), git-var(1), systemctl(1): the pager run"),
    v("MANPAGER", "man(1): the pager run"),
    v(
        "MANOPT",
        "man(1): options added to every man command (-P pager, -H browser)",
    ),
    v("BROWSER", "man(1) -H, xdg-open: the browser run"),
    v(
        "LESS",
        "less(1): options, and `+cmd` commands run at startup (`!` runs a shell)",
    ),
    v("LESSOPEN", "less(1) INPUT PREPROCESSOR: a command run on each file"),
    v("LESSCLOSE", "less(1) INPUT PREPROCESSOR: a command run on each file"),
    v(
        "LESSKEY",
        "less(1): the key-binding file, which can bind shell commands",
    ),
    v("LESSKEYIN", "less(1): the key-binding source file"),
    v("LESSKEY_SYSTEM", "less(1): the system key-binding file"),
    v("SYSTEMD_PAGER", "systemctl(1): the pager run"),
    v("SYSTEMD_EDITOR", "systemctl(1) edit: the editor run"),
    v("SSH_ASKPASS", "ssh(1): the program run for a passphrase"),
    v("SSH_ASKPASS_REQUIRE", "ssh(1): forces the askpass program to run"),
    v("SUDO_ASKPASS", "sudo(8) -A: the program run for a password"),
    v("SSH_AUTH_SOCK", "ssh(1): which agent signs for the user"),
    v("VIMINIT", "vim(1): Ex commands run at startup"),
    v("EXINIT", "vim(1), ex(1): Ex commands run at startup"),
    v("MYVIMRC", "vim(1): the vimrc file"),
    // GNU make manual, 5.7.3 and 9.7 (MAKEFLAGS, MAKEFILES), 10.3 (implicit variables):
    // make imports the environment as variables, and these name programs or options.
    v(
        "MAKEFILES",
        "GNU make manual 3.4: makefiles read before the others (their $(shell) runs)",
    ),
    v(
        "MAKEFLAGS",
        "GNU make manual 5.7.3: options and variable definitions for every make",
    ),
    v("GNUMAKEFLAGS", "GNU make manual 5.7.3: as MAKEFLAGS, for GNU make only"),
    v("MFLAGS", "GNU make manual 5.7.3: options for make"),
    v(
        "MAKESHELL",
        "GNU make manual 5.3.2: the shell of recipes (MS-DOS builds)",
    ),
    v(
        "CC",
        "GNU make manual 10.3: the C compiler run by implicit rules; cargo's cc crate",
    ),
    v("CXX", "GNU make manual 10.3: the C++ compiler run"),
    v("CPP", "GNU make manual 10.3: the preprocessor run"),
    v("AS", "GNU make manual 10.3: the assembler run"),
    v("AR", "GNU make manual 10.3: the archiver run"),
    v("LD", "GNU make manual 10.3, autoconf: the linker run"),
    v("FC", "GNU make manual 10.3: the Fortran compiler run"),
    v(
        "CFLAGS",
        "GNU make manual 10.3, gcc(1): flags such as -wrapper or -fplugin run other code",
    ),
    v("CXXFLAGS", "GNU make manual 10.3, gcc(1): as CFLAGS"),
    v("CPPFLAGS", "GNU make manual 10.3, gcc(1): as CFLAGS"),
    v(
        "LDFLAGS",
        "GNU make manual 10.3, gcc(1): linker flags (-Wl,-plugin, -B)",
    ),
    v("LDLIBS", "GNU make manual 10.3: libraries linked in"),
    // gcc manual, "Environment Variables Affecting GCC".
    v(
        "COMPILER_PATH",
        "gcc(1) ENVIRONMENT: where gcc looks for its subprograms (as, ld, cc1)",
    ),
    v(
        "LIBRARY_PATH",
        "gcc(1) ENVIRONMENT: where gcc looks for libraries and startup files",
    ),
    v("CPATH", "gcc(1) ENVIRONMENT: include directories"),
    v("C_INCLUDE_PATH", "gcc(1) ENVIRONMENT: include directories for C"),
    v("CPLUS_INCLUDE_PATH", "gcc(1) ENVIRONMENT: include directories for C++"),
    v(
        "OBJC_INCLUDE_PATH",
        "gcc(1) ENVIRONMENT: include directories for Objective-C",
    ),
    v(
        "DEPENDENCIES_OUTPUT",
        "gcc(1) ENVIRONMENT: a file gcc writes dependencies to",
    ),
    v(
        "SUNPRO_DEPENDENCIES",
        "gcc(1) ENVIRONMENT: a file gcc writes dependencies to",
    ),
    v(
        "TMPDIR",
        "gcc(1) ENVIRONMENT, bash(1), mktemp(1): where temporary files (and here-documents) go",
    ),
    // The dynamic loader, ld.so(8) ENVIRONMENT (LD_* is a prefix below), and glibc.
    v(
        "GCONV_PATH",
        "iconv_open(3), glibc: loads character-set converters (shared objects) from here",
    ),
    v(
        "GLIBC_TUNABLES",
        "ld.so(8), glibc tunables: changes the loader's and malloc's behaviour",
    ),
    v(
        "HOSTALIASES",
        "hostname(7): the resolver reads host aliases from this file",
    ),
    v(
        "OPENSSL_CONF",
        "config(5ssl): the OpenSSL configuration, which can load engines (shared objects)",
    ),
    // Interpreters: perlrun(1), ruby(1), node(1) ENVIRONMENT (PYTHON*, NODE_* are prefixes).
    v(
        "PERL5OPT",
        "perlrun(1) ENVIRONMENT: switches (-M module) for every perl",
    ),
    v("PERL5LIB", "perlrun(1) ENVIRONMENT: module directories searched first"),
    v("PERLLIB", "perlrun(1) ENVIRONMENT: module directories"),
    v("PERL5DB", "perlrun(1) ENVIRONMENT: the debugger's code"),
    v("PERL5SHELL", "perlrun(1) ENVIRONMENT: the shell perl runs (Windows)"),
    v("PERLDB_OPTS", "perldebug(1): debugger options"),
    v("PERL_MB_OPT", "Module::Build: options for every Build.PL"),
    v("PERL_MM_OPT", "ExtUtils::MakeMaker: options for every Makefile.PL"),
    v("RUBYOPT", "ruby(1) ENVIRONMENT: options (-r library) for every ruby"),
    v("RUBYLIB", "ruby(1) ENVIRONMENT: library directories searched first"),
    v("RUBYPATH", "ruby(1) ENVIRONMENT: where -S finds scripts"),
    v("RUBYSHELL", "ruby(1) ENVIRONMENT: the shell ruby runs"),
    v(
        "RUBYGEMS_GEMDEPS",
        "RubyGems: a gem dependencies file loaded by every ruby",
    ),
    v("GEM_HOME", "gem(1): where gems are installed and loaded from"),
    v("GEM_PATH", "gem(1): where gems are loaded from"),
    v(
        "NODE_OPTIONS",
        "node(1) ENVIRONMENT: options (--require, --import) for every node",
    ),
    v("NODE_PATH", "node(1) ENVIRONMENT: module directories"),
    v(
        "JAVA_TOOL_OPTIONS",
        "JVM Tool Interface: options (-javaagent) for every JVM",
    ),
    v("_JAVA_OPTIONS", "HotSpot: options for every JVM"),
    v("JDK_JAVA_OPTIONS", "java(1): options for every java launcher"),
    v("CLASSPATH", "java(1): where classes are loaded from"),
    // Build tools and package managers.
    v("RUSTC", "cargo(1) ENVIRONMENT: the compiler cargo runs"),
    v(
        "RUSTC_WRAPPER",
        "cargo(1) ENVIRONMENT: a program cargo runs instead of rustc",
    ),
    v(
        "RUSTC_WORKSPACE_WRAPPER",
        "cargo(1) ENVIRONMENT: a program cargo runs instead of rustc",
    ),
    v("RUSTDOC", "cargo(1) ENVIRONMENT: the rustdoc cargo runs"),
    v("RUSTFLAGS", "cargo(1) ENVIRONMENT: flags for rustc (-C linker=...)"),
    v("RUSTDOCFLAGS", "cargo(1) ENVIRONMENT: flags for rustdoc"),
    v("GOFLAGS", "go help environment: flags for every go command (-toolexec)"),
    v("GOPROXY", "go help environment: where modules are downloaded from"),
    v(
        "GOTOOLCHAIN",
        "go help toolchain: downloads and runs another Go toolchain",
    ),
    v("GOENV", "go help environment: the file of go settings"),
    v("GOROOT", "go help environment: the toolchain run"),
    v("GOSUMDB", "go help module-auth: turns off checksum checks of downloads"),
    v(
        "GONOSUMDB",
        "go help module-auth: modules whose downloads are not checked",
    ),
    v(
        "GONOSUMCHECK",
        "go help module-auth: modules whose downloads are not checked",
    ),
    v("GOINSECURE", "go help environment: modules fetched without TLS checks"),
    v(
        "TAR_OPTIONS",
        "GNU tar manual 3.2: options for every tar (--to-command, --checkpoint-action=exec)",
    ),
    v("RSYNC_RSH", "rsync(1): the remote shell program run"),
    v("RSYNC_CONNECT_PROG", "rsync(1): a command run to connect to a daemon"),
    v("CVS_RSH", "cvs(1): the remote shell program run"),
    v("BUNDLE_GEMFILE", "bundle-config(1): the Gemfile, which is Ruby code"),
    v("WGETRC", "wget(1): the startup file"),
    v("CURL_HOME", "curl(1): where .curlrc is read"),
    v("GNUPGHOME", "gpg(1): the keyring and configuration"),
    v(
        "KUBECONFIG",
        "kubectl: which cluster and credentials (exec plugins run commands)",
    ),
    v("DOCKER_HOST", "docker(1): which daemon runs the containers"),
    v("TERMINFO", "terminfo(5): terminal descriptions"),
    v(
        "AWS_CONFIG_FILE",
        "AWS CLI: the configuration (credential_process runs a command)",
    ),
    // The locale chooses the character set a shell reads its code in: in GBK, BIG5 or
    // GB18030 a multibyte character can end in the byte of `\\` and swallow it, so bash
    // sees commands the text does not show. A locale setting to a known-safe value is
    // not risky (see `risky_setting`).
    v(
        "LANG",
        "locale(7), bash(1) Shell Variables: the character set the shell reads its input in",
    ),
    v("LOCPATH", "locale(7), glibc: where locale data files are loaded from"),
    v("NLSPATH", "catopen(3): where message catalogs are loaded from"),
];

/// Prefixes of risky variable names, each with its source (`LD_PRELOAD`,
/// `GIT_SSH_COMMAND`, `PYTHONSTARTUP`, every `BASH_*` such as `BASH_ENV`, `BASH_CMDS`,
/// `BASH_ALIASES` and the exported functions `BASH_FUNC_f%%`, ...).
pub const RISKY_VARIABLE_PREFIXES: &[RiskyVariable] = &[
    v(
        "LD_",
        "ld.so(8) ENVIRONMENT: LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT load shared objects into every program",
    ),
    v("DYLD_", "dyld(1) on macOS: as LD_*"),
    v(
        "GIT_",
        "git(1) ENVIRONMENT VARIABLES: GIT_CONFIG_COUNT/KEY_n/VALUE_n, GIT_SSH_COMMAND, GIT_EXEC_PATH, GIT_EDITOR, GIT_PAGER, GIT_EXTERNAL_DIFF, GIT_DIR, GIT_CONFIG_GLOBAL, ...",
    ),
    v(
        "PYTHON",
        "python(1) ENVIRONMENT: PYTHONSTARTUP, PYTHONPATH, PYTHONHOME, PYTHONINSPECT, PYTHONBREAKPOINT, ...",
    ),
    v(
        "__PYVENV_LAUNCHER__",
        "CPython on macOS: the interpreter a venv launcher starts",
    ),
    v(
        "BASH_",
        "bash(1): BASH_ENV, BASH_CMDS, BASH_ALIASES, BASH_COMPAT, BASH_LOADABLES_PATH, BASH_XTRACEFD and exported functions BASH_FUNC_name%%",
    ),
    v(
        "GCC_",
        "gcc(1) ENVIRONMENT: GCC_EXEC_PREFIX (where subprograms are found), GCC_COMPARE_DEBUG",
    ),
    v(
        "COLLECT_",
        "gcc collect2: COLLECT_GCC, COLLECT_LTO_WRAPPER name the programs collect2 runs",
    ),
    v(
        "CGO_",
        "go help environment: CGO_CFLAGS, CGO_LDFLAGS are passed to the C compiler",
    ),
    v(
        "NPM_CONFIG_",
        "npm-config(7): any npm setting (script-shell, node-options, ...), any case",
    ),
    v(
        "CARGO_",
        "cargo(1) ENVIRONMENT: CARGO_HOME, CARGO_TARGET_<triple>_RUNNER, CARGO_BUILD_RUSTC_WRAPPER, ...",
    ),
    v(
        "RUSTUP_",
        "rustup: RUSTUP_TOOLCHAIN, RUSTUP_HOME choose the toolchain binaries run",
    ),
    v(
        "PIP_",
        "pip(1) configuration: any pip option (--index-url, --extra-index-url)",
    ),
    v("BUNDLE_", "bundle-config(1): any bundler setting"),
    v("LUA_INIT", "lua(1): code run at startup (LUA_INIT_5_4 too)"),
    v("LUA_PATH", "lua(1): module search path"),
    v("LUA_CPATH", "lua(1): C module search path"),
    v("JAVA_", "java tools: JAVA_HOME chooses the JVM run"),
    v("MAVEN_", "mvn(1): MAVEN_OPTS, MAVEN_ARGS"),
    v("GRADLE_", "gradle: GRADLE_OPTS, GRADLE_USER_HOME (init scripts)"),
    v(
        "NODE_",
        "node(1) ENVIRONMENT: NODE_OPTIONS, NODE_PATH, NODE_REPL_EXTERNAL_MODULE, ...",
    ),
    v("YARN_", "yarn: any setting"),
    v(
        "LC_",
        "locale(7), bash(1): LC_ALL, LC_CTYPE and the other categories (see LANG)",
    ),
];

/// Whether assigning `name` can change which program runs or what it does.
///
/// ```
/// use bash_mcp::permission::is_risky_variable;
/// assert!(is_risky_variable("PATH"));
/// assert!(is_risky_variable("LD_PRELOAD"));
/// assert!(is_risky_variable("GIT_SSH_COMMAND"));
/// assert!(is_risky_variable("BASH_CMDS"));
/// assert!(is_risky_variable("npm_config_script_shell"));
/// assert!(!is_risky_variable("FOO"));
/// // This crate's own namespace is not bash's.
/// assert!(!is_risky_variable("BASH_MCP_TEST_TAG"));
/// ```
pub fn is_risky_variable(name: &str) -> bool {
    RISKY_VARIABLES.iter().any(|v| v.name == name)
        || (RISKY_VARIABLE_PREFIXES.iter().any(|p| name.starts_with(p.name)) && !name.starts_with("BASH_MCP_"))
        // npm reads its configuration variables whatever their case.
        || name.get(..11).is_some_and(|p| p.eq_ignore_ascii_case("npm_config_"))
}

/// Why setting `name` to `value` (`None`: a value not known from the text) makes a
/// command opaque, or `None` when it does not.
pub(crate) fn risky_setting(name: &str, value: Option<&str>) -> Option<String> {
    is_risky_setting(name, value).then(|| format!("sets {name}, which changes what runs"))
}

/// Whether setting `name` to `value` (`None`: not known) can change which program runs
/// or what it does. Like [`is_risky_variable`], except that the locale variables (`LANG`,
/// `LC_*`) set to a locale whose character set keeps ASCII bytes apart from multibyte
/// characters (`C`, `POSIX`, any `*.UTF-8`) are not risky.
///
/// ```
/// use bash_mcp::permission::is_risky_setting;
/// assert!(!is_risky_setting("LC_ALL", Some("C")));
/// assert!(!is_risky_setting("LANG", Some("en_US.UTF-8")));
/// assert!(is_risky_setting("LC_ALL", Some("zh_CN.GBK")));
/// assert!(is_risky_setting("LC_ALL", None));
/// assert!(is_risky_setting("LOCPATH", Some("/tmp")));
/// assert!(is_risky_setting("PATH", Some("/usr/bin")));
/// ```
pub fn is_risky_setting(name: &str, value: Option<&str>) -> bool {
    let locale = name == "LANG" || name.starts_with("LC_");
    if locale && let Some(v) = value {
        return !is_safe_locale(v);
    }
    is_risky_variable(name)
}

/// `C`, `POSIX`, empty, or `LANGUAGE[_TERRITORY].UTF-8[@MODIFIER]` (also `utf8`) made of
/// letters only: a name glibc looks up among the system's locales (no `/`), in an
/// encoding where every byte below 0x80 is that ASCII character.
fn is_safe_locale(v: &str) -> bool {
    if matches!(v, "" | "C" | "POSIX") {
        return true;
    }
    let (base, modifier) = v.split_once('@').unwrap_or((v, ""));
    let Some((lang, codeset)) = base.split_once('.') else {
        return false;
    };
    let letters = |s: &str| s.chars().all(|c| c.is_ascii_alphabetic());
    let (language, territory) = lang.split_once('_').unwrap_or((lang, ""));
    matches!(codeset, "UTF-8" | "utf8" | "UTF8" | "utf-8")
        && !language.is_empty()
        && letters(language)
        && letters(territory)
        && letters(modifier)
}

/// The variable name of an assignment word `NAME=v`, `NAME+=v` or `NAME[i]=v`, if it is one.
pub(crate) fn assignment_name(word: &str) -> Option<&str> {
    let end = word.find(['=', '[', '+'])?;
    let name = &word[..end];
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

/// Variables that make a starting shell read and run code from somewhere the command
/// text does not show (a startup file, an exported function, a prompt or trace string).
const SHELL_CODE_VARIABLES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "ZDOTDIR",
    "NULLCMD",
    "READNULLCMD",
];

/// Whether setting `name` makes a shell run code the text does not show: the binary's
/// default gate refuses that (see the README, "Hidden code").
pub(crate) fn is_shell_code_variable(name: &str) -> bool {
    SHELL_CODE_VARIABLES.contains(&name) || name.starts_with("BASH_FUNC_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_names_its_source_once() {
        let all: Vec<&RiskyVariable> = RISKY_VARIABLES.iter().chain(RISKY_VARIABLE_PREFIXES).collect();
        for (i, entry) in all.iter().enumerate() {
            assert!(entry.source.len() > 10, "{} has no source", entry.name);
            assert!(
                !all[..i].iter().any(|e| e.name == entry.name),
                "{} is listed twice",
                entry.name
            );
        }
    }

    #[test]
    fn class_9_gaps_are_risky() {
        for name in [
            "MAKEFILES",
            "COMPILER_PATH",
            "GCC_EXEC_PREFIX",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_KEY_0",
            "GIT_EXEC_PATH",
            "BASH_FUNC_ls%%",
            "BASH_COMPAT",
            "NULLCMD",
            "READNULLCMD",
            "CFLAGS",
            "GLIBC_TUNABLES",
            "RUBYPATH",
            "RUSTC_WORKSPACE_WRAPPER",
            "RUSTUP_TOOLCHAIN",
            "GOTOOLCHAIN",
            "LESS",
            "MANOPT",
            "RSYNC_CONNECT_PROG",
            "NODE_REPL_EXTERNAL_MODULE",
            "PERL_MM_OPT",
            "histchars",
        ] {
            assert!(is_risky_variable(name), "{name}");
        }
        for name in [
            "FOO",
            "TERM",
            "RUST_LOG",
            "RUST_BACKTRACE",
            "CI",
            "NO_COLOR",
            "USER",
            "DEBUG",
        ] {
            assert!(!is_risky_variable(name), "{name}");
        }
    }
}
