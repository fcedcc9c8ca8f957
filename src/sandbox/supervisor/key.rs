//! What decides a supervisor's command line, kept beside it: a command
//! finds its supervisor by comparing these, without building a command
//! line of a hundred strings for each command. The command line is a
//! function of exactly these (the constants aside), so equal keys mean
//! equal command lines.

use std::path::{Path, PathBuf};

use super::Options;
use crate::sandbox::bwrap::Seen;
use crate::sandbox::guard::Layout;
use crate::sandbox::plan::Plan;

/// A supervisor's bwrap and helper, its plan (with the working dir it
/// starts in), layout and options, and what its command line read of the
/// file system.
#[derive(Debug)]
pub(super) struct Key {
    pub bwrap: PathBuf,
    pub helper: PathBuf,
    pub plan: Plan,
    pub layout: Layout,
    pub options: Options,
    pub seen: Seen,
}

/// A command's side of the comparison, borrowed.
pub(super) struct Wanted<'a> {
    pub bwrap: &'a Path,
    pub helper: &'a Path,
    pub plan: &'a Plan,
    pub layout: &'a Layout,
    pub options: Options,
    pub seen: &'a Seen,
}

impl Wanted<'_> {
    pub fn to_key(&self) -> Key {
        let mut plan = self.plan.clone();
        plan.cwd = starting_dir(self.plan).to_path_buf();
        Key {
            bwrap: self.bwrap.to_path_buf(),
            helper: self.helper.to_path_buf(),
            plan,
            layout: self.layout.clone(),
            options: self.options,
            seen: self.seen.clone(),
        }
    }

    /// Whether `key` is this command's.
    pub fn is(&self, key: &Key) -> bool {
        key.bwrap == self.bwrap
            && key.helper == self.helper
            && key.options == self.options
            && same_sandbox(&key.plan, self.plan)
            && key.layout == *self.layout
            && key.seen == *self.seen
    }
}

/// Where a supervisor for `plan` starts: one serves every working dir
/// (each request names its own), unless the sandbox's /tmp has to keep the
/// working dir visible above it.
pub(super) fn starting_dir(plan: &Plan) -> &Path {
    match plan.cwd_bound_over_tmp() {
        true => &plan.cwd,
        false => Path::new("/"),
    }
}

/// Whether `kept` (a key's plan) is `plan` with its starting dir for its
/// working dir. Every field is named, so a new one cannot be forgotten.
fn same_sandbox(kept: &Plan, plan: &Plan) -> bool {
    let Plan {
        cwd,
        writable,
        protected,
        absent,
        workdir,
        read_deny,
        network,
        temp,
    } = kept;
    cwd == starting_dir(plan)
        && *writable == plan.writable
        && *protected == plan.protected
        && *absent == plan.absent
        && *workdir == plan.workdir
        && *read_deny == plan.read_deny
        && *network == plan.network
        && *temp == plan.temp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::plan::Protected;
    use crate::sandbox::temp::Temp;

    fn plan() -> Plan {
        Plan {
            cwd: "/srv/project/src".into(),
            writable: vec!["/srv/project".into()],
            protected: Vec::new(),
            absent: vec!["/srv/project/.envrc".into()],
            workdir: Some("/srv/project".into()),
            read_deny: Vec::new(),
            network: false,
            temp: Temp::Fresh,
        }
    }

    const OPTIONS: Options = Options {
        observe: true,
        max_processes: 512,
        by_name: false,
        stand_ins: false,
    };

    /// Each command's plan and options beside the base's, and whether its
    /// key is the base's.
    fn variants() -> Vec<(&'static str, Plan, Options, bool)> {
        let mut v = vec![("the base", plan(), OPTIONS, true)];
        let mut p = plan();
        p.cwd = "/srv/elsewhere".into();
        v.push(("another working dir", p, OPTIONS, true));
        let mut p = plan();
        p.writable.push("/srv/cache".into());
        v.push(("another root", p, OPTIONS, false));
        let mut p = plan();
        p.protected.push(Protected {
            path: "/srv/project/.git/config".into(),
            pinned_dirs: vec!["/srv/project/.git".into()],
        });
        v.push(("a protected path", p, OPTIONS, false));
        let mut p = plan();
        p.read_deny.push(Protected {
            path: "/srv/project/secret".into(),
            pinned_dirs: Vec::new(),
        });
        v.push(("a hidden path", p, OPTIONS, false));
        let mut p = plan();
        p.network = true;
        v.push(("the network", p, OPTIONS, false));
        let mut p = plan();
        p.temp = Temp::AtTmp("/srv/tmp".into());
        v.push(("the temp dir", p, OPTIONS, false));
        let mut p = plan();
        p.absent.clear();
        v.push(("an absent name", p, OPTIONS, false));
        for options in [
            Options {
                observe: false,
                ..OPTIONS
            },
            Options {
                max_processes: 64,
                ..OPTIONS
            },
            Options {
                by_name: true,
                ..OPTIONS
            },
            Options {
                stand_ins: true,
                ..OPTIONS
            },
        ] {
            v.push(("other options", plan(), options, false));
        }
        v
    }

    #[test]
    fn a_command_finds_a_supervisor_by_key_only_when_its_command_line_is_the_same() {
        let layout = Layout::default();
        let variants = variants();
        let seen: Vec<Seen> = variants.iter().map(|(_, plan, ..)| Seen::read(plan)).collect();
        let wanted = |i: usize| Wanted {
            bwrap: Path::new("/usr/bin/bwrap"),
            helper: Path::new("/usr/bin/bash-mcp"),
            plan: &variants[i].1,
            layout: &layout,
            options: variants[i].2,
            seen: &seen[i],
        };
        let base_key = wanted(0).to_key();
        for (i, (what, _, _, same)) in variants.iter().enumerate() {
            assert_eq!(wanted(i).is(&base_key), *same, "{what}");
            for j in 0..variants.len() {
                if wanted(i).is(&wanted(j).to_key()) {
                    let (a, b) = (wanted(i).to_key(), wanted(j).to_key());
                    assert_eq!(
                        super::super::supervisor_argv(&a),
                        super::super::supervisor_argv(&b),
                        "{what}"
                    );
                }
            }
        }
        // Another bwrap, another helper, another layout: other keys.
        let mut other = wanted(0);
        other.bwrap = Path::new("/opt/bwrap");
        assert!(!other.is(&base_key));
        let mut other = wanted(0);
        other.helper = Path::new("/opt/bash-mcp");
        assert!(!other.is(&base_key));
        let pinned = Layout {
            pinned: vec!["/srv/project/.git".into()],
            ..Layout::default()
        };
        let mut other = wanted(0);
        other.layout = &pinned;
        assert!(!other.is(&base_key));
    }

    #[test]
    fn a_supervisor_starts_in_the_working_dir_only_when_it_is_bound_above_its_tmp() {
        let mut p = plan();
        assert_eq!(starting_dir(&p), Path::new("/"));
        p.cwd = "/tmp/elsewhere".into();
        assert_eq!(starting_dir(&p), Path::new("/tmp/elsewhere"));
    }
}
