//! What the MCP handler offers any tool, driven directly: content blocks in
//! a result, and the call's client while it runs (`CallOptions::client`):
//! progress with a total, log messages filtered by `logging/setLevel`, and
//! requests to the client, refused without the capability they need. Every
//! message a call sends names that call (`McpHandler::with_routing`), which
//! is how the HTTP front end puts it on the call's own stream.

mod common;

use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};

use bash_mcp::content::{ContentBlock, LogLevel, ResourceBody};
use bash_mcp::mcp::{HandlerOptions, McpHandler};
use bash_mcp::{CallOptions, McpServer, Tool, ToolDefinition, ToolRegistry, ToolResponse};
use common::HANG_GUARD;
use serde_json::{Map, Value, json};

struct Probe {
    definition: ToolDefinition,
    run: fn(CallOptions<'_>) -> ToolResponse,
}

impl Tool for Probe {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }
    fn call(&self, _args: &Map<String, Value>, options: CallOptions<'_>) -> ToolResponse {
        (self.run)(options)
    }
}

struct Probes(ToolRegistry);

impl McpServer for Probes {
    fn name(&self) -> &str {
        "probes"
    }
    fn tools(&self) -> &ToolRegistry {
        &self.0
    }
}

fn blocks(_: CallOptions<'_>) -> ToolResponse {
    let resource = ContentBlock::Resource {
        uri: "test://r".into(),
        mime_type: "text/plain".into(),
        body: ResourceBody::Text("inside".into()),
    };
    let audio = ContentBlock::Audio {
        data: "UklG".into(),
        mime_type: "audio/wav".into(),
    };
    ToolResponse::content(vec![ContentBlock::Text("three blocks".into()), resource, audio], true)
}

fn chatty(options: CallOptions<'_>) -> ToolResponse {
    let client = options.client.expect("the handler passes the call's client");
    for (step, level) in [(1.0, LogLevel::Debug), (2.0, LogLevel::Info), (3.0, LogLevel::Error)] {
        client.progress(step, Some(3.0), Some("working"));
        client.log(level, json!(format!("step {step}")));
    }
    ToolResponse::content(vec![ContentBlock::Text("done".into())], false)
}

fn ask(options: CallOptions<'_>) -> ToolResponse {
    let client = options.client.expect("the handler passes the call's client");
    let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5});
    match client.request("sampling/createMessage", params) {
        Ok(result) => ToolResponse::content(
            vec![ContentBlock::Text(format!("model said {}", result["content"]["text"]))],
            false,
        ),
        Err(why) => ToolResponse::content(vec![ContentBlock::Text(why)], true),
    }
}

/// A handler of the probes; what it sends, with the request each belongs to.
fn probes() -> (McpHandler, Receiver<(Value, Option<Value>)>) {
    let mut tools = ToolRegistry::new();
    for (name, run) in [
        ("blocks", blocks as fn(CallOptions<'_>) -> ToolResponse),
        ("chatty", chatty),
        ("ask", ask),
    ] {
        let definition = ToolDefinition {
            name: name.into(),
            description: name.into(),
            input_schema: json!({"type": "object"}),
            extra: Map::new(),
        };
        tools.register(Arc::new(Probe { definition, run })).unwrap();
    }
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    let options = HandlerOptions {
        logging: true,
        ..HandlerOptions::default()
    };
    let handler = McpHandler::with_routing(
        Arc::new(Probes(tools)),
        move |line, related| {
            let _ = tx
                .lock()
                .unwrap()
                .send((serde_json::from_str(&line).unwrap(), related.cloned()));
        },
        options,
    );
    (handler, rx)
}

fn one(handler: &McpHandler, message: Value) -> Value {
    let mut replies = handler.handle_line(&message.to_string());
    assert_eq!(replies.len(), 1, "{message}: {replies:?}");
    serde_json::from_str(&replies.remove(0)).unwrap()
}

fn initialize(handler: &McpHandler, capabilities: Value) -> Value {
    one(
        handler,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "0"}}}),
    )
}

fn call(handler: &McpHandler, id: &str, tool: &str, meta: Value) {
    let mut params = json!({"name": tool, "arguments": {}});
    if !meta.is_null() {
        params["_meta"] = meta;
    }
    let replies =
        handler.handle_line(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string());
    assert!(replies.is_empty(), "{replies:?}");
}

