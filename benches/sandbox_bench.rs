//! Sandbox benchmark: `execute` of `true` unsandboxed and in each sandbox
//! backend (bubblewrap through its long-lived supervisor, bubblewrap with
//! one sandbox per command, Landlock + seccomp), interleaved in one run so
//! load drifts hit all alike, repeated over several runs for the spread.
//!
//! Run with `cargo bench --features cli --bench sandbox_bench` (add
//! `-- --quick` for fewer rounds). The helper (the supervisor, and the
//! Landlock backend's exec helper) is the `bash-mcp` binary cargo builds
//! for the benchmark, or `BASH_MCP_HELPER`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bash_mcp::{BashServer, ExecRequest, McpServer};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (runs, rounds) = if quick { (3, 60) } else { (5, 200) };
    let helper = std::env::var_os("BASH_MCP_HELPER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_bash-mcp")));
    let dir = std::env::temp_dir();
    let mut variants: Vec<(&str, BashServer)> = vec![(
        "unsandboxed",
        BashServer::new(&dir, None, Duration::from_secs(60)).unwrap(),
    )];
    let sandboxes = [
        ("bwrap supervisor", "bwrap", true),
        ("bwrap per command", "bwrap", false),
        ("landlock+seccomp", "landlock", false),
    ];
    for (name, backend, supervisor) in sandboxes {
        let server = BashServer::new(&dir, None, Duration::from_secs(60)).unwrap();
        let config = serde_json::json!({"sandbox": {"mode": "workspace-write", "network": false,
                                        "backend": backend, "supervisor": supervisor,
                                        "helper_path": helper}});
        server.configure(&config.to_string()).unwrap();
        match server.run(&ExecRequest::new("true")) {
            Ok(o) if o.success() => variants.push((name, server)),
            Ok(o) => println!("{name}: skipped ({:?})", o.status),
            Err(e) => println!("{name}: skipped ({e})"),
        }
    }
    let request = ExecRequest::new("true");
    for _ in 0..10 {
        variants.iter().for_each(|(_, s)| drop(s.run(&request)));
    }
    // medians[variant][run]
    let mut medians: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    let mut all: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for _ in 0..runs {
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); variants.len()];
        for _ in 0..rounds {
            for (i, (_, server)) in variants.iter().enumerate() {
                let start = Instant::now();
                assert!(server.run(&request).unwrap().success());
                samples[i].push(start.elapsed());
            }
        }
        for (i, s) in samples.into_iter().enumerate() {
            let mut sorted = s.clone();
            medians[i].push(median(&mut sorted));
            all[i].extend(s);
        }
    }
    println!("execute of `true`: {runs} runs of {rounds} interleaved rounds (network off, PID namespace for bwrap)");
    println!(
        "{:<18} {:>10} {:>10} {:>10} {:>8} {:>16}",
        "variant", "median", "p10", "p90", "ratio", "ratio per run"
    );
    let mut base_all = all[0].clone();
    let base = median(&mut base_all);
    for (i, (name, _)) in variants.iter().enumerate() {
        let s = &mut all[i];
        s.sort();
        let pick = |q: f64| s[((s.len() - 1) as f64 * q) as usize];
        let med = pick(0.5);
        let per_run: Vec<f64> = medians[i]
            .iter()
            .zip(&medians[0])
            .map(|(m, b)| m.as_secs_f64() / b.as_secs_f64())
            .collect();
        let lo = per_run.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = per_run.iter().cloned().fold(0.0, f64::max);
        println!(
            "{name:<18} {:>7.3} ms {:>7.3} ms {:>7.3} ms {:>8.2} {:>7.2} - {:<6.2}",
            ms(med),
            ms(pick(0.1)),
            ms(pick(0.9)),
            med.as_secs_f64() / base.as_secs_f64(),
            lo,
            hi
        );
    }
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
