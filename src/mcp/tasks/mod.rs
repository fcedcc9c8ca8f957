//! MCP tasks for `tools/call`, in both protocol eras.
//!
//! A task is a background job (see [`McpServer::start_task_job`]): the same
//! run loop, limits, process-group kill and audit lines as `execute` with
//! `background: true`. This module keeps the task bookkeeping — ids,
//! status, ttl and expiry, listing — typed; [`shape`] turns it into each
//! era's JSON at the edge.
//!
//! - 2025-11-25 (the `tasks` capability): the client asks with a `task`
//!   parameter on `tools/call`; `tasks/get`, `tasks/result`, `tasks/list`,
//!   `tasks/cancel`. A tool result with `isError: true` is a `failed` task.
//! - 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): the server
//!   decides; `tasks/get` carries the result inline, `tasks/cancel` and
//!   `tasks/update` acknowledge with an empty result. A tool result with
//!   `isError: true` is a `completed` task; `failed` is for JSON-RPC errors.
//!
//! A call that needs the person's approval asks through its task (see
//! [`ask`]): the task is `input_required` until the answer comes.
//!
//! Each task has a watcher thread: it waits for the job, records its end,
//! sends progress (2025-11-25, with the related-task `_meta`), and at the
//! ttl releases the job (killing it if it still runs) and forgets the task.

mod ask;
mod methods;
pub(crate) mod shape;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};

use super::era::Era;
use super::jsonrpc::{INVALID_PARAMS, RpcError};
use crate::tool::{McpServer, TaskJob};

/// `_meta` key tying a message to its task.
pub const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";
/// The 2026-07-28 tasks extension's identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// Tasks per `tasks/list` page.
const PAGE_SIZE: usize = 100;
/// Expired task ids remembered, to answer "expired" rather than "not found".
const EXPIRED_KEPT: usize = 4096;
/// Ended tasks kept for their results; past this, the oldest is forgotten
/// before its ttl (as finished jobs are past `jobs.max_finished`), so that
/// a client making many short tasks cannot pile up results and watchers.
const MAX_ENDED: usize = 256;
/// How long a cancel or an expiry waits for the job's process group to die.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// Task lifetimes and polling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskOptions {
    /// The ttl of a task whose client asks for none (2026-07-28: every task).
    pub default_ttl: Duration,
    /// The longest ttl granted; a longer (or unlimited) request gets this.
    pub max_ttl: Duration,
    /// The suggested interval between `tasks/get` polls. In the 2026-07-28
    /// era it is also how long a call waits before the server decides on a
    /// task: a command that ends within it gets its plain result.
    pub poll_interval: Duration,
}

/// Tells a 2025-11-25 client of a task's status change
/// (`notifications/tasks/status`); the extension of 2026-07-28 sends its
/// notifications only to a subscription, which this server does not offer.
pub(crate) fn announce(inner: &super::Inner, era: Era, task: &Task) {
    if !matches!(era, Era::Handshake(_)) {
        return;
    }
    if let Value::Object(params) = shape::task_2025(&task.view(false)) {
        (inner.outbound)(super::jsonrpc::notification("notifications/tasks/status", params), None);
    }
}

/// Whether a handshake-era revision has the `tasks` capability (2025-11-25).
/// Here, not in `methods.rs`, since `ask.rs` needs it too and `methods.rs` uses `ask.rs`.
pub(crate) fn handshake_tasks(era: Era) -> bool {
    era == Era::Handshake("2025-11-25")
}

/// Default task ttl: one hour.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(3600);
/// Default ceiling of a task's ttl: one day.
pub const DEFAULT_MAX_TASK_TTL: Duration = Duration::from_secs(86_400);
/// Default poll interval: one second.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            default_ttl: DEFAULT_TASK_TTL,
            max_ttl: DEFAULT_MAX_TASK_TTL,
            poll_interval: DEFAULT_POLL_INTERVAL,
        }
    }
}

