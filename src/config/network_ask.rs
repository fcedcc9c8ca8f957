//! `network_ask`: whether a running command's connection that its network
//! policy does not allow is put to the person while it waits, for how long,
//! and how many connections may wait at once.

use std::time::Duration;

use serde_json::{Value, json};

use super::values::{bounded_int, config_error, positive_seconds};
use crate::error::ToolError;

/// How long a connection waits for the person by default: a minute, time
/// to read the question, short enough for the tools that wait behind it.
pub const DEFAULT_NETWORK_ASK_WAIT: Duration = Duration::from_secs(60);
/// How many connections may wait for the person at once by default.
pub const DEFAULT_NETWORK_ASK_MAX_WAITING: usize = 8;
/// The longest wait a configuration may set.
const MAX_WAIT: Duration = Duration::from_secs(600);

/// The `network_ask` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkAsk {
    /// Ask when the call has someone who can answer while its command runs
    /// (`mode = "ask"`, the default); `false` (`"refuse"`): refuse unasked.
    pub ask: bool,
    /// How long a connection waits for the answer (`wait_seconds`).
    pub wait: Duration,
    /// How many connections may wait at once across the server
    /// (`max_waiting`); past it a connection is refused at once.
    pub max_waiting: usize,
}

impl Default for NetworkAsk {
    fn default() -> Self {
        NetworkAsk {
            ask: true,
            wait: DEFAULT_NETWORK_ASK_WAIT,
            max_waiting: DEFAULT_NETWORK_ASK_MAX_WAITING,
        }
    }
}

impl NetworkAsk {
    /// The settings as `status` and the configuration view show them.
    pub fn to_value(&self) -> Value {
        json!({
            "mode": if self.ask { "ask" } else { "refuse" },
            "wait_seconds": self.wait.as_secs_f64(),
            "max_waiting": self.max_waiting,
        })
    }
}

/// `current` with the keys of a `network_ask` object applied.
pub(super) fn network_ask(current: &NetworkAsk, value: &Value) -> Result<NetworkAsk, ToolError> {
    let hint = "use {\"network_ask\": {\"mode\": \"ask\" or \"refuse\", \"wait_seconds\": 60, \"max_waiting\": 8}}";
    let Value::Object(map) = value else {
        return Err(config_error(
            format!("`network_ask` must be an object, got {value}"),
            hint,
        ));
    };
    let mut settings = *current;
    for (key, value) in map {
        match key.as_str() {
            "mode" => {
                settings.ask = match value.as_str() {
                    Some("ask") => true,
                    Some("refuse") => false,
                    _ => {
                        return Err(config_error(
                            format!("`network_ask.mode` must be \"ask\" or \"refuse\", got {value}"),
                            hint,
                        ));
                    }
                }
            }
            "wait_seconds" => {
                let wait = positive_seconds("network_ask.wait_seconds", value)?;
                if wait > MAX_WAIT {
                    return Err(config_error(
                        format!(
                            "`network_ask.wait_seconds` is at most {} (a connection held longer times out in most tools), got {value}",
                            MAX_WAIT.as_secs()
                        ),
                        hint,
                    ));
                }
                settings.wait = wait;
            }
            "max_waiting" => settings.max_waiting = bounded_int("network_ask.max_waiting", value, 1, 1024)? as usize,
            other => {
                return Err(config_error(
                    format!("unknown configuration key `network_ask.{other}`"),
                    hint,
                ));
            }
        }
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_apply_over_the_defaults_and_bad_values_are_named() {
        let s = network_ask(&NetworkAsk::default(), &json!({"mode": "refuse", "wait_seconds": 5})).unwrap();
        assert!(!s.ask);
        assert_eq!(s.wait, Duration::from_secs(5));
        assert_eq!(s.max_waiting, DEFAULT_NETWORK_ASK_MAX_WAITING);
        for (bad, named) in [
            (json!({"mode": "maybe"}), "network_ask.mode"),
            (json!({"wait_seconds": 0}), "network_ask.wait_seconds"),
            (json!({"wait_seconds": 601}), "network_ask.wait_seconds"),
            (json!({"max_waiting": 0}), "network_ask.max_waiting"),
            (json!({"asks": true}), "network_ask.asks"),
        ] {
            let e = network_ask(&NetworkAsk::default(), &bad).unwrap_err();
            assert!(e.message.contains(named), "{bad}: {}", e.message);
        }
    }
}
