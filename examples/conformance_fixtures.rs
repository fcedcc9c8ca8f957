//! The official MCP conformance suite's fixture tools, served over
//! Streamable HTTP through bash-mcp's own protocol layer: the library's
//! `McpHandler` (the one `bash-mcp serve` uses) and the binary's HTTP front
//! end, compiled here from the same source files. The suite's `tools-call-*`,
//! logging, progress, sampling, elicitation and JSON Schema scenarios call
//! these tools by name (`test_simple_text`, ...), which the shipped binary
//! does not have; `tests/conformance.rs` runs the suite against this server
//! so that those scenarios exercise the protocol code all the same.
//!
//! ```text
//! cargo run --features cli --example conformance_fixtures   # prints its URL
//! ```
//!
//! It listens on 127.0.0.1 only (a free port), without authentication, and
//! runs no command: each tool answers what the suite's own reference server
//! answers.

use std::sync::Arc;

use bash_mcp::content::{ContentBlock, LogLevel, ResourceBody};
use bash_mcp::mcp::HandlerOptions;
use bash_mcp::{CallOptions, McpServer, Tool, ToolDefinition, ToolRegistry, ToolResponse};
use serde_json::{Map, Value, json};

// The binary's HTTP front end, the same files `bash-mcp serve --http` is
// built from; this example uses its serving entry point, not all it offers.
#[allow(dead_code)]
#[path = "../src/cli/http/mod.rs"]
mod http;

/// A 1×1 red PNG.
const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// A WAV of eight samples of silence (8 kHz, mono, 8 bits).
const SILENT_WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

type Run = fn(&Map<String, Value>, CallOptions<'_>) -> ToolResponse;

/// One fixture tool: its definition and what it does.
struct Fixture {
    definition: ToolDefinition,
    run: Run,
}

impl Tool for Fixture {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse {
        (self.run)(args, options)
    }
}

struct Fixtures {
    tools: ToolRegistry,
}

impl McpServer for Fixtures {
    fn name(&self) -> &str {
        "conformance-fixtures"
    }

    fn tools(&self) -> &ToolRegistry {
        &self.tools
    }
}

fn text(text: &str) -> ToolResponse {
    ToolResponse::content(vec![ContentBlock::Text(text.into())], false)
}

fn failed(text: &str) -> ToolResponse {
    ToolResponse::content(vec![ContentBlock::Text(text.into())], true)
}

fn image() -> ContentBlock {
    ContentBlock::Image {
        data: RED_PIXEL_PNG.into(),
        mime_type: "image/png".into(),
    }
}

fn simple_text(_: &Map<String, Value>, _: CallOptions<'_>) -> ToolResponse {
    text("This is a simple text response for testing.")
}

fn image_content(_: &Map<String, Value>, _: CallOptions<'_>) -> ToolResponse {
    ToolResponse::content(vec![image()], false)
}

fn audio_content(_: &Map<String, Value>, _: CallOptions<'_>) -> ToolResponse {
    let audio = ContentBlock::Audio {
        data: SILENT_WAV.into(),
        mime_type: "audio/wav".into(),
    };
    ToolResponse::content(vec![audio], false)
}

fn embedded_resource(_: &Map<String, Value>, _: CallOptions<'_>) -> ToolResponse {
    let resource = ContentBlock::Resource {
        uri: "test://embedded-resource".into(),
        mime_type: "text/plain".into(),
        body: ResourceBody::Text("This is an embedded resource content.".into()),
    };
    ToolResponse::content(vec![resource], false)
}

fn multiple_content_types(_: &Map<String, Value>, _: CallOptions<'_>) -> ToolResponse {
    let resource = ContentBlock::Resource {
        uri: "test://mixed-content-resource".into(),
        mime_type: "application/json".into(),
        body: ResourceBody::Text(json!({"test": "data", "value": 123}).to_string()),
    };
    let blocks = vec![
        ContentBlock::Text("Multiple content types test:".into()),
        image(),
        resource,
    ];
    ToolResponse::content(blocks, false)
}

fn error_handling(_: &Map<String, Value>, _: CallOptions<'_>) -> ToolResponse {
    failed("This tool intentionally returns an error for testing")
}

fn with_logging(_: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse {
    let Some(client) = options.client else {
        return failed("no MCP client to send log messages to");
    };
    for message in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ] {
        client.log(LogLevel::Info, message.into());
    }
    text("Tool with logging executed successfully")
}

fn with_progress(_: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse {
    if let Some(client) = options.client {
        for step in [0.0, 50.0, 100.0] {
            client.progress(step, Some(100.0), None);
        }
    }
    text("Tool with progress executed successfully")
}

/// A string argument the tool needs, or the error that says so.
fn string_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, ToolResponse> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| failed(&format!("the argument `{name}` (a string) is required")))
}

