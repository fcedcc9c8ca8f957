//! Which sandbox is in force: what a server's commands run in, said the
//! same way by the binary's start-up line and by `status` and `check_env`
//! (the structured form).

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::config::{Mode, Network, OnUnavailable, SandboxConfig};

/// The one configuration line that runs commands unsandboxed (the same key
/// in JSON: `{"sandbox": {"mode": "off"}}`).
pub const OPT_OUT_LINE: &str = "sandbox.mode = \"off\"";

/// What a server's commands run in.
#[derive(Debug, Clone, PartialEq)]
pub enum InForce {
    /// No sandbox is configured: commands have the server's own rights.
    Off,
    /// Commands run in this sandbox.
    On {
        backend: &'static str,
        mode: Mode,
        /// The writable roots as they resolve now (the server's temp dir
        /// comes on top in every mode).
        writable: Vec<PathBuf>,
        network: Network,
    },
    /// A sandbox is configured and no backend works here.
    Unavailable {
        mode: Mode,
        /// Why each backend does not work.
        reason: String,
        /// What to do about it.
        fix: String,
        /// `warn-and-run-unsandboxed`: commands run with the server's own
        /// rights; else every command fails with `sandbox_unavailable`.
        runs_unsandboxed: bool,
    },
}

/// The sandbox `config` puts commands in, for a server whose working
/// directory is `working_dir` (runs the probe, once per process, when a
/// sandbox is configured).
pub fn in_force(config: &SandboxConfig, working_dir: &Path) -> InForce {
    if !config.is_on() {
        return InForce::Off;
    }
    let probe = super::probe(config);
    match &probe.chosen {
        Some(backend) => InForce::On {
            backend: backend.name(),
            mode: config.mode,
            writable: match config.mode {
                Mode::WorkspaceWrite => config.roots_for(working_dir),
                _ => Vec::new(),
            },
            network: config.network.clone(),
        },
        None => {
            let (reason, fix) = probe.unavailable_reason();
            InForce::Unavailable {
                mode: config.mode,
                reason,
                fix,
                runs_unsandboxed: config.on_unavailable == OnUnavailable::WarnAndRunUnsandboxed,
            }
        }
    }
}

impl InForce {
    /// Whether commands run sandboxed.
    pub fn is_sandboxed(&self) -> bool {
        matches!(self, InForce::On { .. })
    }

    /// The structured form, for `status` and `check_env`.
    pub fn to_value(&self) -> Value {
        let summary = self.to_string();
        match self {
            InForce::Off => json!({
                "sandboxed": false,
                "mode": "off",
                "summary": summary,
            }),
            InForce::On {
                backend,
                mode,
                writable,
                network,
            } => json!({
                "sandboxed": true,
                "backend": backend,
                "mode": mode.as_str(),
                "writable_roots": writable.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "network": network.to_value(),
                "summary": summary,
            }),
            InForce::Unavailable {
                mode,
                reason,
                fix,
                runs_unsandboxed,
            } => json!({
                "sandboxed": false,
                "mode": mode.as_str(),
                "unavailable": reason,
                "fix": fix,
                "commands": if *runs_unsandboxed { "run unsandboxed" } else { "fail with sandbox_unavailable" },
                "unsandboxed_line": OPT_OUT_LINE,
                "summary": summary,
            }),
        }
    }
}

/// The network as a person reads it.
fn network_words(network: &Network) -> String {
    match network {
        Network::Off => "off".into(),
        Network::On => "unrestricted".into(),
        Network::Policy(policy) => {
            let allow: Vec<&str> = policy.allow().collect();
            let mut words = if allow.is_empty() {
                "nothing allowed".to_owned()
            } else {
                format!("only {} through the server's proxy", allow.join(", "))
            };
            let deny: Vec<&str> = policy.deny().collect();
            if !deny.is_empty() {
                words.push_str(&format!(", never {}", deny.join(", ")));
            }
            words
        }
    }
}

impl fmt::Display for InForce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InForce::Off => write!(f, "off: commands run with the server's own rights"),
            InForce::On {
                backend,
                mode,
                writable,
                network,
            } => {
                write!(f, "{} ({backend}); writable: ", mode.as_str())?;
                if writable.is_empty() {
                    write!(f, "only the command's temp dir")?;
                } else {
                    let list: Vec<String> = writable.iter().map(|p| p.display().to_string()).collect();
                    write!(f, "{} and the temp dir", list.join(", "))?;
                }
                write!(f, "; network: {}", network_words(network))
            }
            InForce::Unavailable {
                mode,
                reason,
                fix,
                runs_unsandboxed,
            } => {
                write!(
                    f,
                    "{} configured, but no backend works here ({reason}); ",
                    mode.as_str()
                )?;
                if *runs_unsandboxed {
                    write!(
                        f,
                        "commands run UNSANDBOXED (on_unavailable = \"warn-and-run-unsandboxed\"); to sandbox them: {fix}"
                    )
                } else {
                    write!(
                        f,
                        "every command fails with sandbox_unavailable. Fix: {fix}. Or run commands unsandboxed with the configuration line `{OPT_OUT_LINE}`"
                    )
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::network::NetPolicy;

    #[test]
    fn the_summary_names_backend_mode_roots_and_network() {
        let on = InForce::On {
            backend: "bwrap",
            mode: Mode::WorkspaceWrite,
            writable: vec![PathBuf::from("/home/me/project")],
            network: Network::Policy(NetPolicy::new(&["@package-registries"], &["*.invalid"]).unwrap()),
        };
        assert_eq!(
            on.to_string(),
            "workspace-write (bwrap); writable: /home/me/project and the temp dir; network: only @package-registries through the server's proxy, never *.invalid"
        );
        let value = on.to_value();
        assert_eq!(value["backend"], "bwrap");
        assert_eq!(value["writable_roots"], json!(["/home/me/project"]));
        assert_eq!(value["network"]["allow"], json!(["@package-registries"]));
        assert_eq!(value["sandboxed"], true);
    }

    #[test]
    fn unavailable_names_the_fix_and_the_line_that_opts_out() {
        let none = InForce::Unavailable {
            mode: Mode::WorkspaceWrite,
            reason: "bwrap: not on PATH".into(),
            fix: "install bubblewrap".into(),
            runs_unsandboxed: false,
        };
        let text = none.to_string();
        assert!(
            text.contains("install bubblewrap") && text.contains(OPT_OUT_LINE) && text.contains("sandbox_unavailable"),
            "{text}"
        );
        assert_eq!(none.to_value()["unsandboxed_line"], OPT_OUT_LINE);
        assert!(!none.is_sandboxed());
    }

    #[test]
    fn off_is_said_plainly() {
        assert_eq!(in_force(&SandboxConfig::default(), Path::new("/")), InForce::Off);
        assert_eq!(InForce::Off.to_value()["sandboxed"], false);
    }
}
