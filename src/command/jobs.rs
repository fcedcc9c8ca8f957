//! Background jobs: `execute` with `background: true` runs the command on a
//! worker thread through the same run loop (process group, time limit, group
//! kill, bounded output) and returns a job id at once. `execute` with
//! `yield_seconds` runs the command on the call's own thread and, if it is
//! still running when the window closes, hands the rest of the run to a job
//! ([`JobManager::adopt`]).
//!
//! A finished job's result stays readable until the job is evicted (the
//! oldest finished jobs beyond `jobs.max_finished`). A layer that offers
//! jobs under another protocol (e.g. MCP tasks) needs only
//! [`JobManager::start`], [`JobManager::status`] and [`JobManager::kill`]
//! (which stops a job by id and returns its final result, again on a second
//! call).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::command::outcome::ExecOutcome;
use crate::command::request::ExecRequest;
use crate::error::{ErrorCode, ToolError};
use crate::process::cancel::CancelToken;
use crate::process::capture::BoundedOutput;
use crate::tool::{CallOptions, Tool, ToolDefinition, ToolResponse};
use crate::tool_args::{must_be, read, refuse_unknown};

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
    ("job_status", include_str!("../../data/tools/bash/job_status.json")),
    ("job_kill", include_str!("../../data/tools/bash/job_kill.json")),
    ("job_list", include_str!("../../data/tools/bash/job_list.json")),
];

struct Job {
    id: String,
    command: String,
    started: Instant,
    /// Cancels the run; dropped when the run ends, so that a finished job
    /// kept for its result holds no fd (the token owns an eventfd).
    cancel: Mutex<Option<CancelToken>>,
    live: Mutex<Live>,
    /// Signalled when output arrives and when the run ends.
    changed: Condvar,
    result: Mutex<Option<Result<ExecOutcome, ToolError>>>,
    finished_at: Mutex<Option<Instant>>,
    done: Condvar,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Job {
    /// The run's cancel token, while it runs.
    fn cancel_token(&self) -> Option<CancelToken> {
        self.cancel.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Cancels the run (nothing once it ended).
    fn cancel(&self) {
        if let Some(token) = self.cancel_token() {
            token.cancel();
        }
    }
}

/// What a running job has printed, and who is looking.
struct Live {
    out: BoundedOutput,
    /// The byte offset the last `job_status` read up to.
    seen: u64,
}

/// The rest of a run a call started and handed over when its window closed
/// (see [`JobManager::adopt`]).
pub(crate) type Rest = Box<dyn FnOnce(CallOptions<'_>) -> Result<ExecOutcome, ToolError> + Send>;

/// What a job's thread runs.
type Body = Box<dyn FnOnce(&ExecRequest, CallOptions<'_>) -> Result<ExecOutcome, ToolError> + Send>;

impl Job {
    fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn result(&self) -> MutexGuard<'_, Option<Result<ExecOutcome, ToolError>>> {
        self.result.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The result slot once the job has ended, or after `wait` (then still empty).
    fn result_within(&self, wait: Duration) -> MutexGuard<'_, Option<Result<ExecOutcome, ToolError>>> {
        self.done
            .wait_timeout_while(self.result(), wait, |result| result.is_none())
            .unwrap_or_else(PoisonError::into_inner)
            .0
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
        let (_, limit) = (self.max_finished)();
        let runner = self.runner.clone();
        let body: Body = Box::new(move |request: &ExecRequest, options| runner(request, options));
        self.start_job(request, BoundedOutput::new(limit), body)
            .map(|job| job.id.clone())
    }

    /// How much of a job's output is kept for `job_status` (its head and tail).
    pub fn output_limit(&self) -> usize {
        (self.max_finished)().1
    }

    /// Takes over a run an `execute` call started and could not wait for:
    /// `rest` goes on with it on a job thread, `so_far` is what it printed
    /// during the call. Returns the `running` document with the job id and
    /// that output.
    pub fn adopt(&self, request: ExecRequest, so_far: BoundedOutput, rest: Rest) -> Result<Value, ToolError> {
        let body: Body = Box::new(move |_: &ExecRequest, options| rest(options));
        let job = self.start_job(request, so_far, body)?;
        self.status(&job.id, Duration::ZERO)
    }

    fn start_job(&self, request: ExecRequest, out: BoundedOutput, body: Body) -> Result<Arc<Job>, ToolError> {
        let id = format!("job-{}", crate::process::ids::secret_id()?);
        let job = Arc::new(Job {
            id: id.clone(),
            command: request.command.clone(),
            started: Instant::now(),
            cancel: Mutex::new(Some(CancelToken::new())),
            live: Mutex::new(Live { out, seen: 0 }),
            changed: Condvar::new(),
            result: Mutex::new(None),
            finished_at: Mutex::new(None),
            done: Condvar::new(),
            handle: Mutex::new(None),
        });
        let worker = job.clone();
        let on_finish = self.on_finish.clone();
        let started = SystemTime::now();
        let handle = std::thread::Builder::new()
            .name(format!("bash-mcp-{id}"))
            .spawn(move || {
                let mut sink = |chunk: &[u8], _stream| {
                    worker.live().out.push(chunk);
                    worker.changed.notify_all();
                };
                let token = worker.cancel_token();
                // A host's sandbox for the call travels in the request.
                let options = CallOptions {
                    cancel: token.as_ref(),
                    on_output: Some(&mut sink),
                    sandbox: None,
                    principal: None,
                    client: None,
                };
                let outcome = body(&request, options);
                drop(token);
                worker.cancel.lock().unwrap_or_else(PoisonError::into_inner).take();
                on_finish(&JobEnd {
                    id: &worker.id,
                    request: &request,
                    started,
                    outcome: &outcome,
                });
                *worker.finished_at.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
                *worker.result() = Some(outcome);
                worker.done.notify_all();
                worker.changed.notify_all();
            })
            .map_err(|e| {
                ToolError::new(
                    ErrorCode::SpawnFailed,
                    format!("could not start a worker thread for the job: {e}"),
                    "the host is out of threads; retry later",
                )
            })?;
        *job.handle.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
        self.lock().insert(id, job.clone());
        self.evict_finished();
        Ok(job)
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
                format!("no background job with id {id:?} (finished jobs are kept until more than jobs.max_finished have finished, oldest dropped first)"),
                "call job_list to see current jobs",
            )
        })
    }

