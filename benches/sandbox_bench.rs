//! Sandbox benchmark: `execute` of `true` unsandboxed and in each sandbox
//! backend (bubblewrap through its long-lived supervisor, with network off
//! and open by name, bubblewrap with one sandbox per command, Landlock +
//! seccomp, with network off and open by name), interleaved in one run so
//! load drifts hit all alike, repeated over several runs for the spread.
//! Then the cost of observing denials with seccomp user notification: a
//! command that makes a thousand writes in a writable root, and one that
//! makes a hundred `AF_UNIX` connects, each with and without notification.
//!
//! Run with `cargo bench --features cli --bench sandbox_bench` (add
//! `-- --quick` for fewer rounds, `-- --repo` to run every command in a git
//! repository, whose `.git` and root the sandbox guards, `-- --true-only`
//! for the first table alone, `-- --only=<word>` for the sandboxes whose
//! name holds the word, beside the unsandboxed baseline,
//! `-- --baseline-helper=<path>` to add, in the same rounds, the supervisor
//! variant with another build's helper, for a before and after). The helper (the supervisor, and the
//! Landlock backend's exec helper) is the `bash-mcp` binary cargo builds
//! for the benchmark, or `BASH_MCP_HELPER`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bash_mcp::{BashServer, ExecRequest, McpServer};

/// The variants whose network is open by name (`@package-registries`).
const BY_NAME: &str = "  network by name";
const LANDLOCK_BY_NAME: &str = "  landlock by name";

/// A thousand writes, each an open with `O_CREAT`: one notification each.
const WRITES: &str = "for i in $(seq 1000); do echo > f$i; done";
const WRITE_COUNT: f64 = 1000.0;
/// A hundred connects to a Unix socket in the working dir.
const CONNECTS: &str =
    "perl -MIO::Socket::UNIX -e 'for (1..100) { IO::Socket::UNIX->new(Peer => \"s\") or die \"$!\" }'";
