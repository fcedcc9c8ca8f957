//! Ten thousand sequential calls leak no fd, no zombie and no process.
//! Its own test binary, so fd and process counts see this test alone.

mod common;

use std::time::Duration;

use bash_mcp::{CancelToken, ExecRequest, Status};
use common::*;
use serde_json::json;

#[test]
fn ten_thousand_calls_leak_nothing() {
    let s = server();
    let tag = unique_tag("leaks");
    // Warm up lazily created state (e.g. the allocator, std's env lock, and
    // the output store's directory, held open from its first kept output).
    call_tagged(&s, "true", &tag, json!({}));
    let r = call_tagged(&s, "head -c 100000 /dev/zero", &tag, json!({}));
    assert!(r["output_id"].is_string(), "{r}");
    let fds_before = fd_count();
    for i in 0..10_000 {
        let r = call_tagged(&s, "true", &tag, json!({}));
        assert_eq!(r["exit_code"], 0, "call {i}: {r}");
    }
    // Timeouts and cancels take other paths: cover them too.
    for _ in 0..20 {
        let r = call_tagged(&s, "sleep 5 & sleep 5", &tag, json!({"timeout_seconds": 0.05}));
        assert_eq!(r["error"], "timeout");
        let r = call_tagged(&s, "cat", &tag, json!({"stdin": "x".repeat(100_000)}));
        assert_eq!(r["exit_code"], 0);
        // A cancel from another thread while the command runs.
        let token = CancelToken::new();
        let canceller = token.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            canceller.cancel();
        });
        let request = ExecRequest::new("sleep 5 & sleep 5").env(TAG_VAR, &tag);
        let outcome = run_cancellable(&s, &request, &token);
        t.join().unwrap();
        assert_eq!(outcome.status, Status::Cancelled);
    }
    assert_eq!(fd_count(), fds_before, "fds leaked");
    assert_no_lasting_zombies();
    assert_no_survivors(&tag);
}
