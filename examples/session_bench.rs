//! Session latency and memory against one-shot `execute`.
//!
//! Run: `cargo run --release --example session_bench`

use std::time::{Duration, Instant};

use bash_mcp::session::{RunOptions, SessionConfig, SessionManager, StartOptions};
use bash_mcp::{BashServer, ExecRequest};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() -> Result<(), bash_mcp::ToolError> {
    const N: usize = 300;
    let server = BashServer::new(std::env::temp_dir(), None, 30)?;
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
    let start = Instant::now();
    let extra = manager.start(&StartOptions::default())?;
    println!("session_start (bash): {:?}", start.elapsed());
    manager.close(&extra)?;
    Ok(())
}
