//! Allow/deny decisions per executed part, for hosts that match rules themselves.

mod evaluate;
pub(super) mod refusal;
mod rule;

use serde_json::{Map, Value};

use crate::permission::Class;
use crate::permission::classify::{Classification, classify, classify_call_args, is_catastrophic_rule, write_class};
use crate::permission::redirect::normalize_path;
use crate::permission::wrappers::unwrap::basename;
use crate::permission::{Analysis, Dialect, analyze_call_args, analyze_call_in, analyze_in};
use evaluate::{Evaluation, evaluate};
use refusal::RefusalReason;
use rule::{Rule, Rules};

pub use evaluate::Decision;
pub use rule::PolicyError;

/// Allow and deny rules in the host's format, applied to each executed part.
///
/// Entries are a tool name (`bash.execute`), a tool glob (`bash.*`) or
/// `tool:argpattern` (`bash.execute:git status*`), matched with POSIX `fnmatch(3)`.
/// Each part of a command is matched separately as `<tool>:<normalized text>`:
/// deny wins if any part (or the tool) is denied; allow needs every part allowed;
/// otherwise ask. Opaque commands are allowed only by a tool-level rule or `<tool>:*`.
///
/// Deny rules are kept from being sidestepped: a part whose command word is a path is
/// also matched by its basename (`/bin/rm x` as `rm x`); a part with an argument that
/// may expand (`git ${x:-push} origin`) is asked, never allowed, when a deny rule names
/// its command word (`git push*`); and an opaque command is asked, never allowed, while
/// any argument deny rule applies to the tool, unless a deny rule matches it. No allow
/// rule, tool-level or `<tool>:*`, overrides these.
///
/// ```
/// use bash_mcp::permission::{Decision, PermissionPolicy};
/// let p = PermissionPolicy::new(&["bash.execute:*"], &["bash.execute:rm *", "bash.execute:git push*"]).unwrap();
/// assert_eq!(p.decide_command("bash.execute", "/bin/rm -rf x"), Decision::Deny);
/// assert_eq!(p.decide_command("bash.execute", "git ${x:-push} origin"), Decision::Ask);
/// assert_eq!(p.decide_command("bash.execute", "eval \"rm x\""), Decision::Ask);
/// assert_eq!(p.decide_command("bash.execute", "git status"), Decision::Allow);
/// ```
///
/// ```
/// use bash_mcp::permission::{Decision, PermissionPolicy};
/// let policy = PermissionPolicy::new(&["bash.execute:git *"], &["bash.execute:rm *"]).unwrap();
/// assert_eq!(policy.decide_command("bash.execute", "git add . && git commit -m x"), Decision::Allow);
/// assert_eq!(policy.decide_command("bash.execute", "git status; ls"), Decision::Ask);
/// assert_eq!(policy.decide_command("bash.execute", "git status; rm -rf ~"), Decision::Deny);
/// ```
#[derive(Clone, Debug)]
pub struct PermissionPolicy {
    /// The allow, ask (see [`PermissionPolicy::with_ask`]) and deny rules.
    rules: Rules,
    dialect: Dialect,
}

impl PermissionPolicy {
    /// Builds a policy; fails on the first unusable entry, naming it.
    ///
    /// ```
    /// use bash_mcp::permission::PermissionPolicy;
    /// let err = PermissionPolicy::new(&["bash.execute:"], &[] as &[&str]).unwrap_err();
    /// assert!(err.to_string().contains("bash.execute:"));
    /// ```
    pub fn new<A: AsRef<str>, D: AsRef<str>>(allow: &[A], deny: &[D]) -> Result<Self, PolicyError> {
        Ok(PermissionPolicy {
            rules: Rules {
                allow: allow
                    .iter()
                    .map(|e| Rule::parse(e.as_ref()))
                    .collect::<Result<_, _>>()?,
                ask: Vec::new(),
                deny: deny.iter().map(|e| Rule::parse(e.as_ref())).collect::<Result<_, _>>()?,
            },
            dialect: Dialect::default(),
        })
    }

