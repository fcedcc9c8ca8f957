//! MCP protocol overhead: `tools/call` of `true` over stdio against the raw
//! library call, plus requests per second with 8 calls in flight.
//!
//! ```text
//! cargo bench --features cli --bench mcp_bench [-- CALLS]
//! ```
//!
//! The server is the `bash-mcp` binary cargo builds for the benchmark, or
//! the one `BASH_MCP_BIN` names.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bash_mcp::mcp::{HandlerOptions, McpHandler};
use bash_mcp::{BashServer, ExecRequest};

const IN_FLIGHT: usize = 8;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn p90(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() * 9 / 10]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn call_line(id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"execute","arguments":{{"command":"true"}}}}}}"#
    )
}

fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("BASH_MCP_BIN") {
        return path.into();
    }
    PathBuf::from(env!("CARGO_BIN_EXE_bash-mcp"))
}

/// The binary over pipes, initialized, as a client drives it.
struct StdioClient {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    line: String,
}

impl StdioClient {
    fn start(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start bash-mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut client = Self {
            child,
            stdin,
            stdout,
            line: String::new(),
        };
        client.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#);
        client.receive();
        client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        client
    }

    fn send(&mut self, text: &str) {
        self.stdin.write_all(text.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line, which must be a successful `true` result (or the initialize reply).
    fn receive(&mut self) {
        self.line.clear();
        self.stdout.read_line(&mut self.line).unwrap();
        assert!(
            self.line.contains(r#""exit_code":0"#) || self.line.contains(r#""id":0"#),
            "{}",
            self.line
        );
    }

    /// Latencies of `calls` sequential calls, after 20 warm-up calls.
    fn latencies(&mut self, calls: usize) -> Vec<Duration> {
        (0..calls + 20)
            .map(|i| {
                let start = Instant::now();
                self.send(&call_line(i + 1));
                self.receive();
                start.elapsed()
            })
            .skip(20)
            .collect()
    }

    /// Closes stdin (the server exits on EOF) and waits for the process.
    fn finish(self) {
        drop(self.stdin);
        let mut child = self.child;
        let _ = child.wait();
    }
}

fn main() {
    // `cargo bench` adds `--bench` to the arguments: the count is the first number.
    let calls: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(500);
    let dir = std::env::temp_dir();

    // 1. The raw library call.
    let server = Arc::new(BashServer::new(&dir, None, Duration::from_secs(30)).expect("server"));
    let request = ExecRequest::new("true");
    for _ in 0..20 {
        server.run(&request).expect("run");
    }
    let raw: Vec<Duration> = (0..calls)
        .map(|_| {
            let start = Instant::now();
            server.run(&request).expect("run");
            start.elapsed()
        })
        .collect();

    // 2. The handler in process (JSON-RPC, worker thread, no pipes).
    let (tx, rx) = channel::<String>();
    let tx = Mutex::new(tx);
    let handler = McpHandler::new(
        server.clone(),
        move |line| {
            let _ = tx.lock().unwrap().send(line);
        },
        HandlerOptions::default(),
    );
    handler.handle_line(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#);
    let in_process: Vec<Duration> = (0..calls + 20)
        .map(|i| {
            let start = Instant::now();
            assert!(handler.handle_line(&call_line(i + 1)).is_empty());
            let reply = rx.recv().expect("response");
            let elapsed = start.elapsed();
            assert!(reply.contains(r#""exit_code":0"#), "{reply}");
            elapsed
        })
        .skip(20)
        .collect();
    drop(handler);

    // 3. Over stdio, through the binary, configured like the library server
    // above (no policy gate, no audit log), so the difference is the protocol.
    let bin = binary();
    let config = dir.join(format!("bash-mcp-bench-{}.json", std::process::id()));
    std::fs::write(
        &config,
        r#"{"audit": null, "refuse_catastrophic": false, "project_config": false, "tools": ["execute"]}"#,
    )
    .expect("bench config");
    let mut client = StdioClient::start(
        Command::new(&bin)
            .args(["serve", "--log-level", "off", "--config"])
            .arg(&config)
            .current_dir(&dir),
    );
    let stdio = client.latencies(calls);

    // 4. Throughput with IN_FLIGHT calls outstanding, over stdio.
    let total = calls * 2;
    let start = Instant::now();
    let mut sent = 0;
    let mut done = 0;
    while sent < IN_FLIGHT.min(total) {
        client.send(&call_line(100_000 + sent));
        sent += 1;
    }
    while done < total {
        client.receive();
        done += 1;
        if sent < total {
            client.send(&call_line(100_000 + sent));
            sent += 1;
        }
    }
    let stdio_rps = total as f64 / start.elapsed().as_secs_f64();
    client.finish();
    let _ = std::fs::remove_file(&config);

    // 5. The yield window: the same binary and configuration, with the
    // binary's default window (45 s, every call starts as a job that is
    // forgotten when it ends in time) and with none, in alternating rounds.
    let windows = yield_window_rounds(&bin, &dir, calls);

    // 6. The binary with its defaults: policy gate and audit log (in a
    // private data folder).
    let data = dir.join(format!("bash-mcp-bench-data-{}", std::process::id()));
    let mut client = StdioClient::start(
        Command::new(&bin)
            .args(["serve", "--log-level", "off"])
            .env("XDG_DATA_HOME", &data)
            .current_dir(&dir),
    );
    let defaults_med = median(client.latencies(calls));
    client.finish();
    let _ = std::fs::remove_dir_all(&data);

    // The same load on the library directly, from IN_FLIGHT threads.
    let start = Instant::now();
    let threads: Vec<_> = (0..IN_FLIGHT)
        .map(|t| {
            let server = server.clone();
            let n = total / IN_FLIGHT + usize::from(t < total % IN_FLIGHT);
            std::thread::spawn(move || {
                let request = ExecRequest::new("true");
                for _ in 0..n {
                    server.run(&request).expect("run");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let raw_rps = total as f64 / start.elapsed().as_secs_f64();

    let (raw_med, stdio_med, proc_med) = (median(raw.clone()), median(stdio.clone()), median(in_process.clone()));
    println!(
        "tools/call of `true`, {calls} calls each ({} cores)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    println!("{:<34} {:>12} {:>12}", "", "median", "p90");
    println!(
        "{:<34} {:>12} {:>12}",
        "library BashServer::run",
        ms(raw_med),
        ms(p90(raw))
    );
    println!(
        "{:<34} {:>12} {:>12}",
        "McpHandler in process",
        ms(proc_med),
        ms(p90(in_process))
    );
    println!(
        "{:<34} {:>12} {:>12}",
        "bash-mcp over stdio",
        ms(stdio_med),
        ms(p90(stdio))
    );
    println!();
    println!(
        "protocol overhead (stdio - library):   {} median",
        ms(stdio_med.saturating_sub(raw_med))
    );
    println!(
        "handler overhead (in process - library): {} median",
        ms(proc_med.saturating_sub(raw_med))
    );
    println!(
        "binary defaults (policy gate + audit log): {} median, {} above the library",
        ms(defaults_med),
        ms(defaults_med.saturating_sub(raw_med))
    );
    windows.print();
    println!();
    println!("{:<34} {:>12}", format!("throughput, {IN_FLIGHT} in flight"), "calls/s");
    println!("{:<34} {:>12.0}", "library, 8 threads", raw_rps);
    println!("{:<34} {:>12.0}", "bash-mcp over stdio", stdio_rps);
}

/// Rounds of calls against two servers that differ only in `yield_seconds`.
const WINDOW_ROUNDS: usize = 7;

/// Per-call latencies with the default yield window and without one.
struct WindowRounds {
    with_window: Vec<Duration>,
    without: Vec<Duration>,
    /// Each round's ratio of medians, with window / without.
    ratios: Vec<f64>,
}

impl WindowRounds {
    fn print(&self) {
        let (with, without) = (median(self.with_window.clone()), median(self.without.clone()));
        let mut ratios = self.ratios.clone();
        ratios.sort_by(f64::total_cmp);
        println!(
            "yield window 45 s / none (stdio): {} / {} median, ratio {:.3} (per round {:.3}-{:.3}, {} rounds)",
            ms(with),
            ms(without),
            with.as_secs_f64() / without.as_secs_f64(),
            ratios[0],
            ratios[ratios.len() - 1],
            ratios.len()
        );
    }
}

fn yield_window_rounds(bin: &std::path::Path, dir: &std::path::Path, calls: usize) -> WindowRounds {
    let start = |yield_seconds: &str| {
        let config = dir.join(format!(
            "bash-mcp-bench-yield-{yield_seconds}-{}.json",
            std::process::id()
        ));
        std::fs::write(
            &config,
            format!(
                r#"{{"audit": null, "refuse_catastrophic": false, "project_config": false, "tools": ["execute"], "yield_seconds": {yield_seconds}}}"#
            ),
        )
        .expect("bench config");
        let client = StdioClient::start(
            Command::new(bin)
                .args(["serve", "--log-level", "off", "--config"])
                .arg(&config)
                .current_dir(dir),
        );
        (client, config)
    };
    let (mut with_client, with_config) = start("45");
    let (mut without_client, without_config) = start("null");
    let per_round = (calls / WINDOW_ROUNDS).max(20);
    let mut rounds = WindowRounds {
        with_window: Vec::new(),
        without: Vec::new(),
        ratios: Vec::new(),
    };
    for round in 0..WINDOW_ROUNDS {
        // Alternate which goes first, so neither always runs on a warmer machine.
        let (a, b) = if round % 2 == 0 {
            let a = with_client.latencies(per_round);
            (a, without_client.latencies(per_round))
        } else {
            let b = without_client.latencies(per_round);
            (with_client.latencies(per_round), b)
        };
        rounds
            .ratios
            .push(median(a.clone()).as_secs_f64() / median(b.clone()).as_secs_f64());
        rounds.with_window.extend(a);
        rounds.without.extend(b);
    }
    with_client.finish();
    without_client.finish();
    let _ = std::fs::remove_file(with_config);
    let _ = std::fs::remove_file(without_config);
    rounds
}
