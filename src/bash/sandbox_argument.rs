//! `execute`'s `sandbox` argument as the model learns it: the definition
//! fitted to the sandbox in force, so the model knows what this server allows
//! before it calls (the sandbox commands run in, what a call may set: the
//! `mode` enum, `network`; whether the host lets some commands widen it, its
//! `sandbox_overrides` rules, and how), and the refusal of a widening, which
//! says the same.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::error::{ErrorCode, ToolError};
use crate::sandbox::config::ConfigProblem;
use crate::sandbox::{Mode, Network, SandboxConfig};
use crate::tool::ToolDefinition;

/// Rules named in the description before the rest are counted.
const RULES_NAMED: usize = 8;

/// `definition` with its `sandbox` argument (when it has one) and its
/// description written for `sandbox` and the host's widening `overrides`.
pub(super) fn fitted(definition: &ToolDefinition, sandbox: &SandboxConfig, overrides: &[String]) -> ToolDefinition {
    let mut fitted = definition.clone();
    let Some(property) = fitted.input_schema["properties"].get_mut("sandbox") else {
        return fitted;
    };
    // Overrides widen a sandbox; with none configured there is nothing to widen.
    let widening = sandbox.is_on() && !overrides.is_empty();
    property["description"] = argument_description(sandbox, overrides).into();
    property["properties"]["mode"]["enum"] = modes(sandbox, widening).into();
    property["properties"]["network"] = match (sandbox.is_on(), &sandbox.network, widening) {
        (true, Network::Off, false) => {
            json!({"type": "boolean", "enum": [false], "description": "false: no IP networking. Network is already off here, and true would widen the sandbox."})
        }
        (true, Network::Off, true) => {
            json!({"type": "boolean", "description": "Network is off here; true only for a command the sandbox_overrides rules name."})
        }
        (true, Network::Policy(policy), _) => json!({
            "type": ["boolean", "object"],
            "description": format!(
                "false: no network for this command; or {{\"allow\": [...], \"deny\": [...]}} naming hosts within the ones this server allows ({}), reached through the sandbox's proxy; true would widen the sandbox.",
                policy.allow().collect::<Vec<_>>().join(", ")
            ),
            "properties": {"allow": {"type": "array", "items": {"type": "string"}}, "deny": {"type": "array", "items": {"type": "string"}}},
        }),
        (true, Network::On, _) => json!({
            "type": ["boolean", "object"],
            "description": "false: no IP networking for this command; or {\"allow\": [hosts], \"deny\": [hosts]}: only those hosts, through the sandbox's proxy.",
            "properties": {"allow": {"type": "array", "items": {"type": "string"}}, "deny": {"type": "array", "items": {"type": "string"}}},
        }),
        (false, ..) => json!({"type": "boolean", "description": "false: no IP networking for this command."}),
    };
    property["properties"]["writable_roots"]["description"] = roots_description(sandbox, widening).into();
    if sandbox.is_on() {
        fitted.description = format!(
            "{} Commands run in an OS sandbox ({}); a result says what it refused.",
            fitted.description,
            in_force(sandbox)
        );
    }
    fitted
}

/// The modes a call may ask for: tighter ones (or any, where nothing is
/// sandboxed, `off` keeping it so); every one when overrides may widen.
fn modes(sandbox: &SandboxConfig, widening: bool) -> Vec<&'static str> {
    [Mode::Off, Mode::ReadOnly, Mode::WorkspaceWrite]
        .into_iter()
        .filter(|m| widening || !sandbox.is_on() || (*m != Mode::Off && *m <= sandbox.mode))
        .map(Mode::as_str)
        .collect()
}

/// The sandbox in force, briefly: `workspace-write, writable: /p, network off`.
fn in_force(sandbox: &SandboxConfig) -> String {
    let network = match &sandbox.network {
        Network::On => "network on".to_owned(),
        Network::Off => "network off".to_owned(),
        Network::Policy(policy) => format!(
            "network only to {} (through a proxy)",
            policy.allow().collect::<Vec<_>>().join(", ")
        ),
    };
    match (sandbox.mode, &sandbox.writable_roots) {
        (Mode::WorkspaceWrite, Some(roots)) => {
            let mut names: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
            if sandbox.writable_working_dir {
                names.insert(0, "the working directory".to_owned());
            }
            format!("workspace-write, writable: {}, {network}", names.join(", "))
        }
        (Mode::WorkspaceWrite, None) => {
            format!("workspace-write, writable: the working directory and the temp dir, {network}")
        }
        (mode, _) => format!("{}, {network}", mode.as_str()),
    }
}

