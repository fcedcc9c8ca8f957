//! `bash-mcp serve`: MCP over stdio.
//!
//! stdin is read line by line (bounded: a line over the handler's limit is
//! skipped to its newline and answered with -32600, never buffered whole);
//! every message written to stdout is one JSON line, under one lock, so
//! responses from worker threads never interleave. Logs go to stderr only.
//! Commands get their own pipes (the library closes every other fd in the
//! child), so nothing a command prints can reach the protocol stream.
//!
//! Shutdown: on stdin EOF, or SIGTERM / SIGINT / SIGHUP, every running call
//! is cancelled and every background job killed (their process groups at
//! once), every session is closed (its shell and what it started killed, its
//! private directory removed), and the process exits within a second.
//!
//! Signals are handled with `signal-hook`'s iterator: it installs
//! async-signal-safe handlers that write to a self-pipe and delivers the
//! signals to an ordinary thread, where shutting down (locks, joins) is
//! allowed. A hand-written self-pipe would be the same code with more
//! `unsafe`; an async runtime would be far more than this needs.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bash_mcp::BashServer;
use bash_mcp::mcp::{HandlerOptions, McpHandler};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::gate;
use super::settings::Settings;

/// How long shutdown waits, in all, for calls and jobs to end after killing them.
const SHUTDOWN_WAIT: Duration = Duration::from_millis(700);

/// stdout, one whole line at a time.
struct LineWriter {
    out: Mutex<std::io::Stdout>,
    broken: AtomicBool,
}

impl LineWriter {
    fn send(&self, line: &str) {
        let out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = out.lock();
        let ok = out
            .write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = ok
            && !self.broken.swap(true, Ordering::SeqCst)
        {
            tracing::warn!("cannot write to stdout ({e}); the client is gone");
        }
    }
}

pub fn run(settings: &Settings) -> Result<(), String> {
    // Signals first, so a client that kills us right away finds handlers in place.
    let mut signals =
        Signals::new([SIGTERM, SIGINT, SIGHUP]).map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let server = super::build_server(settings)?;
    let options = handler_options(settings, &server)?;
    let writer = Arc::new(LineWriter {
        out: Mutex::new(std::io::stdout()),
        broken: AtomicBool::new(false),
    });
    let out = writer.clone();
    let handler = Arc::new(McpHandler::new(server.clone(), move |line| out.send(&line), options));

    let on_signal = handler.clone();
    let server_on_signal = server.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                tracing::info!(signal, "signal received; stopping");
                stop(&on_signal, &server_on_signal);
            }
        })
        .map_err(|e| format!("cannot start the signal thread: {e}"))?;

    tracing::info!(working_dir = %settings.working_dir.display(), "serving MCP on stdio");
    super::startup::announce(settings, &server.working_dir());
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        // A person typed `bash-mcp serve`: without this it waits in silence.
        eprintln!("{TERMINAL_NOTE}");
    }
    let mut input = stdin.lock();
    let limit = handler.max_line_bytes();
    let mut line: Vec<u8> = Vec::new();
    let mut dropped: usize = 0; // bytes of an over-long line not kept
    loop {
        let chunk = match input.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!("cannot read stdin: {e}");
                break;
            }
        };
        if chunk.is_empty() {
            // EOF: a last line without newline still counts.
            if !line.is_empty() || dropped > 0 {
                deliver(&handler, &writer, &line, dropped);
            }
            break;
        }
        let (part, complete) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if dropped > 0 || line.len() + part.len() > limit {
            dropped += line.len() + part.len();
            line.clear();
        } else {
            line.extend_from_slice(part);
        }
        let used = complete.unwrap_or(chunk.len());
        input.consume(used);
        if complete.is_some() {
            deliver(&handler, &writer, &line, dropped);
            line.clear();
            dropped = 0;
        }
        if writer.broken.load(Ordering::SeqCst) {
            break;
        }
    }
    tracing::info!("end of input; stopping");
    stop(&handler, &server)
}

/// The MCP handler's options for the configured server: its tools, its
/// gate, its tasks (the same over stdio and HTTP).
pub(super) fn handler_options(settings: &Settings, server: &Arc<BashServer>) -> Result<HandlerOptions, String> {
    Ok(HandlerOptions {
        tools: Some(settings.exposed_tools()),
        gate: gate::build(settings, Some(server.clone()))?,
        instructions: Some(INSTRUCTIONS.into()),
        tasks: settings.tasks,
        ..HandlerOptions::default()
    })
}

fn deliver(handler: &McpHandler, writer: &LineWriter, line: &[u8], dropped: usize) {
    let replies = if dropped > 0 {
        vec![handler.oversized_message(dropped)]
    } else {
        handler.handle_bytes(line)
    };
    for reply in replies {
        writer.send(&reply);
    }
}

/// Kills every running call, background job and session, and exits.
///
/// `std::process::exit` runs no destructors, so everything that would die
/// with the server object is stopped here explicitly. In order: stop taking
/// calls and cancel the running ones; kill the jobs and close the sessions;
/// wait for the calls; and stop again whatever a call that was just ending
/// started (a job, a session).
fn stop(handler: &McpHandler, server: &BashServer) -> ! {
    let deadline = Instant::now() + SHUTDOWN_WAIT;
    let until = |reserve: Duration| deadline.saturating_duration_since(Instant::now() + reserve);
    handler.shutdown_within(Duration::ZERO);
    let mut ended = server.shutdown_within(Some(until(SHUTDOWN_WAIT / 2)));
    ended &= handler.shutdown_within(until(SHUTDOWN_WAIT / 5));
    ended &= server.shutdown_within(Some(until(Duration::ZERO)));
    if !ended {
        tracing::warn!("some calls or jobs did not end in time; exiting anyway (their process groups were killed)");
    }
    std::process::exit(0);
}

/// What `serve` says when its input is a terminal rather than a client.
const TERMINAL_NOTE: &str = "\
bash-mcp serve speaks MCP (JSON-RPC, one message per line) on stdin and stdout: it is meant to be
started by an MCP client such as Claude Code, Claude Desktop or Cursor (see docs/mcp.md).
To try it by hand, paste these two lines, then press Ctrl-D to stop:
{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"me\",\"version\":\"0\"}}}
{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"execute\",\"arguments\":{\"command\":\"echo hello\"}}}
To run one command without a client: bash-mcp exec 'echo hello'";

const INSTRUCTIONS: &str = "Runs shell commands with the `execute` tool. Each call is a fresh /bin/sh -c in the server's working directory (cd and variables do not persist); stdin is empty and pagers are off; the command and everything it started are killed when it ends or times out. A non-zero exit code is reported as a normal result. For long commands pass background: true and poll job_status. When the session_* tools are listed, session_start gives a persistent shell that keeps cd, variables and virtualenvs between session_run calls.";
