//! The toolchains' caches of a sandboxed command. cargo, pip and npm keep
//! their downloads under the home directory, which a sandbox leaves
//! read-only: each would fail (cargo, npm) or warn (pip) on its first
//! write. Making those directories writable would also make the files
//! beside them writable, which the host's own tools trust later, outside
//! any sandbox (`~/.cargo/config.toml` can name a program cargo runs,
//! `~/.cargo/bin` is on the user's PATH, `~/.npmrc` and `pip.conf` name
//! the index and scripts). So a cache the command cannot write where it
//! is is redirected into the command's temp dir, its server's (kept for
//! the server's life, so a second build does not download again) or its
//! own: nothing outside the sandbox trusts what lies there.

use std::ffi::{CString, OsString};
use std::path::{Path, PathBuf};

use super::plan::Plan;

/// One cache: its variable, where the tool keeps it by default (relative
/// to the home directory), and its place in the temp dir.
struct Cache {
    variable: &'static str,
    default_in_home: &'static str,
    in_temp: &'static str,
}

/// The caches redirected when not writable where they are.
const CACHES: &[Cache] = &[
    // cargo's registry index, crate files and git checkouts. cargo still
    // reads `.cargo/config.toml` in the project and its parents.
    Cache {
        variable: "CARGO_HOME",
        default_in_home: ".cargo",
        in_temp: ".cache/cargo",
    },
    Cache {
        variable: "PIP_CACHE_DIR",
        default_in_home: ".cache/pip",
        in_temp: ".cache/pip",
    },
    Cache {
        variable: "npm_config_cache",
        default_in_home: ".npm",
        in_temp: ".cache/npm",
    },
    // The rest of `~/.cache` (go's build cache, yarn, pre-commit, ...).
    Cache {
        variable: "XDG_CACHE_HOME",
        default_in_home: ".cache",
        in_temp: ".cache",
    },
];

/// `NAME=value` variables that move each cache the command could not
/// write into its temp dir. A cache the host already points somewhere
/// writable (the variable set in its environment), or whose default place
/// is writable (an operator listed it in `writable_roots`), stays.
pub fn variables(plan: &Plan, home: Option<&Path>) -> Vec<CString> {
    let lookup = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    redirected(plan, home, lookup)
}

fn redirected(plan: &Plan, home: Option<&Path>, lookup: impl Fn(&str) -> Option<OsString>) -> Vec<CString> {
    CACHES
        .iter()
        .filter(|cache| {
            let place = match lookup(cache.variable) {
                Some(set) => Some(PathBuf::from(set)),
                None => home.map(|h| h.join(cache.default_in_home)),
            };
            !place.is_some_and(|p| p.is_absolute() && plan.in_writable_place(&p) && !plan.is_protected(&p))
        })
        .filter_map(|cache| {
            let mut bytes = format!("{}=", cache.variable).into_bytes();
            bytes.extend_from_slice(plan.temp.seen_at().join(cache.in_temp).as_os_str().as_encoded_bytes());
            CString::new(bytes).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::config::{Mode, SandboxConfig};
    use crate::sandbox::temp::Temp;

    fn plan(roots: &[&Path], temp: Temp) -> Plan {
        let config = SandboxConfig {
            mode: Mode::WorkspaceWrite,
            writable_roots: Some(roots.iter().map(|r| r.to_path_buf()).collect()),
            protected: Vec::new(),
            ..SandboxConfig::default()
        };
        Plan::new(&config, (Path::new("/"), Path::new("/")), &[], temp).unwrap()
    }

    fn names(vars: &[CString]) -> Vec<String> {
        vars.iter().map(|v| v.to_str().unwrap().to_owned()).collect()
    }

    #[test]
    fn caches_the_command_cannot_write_move_into_its_temp_dir() {
        let project = std::env::temp_dir();
        let plan = plan(&[&project], Temp::Fresh);
        let vars = redirected(&plan, Some(Path::new("/home/me")), |_| None);
        assert_eq!(
            names(&vars),
            [
                "CARGO_HOME=/tmp/.cache/cargo",
                "PIP_CACHE_DIR=/tmp/.cache/pip",
                "npm_config_cache=/tmp/.cache/npm",
                "XDG_CACHE_HOME=/tmp/.cache",
            ]
        );
    }

    #[test]
    fn a_cache_writable_where_it_is_stays() {
        // The home directory is a root: every default place is writable.
        let home = std::env::temp_dir().canonicalize().unwrap();
        let plan = plan(&[&home], Temp::Granted(PathBuf::from("/srv/t")));
        assert!(redirected(&plan, Some(&home), |_| None).is_empty());
        // A variable the host set to a writable place stays; one set to a
        // read-only place moves.
        let set = home.join("cargo").into_os_string();
        let plan = self::plan(&[&home], Temp::Granted(PathBuf::from("/srv/t")));
        let vars = redirected(&plan, None, |name| {
            if name == "CARGO_HOME" {
                Some(set.clone())
            } else if name == "PIP_CACHE_DIR" {
                Some("/etc/pip".into())
            } else {
                None
            }
        });
        assert_eq!(
            names(&vars),
            [
                "PIP_CACHE_DIR=/srv/t/.cache/pip",
                "npm_config_cache=/srv/t/.cache/npm",
                "XDG_CACHE_HOME=/srv/t/.cache",
            ]
        );
    }
}
