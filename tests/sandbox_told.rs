//! What the model is told about the sandbox, case by case, through the
//! `bash-mcp` binary on every route a command can take: each refusal is in
//! `sandbox.denied` under the name of what was refused, nothing allowed is
//! listed as refused, and a protection that was not in force says so.

mod common;

use std::path::Path;

use common::sandboxes::*;
use common::*;
use serde_json::{Value, json};

fn output_of(result: &Value) -> &str {
    result["output"].as_str().unwrap_or_default()
}

fn denied(result: &Value) -> Vec<Value> {
    result["sandbox"]["denied"].as_array().cloned().unwrap_or_default()
}

fn write_of(path: &Path) -> Value {
    json!({"op": "write", "path": path.display().to_string()})
}

/// Whether `route` names denials from seccomp notification (a bwrap of its
/// own per command reads them from the error text).
fn notified(route: &str) -> bool {
    // A bwrap of the command's own runs the helper inside it to keep the
    // server's working directory (where every command here runs), whose
    // protected names are guarded: only the fallback, without the helper,
    // has no listener.
    route != "bwrap-fallback"
}

/// A symlink inside the writable root that leads out of it: the kernel
/// refuses the write where it lands, and the result names the write.
#[test]
fn a_write_through_a_symlink_out_of_a_root_is_named() {
    let dir = TempDir::outside_tmp("sbx-told-link");
    let root = dir.join("root");
    let outside = dir.join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let outside = outside.canonicalize().unwrap();
    std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.join("dangling"), root.join("dl")).unwrap();
    let tag = unique_tag("told-link");
    for route in available_routes() {
        let config = binary_config(&root, route, json!({}));
        let result = exec_json(
            &config,
            &root,
            &tag,
            "echo x > out/f; echo rc=$?; echo y > dl; echo rc=$?",
        );
        assert_eq!(output_of(&result).matches("rc=2").count(), 2, "{route}: {result}");
        assert!(
            !outside.join("f").exists() && !outside.join("dangling").exists(),
            "{route}"
        );
        let denied = denied(&result);
        if notified(route) {
            assert_eq!(
                denied,
                [write_of(&outside.join("f")), write_of(&outside.join("dangling"))],
                "{route}: {result}"
            );
        } else {
            // The error text names the path as the command wrote it.
            assert_eq!(
                denied,
                [
                    json!({"op": "write", "path": "out/f"}),
                    json!({"op": "write", "path": "dl"})
                ],
                "{route}: {result}"
            );
        }
        assert!(
            result["sandbox_message"]
                .as_str()
                .unwrap_or_default()
                .contains("refused writes"),
            "{route}: {result}"
        );
    }
    assert_no_survivors(&tag);
}

/// Sends a datagram to a UDP socket of its own on the sandbox's loopback
/// (which stays inside), then to a loopback port nothing in the sandbox has
/// bound and to an outside address (both refused by network off).
const UDP_PROBE: &str = r#"
import socket
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r.bind(("127.0.0.1", 0))
port = r.getsockname()[1]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"hi", ("127.0.0.1", port))
print("got", r.recv(10).decode(), flush=True)
for addr in [("127.0.0.1", OUTSIDE_PORT), ("192.0.2.1", 9)]:
    try:
        s.sendto(b"hi", addr)
    except OSError as e:
        print("refused", addr[0], e.errno, flush=True)
"#;

#[test]
fn udp_to_the_sandboxs_own_loopback_is_no_denial_and_sends_out_are_named_as_sends() {
    if !have_python() {
        return;
    }
    let dir = TempDir::new("sbx-told-udp");
    // A port the host has bound, so that nothing inside has it.
    let host = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = host.local_addr().unwrap().port();
    std::fs::write(dir.join("udp.py"), UDP_PROBE.replace("OUTSIDE_PORT", &port.to_string())).unwrap();
    host.set_nonblocking(true).unwrap();
    let tag = unique_tag("told-udp");
    for route in available_routes() {
        let config = binary_config(&dir, route, json!({"network": false}));
        let result = exec_json(&config, &dir, &tag, "python3 udp.py 2>&1");
        let mut buf = [0u8; 8];
        assert!(host.recv(&mut buf).is_err(), "{route}: a datagram left the sandbox");
        let denied = denied(&result);
        match route {
            // No network socket may exist at all: the first socket() is refused.
            "landlock" => assert_eq!(
                denied,
                [json!({"op": "socket", "family": "AF_INET"})],
                "{route}: {result}"
            ),
            _ => {
                assert!(output_of(&result).contains("got hi"), "{route}: {result}");
                if notified(route) {
                    assert_eq!(
                        denied,
                        [
                            json!({"op": "send", "addr": format!("127.0.0.1:{port}")}),
                            json!({"op": "send", "addr": "192.0.2.1:9"}),
                        ],
                        "{route}: {result}"
                    );
                } else {
                    // The error text names only the unreachable network.
                    assert!(
                        denied
                            .iter()
                            .all(|d| d["addr"] != format!("127.0.0.1:{port}") && d["op"] != "send"),
                        "{route}: {result}"
                    );
                }
            }
        }
    }
    assert_no_survivors(&tag);
}

