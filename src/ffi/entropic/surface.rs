//! The tools the engine sees through the plugin, and the checks a call
//! passes before it runs.
//!
//! The engine (v2.10) matches `permissions.allow/deny` against
//! `<tool>:<value of the first argument in alphabetical key order>`, or
//! `<tool>:*` when that value is not a string. So every argument the plugin
//! accepts for `execute` sorts after `command`: `background` (which sorts
//! before it) is not offered, and a call whose first key is anything but
//! `command` is refused before it runs. Tools whose commands the engine
//! could not key at all (background jobs, sessions) are not exposed.

use serde_json::{Map, Value};

use crate::bash::BashServer;
use crate::config::OPTIONAL_TOOLS;
use crate::error::{ErrorCode, ToolError};
use crate::permission::{Decision, Dialect, PermissionPolicy, PolicyError, RefusalReason};
use crate::tool::McpServer;
use crate::tool_args::ToolArgs;

/// The one tool that runs commands through the plugin.
pub const EXECUTE: &str = "execute";
/// `execute`'s arguments through the plugin; each sorts after `command`.
pub const PLUGIN_EXECUTE_ARGUMENTS: &[&str] = &[
    "command",
    "env",
    "sandbox",
    "stdin",
    "streams",
    "timeout_seconds",
    "working_dir",
];
/// The sentence of `execute`'s description about the background mode and
/// `yield_seconds`, which the plugin hides (tests/plugin.rs fails if the
/// description changes and the sentence is no longer found).
const BACKGROUND_SENTENCE: &str = " For long commands pass background: true and poll job_status; with yield_seconds, a command still running after that long is handed back as a background job with its output so far.";

/// The tool that reads a kept output; listed only while the configuration keeps outputs.
pub const OUTPUT_READ: &str = "output_read";

/// Whether the plugin exposes the tool `local` (`execute`; the optional
/// operator tools when the configuration turns them on; `output_read` when
/// it turns the output store on; none runs a command).
pub fn exposed(local: &str) -> bool {
    local == EXECUTE || local == OUTPUT_READ || OPTIONAL_TOOLS.contains(&local)
}

/// The plugin's `list_tools`: the server's exposed tools, with `execute`
/// offering only [`PLUGIN_EXECUTE_ARGUMENTS`].
pub fn list_tools(server: &BashServer) -> String {
    let tools: Vec<Value> = serde_json::from_str(&server.list_tools()).unwrap_or_default();
    let tools: Vec<Value> = tools
        .into_iter()
        .filter(|t| t["name"].as_str().is_some_and(exposed))
        .map(|mut tool| {
            if tool["name"] == EXECUTE {
                if let Some(props) = tool["inputSchema"]["properties"].as_object_mut() {
                    props.retain(|k, _| PLUGIN_EXECUTE_ARGUMENTS.contains(&k.as_str()));
                }
                if let Some(text) = tool["description"].as_str() {
                    tool["description"] = text.replace(BACKGROUND_SENTENCE, "").into();
                }
            }
            tool
        })
        .collect();
    Value::Array(tools).to_string()
}

/// The value the engine builds its permission pattern from: the first
/// argument in byte order when it is a string (`None` means `*`).
pub fn engine_subject(args: &Map<String, Value>) -> Option<&str> {
    // serde_json's map is ordered by bytes, like the engine's std::map.
    args.iter().next().and_then(|(_, v)| v.as_str())
}

/// Refuses a call the engine would have keyed on something other than the
/// command, or that asks for a tool the plugin does not expose.
pub fn check_call(local: &str, args: &ToolArgs) -> Result<(), ToolError> {
    if !exposed(local) {
        return Err(ToolError::new(
            ErrorCode::UnknownTool,
            format!("the tool `{local}` is not available through the entropic plugin"),
            "use `execute` (background jobs and sessions are not offered, because the engine's permission rules could not see their commands)",
        ));
    }
    if local != EXECUTE {
        return Ok(());
    }
    // Malformed arguments are left to the server, which refuses them.
    let Ok(args) = args.object() else {
        return Ok(());
    };
    if let Some(key) = args.keys().find(|k| !PLUGIN_EXECUTE_ARGUMENTS.contains(&k.as_str())) {
        return Err(ToolError::new(
            ErrorCode::UnknownArgument,
            format!("`execute` through the entropic plugin does not accept `{key}`"),
            format!(
                "pass only {}; the engine matches its permission rules against the first argument in alphabetical order, so no argument may sort before `command`",
                PLUGIN_EXECUTE_ARGUMENTS.join(", ")
            ),
        ));
    }
    match (args.get("command").and_then(Value::as_str), engine_subject(args)) {
        (Some(command), Some(subject)) if command == subject => Ok(()),
        // No string command: the server refuses the call itself.
        (None, _) => Ok(()),
        _ => Err(ToolError::new(
            ErrorCode::InvalidArguments,
            "the engine would match this call's permission rules against something other than `command`",
            "pass the command as the string argument `command`",
        )),
    }
}

/// Per-part allow/deny rules the plugin checks itself (`permissions` in its
/// configuration file), with the semantics of [`PermissionPolicy`].
#[derive(Debug)]
pub struct Enforcement {
    policy: PermissionPolicy,
    /// Whether `allow` had entries: then every part must be allowed.
    allow_listed: bool,
}

impl Enforcement {
    /// Rules as the engine's `permissions` holds them. With no `allow`
    /// entry, only `deny` is enforced (the engine's approval decides the rest).
    pub fn new(allow: &[String], deny: &[String], dialect: Dialect) -> Result<Self, PolicyError> {
        let allow_listed = !allow.is_empty();
        let allow = if allow_listed {
            allow.to_vec()
        } else {
            vec!["*".to_owned()]
        };
        Ok(Self {
            policy: PermissionPolicy::new(&allow, deny)?.with_dialect(dialect),
            allow_listed,
        })
    }

