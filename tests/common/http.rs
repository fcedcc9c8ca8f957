//! `bash-mcp serve --http 127.0.0.1:0` as a child, and a plain HTTP/1.0
//! client over a TCP socket, so tests can send what no SDK would (bad JSON,
//! wrong headers, oversized bodies) and see the status line itself.
//! Included with `#[path = "common/http.rs"] mod http;`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running HTTP server.
pub struct HttpServe {
    child: Option<Child>,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The server's stderr.
    pub log: PathBuf,
}

/// An answer: status, headers (lower-case names) and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON (the last SSE event's data for an event stream).
    pub fn json(&self) -> Value {
        let text = if self.header("content-type") == Some("text/event-stream") {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .next_back()
                .unwrap_or_else(|| panic!("no event in {:?}", self.body))
        } else {
            &self.body
        };
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

impl HttpServe {
    /// Starts `bash_mcp serve --http ADDR ARGS` with `env` added, waiting for
    /// the line that names its address. `listen` is usually `127.0.0.1:0`.
    pub fn start(bin: &str, listen: &str, args: &[&str], env: &[(&str, &str)], log: PathBuf) -> HttpServe {
        let mut command = Command::new(bin);
        command.args(["serve", "--http", listen]).args(args);
        for (name, value) in env {
            command.env(name, value);
        }
        HttpServe::spawn(command, log)
    }

    /// Starts `command`, a server built on the same HTTP front end, waiting
    /// for the line that names its address.
    pub fn spawn(mut command: Command, log: PathBuf) -> HttpServe {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start bash-mcp serve --http");
        let mut serve = HttpServe {
            child: Some(child),
            addr: String::new(),
            log,
        };
        let deadline = Instant::now() + super::HANG_GUARD;
        loop {
            let log = std::fs::read_to_string(&serve.log).unwrap_or_default();
            if let Some(rest) = log.split("serving MCP on http://").nth(1) {
                serve.addr = rest.split('/').next().unwrap().to_owned();
                return serve;
            }
            if let Some(status) = serve.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("the server exited ({status}) before serving:\n{log}");
            }
            assert!(Instant::now() < deadline, "the server did not start:\n{log}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The started command's process id.
    pub fn child_id(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn port(&self) -> u16 {
        self.addr.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// Opens a connection and sends a request (HTTP/1.0: the server closes
    /// the connection after the answer, whose body runs to the close).
    pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> TcpStream {
        let mut stream = TcpStream::connect(&self.addr).expect("connect");
        stream.set_read_timeout(Some(super::HANG_GUARD)).unwrap();
        let mut head = format!("{method} {path} HTTP/1.0\r\n");
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        // The server may answer (413) before reading a large body.
        let _ = stream.write_all(body);
        stream
    }

    /// Sends a request and reads the whole answer.
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
        read_answer(self.send(method, path, headers, body))
    }

    /// POSTs a JSON-RPC message to /mcp with the usual headers and `extra`.
    pub fn post(&self, message: &Value, extra: &[(&str, &str)]) -> Answer {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        headers.extend_from_slice(extra);
        self.request("POST", "/mcp", &headers, message.to_string().as_bytes())
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then waits for a clean exit (status 0).
    pub fn stop(mut self) {
        let mut child = self.child.take().unwrap();
        // SAFETY: kill takes no pointer; the pid is the child this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + super::HANG_GUARD;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "the server ended with {status} on SIGTERM:\n{}",
                    self.log()
                );
                return;
            }
            assert!(Instant::now() < deadline, "the server did not exit on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl HttpServe {
    /// Waits for the started command to end on its own (after the test has
    /// stopped the server inside it), up to [`super::HANG_GUARD`].
    pub fn wait(mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + super::HANG_GUARD;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server's command did not end:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill takes no pointer; the pid is the child this test started.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + super::HANG_GUARD;
            while child.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Reads an answer's status line and headers, leaving the body.
pub fn read_head(reader: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').expect("a header");
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    (status, headers)
}

/// Reads a whole answer to the connection's end.
pub fn read_answer(stream: TcpStream) -> Answer {
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader);
    let mut body = String::new();
    let _ = reader.read_to_string(&mut body);
    Answer { status, headers, body }
}

/// A file holding `token`, for --auth-token-file.
pub fn token_file(dir: &Path, token: &str) -> PathBuf {
    let path = dir.join("token");
    std::fs::write(&path, format!("{token}\n")).unwrap();
    path
}

/// The `serve --http` audit log of a server whose data home is `dir`, one
/// entry a line.
pub fn audit_entries(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("bash-mcp/audit.jsonl"))
        .expect("the audit log")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs `execute` as a task in both eras with `bearer` as the credential
/// (a 2025-11-25 task-augmented call in a session; a 2026-07-28 call the
/// server makes a task, its command held until the test creates a file in
/// `dir`), and returns the audit entries of each: the call that started
/// the job and the job's end.
pub fn task_calls_audited(server: &HttpServe, dir: &Path, bearer: &str) -> Vec<Value> {
    use serde_json::json;
    let auth = ("Authorization", bearer);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "tasks", "version": "0"}}});
    let answer = server.post(&init, &[auth]);
    assert_eq!(answer.status, 200, "{answer:?}");
    let session = answer.header("mcp-session-id").expect("a session").to_owned();
    let in_session = [auth, ("Mcp-Session-Id", session.as_str())];
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "execute", "arguments": {"command": "echo task-2025"}, "task": {"ttl": 60000}}});
    let created = server.post(&call, &in_session).json();
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    let result = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": id}});
    let done = server.post(&result, &in_session).json();
    assert_eq!(done["result"]["structuredContent"]["output"], "task-2025\n", "{done}");

    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let stateless = |method: &'static str, name: Option<&'static str>| {
        let mut headers = vec![auth, ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
        headers.extend(name.map(|n| ("Mcp-Name", n)));
        headers
    };
    // Held until the file exists: the call cannot end within the poll interval.
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "execute", "arguments": {"command": "until [ -e go-2026 ]; do sleep 0.05; done; echo task-2026"},
        "_meta": meta}});
    let task = server.post(&call, &stateless("tools/call", Some("execute"))).json();
    assert_eq!(task["result"]["resultType"], "task", "{task}");
    let id = task["result"]["taskId"].as_str().unwrap().to_owned();
    std::fs::write(dir.join("go-2026"), "").unwrap();
    let get = json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/get", "params": {"taskId": id, "_meta": meta}});
    let deadline = Instant::now() + super::HANG_GUARD;
    let done = loop {
        let reply = server.post(&get, &stateless("tasks/get", None)).json();
        if reply["result"]["status"] != "working" {
            break reply;
        }
        assert!(Instant::now() < deadline, "the task never ended: {reply}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["structuredContent"]["output"], "task-2026\n");

    let entries = audit_entries(dir);
    let mut found = Vec::new();
    for marker in ["task-2025", "task-2026"] {
        for tool in ["execute", "job"] {
            let entry = entries
                .iter()
                .find(|e| e["tool"] == tool && e["command"].as_str().is_some_and(|c| c.contains(marker)))
                .unwrap_or_else(|| panic!("no {tool} entry for {marker} in {entries:#?}"));
            found.push(entry.clone());
        }
    }
    found
}
