//! Session latency and memory against one-shot `execute`.
//!
//! Run: `cargo bench --bench session_bench`

use std::time::{Duration, Instant};

use bash_mcp::session::{RunOptions, SessionConfig, SessionManager, StartOptions};
use bash_mcp::{BashServer, ExecRequest};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Output throughput: the same command through a session (terminal, marker
/// parsing, cleaning) and through `execute` (pipe), interleaved, medians.
fn stream(server: &BashServer, manager: &SessionManager, id: &str) -> Result<(), bash_mcp::ToolError> {
    const COMMAND: &str = "seq 1 2000000";
    const ROUNDS: usize = 5;
    let options = RunOptions {
        timeout: Some(Duration::from_secs(300)),
        ..Default::default()
    };
    let (mut session, mut oneshot, mut bytes) = (Vec::new(), Vec::new(), 0);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let result = manager.run(id, COMMAND, &options)?;
        session.push(t.elapsed());
        assert_eq!(result.state, bash_mcp::session::RunState::Finished(0));
        let t = Instant::now();
        bytes = server.run(&ExecRequest::new(COMMAND))?.output_bytes;
        oneshot.push(t.elapsed());
        assert!(
            result.output_bytes as f64 >= bytes as f64 * 0.99,
            "the session saw the output"
        );
    }
    let spread = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        format!("{:.0}-{:.0} ms", ms(v[0]), ms(v[v.len() - 1]))
    };
    let (s, o) = (median(session.clone()), median(oneshot.clone()));
    let mbps = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    println!(
        "`{COMMAND}` ({:.1} MB), medians of {ROUNDS}, interleaved:",
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
    println!(
        "  session/execute: {:.2}x  (target <= 1.5)",
        s.as_secs_f64() / o.as_secs_f64()
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> Result<(), bash_mcp::ToolError> {
    const N: usize = 300;
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
    let mut session = Vec::with_capacity(N);
    let mut oneshot = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        manager.run(&id, "true", &options)?;
        session.push(t.elapsed());
        let t = Instant::now();
        server.run(&ExecRequest::new("true"))?;
        oneshot.push(t.elapsed());
    }
    let (s, o) = (median(session), median(oneshot));
    println!("session_run `true`: median {:?} over {N} runs", s);
    println!("execute `true`:     median {:?} over {N} runs", o);
    println!("speed-up: {:.1}x", o.as_secs_f64() / s.as_secs_f64());

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
    stream(&server, &manager, &id)?;

    let start = Instant::now();
    let extra = manager.start(&StartOptions::default())?;
    println!("session_start (bash): {:?}", start.elapsed());
    manager.close(&extra)?;
    Ok(())
}