fn argument_description(sandbox: &SandboxConfig, overrides: &[String]) -> String {
    if !sandbox.is_on() {
        return "This server runs commands without an OS sandbox. Set this to run one command in one: mode \"workspace-write\" (writable only inside writable_roots: by default the working directory and the temp dir) or \"read-only\"; with a mode, network false cuts IP networking.".into();
    }
    let mut tighter = Vec::new();
    let mut wider = vec!["mode \"off\""];
    match sandbox.mode {
        Mode::WorkspaceWrite => {
            tighter.push("mode \"read-only\"");
            tighter.push("writable_roots inside the writable ones");
            wider.push("writable_roots outside the writable ones");
        }
        _ => wider.push("mode \"workspace-write\""),
    }
    match sandbox.network {
        Network::On => tighter.push("network false or a list of hosts"),
        Network::Policy(_) => {
            tighter.push("network false or fewer hosts");
            wider.push("network true or other hosts");
        }
        Network::Off => wider.push("network true"),
    }
    let mut text = format!("Commands run in an OS sandbox here: {}.", in_force(sandbox));
    if !tighter.is_empty() {
        text.push_str(&format!(
            " A call may tighten it for one command: {}.",
            tighter.join(", ")
        ));
    }
    if overrides.is_empty() {
        text.push_str(&format!(
            " Widening it ({}) is refused: this server lets no call widen its sandbox; if a command needs more, ask the user.",
            wider.join(", ")
        ));
    } else {
        text.push_str(&format!(
            " Commands this server's sandbox_overrides rules name may widen it for one call ({}); every part of the command must match a rule: {}. Widening any other command is refused, naming the parts no rule matches.",
            wider.join(", "),
            rules_listed(overrides)
        ));
    }
    text
}

fn roots_description(sandbox: &SandboxConfig, widening: bool) -> String {
    match (sandbox.mode, widening) {
        (Mode::Off, _) => "Directories writable in workspace-write mode (default: the working directory and the temp dir).".into(),
        (_, false) => "Directories writable for this command, inside the configured writable ones.".into(),
        (_, true) => "Directories writable for this command: inside the configured writable ones, or any for a command the sandbox_overrides rules name.".into(),
    }
}

/// The error for a call whose `sandbox` argument `call` the configured
/// `sandbox` refused with `problem`: a widening says what this server allows
/// instead (no widening at all, or only for the commands the host's
/// `overrides` name); any other problem is passed on as it is.
pub(super) fn refusal(
    sandbox: &SandboxConfig,
    call: &Map<String, Value>,
    base: &Path,
    problem: ConfigProblem,
    overrides: &[String],
) -> ToolError {
    let widens = sandbox.is_on() && sandbox.widened(call, base).is_ok();
    let hint = match (widens, overrides.is_empty()) {
        (false, _) => problem.hint,
        (true, true) => format!(
            "this server lets no call widen its sandbox ({}); run the command within it, or ask the user to run it or to change the configuration",
            in_force(sandbox)
        ),
        (true, false) => format!(
            "only commands the host's sandbox_overrides rules name may widen this sandbox ({}), every part of the command matching a rule: {}; run this one within it, or ask the user",
            in_force(sandbox),
            rules_listed(overrides)
        ),
    };
    ToolError::new(ErrorCode::InvalidArguments, problem.message, hint)
}

/// `` `a`, `b` `` and, past [`RULES_NAMED`], how many more.
fn rules_listed(rules: &[String]) -> String {
    let named: Vec<String> = rules.iter().take(RULES_NAMED).map(|r| format!("`{r}`")).collect();
    match rules.len().saturating_sub(RULES_NAMED) {
        0 => named.join(", "),
        more => format!("{} and {more} more", named.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition() -> ToolDefinition {
        ToolDefinition::from_json(super::super::EXECUTE_DEFINITION, "built-in").unwrap()
    }

    fn sandbox(json: Value) -> SandboxConfig {
        SandboxConfig::default()
            .apply(&json, std::path::Path::new("/"))
            .unwrap()
    }

    fn mode_enum(d: &ToolDefinition) -> Vec<&str> {
        d.input_schema["properties"]["sandbox"]["properties"]["mode"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect()
    }

    #[test]
    fn the_modes_offered_are_those_a_call_may_ask_for() {
        let off = fitted(&definition(), &SandboxConfig::default(), &[]);
        assert_eq!(mode_enum(&off), ["off", "read-only", "workspace-write"]);
        let write = sandbox(json!({"mode": "workspace-write"}));
        assert_eq!(
            mode_enum(&fitted(&definition(), &write, &[])),
            ["read-only", "workspace-write"]
        );
        let read = sandbox(json!({"mode": "read-only"}));
        assert_eq!(mode_enum(&fitted(&definition(), &read, &[])), ["read-only"]);
        let rules = ["bash.execute:npm install *".to_owned()];
        assert_eq!(
            mode_enum(&fitted(&definition(), &read, &rules)),
            ["off", "read-only", "workspace-write"]
        );
    }

    #[test]
    fn the_description_says_what_may_widen_and_how() {
        let write = sandbox(json!({"mode": "workspace-write", "writable_roots": ["/p"]}));
        let none = fitted(&definition(), &write, &[]);
        let text = none.input_schema["properties"]["sandbox"]["description"]
            .as_str()
            .unwrap();
        assert!(text.contains("workspace-write, writable: /p, network off"), "{text}");
        assert!(text.contains("lets no call widen"), "{text}");
        assert_eq!(
            none.input_schema["properties"]["sandbox"]["properties"]["network"]["enum"],
            json!([false])
        );
        assert!(
            none.description.contains("Commands run in an OS sandbox"),
            "{}",
            none.description
        );
        let rules: Vec<String> = (0..10).map(|i| format!("bash.execute:tool{i} *")).collect();
        let some = fitted(&definition(), &write, &rules);
        let text = some.input_schema["properties"]["sandbox"]["description"]
            .as_str()
            .unwrap();
        assert!(
            text.contains("sandbox_overrides") && text.contains("`bash.execute:tool7 *` and 2 more"),
            "{text}"
        );
        assert!(some.input_schema["properties"]["sandbox"]["properties"]["network"]["enum"].is_null());
    }
}