/// Asks the client `method` with `params`; the text of an error result when it cannot.
fn ask(options: &CallOptions<'_>, method: &str, params: Value) -> Result<Value, ToolResponse> {
    let client = options.client.ok_or_else(|| failed("no MCP client to ask"))?;
    client
        .request(method, params)
        .map_err(|why| failed(&format!("{method} failed: {why}")))
}

fn sampling(args: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse {
    let run = || -> Result<ToolResponse, ToolResponse> {
        let prompt = string_arg(args, "prompt")?;
        let params = json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
            "maxTokens": 100,
        });
        let result = ask(&options, "sampling/createMessage", params)?;
        let answer = result["content"]["text"].as_str().unwrap_or_default();
        Ok(text(&format!("LLM response: {answer}")))
    };
    run().unwrap_or_else(|e| e)
}

/// Asks the person for `schema`'s fields and tells what came back.
fn elicit(options: &CallOptions<'_>, message: &str, schema: Value, prefix: &str) -> ToolResponse {
    let params = json!({"message": message, "requestedSchema": schema});
    match ask(options, "elicitation/create", params) {
        Ok(result) => text(&format!(
            "{prefix}: action={}, content={}",
            result["action"].as_str().unwrap_or("unknown"),
            result.get("content").cloned().unwrap_or(json!({}))
        )),
        Err(response) => response,
    }
}

fn elicitation(args: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse {
    let message = match string_arg(args, "message") {
        Ok(message) => message,
        Err(response) => return response,
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    });
    elicit(&options, message, schema, "User response")
}

fn elicitation_defaults(_: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": true},
        },
    });
    elicit(
        &options,
        "Please review and update the form fields with defaults",
        schema,
        "Elicitation completed",
    )
}

fn elicitation_enums(_: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"},
            ]}},
        },
    });
    elicit(&options, "Please select options", schema, "Elicitation completed")
}

fn json_schema_tool(args: &Map<String, Value>, _: CallOptions<'_>) -> ToolResponse {
    text(&format!("received {}", Value::Object(args.clone())))
}

/// The definition of a tool without arguments, or with `properties` (all required).
fn definition(name: &str, description: &str, properties: &[&str]) -> ToolDefinition {
    let props: Map<String, Value> = properties
        .iter()
        .map(|p| ((*p).to_owned(), json!({"type": "string"})))
        .collect();
    ToolDefinition {
        name: name.into(),
        description: description.into(),
        input_schema: json!({"type": "object", "properties": props, "required": properties}),
        extra: Map::new(),
    }
}

fn fixtures() -> ToolRegistry {
    let json_schema = ToolDefinition {
        name: "json_schema_2020_12_tool".into(),
        description: "Tool with JSON Schema 2020-12 features".into(),
        input_schema: json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
                "street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false,
        }),
        extra: Map::new(),
    };
    let table: Vec<(ToolDefinition, Run)> = vec![
        (definition("test_simple_text", "Returns simple text", &[]), simple_text),
        (definition("test_image_content", "Returns an image", &[]), image_content),
        (definition("test_audio_content", "Returns audio", &[]), audio_content),
        (
            definition("test_embedded_resource", "Returns an embedded resource", &[]),
            embedded_resource,
        ),
        (
            definition(
                "test_multiple_content_types",
                "Returns text, an image and a resource",
                &[],
            ),
            multiple_content_types,
        ),
        (
            definition("test_tool_with_logging", "Sends three log messages", &[]),
            with_logging,
        ),
        (definition("test_error_handling", "Always fails", &[]), error_handling),
        (
            definition("test_tool_with_progress", "Reports progress 0, 50, 100 of 100", &[]),
            with_progress,
        ),
        (
            definition("test_sampling", "Asks the client's model", &["prompt"]),
            sampling,
        ),
        (
            definition("test_elicitation", "Asks the person", &["message"]),
            elicitation,
        ),
        (
            definition("test_elicitation_sep1034_defaults", "Asks with defaults", &[]),
            elicitation_defaults,
        ),
        (
            definition("test_elicitation_sep1330_enums", "Asks with every kind of enum", &[]),
            elicitation_enums,
        ),
        (json_schema, json_schema_tool),
    ];
    let mut tools = ToolRegistry::new();
    for (definition, run) in table {
        tools
            .register(Arc::new(Fixture { definition, run }))
            .expect("fixture names are distinct");
    }
    tools
}

fn main() {
    let served = http::run(
        "127.0.0.1:0",
        &http::AccessSettings::default(),
        http::SESSION_IDLE,
        || {
            Ok(http::Served {
                server: Arc::new(Fixtures { tools: fixtures() }),
                options: HandlerOptions {
                    server_name: "bash-mcp-conformance-fixtures".into(),
                    logging: true,
                    ..HandlerOptions::default()
                },
                // The fixtures start no job and keep no session.
                end_work: Box::new(|_| true),
                announce: Box::new(|| {}),
            })
        },
    );
    if let Err(e) = served {
        eprintln!("conformance_fixtures: {e}");
        std::process::exit(1);
    }
}
