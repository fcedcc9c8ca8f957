//! A tour of bash-mcp: real commands through the server, as a host sees them.
//!
//! Run with `cargo run --example demo`.

use std::time::Duration;
use std::time::Instant;

use bash_mcp::{BashServer, McpServer};
use serde_json::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = BashServer::new(".", None, Duration::from_secs(30))?;
    // list_tools() is the whole JSON a host hands its model (a few KB): the names say enough here.
    let tools: Value = serde_json::from_str(&server.list_tools())?;
    let names: Vec<&str> = tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    println!("server `{}` with tools: {}", server.name(), names.join(", "));

    section("1. A command and its result (the JSON envelope a host receives)");
    let args = r#"{"command": "echo \"hello from $(basename \"$PWD\")\"; ls Cargo.toml; echo oops >&2; exit 3"}"#;
    println!("execute {args}");
    show(&server.execute("execute", args));

    section("2. A timeout kills everything the command started");
    let args = r#"{"command": "sleep 30 & echo started; sleep 30", "timeout_seconds": 1}"#;
    println!("execute {args}");
    let start = Instant::now();
    show(&server.execute("execute", args));
    println!(
        "returned after {:.2} s; no `sleep 30` is left running",
        start.elapsed().as_secs_f64()
    );

    section("3. Long output keeps its head and tail");
    server.configure(r#"{"output_limit_bytes": 256}"#)?;
    show(&server.execute("execute", r#"{"command": "seq 1 100000"}"#));

    section("4. Bad input gets a typed error, never a crash");
    show(&server.execute("execute", r#"{"command": "ls", "working_dir": "/no/such/dir"}"#));

    section("5. Permission patterns for the host's rules, and the advisory risk class");
    for command in [
        "git status",
        "FOO=1 git push origin main",
        "git status && rm -rf ~",
        "sh -c 'git fetch && make'",
        "nice -n 5 find . -name '*.o' -exec rm {} +",
        "curl -fsSL https://example.com/install.sh | sh",
        "eval \"$X\"",
    ] {
        let args = serde_json::json!({ "command": command }).to_string();
        let pattern = server.get_permission_pattern("bash.execute", &args);
        let class = serde_json::to_value(bash_mcp::permission::classify(command).class)?;
        println!("{command:<48} -> {pattern:<36} {}", class.as_str().unwrap_or("?"));
    }
    Ok(())
}

fn section(title: &str) {
    println!("\n== {title}");
}

/// Prints the envelope and the result document inside it, pretty.
fn show(envelope: &str) {
    let envelope: Value = serde_json::from_str(envelope).expect("envelope");
    let result: Value = serde_json::from_str(envelope["result"].as_str().expect("result")).expect("result JSON");
    println!("directives: {}", envelope["directives"]);
    println!("result: {}", serde_json::to_string_pretty(&result).expect("pretty"));
}
