//! Figures at scale: what one host process sees when many calls, sessions and jobs
//! share one server. Each figure is printed beside its baseline from the same run:
//!
//! 1. 1 000 `execute` calls of `true` from 64 threads with `max_concurrent` 8, against
//!    1 000 from 8 threads (no queue): throughput, p50/p99/max latency, and fairness
//!    (the slowest call against the queue ahead of it: 64 calls at the measured throughput).
//! 2. Resources after 1 000 and after 10 000 calls (fds, threads, RSS): nothing grows.
//! 3. 64 sessions each running `true` every 10 ms, against 8: latency per command.
//! 4. 256 background jobs each printing 1 MiB, against the same 256 commands run one
//!    after another: wall time, peak RSS, fds and threads while they run.
//! 5. How cost grows: output ×10 (1 → 10 → 100 MiB), sessions ×8 (8 → 64).
//!
//! The MCP binary serving 8 calls in flight over one stdio stream is measured by
//! `mcp_bench`. Run with `cargo bench --bench scale_bench` (`-- --quick` for a short run).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bash_mcp::session::{RunOptions, SessionConfig, SessionManager, StartOptions};
use bash_mcp::{BashServer, ExecRequest, McpServer};
use serde_json::{Value, json};

/// Open fds, threads and resident memory of this process.
#[derive(Debug, Clone, Copy)]
struct Resources {
    fds: usize,
    threads: usize,
    rss_kib: u64,
}

fn resources() -> Resources {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Resources {
        fds: std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count()),
        threads: field("Threads:") as usize,
        rss_kib: field("VmRSS:"),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `calls` executions of `true` spread over `threads` threads: latencies
/// (sorted) and wall time.
fn burst(server: &BashServer, threads: usize, calls: usize) -> (Vec<Duration>, Duration) {
    let next = AtomicUsize::new(0);
    let latencies = Mutex::new(Vec::with_capacity(calls));
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let request = ExecRequest::new("true");
                let mut mine = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let t = Instant::now();
                    assert!(server.run(&request).expect("execute").success());
                    mine.push(t.elapsed());
                }
                latencies.lock().unwrap().extend(mine);
            });
        }
    });
    let wall = started.elapsed();
    let mut all = latencies.into_inner().unwrap();
    all.sort();
    (all, wall)
}

fn print_burst(label: &str, latencies: &[Duration], wall: Duration) {
    println!(
        "{label:<38} {:>7.0} calls/s  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms",
        latencies.len() as f64 / wall.as_secs_f64(),
        ms(percentile(latencies, 0.5)),
        ms(percentile(latencies, 0.99)),
        ms(*latencies.last().unwrap()),
    );
}

fn concurrency(server: &BashServer, calls: usize) {
    println!("\n1. {calls} execute calls of `true`, max_concurrent 8");
    let (base, base_wall) = burst(server, 8, calls);
    let (queued, queued_wall) = burst(server, 64, calls);
    print_burst("8 threads (baseline, no queue)", &base, base_wall);
    print_burst("64 threads (56 queued)", &queued, queued_wall);
    // FIFO: with 64 calls always in the system, each waits for the 63 ahead of it, so
    // every call takes about 64 / throughput (Little's law); an unfair queue shows as a
    // slowest call far above that.
    let ahead = 64.0 / (queued.len() as f64 / queued_wall.as_secs_f64()) * 1000.0;
    println!(
        "{:<38} slowest call {:.2} ms = {:.2}x the queue ahead of it (64 calls at this throughput: {:.2} ms)",
        "fairness",
        ms(*queued.last().unwrap()),
        ms(*queued.last().unwrap()) / ahead,
        ahead
    );
    println!(
        "{:<38} throughput {:.2}x of the baseline",
        "",
        (queued.len() as f64 / queued_wall.as_secs_f64()) / (base.len() as f64 / base_wall.as_secs_f64())
    );
}

fn no_growth(server: &BashServer, quick: bool) {
    let (first, second) = if quick { (500, 5_000) } else { (1_000, 10_000) };
    println!("\n2. resources after {first} and after {second} calls (8 threads)");
    burst(server, 8, 100);
    let warm = resources();
    burst(server, 8, first);
    let after_first = resources();
    burst(server, 8, second - first);
    let after_second = resources();
    for (label, r) in [
        ("after warm-up", warm),
        ("after the first", after_first),
        ("after all", after_second),
    ] {
        println!(
            "{label:<38} {:>4} fds  {:>3} threads  {:>7.1} MiB RSS",
            r.fds,
            r.threads,
            r.rss_kib as f64 / 1024.0
        );
    }
}

