//! The `output_read` tool: any part of an output the store kept.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Shared;
use crate::error::{ErrorCode, ToolError};
use crate::outputs::{OutputStore, ReadQuery};
use crate::tool::{CallOptions, Tool, ToolDefinition, ToolResponse};

/// The tool's built-in definition.
pub(super) const DEFINITION: &str = include_str!("../../data/tools/bash/output_read.json");

pub(super) struct OutputReadTool {
    pub(super) definition: ToolDefinition,
    pub(super) store: Arc<OutputStore>,
    pub(super) shared: Arc<Shared>,
}

impl Tool for OutputReadTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Offered exactly while results can carry an `output_id`: while the store keeps outputs.
    fn enabled(&self) -> bool {
        self.shared.config().output_store.enabled
    }

    fn disabled_error(&self) -> ToolError {
        ToolError::new(
            ErrorCode::UnknownTool,
            "the tool `output_read` is off on this server: its output store is off, so no result carries an `output_id`",
            "a cut result shows its head and tail only; rerun the command with its output filtered (grep, head, tail) or written to a file; the operator can turn the store on with {\"output_store\": {\"enabled\": true}}",
        )
    }

    fn call(&self, args: &Map<String, Value>, _options: CallOptions<'_>) -> ToolResponse {
        let result = (|| {
            let query = ReadQuery::from_args(args)?;
            self.store.read(&query)
        })();
        match result {
            Ok(v) => ToolResponse::document(v),
            Err(e) => ToolResponse::error(&e),
        }
    }
}
