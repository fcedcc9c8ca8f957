//! One question for the person, and the answers it can get.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What is asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalKind {
    /// A command the permission rules put to the person (an `ask` rule
    /// matched, or no rule decides a part).
    Command,
    /// A command that runs code the text does not show (`eval "$x"`,
    /// `sh -c "$(…)"`), which the default gate cannot check.
    HiddenCode,
    /// A command that asks for a wider sandbox than the configured one.
    Escalation,
    /// A running command's connection that the sandbox's network policy
    /// does not allow: it waits for the answer.
    Connection,
}

impl ApprovalKind {
    /// The kind as the wire and the audit log spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalKind::Command => "command",
            ApprovalKind::HiddenCode => "hidden_code",
            ApprovalKind::Escalation => "escalation",
            ApprovalKind::Connection => "connection",
        }
    }
}

/// What a call would get beyond the configured sandbox.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Widening {
    /// Hosts (network-by-name entries) the command may reach in addition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    /// Directories the command may write in addition (absolute).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable_roots: Vec<String>,
}

impl Widening {
    /// Whether nothing widens.
    pub fn is_empty(&self) -> bool {
        self.network.is_empty() && self.writable_roots.is_empty()
    }
}

/// The person's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// Run it this once.
    AllowOnce,
    /// Run it, and the same thing again for this server's life without asking.
    AllowForServer,
    /// Do not run it (and do not ask again for the same request).
    Deny,
}

impl ApprovalAnswer {
    /// Every answer, in the order a person is offered them.
    pub const ALL: [ApprovalAnswer; 3] = [
        ApprovalAnswer::AllowOnce,
        ApprovalAnswer::AllowForServer,
        ApprovalAnswer::Deny,
    ];

    /// The answer as the wire spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalAnswer::AllowOnce => "allow_once",
            ApprovalAnswer::AllowForServer => "allow_for_server",
            ApprovalAnswer::Deny => "deny",
        }
    }

    /// What a person reads for it.
    pub fn title(self) -> &'static str {
        match self {
            ApprovalAnswer::AllowOnce => "Allow once",
            ApprovalAnswer::AllowForServer => "Allow for this server (until it stops)",
            ApprovalAnswer::Deny => "Deny (nothing runs)",
        }
    }

    /// The answer spelled `text`, if it is one.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == text)
    }

    /// Whether the call runs.
    pub fn allows(self) -> bool {
        self != ApprovalAnswer::Deny
    }
}

/// One thing an "allow for this server" grant covers, exactly: never a
/// pattern wider than what was asked.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GrantItem {
    /// A command part, by its normalized text (`make install`), for one tool.
    Part { tool: String, part: String },
    /// A whole call, exactly as given (command, environment and input), for
    /// what no part can name (an opaque command, hidden code).
    Call { tool: String, call: String },
    /// One more host for one command, exactly as written.
    Host {
        tool: String,
        command: String,
        host: String,
    },
    /// One more writable directory for one command, exactly as written.
    WritableRoot {
        tool: String,
        command: String,
        path: String,
    },
    /// Connections to one host (a name or an address, as the command asked
    /// for it) on one port, for every command of this server.
    Connect { host: String, port: u16 },
}

/// A question for the person: the command exactly as it will run, where,
/// what widens and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// What is asked about.
    pub kind: ApprovalKind,
    /// The tool, qualified (`bash.execute`).
    pub tool: String,
    /// The command, exactly as it will run.
    pub command: String,
    /// The directory it runs in.
    pub working_dir: String,
    /// Environment variables the call sets for it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Standard input the call gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// What the sandbox would allow beyond its configuration.
    #[serde(default, skip_serializing_if = "Widening::is_empty")]
    pub widens: Widening,
    /// The model's reason, when it gave one (an escalation's `reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why the server asks: the rule that matched, or what it cannot check.
    pub why: String,
    /// A rule the person could add to the configuration to allow this
    /// without being asked, when one exists that is no broader than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_rule: Option<String>,
    /// What "allow for this server" grants: exactly these items.
    pub grants: Vec<GrantItem>,
}

impl ApprovalRequest {
    /// The request's identity for remembering a denial: everything that
    /// decides what would run (not the model's reason, so rewording it does
    /// not ask again). Canonical JSON text.
    pub fn identity(&self) -> String {
        json!({
            "kind": self.kind,
            "tool": self.tool,
            "command": self.command,
            "working_dir": self.working_dir,
            "env": self.env,
            "stdin": self.stdin,
            "widens": self.widens,
        })
        .to_string()
    }