impl TaskOptions {
    /// The ttl granted for a requested one (`None`: none asked, or unlimited).
    pub(crate) fn grant(&self, requested: Option<Duration>) -> Duration {
        requested.unwrap_or(self.default_ttl).min(self.max_ttl)
    }
}

/// A task's status as one era names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Working,
    /// Waiting for the person's answer to a question (an approval).
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// How the underlying call ended.
#[derive(Debug, Clone)]
pub(crate) enum End {
    /// A `CallToolResult` (in the creating era's shape).
    Result { result: Value, is_error: bool },
    /// A JSON-RPC error (the tool panicked, the job was lost).
    Error(RpcError),
}

#[derive(Debug)]
struct State {
    end: Option<End>,
    cancelled: bool,
    updated: SystemTime,
    /// Forgotten (expired, discarded, or the handler shut down): the watcher ends.
    gone: bool,
    /// The questions the task waits on (`input_required`), and the answers
    /// come so far.
    asking: Option<Asking>,
    /// `tasks/result` requests waiting for this task now: in 2025-11-25 a
    /// question is sent once the client waits for it there.
    result_waiters: usize,
}

/// The questions of a task in `input_required`, by key, as the requests the
/// client answers (`elicitation/create`), and the answers received.
#[derive(Debug, Default)]
struct Asking {
    requests: Map<String, Value>,
    answers: Map<String, Value>,
}

/// One task.
#[derive(Debug)]
pub(crate) struct Task {
    seq: u64,
    pub(crate) id: String,
    pub(crate) created: SystemTime,
    born: Instant,
    pub(crate) ttl: Duration,
    pub(crate) poll_interval: Duration,
    /// The job, once the call started one (after any approval).
    job: OnceLock<String>,
    /// Cancelled with the task (or when it is forgotten): stops a question
    /// waiting for the person.
    pub(crate) cancel: crate::CancelToken,
    state: Mutex<State>,
    changed: Condvar,
}

/// A snapshot of a task, for the JSON shapes.
#[derive(Debug, Clone)]
pub(crate) struct View {
    pub(crate) id: String,
    pub(crate) status: Status,
    pub(crate) status_message: Option<String>,
    pub(crate) created: SystemTime,
    pub(crate) updated: SystemTime,
    pub(crate) ttl: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) end: Option<End>,
    /// The questions waiting for answers, when `input_required`.
    pub(crate) input_requests: Option<Map<String, Value>>,
}

