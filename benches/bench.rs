//! Execution benchmark: prints the library's figures beside a baseline
//! measured in the same run, so ratios hold on a noisy machine.
//!
//! Run with `cargo bench --bench bench` (add `-- --quick` for fewer rounds).
//!
//! 1. Latency: a raw `posix_spawn` of `/bin/sh -c true` reading a pipe to EOF
//!    and reaping, against `BashServer::run` of `true` (target ratio ≤ 1.05),
//!    over several runs for the spread (`-- --latency` stops after it).
//! 2. Throughput: capturing 1 GiB of output against
//!    `head -c 1G /dev/zero | cat > /dev/null` (target ratio ≤ 1.25), the
//!    same capture with the whole output kept for `output_read` against it
//!    with keeping off (target ratio ≤ 1.25), in alternating rounds, and the
//!    host's peak RSS (target < 64 MiB); then 200 MiB, which the store keeps
//!    whole, with keeping on and off (no target: every byte reaches the
//!    page cache); `-- --throughput` stops after it.
//! 3. Timeout overshoot of a 1 s limit (target median ≤ 20 ms).
//!
//! `-- --calls raw|execute|plain|kept N` only makes N calls of one kind and
//! exits (`plain` and `kept`: 1 GiB of output, with keeping off and on): for
//! counting what one call costs
//! with `strace -c -f`, `perf` or `valgrind`, figures that machine load does
//! not move.

use std::ffi::CString;
use std::time::{Duration, Instant};

use bash_mcp::{BashServer, ExecRequest, McpServer, Status};

/// The command of the throughput figures: 1 GiB of output.
const GIB: &str = "head -c 1073741824 /dev/zero";

/// An output the store keeps whole (under its 256 MiB budget): 200 MiB.
const WITHIN_BUDGET: &str = "head -c 209715200 /dev/zero";

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 200 } else { 1000 };
    let server = BashServer::new(std::env::temp_dir(), None, Duration::from_secs(60)).expect("server");
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--calls") {
        let count: usize = args.get(at + 2).and_then(|n| n.parse().ok()).unwrap_or(100);
        let request = ExecRequest::new("true");
        let gib = ExecRequest::new(GIB);
        if args.get(at + 1).map(String::as_str) == Some("plain") {
            server
                .configure(r#"{"output_store": {"enabled": false}}"#)
                .expect("keeping off");
        }
        for _ in 0..count {
            match args.get(at + 1).map(String::as_str) {
                Some("raw") => raw_spawn_true(),
                Some("execute") => assert!(server.run(&request).unwrap().success()),
                Some("kept") => assert!(server.run(&gib).unwrap().output_id.is_some()),
                Some("plain") => assert_eq!(server.run(&gib).unwrap().output_bytes, 1 << 30),
                other => panic!("--calls takes raw, execute, plain or kept and a count, not {other:?}"),
            }
        }
        return;
    }

    println!("bash-mcp execution benchmark (medians; ratios of figures measured in the same run)");
    println!();
    let only_throughput = args.iter().any(|a| a == "--throughput");
    if !only_throughput {
        latency(&server, if quick { 3 } else { 7 }, rounds / 5);
    }
    if args.iter().any(|a| a == "--latency") {
        return;
    }

    // Throughput: 1 GiB through the capture path, with keeping off and on.
    let gib_rounds = if quick { 3 } else { 7 };
    let keeping = BashServer::new(std::env::temp_dir(), None, Duration::from_secs(60)).expect("server");
    server
        .configure(r#"{"output_store": {"enabled": false}}"#)
        .expect("keeping off");
    throughput(&server, &keeping, gib_rounds);
    kept_whole(&server, &keeping, gib_rounds);
    if only_throughput {
        return;
    }

    // Timeout overshoot.
    let overshoot_rounds = if quick { 5 } else { 15 };
    let mut overshoot = Vec::new();
    for _ in 0..overshoot_rounds {
        let start = Instant::now();
        let outcome = server
            .run(&ExecRequest::new("sleep 5").timeout(Duration::from_secs(1)))
            .unwrap();
        let elapsed = start.elapsed();
        assert_eq!(outcome.status, Status::TimedOut);
        overshoot.push(elapsed.saturating_sub(Duration::from_secs(1)));
    }
    println!(
        "{:<44} {:>12} {:>9.3} ms             (target <= 20 ms, median of {overshoot_rounds})",
        "timeout overshoot of a 1 s limit",
        "",
        ms(median(&mut overshoot))
    );
}

