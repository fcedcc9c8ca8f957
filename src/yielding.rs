//! `execute` with `yield_seconds`: the call waits for its command up to that
//! long; a command still running then is handed back as a background job
//! (with the output so far and its `job_id`), under its own time limit.
//!
//! Many MCP clients give up on a `tools/call` after about 60 s whatever the
//! tool's time limit says; a call that hands back before that keeps a long
//! build alive instead of orphaning it.

use std::time::Duration;

use crate::config::Config;
use crate::jobs::{Attached, JobManager};
use crate::request::{ExecRequest, YieldAfter};
use crate::server::{CallOptions, ToolResponse};

/// How long the call waits before it hands the command back, if it ever does.
pub(crate) fn window(request: &ExecRequest, config: &Config) -> Option<Duration> {
    match request.yield_after {
        YieldAfter::Configured => config.yield_after,
        YieldAfter::Never => None,
        YieldAfter::After(window) => Some(window),
    }
}

/// Runs `request` as a job attached to this call, for at most `window`.
pub(crate) fn run(jobs: &JobManager, request: ExecRequest, window: Duration, options: CallOptions<'_>) -> ToolResponse {
    match jobs.run_attached(request, window, options.cancel, options.on_output) {
        Ok(Attached::Finished(Ok(outcome))) => ToolResponse::document(outcome.to_value()),
        Ok(Attached::Finished(Err(error))) | Err(error) => ToolResponse::error(&error),
        Ok(Attached::Running(mut doc)) => {
            let id = doc["job_id"].as_str().unwrap_or_default().to_owned();
            doc["hint"] = format!(
                "Still running after {} s: it goes on as background job {id} under its own time limit. \
                 Call job_status {{\"job_id\": \"{id}\", \"wait_seconds\": 30}} for what it prints next and its result, \
                 or job_kill to stop it.",
                crate::outcome::tenths(window)
            )
            .into();
            ToolResponse::document(doc)
        }
    }
}
