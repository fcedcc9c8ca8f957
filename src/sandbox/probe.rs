//! The start-up probe: which backend works here, and if none does, exactly
//! why and what to do. It runs each backend for real (a `true` inside the
//! same isolation commands get) rather than trusting version numbers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::bwrap::{self, DISABLE_USERNS_SINCE};
use super::config::{BackendChoice, SandboxConfig};
use super::exec_helper::HELPER_ARG;
use super::landlock::{self, HelperSpec};

/// A backend that the probe found working.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    Bwrap { path: PathBuf, disable_userns: bool },
    Landlock { helper: PathBuf, abi: i32 },
}

impl Backend {
    /// `bwrap` or `landlock`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Bwrap { .. } => "bwrap",
            Backend::Landlock { .. } => "landlock",
        }
    }
}

/// One backend's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub backend: Option<Backend>,
    /// The version found, or why it does not work.
    pub detail: String,
    /// What to do when it does not work.
    pub fix: Option<String>,
}

/// Everything the probe learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub bwrap: Check,
    pub landlock: Check,
    /// `user.max_user_namespaces` > 0 (None when the file is missing).
    pub user_namespaces: Option<bool>,
    pub landlock_abi: Option<i32>,
    pub seccomp: bool,
    /// The backend commands use, per the configured choice.
    pub chosen: Option<Backend>,
}

impl Probe {
    /// Probes the backends `config` may use.
    pub fn run(config: &SandboxConfig) -> Probe {
        let bwrap = match config.backend {
            BackendChoice::Landlock => skipped("bwrap"),
            _ => check_bwrap(config.bwrap_path.as_deref()),
        };
        let landlock = match config.backend {
            BackendChoice::Bwrap => skipped("landlock"),
            _ => check_landlock(config.helper_path.as_deref()),
        };
        let chosen = bwrap.backend.clone().or_else(|| landlock.backend.clone());
        Probe {
            bwrap,
            landlock,
            user_namespaces: std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
                .ok()
                .map(|s| s.trim() != "0"),
            landlock_abi: landlock::landlock_abi(),
            seccomp: rustix::thread::secure_computing_mode().is_ok(),
            chosen,
        }
    }

    /// Why no backend works, and the fixes, for an error message.
    pub fn unavailable_reason(&self) -> (String, String) {
        let mut reasons = Vec::new();
        let mut fixes = Vec::new();
        for (name, check) in [("bwrap", &self.bwrap), ("landlock", &self.landlock)] {
            reasons.push(format!("{name}: {}", check.detail));
            if let Some(fix) = &check.fix {
                fixes.push(fix.clone());
            }
        }
        (reasons.join("; "), fixes.join("; or "))
    }

    /// The probe as JSON, for `status` and `check_env`.
    pub fn to_value(&self) -> Value {
        let check = |c: &Check| json!({"available": c.backend.is_some(), "detail": c.detail, "fix": c.fix});
        json!({
            "backend": self.chosen.as_ref().map(Backend::name),
            "bwrap": check(&self.bwrap),
            "landlock": check(&self.landlock),
            "features": {
                "user_namespaces": self.user_namespaces,
                "landlock_abi": self.landlock_abi,
                "seccomp": self.seccomp,
                "network_isolation": self.chosen.is_some(),
                "pid_namespace": matches!(self.chosen, Some(Backend::Bwrap { .. })),
                "protected_paths": self.chosen.is_some(),
            },
        })
    }
}

fn skipped(name: &str) -> Check {
    Check {
        backend: None,
        detail: format!("not probed: `sandbox.backend` excludes {name}"),
        fix: None,
    }
}

fn unavailable(detail: impl Into<String>, fix: impl Into<String>) -> Check {
    Check {
        backend: None,
        detail: detail.into(),
        fix: Some(fix.into()),
    }
}

