//! Finished background jobs hold no fd: a job kept for its result drops its
//! cancel token (an eventfd) when its run ends, and a kept output's file is
//! closed once written. (The output store holds one fd of its own, its
//! directory, from the first output it keeps.) Its own test binary, so the
//! fd count sees this test alone.

mod common;

use common::*;
use serde_json::json;

/// Background jobs whose output is long enough to be kept hold no fd once
/// they are done, and neither does the kept output.
#[test]
fn finished_jobs_and_kept_outputs_hold_no_fd() {
    let s = server();
    let tag = unique_tag("job-leaks");
    let start = |command: &str| {
        let r = call_tagged(&s, command, &tag, json!({"background": true}));
        r["job_id"].as_str().unwrap_or_else(|| panic!("{r}")).to_owned()
    };
    // The first kept output makes the store's directory, which the store
    // holds open while it lives: counted before, not leaked per output.
    let first = start("head -c 1048576 /dev/zero");
    let r = call_tool(&s, "job_status", json!({"job_id": first, "wait_seconds": 60}));
    assert!(r["output_id"].is_string(), "the long output was kept: {r}");
    let fds_before = fd_count();
    let ids: Vec<String> = (0..20).map(|_| start("head -c 1048576 /dev/zero")).collect();
    for id in &ids {
        let r = call_tool(&s, "job_status", json!({"job_id": id, "wait_seconds": 60}));
        assert_eq!(r["exit_code"], 0, "{r}");
        assert!(r["output_id"].is_string(), "the long output was kept: {r}");
    }
    let open: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(fd_count(), fds_before, "finished jobs hold fds: {open:?}");
    assert_no_lasting_zombies();
    assert_no_survivors(&tag);
}
