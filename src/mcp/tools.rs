//! Mapping between the library's tools and MCP's `tools/list` and
//! `tools/call` shapes.

use serde_json::{Map, Value, json};

use super::era::Era;
use crate::server::{ToolDefinition, ToolResponse};

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
/// A JSON-object result (the bash tools' result document) becomes a readable
/// text block plus, when the revision has it, `structuredContent` with the
/// document itself; `isError` is true exactly when the document has an
/// `error` key (bad arguments, spawn failure, timeout, cancellation, a policy
/// refusal). A non-zero exit status is a normal result. Any other result
/// string is passed through as text.
pub(crate) fn call_result(response: &ToolResponse, era: Era) -> Value {
    match serde_json::from_str::<Value>(&response.result) {
        Ok(Value::Object(doc)) => {
            let is_error = doc.contains_key("error");
            let mut result = json!({
                "content": [{"type": "text", "text": render_text(&doc)}],
                "isError": is_error,
            });
            if era.has_structured_content() {
                result["structuredContent"] = Value::Object(doc);
            }
            result
        }
        _ => json!({
            "content": [{"type": "text", "text": response.result}],
            "isError": false,
        }),
    }
}

/// The text a model reads: the output, then the exit status (or, for a
/// failed call, the error, message and hint).
pub fn render_text(doc: &Map<String, Value>) -> String {
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
    if let Some(code) = doc.get("exit_code").and_then(Value::as_i64) {
        text.push_str(&format!("[exit code: {code}]"));
    } else if let Some(error) = str_of("error") {
        text.push_str(&format!("[error: {error}] {}", str_of("message").unwrap_or_default()));
        if let Some(hint) = str_of("hint").filter(|h| !h.is_empty()) {
            text.push_str(&format!("\nhint: {hint}"));
        }
    }
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
    fn error_key_decides_is_error() {
        let era = Era::Handshake("2025-06-18");
        let ok = call_result(&ToolResponse::new(r#"{"output":"","exit_code":2}"#), era);
        assert_eq!(ok["isError"], false);
        assert_eq!(ok["structuredContent"]["exit_code"], 2);
        let bad = call_result(&ToolResponse::new(r#"{"error":"x","message":"m","hint":"h"}"#), era);
        assert_eq!(bad["isError"], true);
        let old = call_result(
            &ToolResponse::new(r#"{"output":"","exit_code":0}"#),
            Era::Handshake("2025-03-26"),
        );
        assert!(old.get("structuredContent").is_none());
        let plain = call_result(&ToolResponse::new("plain text"), era);
        assert_eq!(plain["content"][0]["text"], "plain text");
    }
}
