//! Arguments in the form rules match: paths normalised, made absolute against a known
//! working directory, and widened to what they can reach (`/[a-z]*` is `/*`, `~/../..`
//! is `/`, `~alice` is a home directory).

use super::super::fnmatch::fnmatch;
use super::super::redirect::normalize_path;
use super::rules::rule_set;

/// `s` with trailing slashes removed (`/` stays `/`).
pub(super) fn trim_slashes(s: &str) -> String {
    let t = s.trim_end_matches('/');
    if t.is_empty() && !s.is_empty() {
        "/".to_owned()
    } else {
        t.to_owned()
    }
}

/// Brace expansion of an unquoted-looking word (`/{bin,etc}` → `/bin`, `/etc`), up to
/// 64 words; text without a comma list is returned as is.
pub(super) fn expand_braces(word: &str) -> Vec<String> {
    let mut out = vec![word.to_owned()];
    let mut rounds = 0;
    while rounds < 8 {
        rounds += 1;
        let mut next = Vec::new();
        let mut changed = false;
        for w in &out {
            match split_brace(w) {
                Some((pre, alts, post)) => {
                    changed = true;
                    for a in alts {
                        next.push(format!("{pre}{a}{post}"));
                    }
                }
                None => next.push(w.clone()),
            }
        }
        if next.len() > 64 {
            return out;
        }
        out = next;
        if !changed {
            break;
        }
    }
    out
}

/// The first `{a,b,...}` group of `w` (nested groups are expanded in later rounds):
/// prefix, alternatives, suffix.
fn split_brace(w: &str) -> Option<(&str, Vec<&str>, &str)> {
    let bytes = w.as_bytes();
    let open = w.find('{')?;
    let mut depth = 0;
    let mut commas = Vec::new();
    for (i, &c) in bytes.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    if commas.is_empty() {
                        return None;
                    }
                    let mut alts = Vec::new();
                    let mut from = open + 1;
                    for &k in &commas {
                        alts.push(&w[from..k]);
                        from = k + 1;
                    }
                    alts.push(&w[from..i]);
                    return Some((&w[..open], alts, &w[i + 1..]));
                }
            }
            b',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    None
}

/// An argument in the form rules match: a path (or the path of `of=PATH`) normalised
/// (see [`normalize_path`]), made absolute against `cwd` when a `cd` before it is known,
/// and widened to what it can reach ([`reach`]); anything else with trailing slashes
/// removed.
pub(super) fn normalize_arg(arg: &str, cwd: Option<&str>) -> String {
    if let Some((key, value)) = arg.split_once('=')
        && !key.is_empty()
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && looks_like_path(value)
    {
        return format!("{key}={}", reach(&normalize_path(&user_home(value))));
    }
    if arg.starts_with('-') || !(looks_like_path(arg) || cwd.is_some() && arg != "{}") {
        return trim_slashes(arg);
    }
    let arg = user_home(arg);
    let absolute = match cwd {
        Some(dir) if !arg.starts_with(['/', '~', '$']) => format!("{dir}/{arg}"),
        _ => arg,
    };
    reach(&normalize_path(&absolute))
}

/// A redirection target in the form write rules match: normalised (see
/// [`normalize_path`]) and widened to what it can reach.
pub(super) fn normalize_target(target: &str) -> String {
    reach(&normalize_path(&user_home(target)))
}

/// Whether `s` is written as a path: absolute, from a home directory, or relative with
/// a leading `.`.
pub(super) fn looks_like_path(s: &str) -> bool {
    s.starts_with(['/', '~', '.']) || s.starts_with("$HOME") || s.starts_with("${HOME}")
}

/// `~name` and `~name/...` (another user's home) as `/home/name...`; `~root` as `/root`.
/// `~+` and `~-` (the working directories) are left as they are.
fn user_home(path: &str) -> String {
    let Some(rest) = path.strip_prefix('~') else {
        return path.to_owned();
    };
    let end = rest.find('/').unwrap_or(rest.len());
    let user = &rest[..end];
    let valid = !user.is_empty()
        && user.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && user.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    match user {
        // `~$USER` (which `eval` expands): a user's home.
        _ if user.starts_with('$') => format!("/home/{rest}"),
        _ if !valid => path.to_owned(),
        "root" => format!("/root{}", &rest[end..]),
        _ => format!("/home/{rest}"),
    }
}

/// Whether a path component holds a glob character.
fn is_glob(component: &str) -> bool {
    component.contains(['*', '?', '['])
}

