//! Running out of file descriptors gives a typed `spawn_failed` error naming
//! the cause, and the server works again once fds are available.
//! Its own test binary: it lowers this process's fd limit.

mod common;

use common::*;
use serde_json::json;

#[test]
fn fd_exhaustion_is_a_spawn_failed_error_and_recoverable() {
    let s = server();
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into `old`, a local of that type.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) };
    // Hold every fd up to a low limit so the next pipe cannot be made.
    let limit = fd_count() as u64 + 8;
    let lowered = libc::rlimit {
        rlim_cur: limit,
        rlim_max: old.rlim_max,
    };
    // SAFETY: setrlimit reads one rlimit from a local; this test binary is its own process.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
    let mut hogs = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        hogs.push(f);
    }
    let r = call(&s, json!({"command": "echo unreachable"}));
    assert_eq!(r["error"], "spawn_failed", "{r}");
    assert!(r["message"].as_str().unwrap().contains("file descriptors"), "{r}");
    assert!(r["hint"].as_str().unwrap().contains("ulimit"), "{r}");
    drop(hogs);
    // SAFETY: as above, restoring the limit read at the start.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) }, 0);
    let tag = unique_tag("fds");
    let r = call_tagged(&s, "echo back", &tag, json!({}));
    assert_eq!(r["output"], "back\n");
    assert_no_lasting_zombies();
    assert_no_survivors(&tag);
}