/// Latency of `true`, raw against `execute`, interleaved so drifts in
/// machine load hit both alike: `runs` runs of `rounds` pairs each, with
/// every run's medians and ratio, then the medians over all rounds and the
/// spread of the per-run ratios.
fn latency(server: &BashServer, runs: usize, rounds: usize) {
    let request = ExecRequest::new("true");
    for _ in 0..20 {
        raw_spawn_true();
        server.run(&request).unwrap();
    }
    let (mut all_raw, mut all_lib, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    println!(
        "{:<44} {:>12} {:>12} {:>8}",
        "latency of sh -c true", "raw spawn", "execute", "ratio"
    );
    for run in 1..=runs {
        let mut raw = Vec::with_capacity(rounds);
        let mut lib = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            raw.push(timed(raw_spawn_true));
            lib.push(timed(|| {
                let outcome = server.run(&request).unwrap();
                assert!(outcome.success());
            }));
        }
        let (raw_med, lib_med) = (median(&mut raw), median(&mut lib));
        let ratio = lib_med.as_secs_f64() / raw_med.as_secs_f64();
        println!(
            "{:<44} {:>9.3} ms {:>9.3} ms {:>8.3}",
            format!("  run {run} ({rounds} rounds)"),
            ms(raw_med),
            ms(lib_med),
            ratio
        );
        all_raw.extend(raw);
        all_lib.extend(lib);
        ratios.push(ratio);
    }
    let (raw_med, lib_med) = (median(&mut all_raw), median(&mut all_lib));
    ratios.sort_by(f64::total_cmp);
    println!(
        "{:<44} {:>9.3} ms {:>9.3} ms {:>8.3}   (target <= 1.05; {:.3}-{:.3} over {runs} runs)",
        "  all rounds",
        ms(raw_med),
        ms(lib_med),
        lib_med.as_secs_f64() / raw_med.as_secs_f64(),
        ratios[0],
        ratios[ratios.len() - 1]
    );
}

/// 1 GiB of output through `head | cat`, the capture with keeping off
/// (`plain`) and the capture with the whole output kept (`kept`), in rounds
/// whose order alternates so that drifts in machine load hit all alike:
/// every round's figures, then the medians, their ratios and the spread of
/// the per-round ratios; then the host's peak RSS.
fn throughput(plain: &BashServer, kept: &BashServer, rounds: usize) {
    let rss_before = peak_rss_kib();
    let (mut base, mut off, mut on) = (Vec::new(), Vec::new(), Vec::new());
    let (mut capture_ratios, mut keep_ratios) = (Vec::new(), Vec::new());
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>13} {:>13}",
        "1 GiB of output", "head|cat", "keep off", "keep on", "off/head|cat", "on/off"
    );
    for round in 1..=rounds {
        let run_base = || {
            timed(|| {
                let status = std::process::Command::new("/bin/sh")
                    .args(["-c", &format!("{GIB} | cat > /dev/null")])
                    .status()
                    .unwrap();
                assert!(status.success());
            })
        };
        let run_off = || {
            timed(|| {
                let outcome = plain.run(&ExecRequest::new(GIB)).unwrap();
                assert_eq!(outcome.output_bytes, 1 << 30);
                assert!(outcome.output_id.is_none(), "keeping is off");
            })
        };
        let run_on = || {
            timed(|| {
                let outcome = kept.run(&ExecRequest::new(GIB)).unwrap();
                assert_eq!(outcome.output_bytes, 1 << 30);
                assert!(outcome.output_id.is_some(), "the output was kept");
            })
        };
        let (b, f, n) = if round % 2 == 1 {
            let b = run_base();
            let f = run_off();
            (b, f, run_on())
        } else {
            let n = run_on();
            let f = run_off();
            (run_base(), f, n)
        };
        let (capture_ratio, keep_ratio) = (f.as_secs_f64() / b.as_secs_f64(), n.as_secs_f64() / f.as_secs_f64());
        println!(
            "{:<44} {:>7.3} s {:>7.3} s {:>7.3} s {:>13.3} {:>13.3}",
            format!("  round {round}"),
            b.as_secs_f64(),
            f.as_secs_f64(),
            n.as_secs_f64(),
            capture_ratio,
            keep_ratio
        );
        base.push(b);
        off.push(f);
        on.push(n);
        capture_ratios.push(capture_ratio);
        keep_ratios.push(keep_ratio);
    }
    let rss_after = peak_rss_kib();
    let (base_med, off_med, on_med) = (median(&mut base), median(&mut off), median(&mut on));
    capture_ratios.sort_by(f64::total_cmp);
    keep_ratios.sort_by(f64::total_cmp);
    println!(
        "{:<44} {:>7.3} s {:>7.3} s {:>7.3} s {:>13.3} {:>13.3}",
        format!("  medians of {rounds} rounds"),
        base_med.as_secs_f64(),
        off_med.as_secs_f64(),
        on_med.as_secs_f64(),
        off_med.as_secs_f64() / base_med.as_secs_f64(),
        on_med.as_secs_f64() / off_med.as_secs_f64()
    );
    println!(
        "{:<44} {:>31} {:>6.3}-{:<6.3} {:>6.3}-{:<6.3}",
        "  spread of the per-round ratios",
        "",
        capture_ratios[0],
        capture_ratios[rounds - 1],
        keep_ratios[0],
        keep_ratios[rounds - 1]
    );
    println!(
        "{:<44} targets: off/head|cat <= 1.25, on/off <= 1.25 (256 MiB kept on disk)",
        ""
    );
    println!(
        "{:<44} {:>9.1} MiB   (target < 64 MiB; before the 1 GiB runs: {:.1} MiB)",
        "host peak RSS",
        rss_after as f64 / 1024.0,
        rss_before as f64 / 1024.0
    );
}

