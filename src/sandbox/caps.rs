//! Dropping every capability of the calling process, for both backends:
//! the Landlock helper before it execs its command, and each supervised
//! command's process before its `exec` (its init keeps its own, for the
//! mounts it makes between commands). Nothing here allocates.

/// The capabilities of the calling process's bounding set, as a set with
/// bit `n` for capability `n` (one that cannot be read counts as held).
pub(crate) fn bounding_set() -> u64 {
    let mut held = 0;
    // By number, up to the kernel's last.
    for cap in 0..64 {
        // A set of one bit names the capability by number, known to rustix or not.
        let one = rustix::thread::CapabilitySet::from_bits_retain(1 << cap);
        match rustix::thread::capability_is_in_bounding_set(one) {
            Ok(false) => {}
            // EINVAL: past the last capability.
            Err(rustix::io::Errno::INVAL) => break,
            Ok(true) | Err(_) => held |= 1 << cap,
        }
    }
    held
}

/// Empties the bounding and ambient sets, then the effective, permitted and
/// inheritable ones, so even root keeps no capability (mount, ptrace, raw
/// sockets...). The errno when the kernel refused `capset`.
pub(crate) fn drop_all() -> Result<(), i32> {
    drop_held(bounding_set())
}

/// [`drop_all`] for a process whose bounding set is known to be `held`
/// (from [`bounding_set`] in a parent it inherits it from): a supervised
/// command's process drops its init's three capabilities without reading
/// the sixty-odd others one call at a time.
pub(crate) fn drop_held(held: u64) -> Result<(), i32> {
    // Only what the set holds: each drop copies the process's credentials.
    for cap in (0..64).filter(|cap| held & (1 << cap) != 0) {
        let one = rustix::thread::CapabilitySet::from_bits_retain(1 << cap);
        let _ = rustix::thread::remove_capability_from_bounding_set(one);
    }
    let _ = rustix::thread::clear_ambient_capability_set();
    let none = rustix::thread::CapabilitySets {
        effective: rustix::thread::CapabilitySet::empty(),
        permitted: rustix::thread::CapabilitySet::empty(),
        inheritable: rustix::thread::CapabilitySet::empty(),
    };
    rustix::thread::set_capabilities(None, none).map_err(|e| e.raw_os_error())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bounding_set_read_one_by_one_is_the_one_proc_shows() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let shown = status
            .lines()
            .find_map(|l| l.strip_prefix("CapBnd:"))
            .map(|hex| u64::from_str_radix(hex.trim(), 16).unwrap())
            .expect("/proc/self/status has CapBnd");
        assert_eq!(super::bounding_set(), shown);
    }
}