    /// The policy with `ask` rules: a call with any part (or write, or the
    /// tool itself) matching one is [`Decision::Ask`] whatever the allow rules
    /// say, unless a deny rule matches (deny wins over ask, ask over allow).
    /// They are matched like deny rules, so they cannot be sidestepped either:
    /// a path command word is also matched by its basename, an argument that
    /// may expand is asked when an ask rule names its command word, and an
    /// opaque command is asked while any argument ask rule applies to the tool.
    ///
    /// ```
    /// use bash_mcp::permission::{Decision, PermissionPolicy};
    /// let p = PermissionPolicy::new(&["bash.execute:git *"], &["bash.execute:rm *"])
    ///     .unwrap()
    ///     .with_ask(&["bash.execute:git push*"])
    ///     .unwrap();
    /// assert_eq!(p.decide_command("bash.execute", "git status"), Decision::Allow);
    /// assert_eq!(p.decide_command("bash.execute", "git push origin"), Decision::Ask);
    /// assert_eq!(p.decide_command("bash.execute", "git push; rm x"), Decision::Deny);
    /// ```
    pub fn with_ask<A: AsRef<str>>(mut self, ask: &[A]) -> Result<Self, PolicyError> {
        self.rules.ask = ask.iter().map(|e| Rule::parse(e.as_ref())).collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// The policy with commands analysed for a shell of `dialect` (by default
    /// [`Dialect::Unknown`]: bash or a POSIX `sh`).
    ///
    /// ```
    /// use bash_mcp::permission::{Decision, Dialect, PermissionPolicy};
    /// let p = PermissionPolicy::new(&["bash.execute:ls *"], &[] as &[&str]).unwrap();
    /// assert_eq!(p.decide_command("bash.execute", "[[ -d x ]] && ls"), Decision::Ask);
    /// let p = p.with_dialect(Dialect::Bash);
    /// assert_eq!(p.decide_command("bash.execute", "[[ -d x ]] && ls"), Decision::Allow);
    /// ```
    pub fn with_dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// The dialect commands are analysed in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Decides a tool call whose arguments are `args_json` (`{"command": "..."}`).
    /// Malformed arguments are treated as an opaque command.
    ///
    /// ```
    /// use bash_mcp::permission::{Decision, PermissionPolicy};
    /// let p = PermissionPolicy::new(&["bash.execute:git *"], &[] as &[&str]).unwrap();
    /// assert_eq!(p.decide("bash.execute", r#"{"command":"env FOO=1 git status"}"#), Decision::Allow);
    /// assert_eq!(p.decide("bash.execute", "{}"), Decision::Ask);
    /// ```
    pub fn decide(&self, tool_name: &str, args_json: &str) -> Decision {
        self.evaluate(tool_name, &logged(tool_name, analyze_call_in(args_json, self.dialect)))
            .verdict
            .decision
    }

    /// [`decide`](Self::decide) for arguments already parsed.
    pub fn decide_args(&self, tool_name: &str, args: &Map<String, Value>) -> Decision {
        self.evaluate(tool_name, &logged(tool_name, analyze_call_args(args, self.dialect)))
            .verdict
            .decision
    }

    /// Decides running the shell text `command` with `tool_name`.
    ///
    /// ```
    /// use bash_mcp::permission::{Decision, PermissionPolicy};
    /// let p = PermissionPolicy::new(&["bash.execute:*"], &[] as &[&str]).unwrap();
    /// assert_eq!(p.decide_command("bash.execute", "eval x"), Decision::Allow);
    /// ```
    pub fn decide_command(&self, tool_name: &str, command: &str) -> Decision {
        self.evaluate(tool_name, &analyze_in(command, self.dialect))
            .verdict
            .decision
    }

    /// Explains [`decide`](Self::decide): for each part, the rule that decided it.
    ///
    /// ```
    /// use bash_mcp::permission::PermissionPolicy;
    /// let p = PermissionPolicy::new(&["bash.execute:git *"], &[] as &[&str]).unwrap();
    /// let e = p.explain("bash.execute", r#"{"command":"git status; ls"}"#);
    /// assert_eq!(e["decision"], "ask");
    /// assert_eq!(e["parts"][0]["rule"], "bash.execute:git *");
    /// assert_eq!(e["parts"][1]["decision"], "ask");
    /// ```
    pub fn explain(&self, tool_name: &str, args_json: &str) -> Value {
        let analysis = logged(tool_name, analyze_call_in(args_json, self.dialect));
        self.evaluate(tool_name, &analysis).explanation(tool_name, &analysis)
    }

    /// [`explain`](Self::explain) for arguments already parsed.
    pub fn explain_args(&self, tool_name: &str, args: &Map<String, Value>) -> Value {
        let analysis = logged(tool_name, analyze_call_args(args, self.dialect));
        self.evaluate(tool_name, &analysis).explanation(tool_name, &analysis)
    }

    /// Why the call whose arguments are `args` is not allowed: the facts that
    /// decided it, each true for the rules configured (empty when it is
    /// allowed). A denied call lists what the deny rules matched, never parts
    /// that were merely not allowed; parts are said to match no allow rule
    /// only when that is what kept the call from being allowed.
    ///
    /// ```
    /// use bash_mcp::permission::{PermissionPolicy, RefusalReason};
    /// let args = |c: &str| serde_json::json!({"command": c}).as_object().unwrap().clone();
    /// let p = PermissionPolicy::new(&["bash.execute"], &["bash.execute:rm *"]).unwrap();
    /// assert_eq!(
    ///     p.refusal_args("bash.execute", &args("ls; rm -rf x")),
    ///     [RefusalReason::PartDenied { part: "rm -rf x".into(), rule: "bash.execute:rm *".into() }]
    /// );
    /// let p = PermissionPolicy::new(&["bash.execute:git *"], &[] as &[&str]).unwrap();
    /// assert_eq!(
    ///     p.refusal_args("bash.execute", &args("git status; ls")),
    ///     [RefusalReason::PartNotAllowed { part: "ls".into() }]
    /// );
    /// assert!(p.refusal_args("bash.execute", &args("git status")).is_empty());
    /// ```
    pub fn refusal_args(&self, tool_name: &str, args: &Map<String, Value>) -> Vec<RefusalReason> {
        self.evaluate(tool_name, &logged(tool_name, analyze_call_args(args, self.dialect)))
            .verdict
            .refusal
    }
}

impl PermissionPolicy {
    fn evaluate(&self, tool: &str, analysis: &Analysis) -> Evaluation {
        evaluate(&self.rules, tool, analysis)
    }

