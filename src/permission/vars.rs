//! Environment variables that change what a command runs or how it runs.
//!
//! Assigning any of these (as a `VAR=value` prefix, a standalone assignment, through
//! `env`, `sudo`, `export`, `declare`, `read`, `for VAR in`, ...) makes the command opaque:
//! `PATH=/tmp/evil git status` may not run git at all.

/// Variables matched by exact name.
pub const RISKY_VARIABLES: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "IFS",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "CDPATH",
    "GLOBIGNORE",
    "PROMPT_COMMAND",
    "HOME",
    "ZDOTDIR",
    "XDG_CONFIG_HOME",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "BROWSER",
    "SHELL",
    "LESSOPEN",
    "LESSCLOSE",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CC",
    "CXX",
    "MAKEFLAGS",
    "GNUMAKEFLAGS",
    "MFLAGS",
    // Debian's bash reads ~/.bashrc when these say it was started by sshd.
    "SSH_CLIENT",
    "SSH2_CLIENT",
    "SHLVL",
    "GCONV_PATH",
    "EXECIGNORE",
    "FPATH",
    "TAR_OPTIONS",
    "RSYNC_RSH",
    "VIMINIT",
    "EXINIT",
    "MYVIMRC",
    "OPENSSL_CONF",
    "GOFLAGS",
    "GOPROXY",
    "SUDO_EDITOR",
    "FCEDIT",
    "GIT_EDITOR",
    "PERL_MB_OPT",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_GEMFILE",
    "CPATH",
    "LIBRARY_PATH",
    "WGETRC",
    "CURL_HOME",
    "SSH_AUTH_SOCK",
    "GNUPGHOME",
    "KUBECONFIG",
    "DOCKER_HOST",
    "INPUTRC",
    "TERMINFO",
    "HISTFILE",
    "SYSTEMD_PAGER",
    "SYSTEMD_EDITOR",
    "GIT_ASKPASS",
    "AWS_CONFIG_FILE",
    "BASH",
    "POSIXLY_CORRECT",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "auto_resume",
    // The locale chooses the character set a shell reads its code in: in GBK, BIG5 or
    // GB18030 a multibyte character can end in the byte of `\\` and swallow it, so bash
    // sees commands the text does not show. LOCPATH and NLSPATH load locale and message
    // files from anywhere. A locale setting to a known-safe value is not risky (see
    // `risky_setting`).
    "LANG",
    "LOCPATH",
    "NLSPATH",
];

/// Variables matched by prefix (`LD_PRELOAD`, `GIT_SSH_COMMAND`, `PYTHONSTARTUP`,
/// every `BASH_*` such as `BASH_ENV`, `BASH_CMDS` and `BASH_ALIASES`, ...).
pub const RISKY_VARIABLE_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "GIT_",
    "PYTHON",
    "BASH_",
    "NPM_CONFIG_",
    "CARGO_",
    "PIP_",
    "LUA_INIT",
    "LUA_PATH",
    "LUA_CPATH",
    "JAVA_",
    "MAVEN_",
    "GRADLE_",
    "NODE_",
    "YARN_",
    "LC_",
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
/// ```
pub fn is_risky_variable(name: &str) -> bool {
    RISKY_VARIABLES.contains(&name)
        || RISKY_VARIABLE_PREFIXES.iter().any(|p| name.starts_with(p))
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
