//! What one agent's workspace server costs: resident memory and CPU of
//! `bash-mcp serve` idle and busy, run with the image's configuration
//! (deploy/bash-mcp.toml: the Landlock sandbox, the audit log; its absolute
//! paths moved under a scratch directory), over stdio, or with `http` over
//! Streamable HTTP as the image serves it.
//!
//! ```text
//! cargo bench --features cli --bench deploy_bench [-- [http] IDLE_SECONDS BUSY_SECONDS]
//! ```
//!
//! Baselines from the same run: the resident memory of an idle `bash`, and
//! the CPU the same commands take when this process spawns `bash -c` itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The command a busy agent runs, call after call.
const BUSY_COMMAND: &str = "true";

fn binary() -> PathBuf {
    std::env::var_os("BASH_MCP_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_bash-mcp")))
}

/// Clock ticks per second, the unit of /proc/<pid>/stat's CPU times.
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf reads a constant of the system; it has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    ticks as f64
}

/// CPU seconds of `pid`: (its own, its reaped children's).
fn cpu_seconds(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command name, which ends with the last ')'.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split_whitespace().collect();
    let field = |n: usize| fields[n - 3].parse::<f64>().unwrap() / ticks_per_second();
    (field(14) + field(15), field(16) + field(17))
}

/// A `/proc/<pid>/status` figure in KiB (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(':')))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{key} of {pid}"))
}

/// The processes below `pid` (the sandbox's helpers and the commands).
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        let tasks = format!("/proc/{parent}/task/{parent}/children");
        for child in std::fs::read_to_string(tasks).unwrap_or_default().split_whitespace() {
            let child: u32 = child.parse().unwrap();
            found.push(child);
            parents.push(child);
        }
    }
    found
}

/// The volumes of the pod (deploy/sandbox-template.yaml) the configuration
/// names: its workspace, home, temp dir and audit log.
const WRITTEN: &[&str] = &["/workspace", "/home/agent", "/tmp", "/var/log/bash-mcp"];

