//! The output store: a cut result keeps the whole output under an
//! `output_id`, and `output_read` returns any part of it, checked against a
//! copy the command wrote itself.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use bash_mcp::{BashServer, McpServer};
use common::{TempDir, call, call_tool, tagged};
use serde_json::{Value, json};

/// The store's directory, from `status` (an optional tool: this turns it on).
fn store_dir(server: &impl McpServer) -> Option<PathBuf> {
    server
        .configure(&json!({"tools": {"status": true}}).to_string())
        .unwrap();
    let status = call_tool(server, "status", json!({}));
    assert!(status["output_store"].is_object(), "{status}");
    status["output_store"]["dir"].as_str().map(PathBuf::from)
}

/// A test server that cuts results at the smallest limit, so short outputs are kept.
fn cutting_server() -> common::TestServer {
    let server = common::server();
    server
        .configure(&json!({"output_limit_bytes": 256}).to_string())
        .unwrap();
    server
}

fn read(server: &impl McpServer, args: Value) -> Value {
    call_tool(server, "output_read", args)
}

/// 6 million numbered lines (about 47 MB) with one error line in the middle,
/// through `execute`, and the same bytes in a file.
#[test]
fn a_50_mb_output_is_searched_and_read_back_exactly() {
    let dir = TempDir::new("outputs-big");
    let server = tagged(BashServer::new(&*dir, None, Duration::from_secs(300)).unwrap());
    let result = call(
        &server,
        json!({"command": "{ seq 1 3000000; echo 'error: disk quota exceeded'; seq 3000001 6000000; } | tee copy.txt"}),
    );
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["truncated"], true);
    let id = result["output_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no output_id: {result}"));
    let text = result["output"].as_str().unwrap();
    assert!(
        text.contains(&format!("output_read {{\"output_id\": \"{id}\"}}")),
        "the marker line names the tool and id: {}",
        &text[text.find("[...").unwrap()..][..300]
    );
    let copy = std::fs::read(dir.join("copy.txt")).unwrap();
    assert_eq!(result["output_bytes"], copy.len() as u64);

    let found = read(&server, json!({"output_id": id, "grep": "^error:", "context": 1}));
    assert_eq!(found["match_count"], 1, "{found}");
    let hit = &found["matches"][0];
    assert_eq!(hit["line"], 3_000_001);
    assert_eq!(hit["text"], "error: disk quota exceeded");
    assert_eq!(hit["before"], json!(["3000000"]));
    assert_eq!(hit["after"], json!(["3000001"]));
    let offset = hit["offset"].as_u64().unwrap() as usize;
    assert!(copy[offset..].starts_with(b"error: disk quota exceeded\n"));

    for (offset, length) in [
        (0, 100),
        (offset - 7, 40),
        (copy.len() / 3, 65_536),
        (copy.len() - 10, 100),
    ] {
        let part = read(&server, json!({"output_id": id, "offset": offset, "length": length}));
        let end = (offset + length).min(copy.len());
        assert_eq!(
            part["text"].as_str().unwrap().as_bytes(),
            &copy[offset..end],
            "bytes {offset}..{end}"
        );
        assert_eq!(part["total_bytes"], copy.len() as u64);
    }
    let head = read(&server, json!({"output_id": id, "head_lines": 3}));
    assert_eq!(head["text"], "1\n2\n3\n");
    let tail = read(&server, json!({"output_id": id, "tail_lines": 2}));
    assert_eq!(tail["text"], "5999999\n6000000\n");
}

