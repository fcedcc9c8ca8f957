//! Dropping every capability of the calling process, for both backends:
//! the Landlock helper before it execs its command, and each supervisor
//! init once its mounts are done, before it takes its request (its command
//! inherits the empty sets). Nothing here allocates.

/// Empties the bounding and ambient sets, then the effective, permitted and
/// inheritable ones, so even root keeps no capability (mount, ptrace, raw
/// sockets...). False when the kernel refused `capset` (errno says why).
pub(crate) fn drop_all() -> bool {
    // Only what the set holds: each drop copies the process's credentials
    // (a supervisor's bounding set holds three capabilities, and its inits
    // drop them for every command).
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
    // SAFETY: prctl with constant arguments.
    unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    let header = Header {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [0u32; 6]; // two {effective, permitted, inheritable} triples
    // SAFETY: header and data match the kernel's v3 capset layout.
    unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) == 0 }
}
