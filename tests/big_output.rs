//! One GiB of output: host memory stays bounded and the marker counts exactly.
//! Its own test binary, so the process's peak RSS measures this call alone.

mod common;

use common::*;
use serde_json::json;

#[test]
fn one_gib_of_output_keeps_host_memory_bounded() {
    let s = server();
    let tag = unique_tag("gib");
    let before = peak_rss_kib();
    let r = call_tagged(
        &s,
        "head -c 1073741824 /dev/zero; echo; echo the-end",
        &tag,
        json!({"timeout_seconds": 120}),
    );
    let after = peak_rss_kib();
    assert_eq!(r["exit_code"], 0, "{}", r["message"]);
    let total = 1_073_741_824u64 + "\nthe-end\n".len() as u64;
    assert_eq!(r["output_bytes"], total);
    assert_eq!(r["truncated"], true);
    let out = r["output"].as_str().unwrap();
    // Default limit: 32 KiB kept, the rest counted in one marker line.
    let omitted = total - 32 * 1024;
    assert!(
        out.contains(&format!("[... {omitted} bytes omitted")),
        "{}",
        &out[16_000..17_000.min(out.len())]
    );
    assert!(out.ends_with("\nthe-end\n"));
    assert!(out.len() < 33 * 1024);
    let growth_mib = (after.saturating_sub(before)) / 1024;
    assert!(growth_mib < 64, "peak RSS grew by {growth_mib} MiB");
    assert_no_survivors(&tag);
}