/// The head and tail a kept result shows are the command's first and last
/// bytes, and the kept output ends where the command's did, with a store
/// larger than the result and with one smaller than it.
#[test]
fn a_kept_result_ends_with_the_commands_last_bytes() {
    let dir = TempDir::new("outputs-tail");
    for (limit, budget) in [(256, 1 << 20), (64 * 1024, 4096)] {
        let server = tagged(BashServer::new(&*dir, None, Duration::from_secs(300)).unwrap());
        server
            .configure(&json!({"output_limit_bytes": limit, "output_store": {"budget_bytes": budget}}).to_string())
            .unwrap();
        let result = call(&server, json!({"command": "seq 1 400000 | tee copy.txt"}));
        let copy = std::fs::read(dir.join("copy.txt")).unwrap();
        assert_eq!(result["output_bytes"], copy.len() as u64, "limit {limit}");
        let text = result["output"].as_str().unwrap();
        let marker = " ...]\n";
        let tail = &text[text.rfind(marker).unwrap_or_else(|| panic!("{text}")) + marker.len()..];
        assert!(tail.ends_with("\n400000\n"), "limit {limit}: {tail}");
        assert!(copy.ends_with(tail.as_bytes()), "limit {limit}: {tail}");
        assert!(
            copy.starts_with(&text.as_bytes()[..text.find("[...").unwrap()]),
            "limit {limit}"
        );
        let id = result["output_id"].as_str().unwrap_or_else(|| panic!("{result}"));
        let last = read(&server, json!({"output_id": id, "tail_lines": 1}));
        assert_eq!(last["text"], "400000\n", "limit {limit}");
    }
}

/// A command printing more than the store's budget: its first bytes up to
/// the budget less `tail_bytes`, and its last `tail_bytes`, read back
/// exactly; the middle is named as not kept.
#[test]
fn an_output_over_the_budget_keeps_its_head_and_its_configured_tail() {
    let dir = TempDir::new("outputs-over");
    let server = tagged(BashServer::new(&*dir, None, Duration::from_secs(300)).unwrap());
    let (budget, tail) = (1u64 << 20, 100_000u64);
    server
        .configure(&json!({"output_store": {"budget_bytes": budget, "tail_bytes": tail}}).to_string())
        .unwrap();
    let result = call(&server, json!({"command": "seq 1 1000000 | tee copy.txt"}));
    let copy = std::fs::read(dir.join("copy.txt")).unwrap();
    let total = copy.len() as u64;
    assert_eq!(result["output_bytes"], total);
    let id = result["output_id"].as_str().unwrap_or_else(|| panic!("{result}"));
    let head = budget - tail;
    for (offset, length) in [
        (0, 65_536),
        (head - 1000, 1000),
        (total - tail, 65_536),
        (total - 30, 100),
    ] {
        let part = read(&server, json!({"output_id": id, "offset": offset, "length": length}));
        let end = (offset + length).min(total) as usize;
        assert_eq!(
            part["text"].as_str().unwrap().as_bytes(),
            &copy[offset as usize..end],
            "bytes {offset}..{end}"
        );
        assert_eq!(
            part["not_kept"],
            json!({"from": head, "to": total - tail, "why": part["not_kept"]["why"]})
        );
    }
    let middle = read(&server, json!({"output_id": id, "offset": head, "length": 10}));
    assert_eq!(middle["skipped_not_kept"]["to"], total - tail, "{middle}");
    assert_eq!(
        read(&server, json!({"output_id": id, "tail_lines": 1}))["text"],
        "1000000\n"
    );
}

#[test]
fn the_oldest_output_is_evicted_and_its_id_says_so() {
    let server = common::server();
    server
        .configure(&json!({"output_limit_bytes": 256, "output_store": {"budget_bytes": 8192}}).to_string())
        .unwrap();
    let ids: Vec<String> = (0..3)
        .map(|_| {
            let r = call(&server, json!({"command": "head -c 3000 /dev/zero | tr '\\0' x"}));
            r["output_id"].as_str().unwrap_or_else(|| panic!("{r}")).to_owned()
        })
        .collect();
    let gone = read(&server, json!({"output_id": ids[0]}));
    assert_eq!(gone["error"], "output_not_found", "{gone}");
    assert!(gone["message"].as_str().unwrap().contains("evicted"), "{gone}");
    for id in &ids[1..] {
        let kept = read(&server, json!({"output_id": id, "length": 10}));
        assert_eq!(kept["text"], "xxxxxxxxxx", "{kept}");
    }
}