/// The configuration of the image with its paths on the pod's volumes moved
/// under `scratch`, whose directories are made.
fn image_config(scratch: &Path) -> PathBuf {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/bash-mcp.toml")).unwrap();
    let table: toml::Table = text.parse().unwrap();
    let mut config = serde_json::to_value(table).unwrap();
    fn moved(value: &mut serde_json::Value, scratch: &Path) {
        match value {
            serde_json::Value::String(s) if WRITTEN.iter().any(|w| s == w || s.starts_with(&format!("{w}/"))) => {
                *s = format!("{}{s}", scratch.display());
                let dir = if s.ends_with(".jsonl") {
                    Path::new(s.as_str()).parent().unwrap()
                } else {
                    Path::new(s.as_str())
                };
                std::fs::create_dir_all(dir).unwrap();
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|i| moved(i, scratch)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| moved(v, scratch)),
            _ => {}
        }
    }
    moved(&mut config, scratch);
    let path = scratch.join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// How the bench reaches the server.
enum Link {
    Stdio {
        stdin: ChildStdin,
        stdout: BufReader<ChildStdout>,
    },
    /// One kept-alive HTTP/1.1 connection, as a gateway holds one per sandbox.
    Http {
        addr: String,
        token: String,
        session: String,
        stream: BufReader<TcpStream>,
    },
}

struct Server {
    child: Child,
    link: Link,
    next_id: u64,
}

impl Server {
    fn start(config: &Path, http: Option<&Path>) -> Server {
        let mut command = Command::new(binary());
        command.arg("serve").arg("--config").arg(config);
        let mut server = match http {
            None => {
                let mut child = command
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("start bash-mcp");
                let stdin = child.stdin.take().unwrap();
                let stdout = BufReader::new(child.stdout.take().unwrap());
                Server {
                    child,
                    link: Link::Stdio { stdin, stdout },
                    next_id: 1,
                }
            }
            Some(token_file) => {
                let mut child = command
                    .args(["--http", "127.0.0.1:0", "--auth-token-file"])
                    .arg(token_file)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start bash-mcp serve --http");
                let mut stderr = BufReader::new(child.stderr.take().unwrap());
                let mut line = String::new();
                let addr = loop {
                    line.clear();
                    assert!(
                        stderr.read_line(&mut line).unwrap() > 0,
                        "the server ended before serving"
                    );
                    if let Some(rest) = line.split("serving MCP on http://").nth(1) {
                        break rest.split('/').next().unwrap().to_owned();
                    }
                };
                // Keep draining its log so it never blocks on a full pipe.
                std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
                let stream = TcpStream::connect(&addr).expect("connect");
                stream.set_nodelay(true).unwrap();
                let stream = BufReader::new(stream);
                let token = std::fs::read_to_string(token_file).unwrap().trim().to_owned();
                Server {
                    child,
                    link: Link::Http {
                        addr,
                        token,
                        session: String::new(),
                        stream,
                    },
                    next_id: 1,
                }
            }
        };
        server.request(
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"deploy_bench","version":"0"}}"#,
        );
        server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server.request("tools/list", "{}");
        server
    }

    /// Sends one message; returns the answer's body (HTTP) or nothing (stdio,
    /// where answers are read as lines).
    fn send(&mut self, message: &str) -> Option<String> {
        match &mut self.link {
            Link::Stdio { stdin, .. } => {
                stdin.write_all(message.as_bytes()).unwrap();
                stdin.write_all(b"\n").unwrap();
                stdin.flush().unwrap();
                None
            }
            Link::Http {
                addr,
                token,
                session,
                stream,
            } => {
                let mut head = format!(
                    "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
                     Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\n",
                    message.len()
                );
                if !session.is_empty() {
                    head.push_str(&format!(
                        "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
                    ));
                }
                head.push_str("\r\n");
                // One write for head and body: two would wait on Nagle's
                // algorithm and the server's delayed ACK (40 ms a request).
                head.push_str(message);
                stream.get_mut().write_all(head.as_bytes()).unwrap();
                let (status, headers, body) = read_http_answer(stream);
                assert!(status == 200 || status == 202, "HTTP {status}: {body}");
                if let Some(id) = headers.iter().find(|(n, _)| n == "mcp-session-id") {
                    *session = id.1.clone();
                }
                Some(body)
            }
        }
    }

    fn request(&mut self, method: &str, params: &str) -> String {
        let id = self.next_id;
        self.next_id += 1;
        let answer = self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ));
        let line = match (answer, &mut self.link) {
            (Some(body), _) => body,
            (None, Link::Stdio { stdout, .. }) => {
                let mut line = String::new();
                stdout.read_line(&mut line).unwrap();
                line
            }
            (None, Link::Http { .. }) => unreachable!("HTTP answers in the body"),
        };
        assert!(line.contains(&format!(r#""id":{id}"#)), "{line}");
        line
    }

    fn execute(&mut self, command: &str) {
        let params = serde_json::json!({"name": "execute", "arguments": {"command": command}}).to_string();
        let line = self.request("tools/call", &params);
        assert!(
            line.contains(r#"\"exit_code\":0"#) || line.contains(r#""exit_code":0"#),
            "the call failed: {line}"
        );
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident memory of the server and everything below it, in KiB.
    fn rss_kib(&self) -> (u64, u64) {
        let below: u64 = descendants(self.pid())
            .into_iter()
            .map(|p| status_kib(p, "VmRSS"))
            .sum();
        (status_kib(self.pid(), "VmRSS"), below)
    }

    /// Ends the server as its client would: end of input on stdio, SIGTERM over HTTP.
    fn finish(self) {
        let mut child = self.child;
        match self.link {
            Link::Stdio { stdin, .. } => drop(stdin),
            Link::Http { .. } => {
                // SAFETY: kill takes no pointer; the pid is the child this bench started.
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            }
        }
        let _ = child.wait();
    }
}

/// Reads one HTTP/1.1 answer: status, headers (lower-case names), body (by
/// Content-Length, or chunked).
fn read_http_answer(stream: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>, String) {
    let mut line = String::new();
    stream.read_line(&mut line).unwrap();
    let status: u16 = line.split_whitespace().nth(1).expect("a status line").parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        stream.read_line(&mut line).unwrap();
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':').unwrap();
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if let Some(length) = header("content-length") {
        body.resize(length.parse().unwrap(), 0);
        stream.read_exact(&mut body).unwrap();
    } else if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            line.clear();
            stream.read_line(&mut line).unwrap();
            let size = usize::from_str_radix(line.trim(), 16).unwrap();
            let mut chunk = vec![0; size + 2];
            stream.read_exact(&mut chunk).unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    (status, headers, String::from_utf8(body).unwrap())
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// One agent calling without pause for `duration`.
struct Busy {
    calls: u64,
    seconds: f64,
    server_cpu: f64,
    below_cpu: f64,
    rss: u64,
    peak_rss: u64,
}

impl Busy {
    fn measure(server: &mut Server, duration: Duration) -> Busy {
        let (own_before, children_before) = cpu_seconds(server.pid());
        let started = Instant::now();
        let mut calls = 0u64;
        while started.elapsed() < duration {
            server.execute(BUSY_COMMAND);
            calls += 1;
        }
        let seconds = started.elapsed().as_secs_f64();
        let (own_after, children_after) = cpu_seconds(server.pid());
        Busy {
            calls,
            seconds,
            server_cpu: own_after - own_before,
            below_cpu: children_after - children_before,
            rss: server.rss_kib().0,
            peak_rss: status_kib(server.pid(), "VmHWM"),
        }
    }

    fn line(&self) -> String {
        format!(
            "{} calls of `{BUSY_COMMAND}` in {:.0} s ({:.0}/s, {:.2} ms each); CPU {:.1}% of one core in the server, \
             {:.1}% in its sandbox helpers and commands ({:.2} + {:.2} ms a call); server RSS {} (peak {})",
            self.calls,
            self.seconds,
            self.calls as f64 / self.seconds,
            self.seconds / self.calls as f64 * 1000.0,
            self.server_cpu / self.seconds * 100.0,
            self.below_cpu / self.seconds * 100.0,
            self.server_cpu / self.calls as f64 * 1000.0,
            self.below_cpu / self.calls as f64 * 1000.0,
            mib(self.rss),
            mib(self.peak_rss)
        )
    }
}

fn main() {
    // `cargo bench` adds `--bench`: the numbers are the first two numeric arguments.
    let numbers: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let over_http = std::env::args().any(|a| a == "http");
    let idle = Duration::from_secs(numbers.first().copied().unwrap_or(30));
    let busy = Duration::from_secs(numbers.get(1).copied().unwrap_or(30));
    let scratch = std::env::temp_dir().join(format!("bash-mcp-deploy-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let config = image_config(&scratch);
    let token_file = scratch.join("token");
    std::fs::write(
        &token_file,
        format!("{}\n", "t".repeat(16) + &std::process::id().to_string()),
    )
    .unwrap();
    let token = over_http.then_some(token_file.as_path());

    // Baseline: an idle bash, as a person's shell would sit.
    let mut bash = Command::new("bash")
        .args(["-c", "read -r _"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("bash");
    std::thread::sleep(Duration::from_millis(300));
    let bash_rss = status_kib(bash.id(), "VmRSS");
    drop(bash.stdin.take());
    let _ = bash.wait();

    // The server, idle: initialized, its tools listed, one call made (so the
    // sandbox probe has run), then nothing.
    let mut server = Server::start(&config, token);
    server.execute("true");
    let (own_before, children_before) = cpu_seconds(server.pid());
    let started = Instant::now();
    std::thread::sleep(idle);
    let (own_after, children_after) = cpu_seconds(server.pid());
    let idle_cpu = (own_after - own_before + children_after - children_before) / started.elapsed().as_secs_f64();
    let (idle_rss, idle_below) = server.rss_kib();
    let idle_threads = std::fs::read_dir(format!("/proc/{}/task", server.pid()))
        .unwrap()
        .count();

    // Busy: one agent calling without pause.
    let sandboxed = Busy::measure(&mut server, busy);
    server.finish();

    // Baseline: the same server and configuration with the sandbox off.
    let mut open: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    open["sandbox"]["mode"] = serde_json::json!("off");
    let open_config = scratch.join("unsandboxed.json");
    std::fs::write(&open_config, open.to_string()).unwrap();
    let mut server = Server::start(&open_config, token);
    let unsandboxed = Busy::measure(&mut server, busy);
    server.finish();

    // Baseline: as many commands, spawned here as `bash -c`.
    let before = children_cpu_seconds();
    let spawned = Instant::now();
    for _ in 0..sandboxed.calls {
        let status = Command::new("bash").args(["-c", BUSY_COMMAND]).status().unwrap();
        assert!(status.success());
    }
    let spawn_elapsed = spawned.elapsed().as_secs_f64();
    let spawn_cpu = children_cpu_seconds() - before;
    let _ = std::fs::remove_dir_all(&scratch);

    println!(
        "deploy_bench: bash-mcp serve over {} with deploy/bash-mcp.toml (Landlock sandbox, audit log)",
        if over_http {
            "HTTP (one kept-alive connection, 2025-11-25 session)"
        } else {
            "stdio"
        }
    );
    println!(
        "idle for {:.0} s: server RSS {} ({idle_threads} threads; +{} in processes below it), CPU {:.3}% of one core   | baseline: idle bash RSS {}",
        idle.as_secs_f64(),
        mib(idle_rss),
        mib(idle_below),
        idle_cpu * 100.0,
        mib(bash_rss)
    );
    println!("busy, sandboxed:   {}", sandboxed.line());
    println!("busy, sandbox off: {}", unsandboxed.line());
    println!(
        "baseline: `bash -c {BUSY_COMMAND}` spawned directly {} times: {:.2} ms CPU, {:.2} ms wall each",
        sandboxed.calls,
        spawn_cpu / sandboxed.calls as f64 * 1000.0,
        spawn_elapsed / sandboxed.calls as f64 * 1000.0
    );
}

/// CPU seconds of this process's reaped children.
fn children_cpu_seconds() -> f64 {
    let (_, children) = cpu_seconds(std::process::id());
    children
}