/// Whether the glob `component` matches every name in a directory (hidden ones or not):
/// only `*`, `?` and bracket expressions, after an optional leading `.` (`*`, `?*`,
/// `[a-z]*`, `.*`), not `*.log`.
fn matches_everything(component: &str) -> bool {
    let body = component.strip_prefix('.').unwrap_or(component);
    let mut chars = body.chars();
    let mut any = false;
    while let Some(c) = chars.next() {
        match c {
            '*' | '?' => any = true,
            '[' => {
                any = true;
                // Skip to the closing `]` (a `]` right after `[` or `[!` is literal).
                let mut first = true;
                loop {
                    match chars.next() {
                        None => return false,
                        Some(']') if !first => break,
                        Some('!' | '^') if first => {}
                        Some(_) => first = false,
                    }
                }
            }
            _ => return false,
        }
    }
    any
}

/// Whether the glob `component`, directly under `/`, matches the name of a system
/// directory (`u*` matches `usr`; `tmp*` matches none).
fn names_system_dir(component: &str) -> bool {
    rule_set().system_top.iter().any(|name| fnmatch(component, name))
}

/// Whether `dir` is a home directory (`~`, `/home/x`, `/Users/x`, `/root`).
fn is_home(dir: &str) -> bool {
    super::rules::in_set("home", dir, true)
}

/// A normalised path widened to what it can reach: `..` above the home directory can
/// reach `/` (`~/../..` is `/`), a path of only `..` can reach `/` from any working
/// directory, a glob directly under `/` that names a system directory stands for all of
/// `/` (`/[a-z]*`, `/u*/bin` and `/*/*` are `/*`), a glob that matches every name in a
/// home directory stands for all of it (`~/.*` is `~/*`, `~/*.log` stays), and a glob
/// in the last component of another directory stands for all of it (`/usr/b*` is
/// `/usr/*`).
pub(super) fn reach(path: &str) -> String {
    let mut p = path.to_owned();
    if let Some(rest) = p.strip_prefix("~/..") {
        let rest = rest.trim_start_matches("/..");
        p = if rest.is_empty() {
            "/".to_owned()
        } else {
            format!("/{}", rest.trim_start_matches('/'))
        };
    }
    let only_up = |s: &str| s.split('/').all(|c| c == "..");
    if let Some((dirs, last)) = p.rsplit_once('/')
        && only_up(dirs)
        && !dirs.is_empty()
        && (last == ".." || is_glob(last))
    {
        p = if last == ".." { "/".to_owned() } else { "/*".to_owned() };
    } else if only_up(&p) {
        p = "/".to_owned();
    }
    if let Some(rest) = p.strip_prefix('/')
        && let Some(first) = rest.split('/').next()
        && is_glob(first)
    {
        return if names_system_dir(first) { "/*".to_owned() } else { p };
    }
    if let Some((dir, last)) = p.rsplit_once('/')
        && is_glob(last)
        && !is_glob(dir)
        && (!is_home(dir) || matches_everything(last))
    {
        p = format!("{dir}/*");
    }
    p
}

/// The working directory after `cd`/`pushd` with `operand` (expanded), when it is
/// known (`cd` alone is `~`); `None` when it is not.
pub(super) fn next_directory(cwd: Option<&str>, operand: Option<&str>) -> Option<String> {
    let target = match operand {
        None => "~".to_owned(),
        Some(a) if a == "-" || a.contains(['`', '*', '?', '[']) => return None,
        Some(a) if a.contains('$') => return None,
        Some(a) => a.to_owned(),
    };
    let target = user_home(&target);
    let absolute = if target.starts_with(['/', '~']) {
        target
    } else {
        format!("{}/{target}", cwd?)
    };
    Some(reach(&normalize_path(&absolute)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_reach_what_they_can_match() {
        assert_eq!(reach("/[a-z]*"), "/*");
        assert_eq!(reach("/?*"), "/*");
        assert_eq!(reach("/u*/bin"), "/*");
        assert_eq!(reach("/*/*"), "/*");
        assert_eq!(reach("/tmp*"), "/tmp*");
        assert_eq!(reach("~/.*"), "~/*");
        assert_eq!(reach("~/*.log"), "~/*.log");
        assert_eq!(reach("/home/alice/[!.]*"), "/home/alice/*");
        assert_eq!(reach("/usr/b*"), "/usr/*");
        assert_eq!(reach("~/../.."), "/");
        assert_eq!(reach("../.."), "/");
    }

    #[test]
    fn other_users_homes_are_home_directories() {
        assert_eq!(normalize_arg("~alice", None), "/home/alice");
        assert_eq!(normalize_arg("~root/", None), "/root");
        assert_eq!(normalize_arg("~alice/../..", None), "/");
        assert_eq!(normalize_arg("~+", None), "~+");
    }

    #[test]
    fn a_glob_that_matches_everything_has_no_literal_text() {
        for g in ["*", "?*", "[a-z]*", ".*", ".[!.]*", "[]]*"] {
            assert!(matches_everything(g), "{g}");
        }
        for g in ["*.log", "a*", "[a-z", "x"] {
            assert!(!matches_everything(g), "{g}");
        }
    }
}
