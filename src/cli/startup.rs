//! The sandbox the binary starts with: the default fitted to what this
//! machine can enforce, and the one start-up line that names it.

use std::path::Path;

use bash_mcp::sandbox::landlock::BY_NAME_ABI;
use bash_mcp::sandbox::{Backend, InForce, Network};

use super::settings::{DEFAULT_NETWORK, Settings};

/// Fits the default network to the backend: the Landlock backend opens a
/// network by name only from ABI [`BY_NAME_ABI`], so on an older kernel
/// (and no working bubblewrap) the default network is off instead, which
/// is tighter, rather than every command failing. A network the file
/// names is left as it is (it fails where it cannot be enforced). Returns
/// what was changed, for the start-up line.
pub fn fit_default(settings: &mut Settings) -> Option<String> {
    let sandbox = &settings.config.sandbox;
    if !settings.network_is_default || !sandbox.is_on() {
        return None;
    }
    let probe = bash_mcp::sandbox::probe(sandbox);
    let why = network_off_on(probe.chosen.as_ref())?;
    settings.config.sandbox.network = Network::Off;
    Some(why)
}

/// Why the default network must be off on `backend`, if it must.
fn network_off_on(backend: Option<&Backend>) -> Option<String> {
    let Some(Backend::Landlock { abi, .. }) = backend else {
        return None;
    };
    (*abi < BY_NAME_ABI).then(|| {
        format!(
            "the network is off, not open to {DEFAULT_NETWORK}: the landlock backend opens it by name from Landlock ABI {BY_NAME_ABI} (Linux 6.12) and this kernel has ABI {abi}; install bubblewrap (apt-get install bubblewrap) to reach the registries"
        )
    })
}

/// The start-up line: `bash-mcp: sandbox: <what is in force>` on stderr,
/// whatever the log level (`--quiet` leaves it out), with what
/// [`fit_default`] changed after it.
pub fn announce(settings: &Settings, working_dir: &Path) {
    let in_force = bash_mcp::sandbox::in_force(&settings.config.sandbox, working_dir);
    match &in_force {
        InForce::On { .. } => tracing::info!(sandbox = %in_force, "sandbox in force"),
        _ => tracing::info!(sandbox = %in_force, "no sandbox in force"),
    }
    if settings.quiet {
        return;
    }
    let mut line = format!("sandbox: {in_force}");
    if let Some(fitted) = &settings.sandbox_fitted {
        line.push_str(&format!(" ({fitted})"));
    }
    super::note(&line);
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn the_default_network_is_off_only_where_landlock_cannot_open_it_by_name() {
        let landlock = |abi| Backend::Landlock {
            helper: PathBuf::from("/usr/bin/bash-mcp"),
            abi,
        };
        let bwrap = Backend::Bwrap {
            path: PathBuf::from("/usr/bin/bwrap"),
            disable_userns: true,
        };
        let why = network_off_on(Some(&landlock(BY_NAME_ABI - 1))).unwrap();
        assert!(
            why.contains("apt-get install bubblewrap") && why.contains(DEFAULT_NETWORK),
            "{why}"
        );
        assert_eq!(network_off_on(Some(&landlock(BY_NAME_ABI))), None);
        assert_eq!(network_off_on(Some(&bwrap)), None);
        assert_eq!(network_off_on(None), None, "no backend: every command fails instead");
    }
}