const CONNECT_COUNT: f64 = 100.0;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (runs, rounds) = if quick { (3, 60) } else { (5, 200) };
    let helper = std::env::var_os("BASH_MCP_HELPER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_bash-mcp")));
    let dir = std::env::temp_dir().join(format!("bash-mcp-sandbox-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    if std::env::args().any(|a| a == "--repo") {
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&dir)
            .status();
        assert!(init.is_ok_and(|s| s.success()), "--repo needs git");
        std::fs::write(dir.join("README"), "bench\n").unwrap();
    }

    let sandboxes = [
        ("bwrap supervisor", "bwrap", true, true),
        ("  without notify", "bwrap", true, false),
        (BY_NAME, "bwrap", true, true),
        ("bwrap per command", "bwrap", false, true),
        ("landlock+seccomp", "landlock", false, true),
        (LANDLOCK_BY_NAME, "landlock", false, true),
    ];
    let only = std::env::args().find_map(|a| a.strip_prefix("--only=").map(str::to_owned));
    let picked: Vec<_> = sandboxes
        .iter()
        .copied()
        .filter(|(name, ..)| only.as_deref().is_none_or(|word| name.contains(word)))
        .collect();
    let mut variants = variants(&dir, &helper, &picked);
    if let Some(baseline) = std::env::args().find_map(|a| a.strip_prefix("--baseline-helper=").map(PathBuf::from)) {
        variants.extend(variants_of(
            &dir,
            &baseline,
            &[("  baseline helper", "bwrap", true, true)],
        ));
    }
    println!("execute of `true`: {runs} runs of {rounds} interleaved rounds (network off, PID namespace for bwrap)");
    let true_medians = measure(&variants, &ExecRequest::new("true"), runs, rounds);
    if std::env::args().any(|a| a == "--true-only") {
        drop((true_medians, variants));
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    let observed = [
        ("bwrap supervisor", "bwrap", true, true),
        ("  without notify", "bwrap", true, false),
        ("landlock+seccomp", "landlock", false, true),
        ("  without notify", "landlock", false, false),
    ];
    let variants = variants_of(&dir, &helper, &observed);
    let (runs, rounds) = if quick { (3, 5) } else { (5, 15) };
    println!();
    println!("execute of `{WRITES}` in a writable root: {runs} runs of {rounds} interleaved rounds");
    let write_medians = measure(&variants, &ExecRequest::new(WRITES), runs, rounds);
    per_call("write", &variants, &write_medians, WRITE_COUNT);

    let _unix = std::os::unix::net::UnixListener::bind(dir.join("s")).unwrap();
    // Connects complete against the backlog; a thread accepts to keep it open.
    let accept_from = _unix.try_clone().unwrap();
    std::thread::spawn(move || while accept_from.accept().is_ok() {});
    println!();
    println!("execute of 100 AF_UNIX connects (perl): {runs} runs of {rounds} interleaved rounds");
    let connect_medians = measure(&variants, &ExecRequest::new(CONNECTS), runs, rounds);
    per_call("connect", &variants, &connect_medians, CONNECT_COUNT);
    drop((true_medians, variants));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Unsandboxed, then each of `sandboxes` that works here.
fn variants(
    dir: &Path,
    helper: &Path,
    sandboxes: &[(&'static str, &str, bool, bool)],
) -> Vec<(&'static str, BashServer)> {
    let mut all = vec![(
        "unsandboxed",
        BashServer::new(dir, None, Duration::from_secs(60)).unwrap(),
    )];
    all.extend(variants_of(dir, helper, sandboxes));
    all
}

/// A server per sandbox (name, backend, supervisor, notify_denials), skipping those that fail here.
fn variants_of(
    dir: &Path,
    helper: &Path,
    sandboxes: &[(&'static str, &str, bool, bool)],
) -> Vec<(&'static str, BashServer)> {
    let mut variants = Vec::new();
    for &(name, backend, supervisor, notify) in sandboxes {
        let server = BashServer::new(dir, None, Duration::from_secs(60)).unwrap();
        // The network by name: a proxy for each command (Landlock), or a
        // token with the supervisor's shared one.
        let network = match name {
            BY_NAME | LANDLOCK_BY_NAME => serde_json::json!({"allow": ["@package-registries"]}),
            _ => serde_json::json!(false),
        };
        let config = serde_json::json!({"sandbox": {"mode": "workspace-write", "network": network,
                                        "backend": backend, "supervisor": supervisor,
                                        "notify_denials": notify, "helper_path": helper}});
        server.configure(&config.to_string()).unwrap();
        match server.run(&ExecRequest::new("true")) {
            Ok(o) if o.success() => variants.push((name, server)),
            Ok(o) => println!("{name}: skipped ({:?})", o.status),
            Err(e) => println!("{name}: skipped ({e})"),
        }
    }
    variants
}

/// Runs `request` on every variant, interleaved, and prints the table
/// (ratios against the first variant). The median of each variant.
fn measure(variants: &[(&str, BashServer)], request: &ExecRequest, runs: usize, rounds: usize) -> Vec<Duration> {
    for _ in 0..3 {
        variants.iter().for_each(|(_, s)| drop(s.run(request)));
    }
    // medians[variant][run]
    let mut medians: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    let mut all: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for _ in 0..runs {
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); variants.len()];
        for _ in 0..rounds {
            for (i, (name, server)) in variants.iter().enumerate() {
                let start = Instant::now();
                let outcome = server.run(request).unwrap();
                assert!(outcome.success(), "{name}: {:?}", outcome.to_value());
                samples[i].push(start.elapsed());
            }
        }
        for (i, s) in samples.into_iter().enumerate() {
            let mut sorted = s.clone();
            medians[i].push(median(&mut sorted));
            all[i].extend(s);
        }
    }
    println!(
        "{:<18} {:>10} {:>10} {:>10} {:>8} {:>16}",
        "variant", "median", "p10", "p90", "ratio", "ratio per run"
    );
    let mut base_all = all[0].clone();
    let base = median(&mut base_all);
    let mut out = Vec::new();
    for (i, (name, _)) in variants.iter().enumerate() {
        let s = &mut all[i];
        s.sort();
        let pick = |q: f64| s[((s.len() - 1) as f64 * q) as usize];
        let med = pick(0.5);
        out.push(med);
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
    out
}

/// For each observed variant followed by its unobserved twin: what one
/// notified call costs (the difference of the medians over the call count).
fn per_call(what: &str, variants: &[(&str, BashServer)], medians: &[Duration], calls: f64) {
    for pair in (0..variants.len()).collect::<Vec<_>>().windows(2) {
        let (with, without) = (pair[0], pair[1]);
        if variants[without].0.trim_start() != "without notify" || variants[with].0.starts_with(' ') {
            continue;
        }
        let extra = medians[with].as_secs_f64() - medians[without].as_secs_f64();
        println!(
            "{}: one notified {what} costs {:.1} us ({:.2}x the unobserved command)",
            variants[with].0,
            extra * 1e6 / calls,
            medians[with].as_secs_f64() / medians[without].as_secs_f64()
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
