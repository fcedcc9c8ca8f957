//! Dropping every capability of the calling process, for both backends:
//! the Landlock helper before it execs its command, and each supervisor
//! init once its mounts are done, before it takes its request (its command
//! inherits the empty sets). Nothing here allocates.

/// Empties the bounding and ambient sets, then the effective, permitted and
/// inheritable ones, so even root keeps no capability (mount, ptrace, raw
/// sockets...). The errno when the kernel refused `capset`.
pub(crate) fn drop_all() -> Result<(), i32> {
    // Only what the set holds: each drop copies the process's credentials
    // (a supervisor's bounding set holds three capabilities, and its inits
    // drop them for every command). By number, up to the kernel's last
    // (rustix names only the capabilities it knows).
    for cap in 0..=63 {
        // SAFETY: prctl with plain integers.
        let held = unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) };
        if held == 0 {
            continue;
        }
        // EINVAL: past the last capability. Any other failure to read
        // drops all the same.
        if held < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
            break;
        }
        // SAFETY: prctl with plain integers.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
    }
    let _ = rustix::thread::clear_ambient_capability_set();
    let none = rustix::thread::CapabilitySets {
        effective: rustix::thread::CapabilitySet::empty(),
        permitted: rustix::thread::CapabilitySet::empty(),
        inheritable: rustix::thread::CapabilitySet::empty(),
    };
    rustix::thread::set_capabilities(None, none).map_err(|e| e.raw_os_error())
}
