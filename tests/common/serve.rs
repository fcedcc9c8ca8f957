//! `bash-mcp serve` as a child speaking MCP over its stdin and stdout, for
//! the tests that drive the binary the way a client does. Included with
//! `#[path = "common/serve.rs"] mod serve;` by the tests that use it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

/// A running `bash-mcp serve`.
pub struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: i64,
    /// Where the server's stderr goes (shown when a test fails).
    pub log: PathBuf,
}

impl Serve {
    /// Starts `program` (the `bash-mcp` binary, or a wrapper such as
    /// `strace` followed by its arguments and the binary) as `serve` with
    /// the configuration file `config` in `working_dir`, with `env` added,
    /// and initializes the MCP session.
    pub fn start(program: &[&str], config: &Path, working_dir: &Path, env: &[(&str, &Path)], log: PathBuf) -> Serve {
        let mut command = Command::new(program[0]);
        command.args(&program[1..]).args([
            "serve",
            "--config",
            config.to_str().unwrap(),
            "--working-dir",
            working_dir.to_str().unwrap(),
        ]);
        for (name, value) in env {
            command.env(name, value);
        }
        Serve::launch(command, log)
    }

    /// Starts `command` (a `bash-mcp serve` with its arguments and
    /// environment already set) and initializes the MCP session.
    pub fn launch(mut command: Command, log: PathBuf) -> Serve {
        let program = command.get_program().to_string_lossy().into_owned();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut serve = Serve {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            next_id: 1,
            log,
        };
        serve.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        serve.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        serve
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and waits (up to `limit`) for its response.
    pub fn request_within(&mut self, method: &str, params: Value, limit: Duration) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self.lines.recv_timeout(limit).unwrap_or_else(|_| {
                panic!(
                    "no answer to {method} {params} within {limit:?}; server log:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                )
            });
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Sends a request and waits for its response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.request_within(method, params, super::HANG_GUARD)
    }

    /// Calls `tool` with `args`; the result's structured document.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": args}));
        reply["result"]["structuredContent"].clone()
    }

    /// `execute` of `command`; the result document.
    pub fn run(&mut self, command: &str) -> Value {
        self.call("execute", json!({"command": command}))
    }

    /// Closes stdin and waits for the server to exit.
    pub fn stop(mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + super::HANG_GUARD;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "the server ended with {status} after its stdin closed; its log:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not exit after its stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    /// A test that failed midway still ends the server the way a client
    /// does, by closing its stdin, so that it closes its sessions and removes
    /// its files (and a tracer around it ends with it); killed only if it
    /// does not end within the hang guard.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + super::HANG_GUARD;
        while self.child.try_wait().ok().flatten().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