    /// Refuses `command` (run as `tool`, e.g. `bash.execute`) unless every
    /// part is allowed and none is denied; the error names what decided it,
    /// each reason true for the rules configured (with deny rules only, what
    /// they matched, never a part "no allow rule" matches).
    pub fn check(&self, tool: &str, command: &str) -> Result<(), ToolError> {
        let mut args = Map::new();
        args.insert("command".into(), command.into());
        let reasons = self.policy.refusal_args(tool, &args);
        if self.policy.decide_args(tool, &args) == Decision::Allow {
            return Ok(());
        }
        let why = if reasons.is_empty() {
            format!("`{command}` is not allowed")
        } else {
            crate::permission::describe_refusal(&reasons)
        };
        let denied = reasons.iter().any(|r| {
            matches!(
                r,
                RefusalReason::CallDenied { .. } | RefusalReason::PartDenied { .. } | RefusalReason::WriteDenied { .. }
            )
        });
        let hint = if denied {
            "the operator's deny rules refuse this command; do not retry it in another form"
        } else if self.allow_listed {
            "run only commands whose every part the operator's allow rules name; ask the operator to extend the rules if this one is needed"
        } else {
            "the plugin cannot check this command against the operator's deny rules; write it out plainly (no expansions that could hide what it runs)"
        };
        Err(ToolError::new(
            ErrorCode::PermissionDenied,
            format!("The plugin's permission rules refuse this command: {why}; nothing was run."),
            hint,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn every_plugin_argument_sorts_after_command() {
        let mut sorted = PLUGIN_EXECUTE_ARGUMENTS.to_vec();
        sorted.sort();
        assert_eq!(sorted[0], "command");
        // `yield_seconds` hands a command back as a job, and the plugin
        // offers no job tools; `escalate` asks the person, and the engine's
        // plugin ABI has no way to ask.
        for name in crate::EXECUTE_ARGUMENTS
            .iter()
            .filter(|n| **n != "yield_seconds" && **n != "escalate")
        {
            assert_eq!(PLUGIN_EXECUTE_ARGUMENTS.contains(name), *name >= "command", "{name}");
        }
    }

    #[test]
    fn the_engine_subject_is_the_first_key_in_byte_order() {
        assert_eq!(
            engine_subject(&map(r#"{"working_dir": "/", "command": "ls"}"#)),
            Some("ls")
        );
        assert_eq!(engine_subject(&map(r#"{"background": false, "command": "ls"}"#)), None);
        assert_eq!(engine_subject(&map(r#"{"Z": "x", "command": "ls"}"#)), Some("x"));
    }

    #[test]
    fn calls_keyed_off_the_command_are_refused() {
        assert!(check_call("execute", &ToolArgs::parse(r#"{"command": "ls", "env": {"A": "1"}}"#)).is_ok());
        for (args, code) in [
            (
                r#"{"background": false, "command": "rm -rf x"}"#,
                ErrorCode::UnknownArgument,
            ),
            (r#"{"Command": "x", "command": "rm -rf x"}"#, ErrorCode::UnknownArgument),
        ] {
            assert_eq!(
                check_call("execute", &ToolArgs::parse(args)).unwrap_err().code,
                code,
                "{args}"
            );
        }
        assert_eq!(
            check_call("job_list", &ToolArgs::parse("{}")).unwrap_err().code,
            ErrorCode::UnknownTool
        );
        assert_eq!(
            check_call("session_write", &ToolArgs::parse("{}")).unwrap_err().code,
            ErrorCode::UnknownTool
        );
    }

    #[test]
    fn enforcement_refuses_any_part_not_allowed() {
        let e = Enforcement::new(&["bash.execute:git *".into()], &[], Dialect::Unknown).unwrap();
        assert!(e.check("bash.execute", "git status").is_ok());
        let err = e.check("bash.execute", "git status && rm -rf x").unwrap_err();
        assert_eq!(err.code, ErrorCode::PermissionDenied);
        assert!(err.message.contains("`rm -rf x` matches no allow rule"), "{err}");
        assert!(!err.message.contains("`git status`"), "{err}");
        let deny_only = Enforcement::new(&[], &["bash.execute:rm *".into()], Dialect::Unknown).unwrap();
        assert!(deny_only.check("bash.execute", "ls; echo hi").is_ok());
        assert!(deny_only.check("bash.execute", "ls; rm -rf x").is_err());
    }

    /// With deny rules only there are no allow rules to miss: a refusal names
    /// what a deny rule matched (or could not check), never a harmless part.
    #[test]
    fn deny_only_refusals_name_only_what_the_deny_rules_decided() {
        let deny_only = Enforcement::new(
            &[],
            &[
                "bash.execute:rm *".into(),
                "bash.execute:git push*".into(),
                "bash.execute:>/etc/*".into(),
            ],
            Dialect::Unknown,
        )
        .unwrap();
        for (command, names) in [
            ("ls; rm -rf x", "`rm -rf x` matches the deny rule `bash.execute:rm *`"),
            (
                "echo hi > /etc/motd",
                "the write to `/etc/motd` matches the deny rule `bash.execute:>/etc/*`",
            ),
            (
                "ls; git ${X:-push} origin",
                "the deny rule `bash.execute:git push*` would match",
            ),
        ] {
            let err = deny_only.check("bash.execute", command).unwrap_err();
            assert!(err.message.contains(names), "{command}: {err}");
            assert!(!err.message.contains("allow rule"), "{command}: {err}");
            assert!(
                !err.message.contains("`ls`") && !err.message.contains("`echo hi"),
                "{command}: {err}"
            );
        }
    }
}
