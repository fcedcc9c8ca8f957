//! Background jobs: `execute` with `background: true` runs the command on a
//! worker thread through the same run loop (process group, time limit, group
//! kill, bounded output) and returns a job id at once.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value, json};

use crate::args::json_kind;
use crate::cancel::CancelToken;
use crate::capture::BoundedOutput;
use crate::error::{ErrorCode, ToolError};
use crate::outcome::ExecOutcome;
use crate::request::ExecRequest;
use crate::server::{CallOptions, Tool, ToolDefinition, ToolResponse};

/// Runs one request to completion (the server's `run_with`).
pub(crate) type Runner = Arc<dyn Fn(&ExecRequest, CallOptions<'_>) -> Result<ExecOutcome, ToolError> + Send + Sync>;

/// How a job ended, reported once by its worker thread (for the audit log).
pub(crate) struct JobEnd<'a> {
    pub id: &'a str,
    pub request: &'a ExecRequest,
    /// When the job was started.
    pub started: SystemTime,
    pub outcome: &'a Result<ExecOutcome, ToolError>,
}

/// Called with every job's end, before its result is available to `job_status`.
pub(crate) type OnFinish = Arc<dyn Fn(&JobEnd<'_>) + Send + Sync>;

/// The job tools with their built-in definitions.
pub(crate) const JOB_TOOLS: &[(&str, &str)] = &[
    ("job_status", include_str!("../data/tools/bash/job_status.json")),
    ("job_kill", include_str!("../data/tools/bash/job_kill.json")),
    ("job_list", include_str!("../data/tools/bash/job_list.json")),
];

struct Job {
    id: String,
    command: String,
    started: Instant,
    cancel: CancelToken,
    live: Mutex<BoundedOutput>,
    result: Mutex<Option<Result<ExecOutcome, ToolError>>>,
    finished_at: Mutex<Option<Instant>>,
    done: Condvar,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Job {
    fn result(&self) -> MutexGuard<'_, Option<Result<ExecOutcome, ToolError>>> {
        self.result.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Background jobs of one server; dropping it kills those still running.
pub(crate) struct JobManager {
    jobs: Mutex<HashMap<String, Arc<Job>>>,
    runner: Runner,
    max_finished: Box<dyn Fn() -> (usize, usize) + Send + Sync>,
    on_finish: OnFinish,
}

impl JobManager {
    /// `limits` returns (max finished jobs kept, output limit bytes);
    /// `on_finish` hears how each job ended, whether or not anyone asks.
    pub fn new(runner: Runner, limits: Box<dyn Fn() -> (usize, usize) + Send + Sync>, on_finish: OnFinish) -> Self {
        Self {
            jobs: Mutex::new(HashMap::new()),
            runner,
            max_finished: limits,
            on_finish,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Job>>> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `request` in the background and returns its id.
    pub fn start(&self, request: ExecRequest) -> Result<String, ToolError> {
        let id = format!("job-{}", crate::ids::secret_id()?);
        let (_, limit) = (self.max_finished)();
        let job = Arc::new(Job {
            id: id.clone(),
            command: request.command.clone(),
            started: Instant::now(),
            cancel: CancelToken::new(),
            live: Mutex::new(BoundedOutput::new(limit)),
            result: Mutex::new(None),
            finished_at: Mutex::new(None),
            done: Condvar::new(),
            handle: Mutex::new(None),
        });
        let worker = job.clone();
        let runner = self.runner.clone();
        let on_finish = self.on_finish.clone();
        let started = SystemTime::now();
        let handle = std::thread::Builder::new()
            .name(format!("bash-mcp-{id}"))
            .spawn(move || {
                let mut sink = |chunk: &[u8], _stream| {
                    worker.live.lock().unwrap_or_else(PoisonError::into_inner).push(chunk);
                };
                let options = CallOptions {
                    cancel: Some(&worker.cancel),
                    on_output: Some(&mut sink),
                };
                let outcome = runner(&request, options);
                on_finish(&JobEnd {
                    id: &worker.id,
                    request: &request,
                    started,
                    outcome: &outcome,
                });
                *worker.finished_at.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
                *worker.result() = Some(outcome);
                worker.done.notify_all();
            })
            .map_err(|e| {
                ToolError::new(
                    ErrorCode::SpawnFailed,
                    format!("could not start a worker thread for the job: {e}"),
                    "the host is out of threads; retry later",
                )
            })?;
        *job.handle.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
        self.lock().insert(id.clone(), job);
        self.evict_finished();
        Ok(id)
    }

    /// Drops the oldest finished jobs beyond the configured bound.
    fn evict_finished(&self) {
        let (max, _) = (self.max_finished)();
        let mut jobs = self.lock();
        let mut finished: Vec<(Instant, String)> = jobs
            .values()
            .filter_map(|j| (*j.finished_at.lock().unwrap_or_else(PoisonError::into_inner)).map(|t| (t, j.id.clone())))
            .collect();
        if finished.len() <= max {
            return;
        }
        finished.sort();
        for (_, id) in finished.iter().take(finished.len() - max) {
            jobs.remove(id);
        }
    }

    fn get(&self, id: &str) -> Result<Arc<Job>, ToolError> {
        self.lock().get(id).cloned().ok_or_else(|| {
            ToolError::new(
                ErrorCode::JobNotFound,
                format!("no background job with id {id:?} (a finished job's result is returned once, and old finished jobs are dropped)"),
                "call job_list to see current jobs",
            )
        })
    }

    /// The job's status, waiting up to `wait` for it to finish. A finished
    /// job's result is returned once and then forgotten.
    pub fn status(&self, id: &str, wait: Duration) -> Result<Value, ToolError> {
        self.evict_finished();
        let job = self.get(id)?;
        let deadline = Instant::now() + wait;
        let mut result = job.result();
        while result.is_none() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            result = job
                .done
                .wait_timeout(result, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        match result.take() {
            None => {
                let live = job.live.lock().unwrap_or_else(PoisonError::into_inner);
                Ok(json!({
                    "job_id": job.id,
                    "status": "running",
                    "command": job.command,
                    "elapsed_ms": job.started.elapsed().as_millis() as u64,
                    "output": crate::term::clean(&live.render()),
                    "output_bytes": live.total(),
                    "truncated": live.is_truncated(),
                    "hint": "Still running: call job_status again (with wait_seconds to block), or job_kill to stop it.",
                }))
            }
            Some(outcome) => {
                drop(result);
                self.lock().remove(id);
                if let Some(h) = job.handle.lock().unwrap_or_else(PoisonError::into_inner).take() {
                    let _ = h.join();
                }
                let mut outcome = outcome?;
                // Cleaned like the running job's output, so a job reads the
                // same before and after it ends.
                outcome.output = outcome.output.map(crate::term::clean);
                let mut doc = outcome.to_value();
                doc["job_id"] = job.id.clone().into();
                doc["status"] = if outcome.exit_code().is_some() {
                    "finished"
                } else {
                    "stopped"
                }
                .into();
                Ok(doc)
            }
        }
    }

    /// Kills the job's process group and returns its final result.
    pub fn kill(&self, id: &str) -> Result<Value, ToolError> {
        let job = self.get(id)?;
        job.cancel.cancel();
        self.status(id, Duration::from_secs(30))
    }

    /// (running, finished and not yet collected) job counts.
    pub fn counts(&self) -> (usize, usize) {
        let jobs = self.lock();
        let finished = jobs
            .values()
            .filter(|j| j.finished_at.lock().unwrap_or_else(PoisonError::into_inner).is_some())
            .count();
        (jobs.len() - finished, finished)
    }

    pub fn list(&self) -> Value {
        let jobs = self.lock();
        let mut list: Vec<(Instant, Value)> = jobs
            .values()
            .map(|j| {
                let finished = j.finished_at.lock().unwrap_or_else(PoisonError::into_inner).is_some();
                (
                    j.started,
                    json!({
                        "job_id": j.id,
                        "command": j.command,
                        "state": if finished { "finished" } else { "running" },
                        "elapsed_seconds": crate::outcome::tenths(j.started.elapsed()),
                    }),
                )
            })
            .collect();
        list.sort_by_key(|(t, _)| *t);
        json!({"jobs": list.into_iter().map(|(_, v)| v).collect::<Vec<_>>()})
    }
}

impl JobManager {
    /// Kills every job's process group and forgets every job, then waits for
    /// their threads to end, at most `limit` (`None`: as long as it takes).
    /// Returns whether they all ended. Idempotent: a second call finds
    /// nothing to do.
    pub fn shutdown(&self, limit: Option<Duration>) -> bool {
        self.stop_all().wait(limit.map(|l| Instant::now() + l))
    }

    /// Cancels every job (killing its process group) and forgets it; the
    /// returned value waits for their threads.
    pub fn stop_all(&self) -> StoppedJobs {
        let jobs: Vec<Arc<Job>> = self.lock().drain().map(|(_, j)| j).collect();
        for job in &jobs {
            job.cancel.cancel();
        }
        StoppedJobs(jobs)
    }
}

/// Jobs [`JobManager::stop_all`] cancelled, whose threads may still be ending.
pub(crate) struct StoppedJobs(Vec<Arc<Job>>);

impl StoppedJobs {
    /// Waits until every job's thread has ended, at most until `deadline`
    /// (`None`: no limit); returns whether all ended.
    pub fn wait(self, deadline: Option<Instant>) -> bool {
        let mut all_ended = true;
        for job in self.0 {
            let mut result = job.result();
            while result.is_none() {
                result = match deadline {
                    None => job.done.wait(result).unwrap_or_else(PoisonError::into_inner),
                    Some(deadline) => {
                        let now = Instant::now();
                        if now >= deadline {
                            break;
                        }
                        job.done
                            .wait_timeout(result, deadline - now)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0
                    }
                };
            }
            let ended = result.is_some();
            drop(result);
            if !ended {
                all_ended = false;
                continue;
            }
            if let Some(h) = job.handle.lock().unwrap_or_else(PoisonError::into_inner).take() {
                let _ = h.join();
            }
        }
        all_ended
    }
}

impl Drop for JobManager {
    fn drop(&mut self) {
        self.shutdown(None);
    }
}

/// The `job_*` tools.
pub(crate) struct JobTool {
    definition: ToolDefinition,
    jobs: Arc<JobManager>,
}

impl JobTool {
    pub fn new(definition: ToolDefinition, jobs: Arc<JobManager>) -> Self {
        Self { definition, jobs }
    }
}

impl Tool for JobTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: &Map<String, Value>, _options: CallOptions<'_>) -> ToolResponse {
        let result = (|| {
            let name = self.definition.name.as_str();
            let allowed: &[&str] = match name {
                "job_status" => &["job_id", "wait_seconds"],
                "job_kill" => &["job_id"],
                _ => &[],
            };
            if let Some(bad) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
                return Err(ToolError::new(
                    ErrorCode::UnknownArgument,
                    format!("unknown argument `{bad}` for {name}"),
                    format!("{name} accepts: {}", allowed.join(", ")),
                ));
            }
            if name == "job_list" {
                return Ok(self.jobs.list());
            }
            let id = match args.get("job_id") {
                Some(Value::String(s)) => s.clone(),
                other => {
                    return Err(ToolError::new(
                        ErrorCode::InvalidArguments,
                        format!("`job_id` must be a string, got {}", other.map_or("nothing", json_kind)),
                        "pass the job_id that execute {background: true} returned",
                    ));
                }
            };
            if name == "job_kill" {
                return self.jobs.kill(&id);
            }
            let wait = match args.get("wait_seconds").filter(|v| !v.is_null()) {
                None => Duration::ZERO,
                Some(v) => v
                    .as_f64()
                    .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 86_400.0)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| {
                        ToolError::new(
                            ErrorCode::InvalidTimeout,
                            format!("`wait_seconds` must be a number from 0 to 86400, got {v}"),
                            "pass a number of seconds such as 5",
                        )
                    })?,
            };
            self.jobs.status(&id, wait)
        })();
        match result {
            Ok(v) => ToolResponse::new(crate::error::document_text(&v)),
            Err(e) => ToolResponse::error(&e),
        }
    }
}
