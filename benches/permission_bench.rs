//! Benchmark of permission pattern extraction (plain `Instant`, no harness).
//!
//! Run with `cargo bench --bench permission_bench`.

use std::time::{Duration, Instant};

use bash_mcp::permission::{PermissionPolicy, classify, command_pattern};

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
    for n in [500usize, 5_000] {
        let text = vec!["a"; n].join("|");
        let (t, p) = median(&text, 5);
        pipes.push(t.as_secs_f64() / n as f64);
        println!("{n:>6} piped commands: median {:>9.1} µs -> {p}", t.as_secs_f64() * 1e6);
    }
    println!(
        "pipeline scaling: time per command at 5 000 is {:.2}x the value at 500 (1.0 = linear)",
        pipes[1] / pipes[0]
    );

    let nested = format!("{}ls{}", "$(".repeat(10_000), ")".repeat(10_000));
    let (t, p) = median(&nested, 51);
    println!("10 000 nested $( : median {:.1} µs -> {p}", t.as_secs_f64() * 1e6);

    per_char_table();
}

/// Median seconds of `runs` calls of `f`.
fn median_of(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// ns/char of the pattern, the policy and the classifier on large inputs, with the
/// time of one pass over the same bytes (`bytes().filter(..).count()`) as the baseline
/// from this run: linear code with a small constant is a small multiple of it.
fn per_char_table() {
    let policy = PermissionPolicy::new(&["bash.execute:a *", "bash.execute:git *"], &["bash.execute:rm *"])
        .expect("valid rules");
    let inputs = [
        ("1 MiB of a|a|...", pipes(1 << 20)),
        (
            "1 MiB of git commands",
            repeat_to("git add src/lib.rs && git commit -m \"$(date)\"; ", 1 << 20),
        ),
        ("1 MiB of echo x > out", repeat_to("echo x > out.txt; ", 1 << 20)),
        // Just under the token limit with long words: what the parser is given in full.
        ("1 MiB, 4 900 long cmds", long_commands(4_900, 200)),
    ];
    println!(
        "\n{:<24} {:>10} {:>10} {:>10} {:>10}",
        "input", "scan", "pattern", "policy", "classify"
    );
    for (name, text) in inputs {
        let n = text.len() as f64;
        let runs = 5;
        let scan = median_of(runs, || {
            std::hint::black_box(text.bytes().filter(|b| *b == b'|').count());
        });
        let pattern = median_of(runs, || {
            std::hint::black_box(command_pattern(TOOL, &text));
        });
        let decide = median_of(runs, || {
            std::hint::black_box(policy.decide_command(TOOL, &text));
        });
        let class = median_of(runs, || {
            std::hint::black_box(classify(&text));
        });
        let ns = |s: f64| s * 1e9 / n;
        println!(
            "{name:<24} {:>7.2} ns {:>7.1} ns {:>7.1} ns {:>7.1} ns   per char (medians of {runs}); total ms: {:.0} / {:.0} / {:.0}",
            ns(scan),
            ns(pattern),
            ns(decide),
            ns(class),
            pattern * 1e3,
            decide * 1e3,
            class * 1e3
        );
    }
}

fn pipes(bytes: usize) -> String {
    let mut s = "a|".repeat(bytes / 2);
    s.pop();
    s
}

/// `count` commands of one `len`-character word each, joined by `; `.
fn long_commands(count: usize, len: usize) -> String {
    vec!["a".repeat(len); count].join("; ")
}

fn repeat_to(unit: &str, bytes: usize) -> String {
    let mut s = unit.repeat(bytes / unit.len() + 1);
    s.truncate(bytes);
    s
}