    /// The job's status, waiting up to `wait` for it to finish. A running
    /// job's `output` is what it printed since the last look (or since
    /// `cursor`, when given), with the `cursor` to pass next time. A
    /// finished job's result stays readable until the job is evicted.
    pub fn status(&self, id: &str, wait: Duration) -> Result<Value, ToolError> {
        self.status_from(id, wait, None)
    }

    /// [`JobManager::status`] reading a running job's output from byte `cursor` on.
    pub fn status_from(&self, id: &str, wait: Duration, cursor: Option<u64>) -> Result<Value, ToolError> {
        self.evict_finished();
        let job = self.get(id)?;
        let result = job.result_within(wait);
        match result.clone() {
            None => {
                drop(result);
                let mut live = job.live();
                let from = cursor.unwrap_or(live.seen).min(live.out.total());
                let (text, next) = live.out.render_since(from);
                live.seen = next;
                Ok(json!({
                    "job_id": job.id,
                    "status": "running",
                    "command": job.command,
                    "elapsed_ms": job.started.elapsed().as_millis() as u64,
                    "output": crate::process::term::clean(&text),
                    "output_from": from,
                    "cursor": next,
                    "output_bytes": live.out.total(),
                    "truncated": live.out.is_truncated(),
                    "hint": "Still running: `output` is what it printed since the last look. Call job_status again (with wait_seconds to block until it ends), or job_kill to stop it.",
                }))
            }
            Some(outcome) => {
                drop(result);
                if let Some(h) = job.handle.lock().unwrap_or_else(PoisonError::into_inner).take() {
                    let _ = h.join();
                }
                let mut outcome = outcome?;
                // Cleaned like the running job's output, so a job reads the
                // same before and after it ends.
                outcome.output = outcome.output.map(crate::process::term::clean);
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

    /// Cancels the job (kills its process group) without waiting; false
    /// when there is no such job.
    pub fn cancel(&self, id: &str) -> bool {
        let job = self.lock().get(id).cloned();
        job.map(|job| job.cancel()).is_some()
    }

    /// Kills the job's process group and returns its final result.
    pub fn kill(&self, id: &str) -> Result<Value, ToolError> {
        let job = self.get(id)?;
        job.cancel();
        self.status(id, Duration::from_secs(30))
    }

    /// For a protocol task: waits up to `wait` for the job to end. `None`:
    /// no such job; `Some(Err(tail))`: still running, with the end of its
    /// output so far (this does not move `job_status`'s read position);
    /// `Some(Ok(result))`: ended, with the result its call would have
    /// returned (the outcome document, or the error).
    pub fn wait_end(&self, id: &str, wait: Duration) -> Option<Result<Result<Value, ToolError>, String>> {
        let job = self.lock().get(id).cloned()?;
        let result = job.result_within(wait);
        let Some(outcome) = result.clone() else {
            drop(result);
            let live = job.live();
            let (text, _) = live.out.render_since(live.out.total().saturating_sub(4096));
            return Some(Err(text));
        };
        drop(result);
        if let Some(h) = job.handle.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = h.join();
        }
        Some(Ok(outcome.map(|mut outcome| {
            outcome.output = outcome.output.map(crate::process::term::clean);
            outcome.to_value()
        })))
    }

    /// Forgets a job: kills its process group if it still runs, waits (at
    /// most `limit`) for its thread to end, and drops what it kept.
    pub fn release(&self, id: &str, limit: Duration) {
        let Some(job) = self.lock().remove(id) else {
            return;
        };
        job.cancel();
        StoppedJobs(vec![job]).wait(Some(Instant::now() + limit));
    }

    /// (running, finished and kept) job counts.
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
                        "elapsed_seconds": crate::command::outcome::tenths(j.started.elapsed()),
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
            job.cancel();
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
            let running = |result: &mut Option<_>| result.is_none();
            let result = match deadline {
                None => job
                    .done
                    .wait_while(job.result(), running)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    job.done
                        .wait_timeout_while(job.result(), left, running)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
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
            match name {
                "job_status" => {
                    let a: StatusArgs = read(name, &["job_id", "wait_seconds", "cursor"], args, wrong)?;
                    let wait = a.wait_seconds.map_or(Duration::ZERO, |w| w.0);
                    self.jobs.status_from(&a.job_id, wait, a.cursor)
                }
                "job_kill" => {
                    let a: KillArgs = read(name, &["job_id"], args, wrong)?;
                    self.jobs.kill(&a.job_id)
                }
                _ => {
                    refuse_unknown(name, &[], args)?;
                    Ok(self.jobs.list())
                }
            }
        })();
        match result {
            Ok(v) => ToolResponse::document(v),
            Err(e) => ToolResponse::error(&e),
        }
    }
}

