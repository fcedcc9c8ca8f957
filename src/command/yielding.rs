//! `execute` with `yield_seconds`: the call runs its command on its own
//! thread for up to that long; a command still running then is handed back
//! as a background job (with the output so far and its `job_id`), under its
//! own time limit.
//!
//! Many MCP clients give up on a `tools/call` after about 60 s whatever the
//! tool's time limit says; a call that hands back before that keeps a long
//! build alive instead of orphaning it. A command that ends within the
//! window costs what it costs without one: no thread is started for it.

use std::time::{Duration, Instant};

use crate::command::jobs::{JobManager, Rest};
use crate::command::outcome::ExecOutcome;
use crate::command::request::{ExecRequest, YieldAfter};
use crate::config::Config;
use crate::error::ToolError;
use crate::process::capture::BoundedOutput;
use crate::process::stream::OutputStream;
use crate::tool::{CallOptions, ToolResponse};

/// How long the call waits before it hands the command back, if it ever does.
pub(crate) fn window(request: &ExecRequest, config: &Config) -> Option<Duration> {
    match request.yield_after {
        YieldAfter::Configured => config.yield_after,
        YieldAfter::Never => None,
        YieldAfter::After(window) => Some(window),
    }
}

/// How a run given a window stood when it returned.
#[allow(clippy::large_enum_variant)] // returned once per call and unpacked at once, never stored
pub(crate) enum Ran {
    /// It ended within the window: the call's own result.
    Ended(ExecOutcome),
    /// Still running when the window closed: the rest of the run.
    Running(Rest),
}

/// Runs `request` through `run` (which runs it on this thread until it ends
/// or the instant it is given passes) and hands a command still running
/// then to `jobs`.
pub(crate) fn run(
    jobs: &JobManager,
    request: ExecRequest,
    window: Duration,
    options: CallOptions<'_>,
    run: impl FnOnce(&ExecRequest, CallOptions<'_>, Instant) -> Result<Ran, ToolError>,
) -> ToolResponse {
    // What the command prints during the call, for the job's first status
    // if it is handed back; the call's own sink sees it as it comes.
    let mut so_far = BoundedOutput::new(jobs.output_limit());
    let mut call_sink = options.on_output;
    let mut tee = |chunk: &[u8], stream: OutputStream| {
        so_far.push(chunk);
        if let Some(sink) = call_sink.as_mut() {
            sink(chunk, stream);
        }
    };
    let ran = run(
        &request,
        CallOptions {
            cancel: options.cancel,
            on_output: Some(&mut tee),
            sandbox: options.sandbox,
            principal: options.principal,
            client: options.client,
        },
        Instant::now() + window,
    );
    match ran {
        Ok(Ran::Ended(outcome)) => ToolResponse::document(outcome.to_value()),
        Err(error) => ToolResponse::error(&error),
        Ok(Ran::Running(rest)) => match jobs.adopt(request, so_far, rest) {
            Err(error) => ToolResponse::error(&error),
            Ok(mut doc) => {
                let id = doc["job_id"].as_str().unwrap_or_default().to_owned();
                doc["hint"] = format!(
                    "Still running after {} s: it goes on as background job {id} under its own time limit. \
                     Call job_status {{\"job_id\": \"{id}\", \"wait_seconds\": 30}} for what it prints next and its result, \
                     or job_kill to stop it.",
                    crate::command::outcome::tenths(window)
                )
                .into();
                ToolResponse::document(doc)
            }
        },
    }
}