    /// Whether the operator's allow rules name every catastrophic finding of the call
    /// whose arguments are `args_json` explicitly: each catastrophic part by a rule that
    /// names its command (`bash.execute:rm *`, not `bash.execute:*` or a tool-level
    /// rule), each catastrophic write by a write rule with a path (`bash.execute:>/dev/sdb`).
    /// Whole-command findings (a fork bomb, `curl | sh`) are never allowed this way.
    /// The binary keeps refusing catastrophic calls under rules unless this holds.
    ///
    /// ```
    /// use bash_mcp::permission::PermissionPolicy;
    /// let call = |c: &str| serde_json::json!({"command": c}).to_string();
    /// let p = PermissionPolicy::new(&["bash.execute:*", "bash.execute:mkfs.ext4 /dev/sdb*"], &[] as &[&str]).unwrap();
    /// assert!(p.allows_catastrophic_explicitly("bash.execute", &call("mkfs.ext4 /dev/sdb1")));
    /// assert!(!p.allows_catastrophic_explicitly("bash.execute", &call("rm -rf /")));
    /// assert!(!p.allows_catastrophic_explicitly("bash.execute", &call("echo x > /dev/sda")));
    /// ```
    pub fn allows_catastrophic_explicitly(&self, tool: &str, args_json: &str) -> bool {
        match crate::permission::call::object(args_json) {
            Ok(args) => self.allows_catastrophic_explicitly_args(tool, &args),
            Err(_) => self.allows_catastrophic_in(
                tool,
                classify(""),
                logged(tool, analyze_call_in(args_json, self.dialect)),
            ),
        }
    }

    /// [`allows_catastrophic_explicitly`](Self::allows_catastrophic_explicitly)
    /// for arguments already parsed.
    pub fn allows_catastrophic_explicitly_args(&self, tool: &str, args: &Map<String, Value>) -> bool {
        let analysis = logged(tool, analyze_call_args(args, self.dialect));
        self.allows_catastrophic_in(tool, classify_call_args(args), analysis)
    }

    fn allows_catastrophic_in(&self, tool: &str, classification: Classification, analysis: Analysis) -> bool {
        let named = |r: &&Rule, text: &str| {
            let word = text.split(' ').next().unwrap_or("");
            !r.is_write_rule() && (r.names_command(word) || r.names_command(basename(word))) && r.matches(tool, text)
        };
        let mut covered: Vec<&str> = Vec::new();
        for part in classification.parts.iter().filter(|p| p.class == Class::Catastrophic) {
            if !self.rules.allow.iter().any(|r| named(&r, &part.command)) {
                return false;
            }
            covered.extend(part.rules.iter().map(String::as_str));
        }
        for id in &classification.rules {
            if covered.contains(&id.as_str()) || !is_catastrophic_rule(id) {
                continue;
            }
            let writes: Vec<&str> = analysis
                .writes()
                .filter(|w| write_class(w).is_some_and(|(c, rule)| c == Class::Catastrophic && rule == id))
                .collect();
            let explicit = |w: &&str| {
                let target = normalize_path(w);
                self.rules
                    .allow
                    .iter()
                    .any(|r| r.matches_write(tool, &target) && r.literal_prefix().len() > 1)
            };
            if writes.is_empty() || !writes.iter().all(explicit) {
                return false;
            }
        }
        true
    }
}

/// `analysis`, after a debug line when nothing of the call could be read.
fn logged(tool: &str, analysis: Analysis) -> Analysis {
    if analysis.parts.is_empty()
        && let Some(o) = analysis.opaque.first()
    {
        tracing::debug!(tool, "permission policy: {}", o.reason);
    }
    analysis
}