/// Everything sent up to and including the response to `id`.
fn until_answer(rx: &Receiver<(Value, Option<Value>)>, id: &str) -> Vec<(Value, Option<Value>)> {
    let mut seen = Vec::new();
    loop {
        let (message, related) = rx.recv_timeout(HANG_GUARD).expect("the call's messages");
        let done = message["id"] == id && message.get("method").is_none();
        seen.push((message, related));
        if done {
            return seen;
        }
    }
}

#[test]
fn content_blocks_are_the_result_as_written() {
    let (handler, rx) = probes();
    initialize(&handler, json!({}));
    call(&handler, "b", "blocks", Value::Null);
    let sent = until_answer(&rx, "b");
    let (response, related) = sent.last().unwrap();
    assert_eq!(related.as_ref(), Some(&json!("b")));
    assert_eq!(
        response["result"],
        json!({"isError": true, "content": [
            {"type": "text", "text": "three blocks"},
            {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "inside"}},
            {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
        ]})
    );
}

#[test]
fn progress_and_log_messages_belong_to_the_call_and_follow_the_level() {
    let (handler, rx) = probes();
    let init = initialize(&handler, json!({}));
    assert_eq!(init["result"]["capabilities"]["logging"], json!({}));
    // Before any logging/setLevel the client gets no log message.
    call(&handler, "quiet", "chatty", json!({"progressToken": "p0"}));
    let sent = until_answer(&rx, "quiet");
    assert!(
        sent.iter().all(|(m, _)| m["method"] != "notifications/message"),
        "{sent:?}"
    );
    let bad = one(
        &handler,
        json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "loud"}}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().contains("debug, info"));
    let set = one(
        &handler,
        json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "info"}}),
    );
    assert_eq!(set["result"], json!({}));
    call(&handler, "c", "chatty", json!({"progressToken": "p1"}));
    let sent = until_answer(&rx, "c");
    assert!(
        sent.iter().all(|(_, related)| related.as_ref() == Some(&json!("c"))),
        "{sent:?}"
    );
    let progress: Vec<&Value> = sent
        .iter()
        .filter(|(m, _)| m["method"] == "notifications/progress")
        .map(|(m, _)| &m["params"])
        .collect();
    assert_eq!(progress.len(), 3, "{sent:?}");
    for (params, step) in progress.iter().zip([1.0, 2.0, 3.0]) {
        assert_eq!(params["progressToken"], "p1");
        assert_eq!(params["progress"], json!(step));
        assert_eq!(params["total"], json!(3.0));
        assert_eq!(params["message"], "working");
    }
    let logs: Vec<&Value> = sent
        .iter()
        .filter(|(m, _)| m["method"] == "notifications/message")
        .map(|(m, _)| &m["params"])
        .collect();
    assert_eq!(
        logs,
        [
            &json!({"level": "info", "logger": "chatty", "data": "step 2"}),
            &json!({"level": "error", "logger": "chatty", "data": "step 3"})
        ],
        "debug is below the level set"
    );
    // 2026-07-28 has no setLevel: a stateless call sends no log message.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    call(&handler, "s", "chatty", meta);
    let sent = until_answer(&rx, "s");
    assert!(
        sent.iter().all(|(m, _)| m["method"] != "notifications/message"),
        "{sent:?}"
    );
}

#[test]
fn requests_to_the_client_need_its_capability_and_return_its_answer() {
    let (handler, rx) = probes();
    initialize(&handler, json!({}));
    call(&handler, "a", "ask", Value::Null);
    let sent = until_answer(&rx, "a");
    assert_eq!(sent.len(), 1, "nothing is asked without the capability: {sent:?}");
    let result = &sent[0].0["result"];
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not declare the `sampling` capability"),
        "{result}"
    );

    let (handler, rx) = probes();
    initialize(&handler, json!({"sampling": {}}));
    call(&handler, "a", "ask", Value::Null);
    let (request, related) = rx.recv_timeout(HANG_GUARD).unwrap();
    assert_eq!(request["method"], "sampling/createMessage");
    assert_eq!(request["params"]["maxTokens"], 5);
    assert_eq!(related, Some(json!("a")), "the question names the call it is for");
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}});
    assert!(handler.handle_line(&answer.to_string()).is_empty());
    let sent = until_answer(&rx, "a");
    let result = &sent.last().unwrap().0["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["content"][0]["text"], "model said \"hello\"");
}
