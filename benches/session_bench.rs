//! Session latency and memory against one-shot `execute`.
//!
//! Run: `cargo bench --bench session_bench` (add `-- --quick` for fewer
//! rounds, `-- --stream` for the throughput figure alone).

use std::time::{Duration, Instant};

use bash_mcp::session::{RunOptions, SessionConfig, SessionManager, StartOptions};
use bash_mcp::{BashServer, ExecRequest};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Output throughput: the same command (about 100 MB of lines) through a
/// session (terminal, marker parsing, cleaning) and through `execute`
/// (pipe), interleaved, with the ratio of each pair for the spread.
fn stream(server: &BashServer, manager: &SessionManager, id: &str, rounds: usize) -> Result<(), bash_mcp::ToolError> {
    const COMMAND: &str = "seq 1 12000000";
    let options = RunOptions {
        timeout: Some(Duration::from_secs(300)),
        ..Default::default()
    };
    let (mut session, mut oneshot, mut ratios, mut bytes) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for _ in 0..rounds {
        let t = Instant::now();
        let result = manager.run(id, COMMAND, &options)?;
        let s = t.elapsed();
        assert_eq!(result.state, bash_mcp::session::RunState::Finished(0));
        let t = Instant::now();
        bytes = server.run(&ExecRequest::new(COMMAND))?.output_bytes;
        let o = t.elapsed();
        assert!(
            result.output_bytes as f64 >= bytes as f64 * 0.99,
            "the session saw the output"
        );
        session.push(s);
        oneshot.push(o);
        ratios.push(s.as_secs_f64() / o.as_secs_f64());
    }
    let spread = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        format!("{:.0}-{:.0} ms", ms(v[0]), ms(v[v.len() - 1]))
    };
    let (s, o) = (median(session.clone()), median(oneshot.clone()));
    let mbps = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    println!(
        "`{COMMAND}` ({:.1} MB), medians of {rounds}, interleaved:",
        bytes as f64 / 1e6
    );
    println!(
        "  session_run: {:>8.1} ms {:>7.1} MB/s  (spread {})",
        ms(s),
        mbps(s),
        spread(&session)
    );
    println!(
        "  execute:     {:>8.1} ms {:>7.1} MB/s  (spread {})",
        ms(o),
        mbps(o),
        spread(&oneshot)
    );
    ratios.sort_by(f64::total_cmp);
    println!(
        "  session/execute: {:.2}x  (target <= 1.5; {:.2}-{:.2} over {rounds} pairs)",
        s.as_secs_f64() / o.as_secs_f64(),
        ratios[0],
        ratios[ratios.len() - 1]
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> Result<(), bash_mcp::ToolError> {
    const N: usize = 100;
    let quick = std::env::args().any(|a| a == "--quick");
    let (runs, stream_rounds) = if quick { (2, 3) } else { (5, 7) };
    let stream_only = std::env::args().any(|a| a == "--stream");
    let server = BashServer::new(std::env::temp_dir(), None, Duration::from_secs(30))?;
    let manager = SessionManager::new(
        SessionConfig {
            enabled: true,
            ..Default::default()
        },
        std::env::temp_dir(),
    )?;
    let id = manager.start(&StartOptions::default())?;
    let options = RunOptions::default();
    for _ in 0..20 {
        manager.run(&id, "true", &options)?;
        server.run(&ExecRequest::new("true"))?;
    }
    if stream_only {
        stream(&server, &manager, &id, stream_rounds)?;
        return manager.close(&id);
    }
    // Runs of N pairs, interleaved; each run's speed-up gives the spread.
    let (mut session, mut oneshot, mut speedups) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let (mut s_run, mut o_run) = (Vec::with_capacity(N), Vec::with_capacity(N));
        for _ in 0..N {
            let t = Instant::now();
            manager.run(&id, "true", &options)?;
            s_run.push(t.elapsed());
            let t = Instant::now();
            server.run(&ExecRequest::new("true"))?;
            o_run.push(t.elapsed());
        }
        speedups.push(median(o_run.clone()).as_secs_f64() / median(s_run.clone()).as_secs_f64());
        session.extend(s_run);
        oneshot.extend(o_run);
    }
    let (s, o) = (median(session), median(oneshot));
    speedups.sort_by(f64::total_cmp);
    println!("session_run `true`: median {:?} over {} runs", s, runs * N);
    println!("execute `true`:     median {:?} over {} runs", o, runs * N);
    println!(
        "speed-up: {:.1}x  (target >= 5; {:.1}-{:.1}x over {runs} runs of {N})",
        o.as_secs_f64() / s.as_secs_f64(),
        speedups[0],
        speedups[speedups.len() - 1]
    );

    let idle: Vec<String> = (0..4)
        .map(|_| manager.start(&StartOptions::default()))
        .collect::<Result<_, _>>()?;
    for sid in &idle {
        manager.run(sid, "true", &options)?;
    }
    let rss: Vec<u64> = idle
        .iter()
        .map(|sid| manager.shell_rss_kib(sid))
        .collect::<Result<_, _>>()?;
    let buffers: Vec<usize> = idle
        .iter()
        .map(|sid| manager.buffer_bytes(sid))
        .collect::<Result<_, _>>()?;
    println!(
        "idle bash session: shell RSS {} KiB (mean of {}), library buffers {} bytes",
        rss.iter().sum::<u64>() / rss.len() as u64,
        rss.len(),
        buffers.iter().sum::<usize>() / buffers.len()
    );
    stream(&server, &manager, &id, stream_rounds)?;

    let start = Instant::now();
    let extra = manager.start(&StartOptions::default())?;
    println!("session_start (bash): {:?}", start.elapsed());
    manager.close(&extra)?;
    Ok(())
}
