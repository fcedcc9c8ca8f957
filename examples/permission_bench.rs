//! Benchmark of permission pattern extraction (plain `Instant`, no harness).
//!
//! Run with `cargo run --release --example permission_bench`.

use std::time::{Duration, Instant};

use bash_mcp::permission::command_pattern;

const TOOL: &str = "bash.execute";

/// Median time of `runs` calls of `command_pattern` on `command`.
fn median(command: &str, runs: usize) -> (Duration, String) {
    let mut times = Vec::with_capacity(runs);
    let mut pattern = String::new();
    for _ in 0..runs {
        let start = Instant::now();
        pattern = command_pattern(TOOL, command);
        times.push(start.elapsed());
    }
    times.sort();
    (times[times.len() / 2], pattern)
}

fn main() {
    let typical = "cd build/project && FOO=1 cargo test --release -- --nocapture 2>&1 | tail -n 40 # run";
    let typical = format!("{typical}{}", " ".repeat(100usize.saturating_sub(typical.len())));
    let (t, p) = median(&typical, 2001);
    println!(
        "typical {}-char command: median {:.1} µs -> {p}",
        typical.len(),
        t.as_secs_f64() * 1e6
    );

    let unit = "git add src/lib.rs && git commit -m \"$(date)\"; ";
    let mut per_char = Vec::new();
    for size in [1_000usize, 10_000, 100_000] {
        let text: String = unit.repeat(size / unit.len() + 1).chars().take(size).collect();
        let runs = if size >= 100_000 { 11 } else { 51 };
        let (t, p) = median(&text, runs);
        let ns_per_char = t.as_secs_f64() * 1e9 / size as f64;
        per_char.push(ns_per_char);
        println!(
            "{size:>7} chars: median {:>9.1} µs ({ns_per_char:.0} ns/char) -> {p}",
            t.as_secs_f64() * 1e6
        );
    }
    println!(
        "scaling: ns/char at 100k is {:.2}x the value at 1k (1.0 = linear)",
        per_char[2] / per_char[0]
    );

    let mut pipes = Vec::new();
    for n in [2_000usize, 20_000] {
        let text = vec!["a"; n].join("|");
        let (t, p) = median(&text, 5);
        pipes.push(t.as_secs_f64() / n as f64);
        println!("{n:>6} piped commands: median {:>9.1} µs -> {p}", t.as_secs_f64() * 1e6);
    }
    println!(
        "pipeline scaling: time per command at 20 000 is {:.2}x the value at 2 000 (1.0 = linear)",
        pipes[1] / pipes[0]
    );

    let nested = format!("{}ls{}", "$(".repeat(10_000), ")".repeat(10_000));
    let (t, p) = median(&nested, 51);
    println!("10 000 nested $( : median {:.1} µs -> {p}", t.as_secs_f64() * 1e6);
}