#[test]
fn output_that_fits_is_not_kept() {
    let server = common::server();
    let result = call(&server, json!({"command": "echo short"}));
    assert!(result.get("output_id").is_none(), "{result}");
    assert_eq!(store_dir(&server), None, "nothing was written to disk");
}

#[test]
fn separate_streams_are_kept_apart() {
    let server = cutting_server();
    let result = call(
        &server,
        json!({"command": "seq 1 1000; seq 5001 6000 >&2", "streams": "separate"}),
    );
    let out = result["output_id"].as_str().unwrap_or_else(|| panic!("{result}"));
    let err = result["stderr_output_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{result}"));
    assert_eq!(read(&server, json!({"output_id": out, "head_lines": 1}))["text"], "1\n");
    assert_eq!(
        read(&server, json!({"output_id": err, "head_lines": 1}))["text"],
        "5001\n"
    );
}

#[test]
fn the_store_is_private_and_removed_with_its_server() {
    let server = cutting_server();
    let result = call(&server, json!({"command": "seq 1 1000"}));
    let id = result["output_id"].as_str().unwrap().to_owned();
    let dir = store_dir(&server).expect("a store directory once an output is kept");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    let file = dir.join(&id);
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    drop(server);
    assert!(!dir.exists(), "{} was left behind", dir.display());
}

#[test]
fn keeping_can_be_turned_off() {
    let server = common::server();
    server
        .configure(&json!({"output_limit_bytes": 256, "output_store": {"enabled": false}}).to_string())
        .unwrap();
    let result = call(&server, json!({"command": "seq 1 1000"}));
    assert_eq!(result["truncated"], true);
    assert!(result.get("output_id").is_none(), "{result}");
    assert!(!result["output"].as_str().unwrap().contains("output_read"));
}

#[test]
fn bad_reads_name_what_to_change() {
    let server = common::server();
    let unknown = read(&server, json!({"output_id": "out-nope"}));
    assert_eq!(unknown["error"], "output_not_found", "{unknown}");
    let bad = read(&server, json!({"output_id": "x", "lines": 3}));
    assert_eq!(bad["error"], "unknown_argument", "{bad}");
    assert!(bad["hint"].as_str().unwrap().contains("head_lines"), "{bad}");
    let config = server.configure(&json!({"output_store": {"budget": 1}}).to_string());
    assert!(config.unwrap_err().message.contains("output_store.budget"));
}

#[test]
fn a_session_command_keeps_its_whole_output() {
    let server = common::server();
    server
        .configure(&json!({"sessions": {"enabled": true, "output_limit_bytes": 256}}).to_string())
        .unwrap();
    let started = call_tool(
        &server,
        "session_start",
        json!({"env": {common::TAG_VAR: server.tag()}}),
    );
    let id = started["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    let ran = call_tool(
        &server,
        "session_run",
        json!({"session_id": id, "command": "seq 1 2000"}),
    );
    assert_eq!(ran["exit_code"], 0, "{ran}");
    assert_eq!(ran["truncated"], true, "{ran}");
    let output_id = ran["output_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no output_id: {ran}"));
    assert!(
        ran["output"].as_str().unwrap().contains(output_id),
        "the marker names the id: {ran}"
    );
    let found = read(
        &server,
        json!({"output_id": output_id, "grep": "^1500\r?$", "context": 0}),
    );
    assert_eq!(found["match_count"], 1, "{found}");
    let small = call_tool(
        &server,
        "session_run",
        json!({"session_id": id, "command": "echo short"}),
    );
    assert!(small.get("output_id").is_none(), "{small}");
    call_tool(&server, "session_close", json!({"session_id": id}));
}
