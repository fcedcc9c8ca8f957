//! A host that ignores SIGCHLD: the kernel reaps the shell itself and its exit
//! status is gone. Its own test binary, because the disposition is process-wide.

mod common;

use common::*;
use serde_json::json;

#[test]
fn a_host_ignoring_sigchld_gets_exit_status_lost_not_a_made_up_code() {
    let s = server();
    let tag = unique_tag("sigchld");
    // Before: a normal exit status.
    let r = call_tagged(&s, "exit 3", &tag, json!({}));
    assert_eq!(r["exit_code"], 3, "{r}");

    // SAFETY: changes this test process's disposition only (its own binary).
    let previous = unsafe { libc::signal(libc::SIGCHLD, libc::SIG_IGN) };
    let r = call_tagged(&s, "echo done; sleep 30 & exit 3", &tag, json!({}));
    // SAFETY: restores this test process's own previous disposition.
    unsafe { libc::signal(libc::SIGCHLD, previous) };

    assert_eq!(r["error"], "exit_status_lost", "{r}");
    assert!(r.get("exit_code").is_none(), "{r}");
    assert_eq!(r["output"], "done\n", "{r}");
    assert!(r["hint"].as_str().unwrap().contains("SIGCHLD"), "{r}");
    // What the command left running is still killed (found by its run id).
    assert_no_survivors(&tag);

    // After restoring the disposition, statuses are exact again.
    let r = call_tagged(&s, "exit 4", &tag, json!({}));
    assert_eq!(r["exit_code"], 4, "{r}");
}
