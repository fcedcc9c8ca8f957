//! Dropping every capability of the calling process, for both backends:
//! the Landlock helper before it execs its command, and each supervised
//! command's process before its `exec` (its init keeps its own, for the
//! mounts it makes between commands). Nothing here allocates.

/// Empties the bounding and ambient sets, then the effective, permitted and
/// inheritable ones, so even root keeps no capability (mount, ptrace, raw
/// sockets...). The errno when the kernel refused `capset`.
pub(crate) fn drop_all() -> Result<(), i32> {
    // Only what the set holds: each drop copies the process's credentials
    // (a supervisor's bounding set holds three capabilities, and each of
    // its commands' processes drops them). By number, up to the kernel's
    // last.
    for cap in 0..64 {
        // A set of one bit names the capability by number, known to rustix or not.
        let one = rustix::thread::CapabilitySet::from_bits_retain(1 << cap);
        match rustix::thread::capability_is_in_bounding_set(one) {
            Ok(false) => continue,
            // EINVAL: past the last capability.
            Err(rustix::io::Errno::INVAL) => break,
            // Any other failure to read drops all the same.
            Ok(true) | Err(_) => {
                let _ = rustix::thread::remove_capability_from_bounding_set(one);
            }
        }
    }
    let _ = rustix::thread::clear_ambient_capability_set();
    let none = rustix::thread::CapabilitySets {
        effective: rustix::thread::CapabilitySet::empty(),
        permitted: rustix::thread::CapabilitySet::empty(),
        inheritable: rustix::thread::CapabilitySet::empty(),
    };
    rustix::thread::set_capabilities(None, none).map_err(|e| e.raw_os_error())
}
