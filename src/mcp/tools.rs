//! Mapping between the library's tools and MCP's `tools/list` and
//! `tools/call` shapes.

use serde_json::{Map, Value, json};

use super::era::Era;
use crate::tool::{ToolDefinition, ToolResponse};

/// The MCP tool object for a definition, with only the keys the client's
/// revision defines: `annotations` from 2025-03-26, `title` and
/// `outputSchema` from 2025-06-18. Other keys of the definition file are
/// host-specific and are not sent.
pub(crate) fn tool_entry(def: &ToolDefinition, era: Era) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), def.name.clone().into());
    if era.has_structured_content()
        && let Some(title) = def.extra.get("title")
    {
        tool.insert("title".into(), title.clone());
    }
    tool.insert("description".into(), def.description.clone().into());
    tool.insert("inputSchema".into(), def.input_schema.clone());
    if era.has_structured_content()
        && let Some(schema) = def.extra.get("outputSchema")
    {
        tool.insert("outputSchema".into(), schema.clone());
    }
    if era.has_annotations()
        && let Some(annotations) = def.extra.get("annotations")
    {
        tool.insert("annotations".into(), annotations.clone());
    }
    Value::Object(tool)
}

/// The `tools/call` result for a tool's response.
///
/// A JSON-object result (the bash tools' result document, or an error)
/// becomes a readable text block plus, when the revision has it,
/// `structuredContent` with the document itself; `isError` is
/// [`ToolResponse::is_error`] (bad arguments, spawn failure, timeout,
/// cancellation, a policy refusal). A non-zero exit status is a normal
/// result. Any other result is passed on as text.
pub(crate) fn call_result(response: ToolResponse, era: Era) -> Value {
    let is_error = response.is_error();
    if let crate::tool::ToolOutput::Content { blocks, .. } = &response.output {
        let content: Vec<Value> = blocks.iter().map(crate::content::ContentBlock::to_value).collect();
        return json!({"content": content, "isError": is_error});
    }
    match response.into_value() {
        Value::Object(doc) => {
            let mut result = json!({
                "content": [{"type": "text", "text": render_text(&doc)}],
                "isError": is_error,
            });
            if era.has_structured_content() {
                result["structuredContent"] = Value::Object(doc);
            }
            result
        }
        Value::String(text) => json!({
            "content": [{"type": "text", "text": text}],
            "isError": false,
        }),
        other => json!({
            "content": [{"type": "text", "text": other.to_string()}],
            "isError": false,
        }),
    }
}

/// Keys of a command's result document: a document with none of them (a
/// job id, a session, a status report, a list) is shown as JSON.
const COMMAND_RESULT_KEYS: &[&str] = &["output", "stdout", "stderr", "exit_code", "error"];

