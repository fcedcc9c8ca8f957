//! The JSON of tasks, per era: 2025-11-25 (`ttl`, `pollInterval`; the
//! result through `tasks/result`) and the 2026-07-28 extension (`ttlMs`,
//! `pollIntervalMs`; the result or error inline in `tasks/get`).

use serde_json::{Map, Value, json};

use super::{End, RELATED_TASK_KEY, Status, View};
use crate::audit::timestamp::rfc3339;

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The `Task` object of 2025-11-25.
pub(crate) fn task_2025(view: &View) -> Value {
    let mut task = json!({
        "taskId": view.id,
        "status": view.status.as_str(),
        "createdAt": rfc3339(view.created),
        "lastUpdatedAt": rfc3339(view.updated),
        "ttl": millis(view.ttl),
        "pollInterval": millis(view.poll_interval),
    });
    if let Some(message) = &view.status_message {
        task["statusMessage"] = message.clone().into();
    }
    task
}

/// The 2025-11-25 `CreateTaskResult`: `{task: Task}`.
pub(crate) fn created_2025(view: &View) -> Value {
    json!({"task": task_2025(view)})
}

/// The 2026-07-28 task fields, flat (for `CreateTaskResult` and `tasks/get`),
/// with `result` when completed, `error` when failed and `inputRequests`
/// when waiting for the person (`input_required`).
pub(crate) fn task_2026(view: &View) -> Map<String, Value> {
    let mut task = Map::new();
    task.insert("taskId".into(), view.id.clone().into());
    task.insert("status".into(), view.status.as_str().into());
    if let Some(message) = &view.status_message {
        task.insert("statusMessage".into(), message.clone().into());
    }
    task.insert("createdAt".into(), rfc3339(view.created).into());
    task.insert("lastUpdatedAt".into(), rfc3339(view.updated).into());
    task.insert("ttlMs".into(), millis(view.ttl).into());
    task.insert("pollIntervalMs".into(), millis(view.poll_interval).into());
    match (view.status, &view.end) {
        (Status::Completed, Some(End::Result { result, .. })) => {
            task.insert("result".into(), result.clone());
        }
        (Status::InputRequired, _) => {
            if let Some(requests) = &view.input_requests {
                task.insert("inputRequests".into(), Value::Object(requests.clone()));
            }
        }
        (Status::Failed, Some(End::Error(e))) => {
            let mut error = json!({"code": e.code, "message": e.message});
            if let Some(data) = &e.data {
                error["data"] = data.clone();
            }
            task.insert("error".into(), error);
        }
        _ => {}
    }
    task
}

/// The 2026-07-28 `CreateTaskResult`: the task, flat, with `resultType: "task"`.
pub(crate) fn created_2026(view: &View) -> Value {
    let mut task = task_2026(view);
    task.insert("resultType".into(), "task".into());
    Value::Object(task)
}

/// `_meta` tying a message to task `id`.
pub(crate) fn related_meta(id: &str) -> Value {
    json!({RELATED_TASK_KEY: {"taskId": id}})
}

/// The `tasks/result` result: the call's result with the related-task `_meta`.
pub(crate) fn with_related(mut result: Value, id: &str) -> Value {
    if let Value::Object(map) = &mut result {
        let meta = map.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(RELATED_TASK_KEY.into(), json!({"taskId": id}));
        }
    }
    result
}