const USERNS_FIX: &str = "user namespaces are blocked: on Ubuntu 23.10 and later run \
`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (or give bwrap an AppArmor profile); \
make sure `sysctl user.max_user_namespaces` is above 0; inside a container, start it with \
`--security-opt seccomp=unconfined --security-opt apparmor=unconfined` or use the landlock backend";

fn check_bwrap(configured: Option<&Path>) -> Check {
    let path = match configured {
        Some(path) => path.to_path_buf(),
        None => match super::helper::on_path("bwrap") {
            Some(path) => path,
            None => {
                return unavailable(
                    "bwrap (bubblewrap) is not on PATH",
                    "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap) or set `sandbox.bwrap_path`",
                );
            }
        },
    };
    let version = match Command::new(&path).arg("--version").stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        Ok(out) => {
            return unavailable(
                format!(
                    "{} --version failed: {}",
                    path.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
                "install a working bubblewrap or point `sandbox.bwrap_path` at one",
            );
        }
        Err(e) => {
            return unavailable(
                format!("{} cannot be run: {e}", path.display()),
                "install bubblewrap or point `sandbox.bwrap_path` at an executable bwrap",
            );
        }
    };
    let disable_userns = bwrap::parse_version(&version).is_some_and(|v| v >= DISABLE_USERNS_SINCE);
    let mut trial = Command::new(&path);
    trial.args(["--unshare-user", "--unshare-pid", "--unshare-net", "--cap-drop", "ALL"]);
    if disable_userns {
        trial.arg("--disable-userns");
    }
    // A program named by its path: the trial must not depend on the server's PATH.
    trial.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
    trial.args(["--", "/bin/sh", "-c", ":"]);
    match trial.stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => Check {
            backend: Some(Backend::Bwrap { path, disable_userns }),
            detail: if disable_userns {
                version
            } else {
                format!("{version} (older than 0.8.0: commands can still create user namespaces)")
            },
            fix: None,
        },
        Ok(out) => unavailable(
            format!(
                "{version} cannot create a sandbox here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            USERNS_FIX,
        ),
        Err(e) => unavailable(
            format!("{} cannot be run: {e}", path.display()),
            "check the bwrap install",
        ),
    }
}

fn check_landlock(configured: Option<&Path>) -> Check {
    let abi = match landlock::landlock_version() {
        Ok(abi) => abi,
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
            return unavailable(
                "Landlock is built into this kernel but not enabled",
                "add `landlock` to the `lsm=` boot parameter (see /sys/kernel/security/lsm for the current list) and reboot",
            );
        }
        Err(e) => {
            return unavailable(
                format!(
                    "Landlock is not available ({e}): this kernel has none, or a seccomp filter (a container's) refuses its system calls"
                ),
                "use Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK=y; inside a container, allow the landlock_* system calls in its seccomp profile",
            );
        }
    };
    let Some(helper) = super::helper::find(configured) else {
        return unavailable(
            "the `bash-mcp` helper binary was not found next to the library, in its prefix's bin directory, next to this program, or on PATH",
            "install it with scripts/install-c.sh (or `cargo install --locked --path . --features cli`), or set `sandbox.helper_path`",
        );
    };
    let spec = serde_json::to_string(&HelperSpec::default()).expect("spec serializes");
    // The helper runs itself as the trial program: a path that exists whatever
    // the server's PATH holds.
    let out = Command::new(&helper)
        .args([HELPER_ARG, &spec, "--"])
        .arg(&helper)
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => Check {
            backend: Some(Backend::Landlock { helper, abi }),
            detail: format!("Landlock ABI {abi}, seccomp filter"),
            fix: None,
        },
        Ok(out) => unavailable(
            format!(
                "the helper {} could not restrict itself: {}",
                helper.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            "check that seccomp is enabled (CONFIG_SECCOMP_FILTER) and the helper is the same version as the library",
        ),
        Err(e) => unavailable(
            format!("the helper {} cannot be run: {e}", helper.display()),
            "set `sandbox.helper_path` to the `bash-mcp` binary",
        ),
    }
}
