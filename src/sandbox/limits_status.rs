//! What `status` says of the process limit (`process_limit`): the limit,
//! what bounds commands and session shells on the backend in use (see
//! [`limits`] and [`own_bound`]), and what is left unbounded and why.

use super::limits::{self, Bound};
use super::own_bound;
use super::probe::Backend;

/// What `status` says of the process limit for a sandbox with `backend`
/// (`supervisor`: `sandbox.supervisor`; `helper_found`: whether the helper,
/// which is the supervisor too, can run): the limit, what bounds commands
/// and what bounds session shells, and what is left unbounded and why.
pub fn status(
    max_processes: u32,
    supervisor: bool,
    helper_found: bool,
    backend: Option<&Backend>,
) -> serde_json::Value {
    let (commands, sessions, unbounded): (Option<Bound>, Option<Bound>, Option<String>) = match backend {
        Some(Backend::Bwrap { .. }) => {
            let own = own_bound::bound(helper_found);
            let supervised = supervisor && helper_found;
            match (supervised, limits::pid_max_per_namespace(), own) {
                (true, true, Ok(own)) => (Some(Bound::PidNamespace), Some(own), None),
                (true, true, Err(why)) => (
                    Some(Bound::PidNamespace),
                    None,
                    Some(format!(
                        "session shells and commands in a bwrap of their own (the fallback when the supervisor cannot start): {why}"
                    )),
                ),
                (true, false, own) => (
                    None,
                    own.ok(),
                    Some(format!(
                        "commands through the supervisor: a PID namespace has a pid_max of its own only from Linux 6.14{}",
                        own.err()
                            .map(|why| format!("; session shells and commands in a bwrap of their own: {why}"))
                            .unwrap_or_default()
                    )),
                ),
                (false, _, Ok(own)) => (Some(own), Some(own), None),
                (false, _, Err(why)) => (None, None, Some(format!("every command and session shell: {why}"))),
            }
        }
        // A session's cgroup is the server's to make and remove, as for a
        // bwrap of its own.
        Some(Backend::Landlock { .. }) => match limits::landlock_bound() {
            Ok(bound) => (Some(bound), Some(bound), None),
            Err(why) => (None, None, Some(format!("every command and session shell: {why}"))),
        },
        None => (None, None, None),
    };
    serde_json::json!({
        "max_processes": max_processes,
        "bound_by": commands.map(Bound::name),
        "sessions_bound_by": sessions.map(Bound::name),
        "unbounded": unbounded,
    })
}