/// A write to a protected path is refused and listed on every route,
/// Landlock's too (its guarded directories: see docs/sandbox.md), with no
/// note that protection was not in force.
#[test]
fn a_write_to_a_protected_path_is_refused_and_listed_on_every_backend() {
    let dir = TempDir::new("sbx-told-protected");
    std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
    let hook = dir.canonicalize().unwrap().join(".git/hooks/pre-commit");
    let tag = unique_tag("told-protected");
    for route in available_routes() {
        let config = binary_config(&dir, route, json!({}));
        let result = exec_json(&config, &dir, &tag, "echo x > .git/hooks/pre-commit; echo rc=$?");
        assert!(!output_of(&result).contains("rc=0"), "{route}: {result}");
        assert!(!hook.exists(), "{route}: {result}");
        // Named from the notification (absolute), or from the error text
        // where there is no listener (as the command wrote it).
        let named = denied(&result);
        assert!(
            named.len() == 1
                && named[0]["op"] == "write"
                && named[0]["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with(".git/hooks/pre-commit")),
            "{route}: {result}"
        );
        assert!(result["sandbox"].get("notes").is_none(), "{route}: {result}");
    }
    assert_no_survivors(&tag);
}

/// A path `read_deny` hides stands in mode 000 (a file) or as an empty,
/// unreadable directory: reading it fails with an error that names it,
/// and the result lists the read. bubblewrap only (Landlock refuses to run
/// with `read_deny`).
#[test]
fn a_read_of_a_hidden_path_is_named() {
    let dir = TempDir::new("sbx-told-hidden");
    let root = dir.canonicalize().unwrap();
    std::fs::create_dir_all(root.join("keys")).unwrap();
    std::fs::write(root.join("keys/id"), "secret-key").unwrap();
    std::fs::write(root.join("token"), "secret-token").unwrap();
    // Outside /tmp, which a sandboxed command does not see at all.
    let outside = TempDir::outside_tmp("sbx-told-hidden-outside");
    let outside = outside.canonicalize().unwrap();
    std::fs::write(outside.join("creds"), "secret-creds").unwrap();
    let hidden = json!([root.join("keys"), root.join("token"), outside.join("creds")]);
    let tag = unique_tag("told-hidden");
    // Each bubblewrap route, with the network off and, where the helper is
    // there to open the proxy's port, by name (a sandbox shaped for the proxy).
    let by_name = json!({"allow": ["example.invalid"]});
    let cases = available_routes()
        .filter(|r| r.starts_with("bwrap"))
        .flat_map(|r| [(r, json!(false)), (r, by_name.clone())])
        .filter(|(r, network)| *r != "bwrap-fallback" || network == &json!(false));
    for (route, network) in cases {
        let config = binary_config(&root, route, json!({"read_deny": hidden, "network": network}));
        let result = exec_json(
            &config,
            &root,
            &tag,
            &format!(
                "cat keys/id; cat token; ls keys; cat {}; echo done",
                outside.join("creds").display()
            ),
        );
        let text = output_of(&result);
        assert!(!text.contains("secret"), "{route}: {result}");
        assert!(text.contains("done"), "{route}: {result}");
        let read = |p: &Path| json!({"op": "read", "path": p.display().to_string()});
        assert_eq!(
            denied(&result),
            [
                read(&root.join("keys/id")),
                read(&root.join("token")),
                read(&root.join("keys")),
                read(&outside.join("creds"))
            ],
            "{route} (network {network}): {result}"
        );
        assert!(
            result["sandbox_message"]
                .as_str()
                .unwrap_or_default()
                .contains("hidden by read_deny"),
            "{route}: {result}"
        );
    }
    assert_no_survivors(&tag);
}