/// `job_status`'s arguments, in the order they are checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusArgs {
    job_id: String,
    wait_seconds: Option<WaitSeconds>,
    cursor: Option<u64>,
}

/// `job_kill`'s argument.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KillArgs {
    job_id: String,
}

/// `wait_seconds`: from 0 to a day.
#[derive(Deserialize)]
#[serde(try_from = "f64")]
struct WaitSeconds(Duration);

impl TryFrom<f64> for WaitSeconds {
    type Error = &'static str;

    fn try_from(secs: f64) -> Result<Self, Self::Error> {
        match secs.is_finite() && (0.0..=86_400.0).contains(&secs) {
            true => Ok(Self(Duration::from_secs_f64(secs))),
            false => Err("out of range"),
        }
    }
}

/// The error of the first job tool argument that did not read (`got`: its
/// value, `None` when it is absent).
fn wrong(key: &str, got: Option<&Value>) -> ToolError {
    let value = got.unwrap_or(&Value::Null);
    match key {
        "wait_seconds" => ToolError::new(
            ErrorCode::InvalidTimeout,
            format!("`wait_seconds` must be a number from 0 to 86400, got {value}"),
            "pass a number of seconds such as 5",
        ),
        "cursor" => ToolError::new(
            ErrorCode::InvalidArguments,
            format!("`cursor` must be a byte offset (an integer from 0), got {value}"),
            "pass the `cursor` of the previous job_status result, or omit it to read since the last look",
        ),
        _ => ToolError::new(
            ErrorCode::InvalidArguments,
            must_be(key, "a string", got),
            "pass the job_id that execute {background: true} returned",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool_args::fields_of;

    /// Each job tool reads exactly the arguments its definition lists.
    #[test]
    fn each_job_tool_reads_the_arguments_it_lists() {
        for (name, builtin) in JOB_TOOLS {
            let definition = ToolDefinition::from_json(builtin, name).unwrap();
            let mut listed = definition.argument_names();
            listed.sort_unstable();
            let mut read: Vec<&str> = match *name {
                "job_status" => fields_of::<StatusArgs>().to_vec(),
                "job_kill" => fields_of::<KillArgs>().to_vec(),
                _ => Vec::new(),
            };
            read.sort_unstable();
            assert_eq!(read, listed, "{name}");
        }
    }

    #[test]
    fn a_missing_or_wrong_job_id_and_a_wait_out_of_range_keep_their_words() {
        // No call here starts a job: each is refused before.
        let runner: Runner = Arc::new(|_, _| unreachable!("no job starts"));
        let jobs = JobManager::new(runner, Box::new(|| (4, 1 << 20)), Arc::new(|_| {}));
        let tool = JobTool::new(
            ToolDefinition::from_json(JOB_TOOLS[0].1, "job_status").unwrap(),
            Arc::new(jobs),
        );
        let call = |args: Value| tool.call(args.as_object().unwrap(), CallOptions::default()).to_value();
        let r = call(json!({}));
        assert_eq!(r["message"], "`job_id` must be a string, got nothing");
        let r = call(json!({"job_id": "job-x", "wait_seconds": -1}));
        assert_eq!(r["error"], "invalid_timeout");
        let r = call(json!({"job_id": 1, "cursor": "x", "other": 1}));
        assert_eq!(r["message"], "unknown argument(s) for job_status: other");
    }
}