/// 200 MiB, kept whole, against the same capture with keeping off, in
/// alternating order: medians, their ratio and the spread per round.
fn kept_whole(plain: &BashServer, kept: &BashServer, rounds: usize) {
    let (mut off, mut on, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let run = |server: &BashServer, keeping: bool| {
            timed(|| {
                let outcome = server.run(&ExecRequest::new(WITHIN_BUDGET)).unwrap();
                assert_eq!(outcome.output_bytes, 200 << 20);
                assert_eq!(outcome.output_id.is_some(), keeping);
            })
        };
        let (f, n) = if round % 2 == 0 {
            let f = run(plain, false);
            (f, run(kept, true))
        } else {
            let n = run(kept, true);
            (run(plain, false), n)
        };
        ratios.push(n.as_secs_f64() / f.as_secs_f64());
        off.push(f);
        on.push(n);
    }
    let (off_med, on_med) = (median(&mut off), median(&mut on));
    ratios.sort_by(f64::total_cmp);
    println!();
    println!(
        "{:<44} {:>9} {:>9} {:>13} {:>13}",
        "200 MiB of output, kept whole", "keep off", "keep on", "on/off", "spread"
    );
    println!(
        "{:<44} {:>7.3} s {:>7.3} s {:>13.3} {:>6.3}-{:<6.3}",
        format!("  medians of {rounds} rounds"),
        off_med.as_secs_f64(),
        on_med.as_secs_f64(),
        on_med.as_secs_f64() / off_med.as_secs_f64(),
        ratios[0],
        ratios[rounds - 1]
    );
    println!(
        "{:<44} no target: every byte is copied into the page cache once more",
        ""
    );
}

fn timed(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The baseline: what any careful caller must do at minimum — posix_spawn
/// `/bin/sh -c true` with stdout on a pipe, read to EOF, reap.
fn raw_spawn_true() {
    static SH: &std::ffi::CStr = c"/bin/sh";
    let argv_owned = [
        CString::new("/bin/sh").unwrap(),
        CString::new("-c").unwrap(),
        CString::new("true").unwrap(),
    ];
    let mut argv: Vec<*mut libc::c_char> = argv_owned.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    // SAFETY: every pointer passed is valid for its call: `fds`, `fa`, `pid`,
    // `status` and `buf` are live locals, `argv` is NUL-terminated and outlives
    // the spawn, `SH` is a C string; the fds are fresh from pipe2 and closed once.
    unsafe {
        let mut fds = [0; 2];
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
        let mut fa: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        libc::posix_spawn_file_actions_init(&mut fa);
        libc::posix_spawn_file_actions_adddup2(&mut fa, fds[1], 1);
        let mut pid = 0;
        let rc = libc::posix_spawn(
            &mut pid,
            SH.as_ptr(),
            &fa,
            std::ptr::null(),
            argv.as_ptr(),
            environ_ptr(),
        );
        assert_eq!(rc, 0);
        libc::posix_spawn_file_actions_destroy(&mut fa);
        libc::close(fds[1]);
        let mut buf = [0u8; 4096];
        while libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) > 0 {}
        libc::close(fds[0]);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
}

fn environ_ptr() -> *const *mut libc::c_char {
    unsafe extern "C" {
        static environ: *const *mut libc::c_char;
    }
    // SAFETY: `environ` is the C library's environment pointer, valid for the
    // life of the process; it is only read.
    unsafe { environ }
}