impl Task {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.born + self.ttl
    }

    fn expired(&self) -> bool {
        self.expired_at(Instant::now())
    }

    /// Whether the task's ttl has run out.
    pub(crate) fn is_expired(&self) -> bool {
        self.expired()
    }

    fn expired_at(&self, now: Instant) -> bool {
        now >= self.deadline()
    }

    /// The status `stateless` (2026-07-28) or handshake-era (2025-11-25) rules give.
    fn status_of(state: &State, stateless: bool) -> Status {
        if state.cancelled {
            return Status::Cancelled;
        }
        match &state.end {
            None if state.asking.is_some() => Status::InputRequired,
            None => Status::Working,
            Some(End::Error(_)) => Status::Failed,
            Some(End::Result { is_error: true, .. }) if !stateless => Status::Failed,
            Some(End::Result { .. }) => Status::Completed,
        }
    }

    /// The task as the era of the asking request sees it.
    pub(crate) fn view(&self, stateless: bool) -> View {
        let state = self.state();
        let status = Self::status_of(&state, stateless);
        let status_message = match status {
            Status::Cancelled => Some("The task was cancelled by request.".to_owned()),
            Status::Failed => Some(match &state.end {
                Some(End::Error(e)) => format!("Tool execution failed: {}", e.message),
                _ => "Tool execution failed: the tool result has isError: true (see tasks/result)".to_owned(),
            }),
            _ => None,
        };
        View {
            id: self.id.clone(),
            status,
            status_message,
            created: self.created,
            updated: state.updated,
            ttl: self.ttl,
            poll_interval: self.poll_interval,
            end: state.end.clone(),
            input_requests: match status {
                Status::InputRequired => state.asking.as_ref().map(|a| a.requests.clone()),
                _ => None,
            },
        }
    }

    /// Puts the task in `input_required` with these questions (by key).
    pub(crate) fn begin_input(&self, requests: Map<String, Value>) {
        let mut state = self.state();
        state.asking = Some(Asking {
            requests,
            answers: Map::new(),
        });
        state.updated = SystemTime::now();
        self.changed.notify_all();
    }

    /// Back to `working` (or to its end): the questions are settled.
    pub(crate) fn end_input(&self) {
        let mut state = self.state();
        if state.asking.take().is_some() && !state.cancelled {
            state.updated = SystemTime::now();
        }
        self.changed.notify_all();
    }

    /// Takes the answers of a `tasks/update` to the questions the task
    /// waits on; answers to questions it does not ask are ignored. Returns
    /// how many were taken.
    pub(crate) fn give_input(&self, responses: &Map<String, Value>) -> usize {
        let mut state = self.state();
        let Some(asking) = state.asking.as_mut() else {
            return 0;
        };
        let mut taken = 0;
        for (key, value) in responses {
            if asking.requests.contains_key(key) && !asking.answers.contains_key(key) {
                asking.answers.insert(key.clone(), value.clone());
                taken += 1;
            }
        }
        self.changed.notify_all();
        taken
    }

    /// Waits for the answer to question `key` (given by `tasks/update`)
    /// until `deadline`; `None` when the task is cancelled or forgotten first.
    pub(crate) fn wait_input(&self, key: &str, deadline: Instant) -> Option<Value> {
        let mut state = self.state();
        loop {
            if let Some(answer) = state.asking.as_ref().and_then(|a| a.answers.get(key)) {
                return Some(answer.clone());
            }
            let now = Instant::now();
            if state.cancelled || state.gone || self.cancel.is_cancelled() || now >= deadline {
                return None;
            }
            state = self
                .changed
                .wait_timeout(state, (deadline - now).min(Duration::from_millis(250)))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Counts a `tasks/result` waiting for the task while the guard lives.
    pub(crate) fn result_waiter(&self) -> ResultWaiter<'_> {
        self.state().result_waiters += 1;
        self.changed.notify_all();
        ResultWaiter { task: self }
    }

    /// Waits until a `tasks/result` waits for the task (true), or until it
    /// is cancelled, forgotten or `deadline` passes (false).
    pub(crate) fn wait_result_waiter(&self, deadline: Instant) -> bool {
        let mut state = self.state();
        loop {
            if state.result_waiters > 0 {
                return true;
            }
            let now = Instant::now();
            if state.cancelled || state.gone || self.cancel.is_cancelled() || now >= deadline {
                return false;
            }
            state = self
                .changed
                .wait_timeout(state, (deadline - now).min(Duration::from_millis(250)))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Starts the task's job with `start` unless the task was cancelled,
    /// forgotten or expired first (then `false`, nothing started). Under the
    /// task's lock, so a cancel either comes first or finds the job to stop.
    pub(crate) fn start_job(&self, start: impl FnOnce() -> Result<String, End>) -> bool {
        let mut state = self.state();
        if state.cancelled || state.gone || self.expired() {
            return false;
        }
        match start() {
            Ok(job) => {
                let _ = self.job.set(job);
            }
            Err(end) => {
                state.end = Some(end);
                state.updated = SystemTime::now();
            }
        }
        self.changed.notify_all();
        true
    }

    /// Waits until the call has ended or the task asks for input, the task
    /// is gone, `cancel` fires or `limit` passes; whether it did either.
    pub(crate) fn wait_settled(&self, limit: Duration, cancel: &crate::CancelToken) -> bool {
        let deadline = Instant::now() + limit;
        let mut state = self.state();
        loop {
            if state.end.is_some() || state.asking.is_some() {
                return true;
            }
            let now = Instant::now();
            if state.gone || cancel.is_cancelled() || now >= deadline {
                return false;
            }
            state = self
                .changed
                .wait_timeout(state, (deadline - now).min(Duration::from_millis(100)))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Whether the task is terminal for the era.
    pub(crate) fn is_terminal(&self) -> bool {
        let state = self.state();
        state.cancelled || state.end.is_some()
    }

    /// Records the call's end (once; a cancelled task stays cancelled).
    pub(crate) fn finish(&self, end: End) {
        let mut state = self.state();
        if state.end.is_none() {
            state.end = Some(end);
            if !state.cancelled {
                state.updated = SystemTime::now();
            }
        }
        self.changed.notify_all();
    }

    /// Waits until the call has ended, the task is gone, `cancel` fires or
    /// `limit` passes; returns the end if there is one.
    pub(crate) fn wait_end(&self, limit: Option<Duration>, cancel: Option<&crate::CancelToken>) -> Option<End> {
        let deadline = limit.map(|l| Instant::now() + l);
        let mut state = self.state();
        loop {
            if let Some(end) = &state.end {
                return Some(end.clone());
            }
            if state.gone || cancel.is_some_and(crate::CancelToken::is_cancelled) {
                return None;
            }
            let mut wait = Duration::from_millis(100);
            if let Some(deadline) = deadline {
                let now = Instant::now();
                if now >= deadline {
                    return None;
                }
                wait = wait.min(deadline - now);
            }
            state = self
                .changed
                .wait_timeout(state, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// Keeps a `tasks/result` counted as waiting for its task.
pub(crate) struct ResultWaiter<'a> {
    task: &'a Task,
}

impl Drop for ResultWaiter<'_> {
    fn drop(&mut self) {
        self.task.state().result_waiters -= 1;
    }
}

/// Why a task id found no task.
fn not_found(id: &str, expired: bool) -> RpcError {
    let why = if expired { "Task has expired" } else { "Task not found" };
    RpcError::new(INVALID_PARAMS, format!("Failed to retrieve task: {why} ({id:?})"))
}

#[derive(Default)]
struct Tasks {
    by_id: HashMap<String, Arc<Task>>,
    /// The creation number of the next task (`tasks/list` order and cursors).
    next_seq: u64,
    expired: VecDeque<String>,
}

/// The tasks of one handler.
pub(crate) struct TaskStore {
    pub(crate) options: TaskOptions,
    tasks: Mutex<Tasks>,
    closing: AtomicBool,
    page_size: usize,
}

impl TaskStore {
    pub(crate) fn new(options: TaskOptions) -> Self {
        Self {
            options,
            tasks: Mutex::new(Tasks::default()),
            closing: AtomicBool::new(false),
            page_size: PAGE_SIZE,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Tasks> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new task for `job` (`None`: the call ended before any
    /// job started, with `end`).
    pub(crate) fn create(&self, ttl: Duration, job: Option<String>, end: Option<End>) -> Result<Arc<Task>, RpcError> {
        let slot = OnceLock::new();
        if let Some(job) = job {
            let _ = slot.set(job);
        }
        let id =
            crate::process::ids::secret_id().map_err(|e| RpcError::new(super::jsonrpc::INTERNAL_ERROR, e.message))?;
        let now = SystemTime::now();
        let mut tasks = self.lock();
        let seq = tasks.next_seq;
        tasks.next_seq += 1;
        let task = Arc::new(Task {
            seq,
            id: id.clone(),
            created: now,
            born: Instant::now(),
            ttl,
            poll_interval: self.options.poll_interval,
            job: slot,
            cancel: crate::CancelToken::new(),
            state: Mutex::new(State {
                end,
                cancelled: false,
                updated: now,
                gone: false,
                asking: None,
                result_waiters: 0,
            }),
            changed: Condvar::new(),
        });
        tasks.by_id.insert(id, task.clone());
        let evicted = Self::oldest_ended_beyond_limit(&mut tasks);
        drop(tasks);
        for old in evicted {
            old.cancel.cancel();
            old.state().gone = true;
            old.changed.notify_all();
            tracing::debug!(task = %old.id, "ended task forgotten before its ttl: over {MAX_ENDED} ended tasks");
        }
        Ok(task)
    }

    /// Removes the oldest ended tasks beyond [`MAX_ENDED`], remembered as
    /// expired; the caller wakes their watchers.
    fn oldest_ended_beyond_limit(tasks: &mut Tasks) -> Vec<Arc<Task>> {
        let mut ended: Vec<Arc<Task>> = tasks.by_id.values().filter(|t| t.is_terminal()).cloned().collect();
        if ended.len() <= MAX_ENDED {
            return Vec::new();
        }
        ended.sort_by_key(|t| t.seq);
        ended.truncate(ended.len() - MAX_ENDED);
        for old in &ended {
            tasks.by_id.remove(&old.id);
            tasks.expired.push_back(old.id.clone());
        }
        while tasks.expired.len() > EXPIRED_KEPT {
            tasks.expired.pop_front();
        }
        ended
    }

    /// The task with this id: -32602 when unknown or expired.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<Task>, RpcError> {
        let tasks = self.lock();
        match tasks.by_id.get(id) {
            Some(task) if !task.expired() => Ok(task.clone()),
            Some(_) => Err(not_found(id, true)),
            None => Err(not_found(id, tasks.expired.iter().any(|e| e == id))),
        }
    }

    /// Forgets a task: `expired` remembers its id as expired.
    fn forget(&self, task: &Task, expired: bool) {
        let mut tasks = self.lock();
        if tasks.by_id.remove(&task.id).is_some() && expired {
            tasks.expired.push_back(task.id.clone());
            if tasks.expired.len() > EXPIRED_KEPT {
                tasks.expired.pop_front();
            }
        }
        drop(tasks);
        task.cancel.cancel();
        task.state().gone = true;
        task.changed.notify_all();
    }

    /// Drops a task no client has heard of (a 2026-07-28 call answered directly).
    pub(crate) fn discard(&self, task: &Task) {
        self.forget(task, false);
    }

    /// One page of live tasks in creation order, and the cursor of the
    /// next (opaque to clients: the creation number of the last task given).
    pub(crate) fn list(&self, cursor: Option<&str>) -> Result<(Vec<Arc<Task>>, Option<String>), RpcError> {
        let tasks = self.lock();
        let after = match cursor {
            None => None,
            Some(cursor) => match cursor.strip_prefix("after-").and_then(|n| n.parse::<u64>().ok()) {
                Some(n) if n < tasks.next_seq => Some(n),
                _ => {
                    return Err(RpcError::new(
                        INVALID_PARAMS,
                        format!(
                            "invalid params: unknown cursor {cursor:?} (pass a nextCursor of tasks/list unchanged)"
                        ),
                    ));
                }
            },
        };
        let mut live: Vec<Arc<Task>> = tasks
            .by_id
            .values()
            .filter(|t| !t.expired() && after.is_none_or(|a| t.seq > a))
            .cloned()
            .collect();
        live.sort_by_key(|t| t.seq);
        let more = live.len() > self.page_size;
        live.truncate(self.page_size);
        let next = more.then(|| format!("after-{}", live[live.len() - 1].seq));
        Ok((live, next))
    }

    /// Cancels a task: `Err` (-32602) when it is already terminal. The task
    /// is `cancelled` when this returns, and its job's process group has
    /// been killed (waiting up to a few seconds for the job to end).
    pub(crate) fn cancel(&self, task: &Task, server: &dyn McpServer) -> Result<(), RpcError> {
        {
            let mut state = task.state();
            if state.cancelled || state.end.is_some() {
                let status = Task::status_of(&state, false);
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!("Cannot cancel task: already in terminal status '{}'", status.as_str()),
                ));
            }
            state.cancelled = true;
            state.updated = SystemTime::now();
        }
        task.cancel.cancel();
        task.changed.notify_all();
        if let Some(job) = task.job.get() {
            server.cancel_task_job(job);
            task.wait_end(Some(KILL_WAIT), None);
        }
        Ok(())
    }

    /// Stops every task (shutdown): their jobs are killed, their watchers end.
    pub(crate) fn close(&self, server: &dyn McpServer) {
        self.closing.store(true, Ordering::SeqCst);
        let tasks: Vec<Arc<Task>> = self.lock().by_id.values().cloned().collect();
        for task in tasks {
            task.cancel.cancel();
            if let Some(job) = task.job.get() {
                server.cancel_task_job(job);
            }
            // Taking the lock orders this after a watcher's look at `closing`:
            // it either sees the flag or is already waiting for this wake-up.
            drop(task.state());
            task.changed.notify_all();
        }
    }

    fn closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// The watcher of `task` (run on its own thread): waits for the job and
    /// records its end, calls `progress(n, recent_output)` every
    /// `progress_interval` while it runs and `ended(task)` once the end is
    /// recorded (the task is terminal then: completed, failed, or cancelled
    /// before), and at the ttl (or shutdown) releases the job and forgets
    /// the task.
    pub(crate) fn watch(
        &self,
        task: &Task,
        server: &dyn McpServer,
        progress_interval: Option<Duration>,
        mut progress: impl FnMut(u64, Duration, &str),
        to_result: impl Fn(crate::ToolResponse) -> End,
        ended: impl FnOnce(&Task),
    ) {
        let started = Instant::now();
        if let Some(job) = task.job.get() {
            let mut ticks = 0u64;
            loop {
                let now = Instant::now();
                if now >= task.deadline() || self.closing() || task.state().gone {
                    break;
                }
                let mut wait = (task.deadline() - now).min(Duration::from_millis(250));
                if let Some(interval) = progress_interval {
                    let next = started + interval * (ticks as u32 + 1);
                    wait = wait.min(next.saturating_duration_since(now));
                }
                match server.task_job(job, wait) {
                    TaskJob::Running { recent_output } => {
                        if let Some(interval) = progress_interval
                            && Instant::now() >= started + interval * (ticks as u32 + 1)
                            && !task.is_terminal()
                        {
                            ticks += 1;
                            progress(ticks, started.elapsed(), &recent_output);
                        }
                    }
                    TaskJob::Ended(response) => {
                        task.finish(to_result(response));
                        ended(task);
                        break;
                    }
                    TaskJob::Gone => {
                        task.finish(End::Error(RpcError::new(
                            super::jsonrpc::INTERNAL_ERROR,
                            "internal error: the task's job was lost",
                        )));
                        ended(task);
                        break;
                    }
                }
            }
            // The result is the task's now: the job keeps nothing (and one
            // still running at the ttl or at shutdown is killed here).
            server.release_task_job(job);
        }
        let mut state = task.state();
        while !state.gone && !self.closing() && Instant::now() < task.deadline() {
            let wait = task.deadline().saturating_duration_since(Instant::now());
            state = task
                .changed
                .wait_timeout(state, wait.min(Duration::from_secs(60)))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let gone = state.gone;
        drop(state);
        if !gone {
            self.forget(task, !self.closing());
            tracing::debug!(task = %task.id, "task expired");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(page: usize) -> TaskStore {
        let mut s = TaskStore::new(TaskOptions::default());
        s.page_size = page;
        s
    }

    fn done() -> Option<End> {
        Some(End::Result {
            result: serde_json::json!({}),
            is_error: true,
        })
    }

    #[test]
    fn status_differs_by_era_for_tool_errors() {
        let s = store(10);
        let t = s.create(Duration::from_secs(60), None, done()).unwrap();
        assert_eq!(t.view(false).status, Status::Failed);
        assert_eq!(t.view(true).status, Status::Completed);
        assert!(
            s.cancel(&t, &NoServer(crate::ToolRegistry::new()))
                .unwrap_err()
                .message
                .contains("'failed'")
        );
    }

    #[test]
    fn past_the_limit_the_oldest_ended_tasks_are_forgotten_and_working_ones_kept() {
        let s = store(10);
        let working = s.create(Duration::from_secs(60), None, None).unwrap();
        let ended: Vec<Arc<Task>> = (0..MAX_ENDED + 3)
            .map(|_| s.create(Duration::from_secs(60), None, done()).unwrap())
            .collect();
        for old in &ended[..3] {
            let error = s.get(&old.id).unwrap_err();
            assert!(error.message.contains("expired"), "{}", error.message);
            assert!(old.state().gone, "its watcher is told");
        }
        for kept in &ended[3..] {
            assert!(s.get(&kept.id).is_ok());
        }
        assert!(s.get(&working.id).is_ok(), "a working task is never forgotten early");
    }

    #[test]
    fn ttl_is_clamped() {
        let o = TaskOptions {
            default_ttl: Duration::from_secs(10),
            max_ttl: Duration::from_secs(20),
            poll_interval: Duration::from_secs(1),
        };
        assert_eq!(o.grant(None), Duration::from_secs(10));
        assert_eq!(o.grant(Some(Duration::from_secs(99))), Duration::from_secs(20));
        assert_eq!(o.grant(Some(Duration::from_secs(5))), Duration::from_secs(5));
    }

    #[test]
    fn list_pages_with_opaque_cursors_and_refuses_bad_ones() {
        let s = store(2);
        let ids: Vec<String> = (0..5)
            .map(|_| s.create(Duration::from_secs(60), None, done()).unwrap().id.clone())
            .collect();
        let (page, next) = s.list(None).unwrap();
        assert_eq!(page.iter().map(|t| t.id.clone()).collect::<Vec<_>>(), ids[..2]);
        let (page, next) = s.list(next.as_deref()).unwrap();
        assert_eq!(page.iter().map(|t| t.id.clone()).collect::<Vec<_>>(), ids[2..4]);
        // The cursor's task goes away: the listing goes on after it.
        s.forget(&s.get(&ids[3]).unwrap(), true);
        let (page, last) = s.list(next.as_deref()).unwrap();
        assert_eq!(page.iter().map(|t| t.id.clone()).collect::<Vec<_>>(), ids[4..]);
        assert_eq!(last, None);
        assert_eq!(s.list(Some("bogus")).unwrap_err().code, INVALID_PARAMS);
        assert!(s.get(&ids[3]).unwrap_err().message.contains("expired"));
        assert!(s.get("nope").unwrap_err().message.contains("not found"));
    }

    #[test]
    fn expiry_counts_from_creation() {
        let s = store(10);
        let ttl = Duration::from_secs(3600);
        let t = s.create(ttl, None, None).unwrap();
        assert!(s.get(&t.id).is_ok());
        // The call's end (an update) does not move the deadline: creation plus ttl.
        t.finish(done().unwrap());
        assert!(!t.expired_at(t.born));
        assert!(t.expired_at(t.born + ttl));
        // A task past its ttl is expired to tasks/get and gone from tasks/list.
        let past = s.create(Duration::ZERO, None, done()).unwrap();
        assert!(s.get(&past.id).unwrap_err().message.contains("expired"));
        let listed: Vec<String> = s.list(None).unwrap().0.iter().map(|t| t.id.clone()).collect();
        assert_eq!(listed, std::slice::from_ref(&t.id));
    }

    /// A server with no tools and no task jobs (the trait's defaults).
    struct NoServer(crate::ToolRegistry);
    impl McpServer for NoServer {
        fn name(&self) -> &str {
            "none"
        }
        fn tools(&self) -> &crate::ToolRegistry {
            &self.0
        }
    }
}
