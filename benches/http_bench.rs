//! Streamable HTTP against stdio: `tools/call` of `true` one after another
//! over each (medians, spread and their ratio, same run, same binary), then
//! 200 concurrent HTTP clients making 5 000 calls in all, twice, with the
//! server's memory sampled throughout and every answer checked.
//!
//! ```text
//! cargo bench --features cli --bench http_bench [-- CALLS]
//! ```
//!
//! The server is the `bash-mcp` binary cargo builds for the benchmark, or
//! the one `BASH_MCP_BIN` names.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const CLIENTS: usize = 200;
const LOAD_CALLS: usize = 5_000;

fn binary() -> PathBuf {
    std::env::var_os("BASH_MCP_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_bash-mcp")), PathBuf::from)
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// Median, 10th and 90th percentiles.
fn spread(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let at = |q: usize| samples[samples.len() * q / 100];
    (at(50), at(10), at(90))
}

fn call_body(id: usize, command: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"execute","arguments":{{"command":"{command}"}}}}}}"#
    )
}

/// The binary over pipes, initialized.
struct Stdio_ {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Stdio_ {
    fn start(dir: &std::path::Path) -> Self {
        let mut child = Command::new(binary())
            .args(["serve", "--working-dir"])
            .arg(dir)
            .env("XDG_DATA_HOME", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start bash-mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut client = Self { child, stdin, stdout };
        client.roundtrip(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#);
        client
    }

    fn roundtrip(&mut self, line: &str) -> String {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        answer
    }

    fn finish(self) {
        drop(self.stdin);
        let mut child = self.child;
        let _ = child.wait();
    }
}

/// One keep-alive HTTP/1.1 connection.
struct Connection {
    addr: String,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Connection {
    fn open(addr: &str) -> Self {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).unwrap();
        Self {
            addr: addr.to_owned(),
            writer: stream.try_clone().unwrap(),
            reader: BufReader::new(stream),
        }
    }

    /// POSTs `body` to /mcp; the status, the session id if any, and the body.
    fn post(&mut self, body: &str, headers: &str) -> (u16, Option<String>, String) {
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        self.writer.write_all(request.as_bytes()).unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let (mut length, mut session) = (0usize, None);
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "mcp-session-id" => session = Some(value.trim().to_owned()),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).unwrap();
        (status, session, String::from_utf8(body).unwrap())
    }
}

struct HttpServer {
    child: Child,
    addr: String,
}

/// `bash-mcp serve --http 127.0.0.1:0` in `dir`, its stderr in `log`.
fn spawn_server(dir: &std::path::Path, log: &std::path::Path) -> Child {
    Command::new(binary())
        .args(["serve", "--http", "127.0.0.1:0", "--working-dir"])
        .arg(dir)
        .env("XDG_DATA_HOME", dir)
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("start bash-mcp serve --http")
}

impl HttpServer {
    // The child is kept and waited for by `stop`.
    #[allow(clippy::zombie_processes)]
    fn start(dir: &std::path::Path) -> Self {
        let log = dir.join("http.log");
        let child = spawn_server(dir, &log);
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(rest) = text.split("serving MCP on http://").nth(1) {
                let addr = rest.split('/').next().unwrap().to_owned();
                return Self { child, addr };
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the server did not start: {text}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A field of /proc/PID/status, in KiB.
    fn status_kib(&self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    fn stop(mut self) {
        // SAFETY: kill takes no pointer; the pid is the child this benchmark started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the HTTP server ended with {status}");
    }
}

/// `calls` sequential `true` calls after 20 warm-up ones, timed each.
fn timed(calls: usize, mut call: impl FnMut(usize) -> bool) -> Vec<Duration> {
    (0..calls + 20)
        .map(|i| {
            let start = Instant::now();
            assert!(call(i + 1), "call {i} failed");
            start.elapsed()
        })
        .skip(20)
        .collect()
}

/// One round of the load: `CLIENTS` threads, `LOAD_CALLS` calls in all.
/// Returns (failed calls, wall time).
fn load_round(addr: &str, round: usize) -> (usize, Duration) {
    let failed = Arc::new(AtomicUsize::new(0));
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let (addr, failed, next) = (addr.to_owned(), failed.clone(), next.clone());
            std::thread::spawn(move || {
                let mut connection = Connection::open(&addr);
                let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: execute\r\n";
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= LOAD_CALLS {
                        break;
                    }
                    let word = format!("r{round}c{client}n{n}");
                    let body = format!(
                        r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"execute","arguments":{{"command":"echo {word}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
                    );
                    let (status, _, answer) = connection.post(&body, headers);
                    let ok = status == 200
                        && answer.contains(&format!(r#""output":"{word}\n""#))
                        && answer.contains(&format!(r#""id":{n},"#))
                        && answer.contains(r#""isError":false"#);
                    if !ok {
                        failed.fetch_add(1, Ordering::SeqCst);
                        eprintln!("failed call {n}: {status} {answer}");
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    (failed.load(Ordering::SeqCst), start.elapsed())
}

fn main() {
    let calls: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(300);
    let dir = std::env::temp_dir().join(format!("bash-mcp-http-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // Per call, one after another, stdio and HTTP alternating in blocks.
    let mut stdio = Stdio_::start(&dir);
    let server = HttpServer::start(&dir);
    let mut connection = Connection::open(&server.addr);
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
    let (status, session, _) = connection.post(init, "");
    assert_eq!(status, 200);
    let session_header = format!("Mcp-Session-Id: {}\r\n", session.expect("a session"));
    let (mut over_stdio, mut over_http) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        over_stdio.extend(timed(calls / 5, |i| {
            stdio.roundtrip(&call_body(i, "true")).contains(r#""exit_code":0"#)
        }));
        over_http.extend(timed(calls / 5, |i| {
            let (status, _, body) = connection.post(&call_body(i, "true"), &session_header);
            status == 200 && body.contains(r#""exit_code":0"#)
        }));
    }
    stdio.finish();
    let (s50, s10, s90) = spread(over_stdio);
    let (h50, h10, h90) = spread(over_http);
    println!("tools/call of `true`, {calls} calls each, one at a time (same run):");
    println!(
        "  stdio:                 median {} (p10 {}, p90 {})",
        ms(s50),
        ms(s10),
        ms(s90)
    );
    println!(
        "  HTTP (keep-alive, JSON): median {} (p10 {}, p90 {})",
        ms(h50),
        ms(h10),
        ms(h90)
    );
    println!(
        "  HTTP / stdio: {:.2}x the median, {} more per call",
        h50.as_secs_f64() / s50.as_secs_f64(),
        ms(h50.saturating_sub(s50))
    );

    // Load: 200 clients, 5 000 calls, twice; RSS sampled every 10 ms.
    let rss_idle = server.status_kib("VmRSS:");
    let peak = Arc::new(AtomicU64::new(0));
    let sampling = Arc::new(AtomicBool::new(true));
    let pid = server.child.id();
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        std::thread::spawn(move || {
            while sampling.load(Ordering::SeqCst) {
                let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
                    .unwrap_or_default()
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.split_whitespace().next()?.parse().ok())
                    .unwrap_or(0);
                peak.fetch_max(rss, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    println!(
        "\n{CLIENTS} concurrent clients (2026-07-28, a keep-alive connection each), {LOAD_CALLS} calls per round:"
    );
    println!("  server RSS idle: {} MiB", rss_idle / 1024);
    let mut total_failed = 0;
    for round in 1..=2 {
        let (failed, wall) = load_round(&server.addr, round);
        total_failed += failed;
        println!(
            "  round {round}: {failed} failed, {:.1} s, {:.0} calls/s; RSS after it {} MiB, peak so far {} MiB",
            wall.as_secs_f64(),
            LOAD_CALLS as f64 / wall.as_secs_f64(),
            server.status_kib("VmRSS:") / 1024,
            peak.load(Ordering::SeqCst) / 1024
        );
    }
    sampling.store(false, Ordering::SeqCst);
    sampler.join().unwrap();
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(total_failed, 0, "calls failed under load");
}