    /// The request as a JSON value (the audit log's and the C API's form).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// What the person reads: the command exactly, its directory, what
    /// widens, the model's reason and why the server asks.
    pub fn message(&self) -> String {
        let mut text = match self.kind {
            ApprovalKind::Escalation => format!("{} asks to run, with a wider sandbox:\n", self.tool),
            ApprovalKind::HiddenCode => format!(
                "{} asks to run a command whose code cannot be checked before it runs:\n",
                self.tool
            ),
            ApprovalKind::Command => format!("{} asks to run:\n", self.tool),
            ApprovalKind::Connection => format!(
                "A command of {} is connecting to {}, which its sandbox does not allow; the connection waits for your answer. The command:\n",
                self.tool,
                self.widens.network.join(", ")
            ),
        };
        let _ = writeln!(text, "\n    {}\n", self.command.replace('\n', "\n    "));
        let _ = writeln!(text, "in {}", self.working_dir);
        for (name, value) in &self.env {
            let _ = writeln!(text, "with {name}={value}");
        }
        if let Some(stdin) = &self.stdin {
            let _ = writeln!(text, "with standard input:\n    {}", stdin.replace('\n', "\n    "));
        }
        if !self.widens.network.is_empty() {
            let _ = writeln!(text, "network, in addition: {}", self.widens.network.join(", "));
        }
        if !self.widens.writable_roots.is_empty() {
            let _ = writeln!(
                text,
                "may write, in addition: {}",
                self.widens.writable_roots.join(", ")
            );
        }
        if let Some(reason) = &self.reason {
            let _ = writeln!(text, "reason given: {reason}");
        }
        let _ = write!(text, "asked because: {}", self.why);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            kind: ApprovalKind::Escalation,
            tool: "bash.execute".into(),
            command: "npm install".into(),
            working_dir: "/w".into(),
            env: BTreeMap::new(),
            stdin: None,
            widens: Widening {
                network: vec!["registry.npmjs.org".into()],
                writable_roots: vec![],
            },
            reason: Some("install deps".into()),
            why: "the call asks for a wider sandbox".into(),
            suggested_rule: None,
            grants: vec![],
        }
    }

    #[test]
    fn the_message_shows_command_dir_widening_and_reason() {
        let m = request().message();
        for needle in [
            "\n    npm install\n",
            "in /w",
            "network, in addition: registry.npmjs.org",
            "reason given: install deps",
        ] {
            assert!(m.contains(needle), "{needle:?} in {m}");
        }
    }

    #[test]
    fn the_identity_ignores_the_reason_only() {
        let a = request();
        let mut b = request();
        b.reason = Some("other words".into());
        assert_eq!(a.identity(), b.identity());
        b.command = "npm install x".into();
        assert_ne!(a.identity(), b.identity());
        let mut c = request();
        c.widens.network.push("evil.example".into());
        assert_ne!(a.identity(), c.identity());
    }

    #[test]
    fn answers_round_trip() {
        for a in ApprovalAnswer::ALL {
            assert_eq!(ApprovalAnswer::parse(a.as_str()), Some(a));
        }
        assert_eq!(ApprovalAnswer::parse("yes"), None);
    }
}

/// Who answered a request, for the audit log and the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnsweredBy {
    /// An "allow for this server" grant covered it: nobody was asked.
    Grant,
    /// The person denied the same request before: nobody was asked again.
    EarlierDenial,
    /// The library host's approver.
    Host,
    /// The person, through the MCP client (with no answer yet: a question
    /// put in a 2026-07-28 `input_required` result, answered in the retry).
    Client,
    /// Nobody: there was no way to ask.
    Nobody,
}

/// How a request was settled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApprovalOutcome {
    /// The answer; `None` when nobody could be asked (the call is refused).
    pub answer: Option<ApprovalAnswer>,
    /// Who answered.
    pub by: AnsweredBy,
    /// Why there is no real answer, when the asking failed (an approver that
    /// timed out or panicked, a client that declined or cancelled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ApprovalOutcome {
    /// Whether the call runs.
    pub fn allows(&self) -> bool {
        self.answer.is_some_and(ApprovalAnswer::allows)
    }
}
