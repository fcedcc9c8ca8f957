//! Sandbox benchmark: `execute` of `true` unsandboxed and in each sandbox
//! backend, interleaved in one run so load drifts hit all alike.
//!
//! Run with `cargo run --release --example sandbox_bench` (add `-- --quick`
//! for fewer rounds). The helper for the Landlock backend is the `bash-mcp`
//! binary next to this example's target dir (build it first with
//! `cargo build --release --features cli`), or `BASH_MCP_HELPER`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bash_mcp::{BashServer, ExecRequest, McpServer};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 100 } else { 400 };
    let helper = std::env::var_os("BASH_MCP_HELPER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let exe = std::env::current_exe().expect("exe");
            exe.parent()
                .and_then(|d| d.parent())
                .expect("target dir")
                .join("bash-mcp")
        });
    let dir = std::env::temp_dir();
    let mut variants: Vec<(&str, BashServer)> = vec![(
        "unsandboxed",
        BashServer::new(&dir, None, Duration::from_secs(60)).unwrap(),
    )];
    for backend in ["bwrap", "landlock"] {
        let server = BashServer::new(&dir, None, Duration::from_secs(60)).unwrap();
        let config = serde_json::json!({"sandbox": {"mode": "workspace-write", "network": false,
                                        "backend": backend, "helper_path": helper}});
        server.configure(&config.to_string()).unwrap();
        match server.run(&ExecRequest::new("true")) {
            Ok(o) if o.success() => variants.push((backend, server)),
            Ok(o) => println!("{backend}: skipped ({:?})", o.status),
            Err(e) => println!("{backend}: skipped ({e})"),
        }
    }
    let request = ExecRequest::new("true");
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); variants.len()];
    for _ in 0..10 {
        variants.iter().for_each(|(_, s)| drop(s.run(&request)));
    }
    for _ in 0..rounds {
        for (i, (_, server)) in variants.iter().enumerate() {
            let start = Instant::now();
            assert!(server.run(&request).unwrap().success());
            samples[i].push(start.elapsed());
        }
    }
    println!("execute of `true`, {rounds} rounds interleaved (network off, PID namespace for bwrap)");
    println!(
        "{:<14} {:>10} {:>10} {:>10} {:>8}",
        "variant", "median", "p10", "p90", "ratio"
    );
    let base = median(&mut samples[0].clone());
    for ((name, _), s) in variants.iter().zip(samples.iter_mut()) {
        s.sort();
        let pick = |q: f64| s[((s.len() - 1) as f64 * q) as usize];
        let med = pick(0.5);
        println!(
            "{name:<14} {:>7.3} ms {:>7.3} ms {:>7.3} ms {:>8.2}",
            ms(med),
            ms(pick(0.1)),
            ms(pick(0.9)),
            med.as_secs_f64() / base.as_secs_f64()
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