/// The text a model reads.
///
/// For a command's result: the output, then `[exit code: N]` (or, for a
/// failed call, `[error: CODE] message`), then `sandbox: ...` when the
/// sandbox refused something (its `sandbox_message`), one line each for
/// `status`, `job_id` and `session_id` when present, `hint: ...`, and for a
/// policy refusal `pattern: ...` (the rule that would allow the call). Any other
/// document (a started job, a session, a status report, a list) is the
/// document itself as indented JSON, so clients without
/// `structuredContent` see every field.
pub fn render_text(doc: &Map<String, Value>) -> String {
    if !COMMAND_RESULT_KEYS.iter().any(|k| doc.contains_key(*k)) {
        return serde_json::to_string_pretty(doc).unwrap_or_else(|_| Value::Object(doc.clone()).to_string());
    }
    let str_of = |key: &str| doc.get(key).and_then(Value::as_str);
    let mut text = String::new();
    let mut push_block = |label: Option<&str>, body: &str| {
        if body.is_empty() {
            return;
        }
        if let Some(label) = label {
            text.push_str(label);
            text.push('\n');
        }
        text.push_str(body);
        if !body.ends_with('\n') {
            text.push('\n');
        }
    };
    if let Some(output) = str_of("output") {
        push_block(None, output);
    } else {
        push_block(Some("[stdout]"), str_of("stdout").unwrap_or_default());
        push_block(Some("[stderr]"), str_of("stderr").unwrap_or_default());
    }
    let mut lines: Vec<String> = Vec::new();
    if let Some(code) = doc.get("exit_code").and_then(Value::as_i64) {
        lines.push(format!("[exit code: {code}]"));
    } else if let Some(error) = str_of("error") {
        lines.push(format!("[error: {error}] {}", str_of("message").unwrap_or_default()));
    }
    // What the sandbox refused: many hosts forward only this text, not the document.
    if let Some(message) = str_of("sandbox_message").filter(|m| !m.is_empty()) {
        lines.push(format!("sandbox: {message}"));
    }
    for key in ["status", "job_id", "session_id", "hint", "pattern"] {
        if let Some(value) = str_of(key).filter(|v| !v.is_empty()) {
            lines.push(format!("{key}: {value}"));
        }
    }
    text.push_str(&lines.join("\n"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn renders_output_then_status() {
        assert_eq!(
            render_text(&doc(json!({"output": "hi\n", "exit_code": 3}))),
            "hi\n[exit code: 3]"
        );
        assert_eq!(
            render_text(&doc(json!({"output": "no newline", "exit_code": 0}))),
            "no newline\n[exit code: 0]"
        );
        assert_eq!(
            render_text(&doc(json!({"output": "", "exit_code": 0}))),
            "[exit code: 0]"
        );
        assert_eq!(
            render_text(&doc(json!({"stdout": "a\n", "stderr": "b", "exit_code": 1}))),
            "[stdout]\na\n[stderr]\nb\n[exit code: 1]"
        );
        assert_eq!(
            render_text(&doc(
                json!({"output": "partial\n", "error": "timeout", "message": "killed", "hint": "longer"})
            )),
            "partial\n[error: timeout] killed\nhint: longer"
        );
    }

    #[test]
    fn other_documents_are_shown_as_json() {
        for d in [
            json!({"job_id": "job-1", "status": "running"}),
            json!({"jobs": []}),
            json!({"session_id": "s1", "shell": "bash", "pid": 7}),
            json!({"calls": {"served": 1, "failed": 0}, "version": "0.1.0"}),
        ] {
            let text = render_text(&doc(d.clone()));
            assert!(text.contains('\n') || text == "{}", "indented: {text}");
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), d);
        }
    }

    #[test]
    fn status_ids_hint_and_pattern_are_shown() {
        assert_eq!(
            render_text(&doc(json!({
                "job_id": "job-1", "status": "running", "output": "so far\n",
                "hint": "Still running: call job_status again."
            }))),
            "so far\nstatus: running\njob_id: job-1\nhint: Still running: call job_status again."
        );
        assert_eq!(
            render_text(&doc(json!({
                "session_id": "s1", "status": "finished", "output": "x", "exit_code": 0
            }))),
            "x\n[exit code: 0]\nstatus: finished\nsession_id: s1"
        );
        assert_eq!(
            render_text(&doc(json!({
                "error": "permission_denied", "message": "`bash.execute` needs approval",
                "hint": "add a rule such as the pattern below", "pattern": "bash.execute:make *"
            }))),
            "[error: permission_denied] `bash.execute` needs approval\nhint: add a rule such as the pattern below\npattern: bash.execute:make *"
        );
    }

    #[test]
    fn what_the_sandbox_refused_is_in_the_text() {
        assert_eq!(
            render_text(&doc(json!({
                "output": "touch: cannot touch '/etc/x': Read-only file system\n", "exit_code": 1,
                "sandbox": {"backend": "bwrap", "denied": [{"op": "write", "path": "/etc/x"}]},
                "sandbox_message": "The command failed (exit code 1); the sandbox refused a write to /etc/x."
            }))),
            "touch: cannot touch '/etc/x': Read-only file system\n[exit code: 1]\n\
             sandbox: The command failed (exit code 1); the sandbox refused a write to /etc/x."
        );
    }

    #[test]
    fn the_response_decides_is_error() {
        let era = Era::Handshake("2025-06-18");
        let ok = call_result(ToolResponse::document(json!({"output": "", "exit_code": 2})), era);
        assert_eq!(ok["isError"], false);
        assert_eq!(ok["structuredContent"]["exit_code"], 2);
        let error = crate::error::ToolError::new(crate::error::ErrorCode::InvalidArguments, "m", "h");
        let bad = call_result(ToolResponse::error(&error), era);
        assert_eq!(bad["isError"], true);
        assert_eq!(bad["structuredContent"]["error"], "invalid_arguments");
        let timed_out = call_result(ToolResponse::document(json!({"output": "", "error": "timeout"})), era);
        assert_eq!(timed_out["isError"], true);
        let old = call_result(
            ToolResponse::document(json!({"output": "", "exit_code": 0})),
            Era::Handshake("2025-03-26"),
        );
        assert!(old.get("structuredContent").is_none());
        let plain = call_result(ToolResponse::new("plain text"), era);
        assert_eq!(plain["content"][0]["text"], "plain text");
    }
}
