//! The `output_store` key: where the whole output of a cut result is kept.

use serde_json::Value;

use super::values::{boolean, bounded_int, config_error};
use crate::error::ToolError;

/// The store that keeps the whole output of results cut to
/// `output_limit_bytes`, for `output_read`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStoreSettings {
    /// Whether whole outputs are kept (default on).
    pub enabled: bool,
    /// Bytes kept on disk, all outputs together; the oldest go first. One
    /// output larger than this keeps its head and its last bytes.
    pub budget_bytes: u64,
    /// Outputs kept at most; the oldest go first.
    pub max_outputs: usize,
    /// Bytes of the end of an output larger than the budget that are kept
    /// after its head. They are held in memory until the command ends (the
    /// end of a stream is known only then), at most half the budget.
    pub tail_bytes: u64,
}

impl Default for OutputStoreSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            budget_bytes: DEFAULT_OUTPUT_STORE_BYTES,
            max_outputs: DEFAULT_OUTPUT_STORE_COUNT,
            tail_bytes: DEFAULT_OUTPUT_STORE_TAIL_BYTES,
        }
    }
}

/// The default `output_store.budget_bytes`: 256 MiB.
pub const DEFAULT_OUTPUT_STORE_BYTES: u64 = 256 * 1024 * 1024;
/// The default `output_store.max_outputs`.
pub const DEFAULT_OUTPUT_STORE_COUNT: usize = 64;
/// The default `output_store.tail_bytes`: 2 MiB.
pub const DEFAULT_OUTPUT_STORE_TAIL_BYTES: u64 = crate::outputs::DEFAULT_TAIL_BYTES;

/// Merges an `output_store` object into `current`.
pub(super) fn output_store_config(
    current: &OutputStoreSettings,
    value: &Value,
) -> Result<OutputStoreSettings, ToolError> {
    let hint = "use {\"output_store\": {\"enabled\": true, \"budget_bytes\": 268435456, \"max_outputs\": 64, \"tail_bytes\": 2097152}}";
    let Value::Object(map) = value else {
        return Err(config_error(
            format!("`output_store` must be an object, got {value}"),
            hint,
        ));
    };
    let mut next = current.clone();
    for (key, value) in map {
        match key.as_str() {
            "enabled" => next.enabled = boolean("output_store.enabled", value)?,
            "budget_bytes" => next.budget_bytes = bounded_int("output_store.budget_bytes", value, 4096, 1 << 40)?,
            "max_outputs" => next.max_outputs = bounded_int("output_store.max_outputs", value, 1, 100_000)? as usize,
            "tail_bytes" => next.tail_bytes = bounded_int("output_store.tail_bytes", value, 4096, 64 << 20)?,
            other => {
                return Err(config_error(
                    format!("unknown configuration key `output_store.{other}`"),
                    hint,
                ));
            }
        }
    }
    Ok(next)
}