/// `count` sessions each running `true` every 10 ms for `rounds` rounds:
/// per-command latencies (sorted) and the resources while they are open.
fn sessions(count: usize, rounds: usize) -> (Vec<Duration>, Resources) {
    let manager = SessionManager::new(
        SessionConfig {
            enabled: true,
            max_sessions: count,
            ..Default::default()
        },
        std::env::temp_dir(),
    )
    .expect("session manager");
    let ids: Vec<String> = (0..count)
        .map(|_| manager.start(&StartOptions::default()).expect("session"))
        .collect();
    let latencies = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for id in &ids {
            let (manager, latencies) = (&manager, &latencies);
            s.spawn(move || {
                let options = RunOptions::default();
                let mut mine = Vec::with_capacity(rounds);
                for _ in 0..rounds {
                    let t = Instant::now();
                    manager.run(id, "true", &options).expect("session_run");
                    mine.push(t.elapsed());
                    std::thread::sleep(Duration::from_millis(10));
                }
                latencies.lock().unwrap().extend(mine);
            });
        }
    });
    let open = resources();
    manager.close_all();
    let mut all = latencies.into_inner().unwrap();
    all.sort();
    (all, open)
}

fn many_sessions(rounds: usize) -> (Duration, Duration) {
    println!("\n3. sessions each running `true` every 10 ms, {rounds} rounds");
    let mut medians = Vec::new();
    for count in [8, 64] {
        let (latencies, open) = sessions(count, rounds);
        println!(
            "{:<38} p50 {:>6.2} ms  p99 {:>6.2} ms  ({} fds, {} threads, {:.1} MiB RSS while open)",
            format!("{count} sessions{}", if count == 8 { " (baseline)" } else { "" }),
            ms(percentile(&latencies, 0.5)),
            ms(percentile(&latencies, 0.99)),
            open.fds,
            open.threads,
            open.rss_kib as f64 / 1024.0
        );
        medians.push(percentile(&latencies, 0.5));
    }
    (medians[0], medians[1])
}

fn call_json(server: &BashServer, tool: &str, args: Value) -> Value {
    let envelope: Value = serde_json::from_str(&server.execute(tool, &args.to_string())).expect("envelope");
    serde_json::from_str(envelope["result"].as_str().expect("result")).expect("result JSON")
}

fn many_jobs(server: &BashServer, count: usize) {
    println!("\n4. {count} background jobs each printing 1 MiB");
    let command = "head -c 1048576 /dev/zero";
    let started = Instant::now();
    for _ in 0..count {
        assert!(server.run(&ExecRequest::new(command)).expect("execute").success());
    }
    let sequential = started.elapsed();
    server
        .configure(&json!({"jobs": {"max_finished": count}}).to_string())
        .expect("configure");
    let before = resources();
    let started = Instant::now();
    let ids: Vec<String> = (0..count)
        .map(|_| {
            let r = call_json(server, "execute", json!({"command": command, "background": true}));
            r["job_id"].as_str().unwrap_or_else(|| panic!("{r}")).to_owned()
        })
        .collect();
    let running = resources();
    for id in &ids {
        let r = call_json(server, "job_status", json!({"job_id": id, "wait_seconds": 600}));
        assert_eq!(r["exit_code"], 0, "{r}");
    }
    let jobs = started.elapsed();
    let after = resources();
    println!(
        "{:<38} {:>8.2} s   one after another (baseline) {:.2} s: {:.2}x",
        "all jobs done",
        jobs.as_secs_f64(),
        sequential.as_secs_f64(),
        jobs.as_secs_f64() / sequential.as_secs_f64()
    );
    for (label, r) in [("before", before), ("while they run", running), ("after", after)] {
        println!(
            "{label:<38} {:>4} fds  {:>3} threads  {:>7.1} MiB RSS",
            r.fds,
            r.threads,
            r.rss_kib as f64 / 1024.0
        );
    }
}

fn output_growth(server: &BashServer) {
    println!("\n5. how cost grows with output size (execute, median of 3)");
    let mut last: Option<Duration> = None;
    for mib in [1u64, 10, 100] {
        let command = format!("head -c {} /dev/zero", mib << 20);
        let mut times: Vec<Duration> = (0..3)
            .map(|_| {
                let t = Instant::now();
                assert!(
                    server
                        .run(&ExecRequest::new(command.as_str()))
                        .expect("execute")
                        .success()
                );
                t.elapsed()
            })
            .collect();
        times.sort();
        let median = times[1];
        println!(
            "{:<38} {:>8.2} ms{}",
            format!("{mib} MiB"),
            ms(median),
            last.map(|l| format!("   x10 output -> x{:.1} time", median.as_secs_f64() / l.as_secs_f64()))
                .unwrap_or_default()
        );
        last = Some(median);
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let server = BashServer::new(std::env::temp_dir(), None, Duration::from_secs(600)).expect("server");
    server.configure(r#"{"max_concurrent": 8}"#).expect("configure");
    println!(
        "bash-mcp at scale ({} run; {} cores)",
        if quick { "quick" } else { "full" },
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    burst(&server, 8, 100);
    concurrency(&server, 1_000);
    no_growth(&server, quick);
    let (eight, sixty_four) = many_sessions(if quick { 50 } else { 200 });
    many_jobs(&server, 256);
    output_growth(&server);
    println!(
        "{:<38} x8 sessions -> x{:.2} latency per command",
        "sessions 8 -> 64",
        sixty_four.as_secs_f64() / eight.as_secs_f64()
    );
}
