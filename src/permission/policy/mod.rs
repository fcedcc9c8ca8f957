//! Allow/deny decisions per executed part, for hosts that match rules themselves.

pub(super) mod refusal;

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::permission::Class;
use crate::permission::classify::{Classification, classify, classify_call_args, is_catastrophic_rule, write_class};
use crate::permission::fnmatch::fnmatch;
use crate::permission::pattern::opaque_pattern;
use crate::permission::redirect::normalize_path;
use crate::permission::wrappers::unwrap::basename;
use crate::permission::{Analysis, Dialect, Opacity, Part, analyze_call_args, analyze_call_in, analyze_in};
use refusal::RefusalReason;

/// The outcome of [`PermissionPolicy::decide`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Every executed part is allowed and none is denied.
    Allow,
    /// Some part (or the tool) is denied.
    Deny,
    /// Neither: the host should ask the operator.
    Ask,
}

/// A rule entry that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    /// The entry as given.
    pub entry: String,
    /// What is wrong with it and how to fix it.
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "permission rule {:?}: {}", self.entry, self.message)
    }
}

impl std::error::Error for PolicyError {}

#[derive(Clone, Debug)]
struct Rule {
    entry: String,
    tool: String,
    /// The argument pattern after the first `:`; `None` for a tool-level rule.
    arg: Option<String>,
}

impl Rule {
    fn parse(entry: &str) -> Result<Rule, PolicyError> {
        let err = |message: &str| PolicyError {
            entry: entry.to_owned(),
            message: message.to_owned(),
        };
        if entry.trim().is_empty() {
            return Err(err(
                "the entry is empty; write a tool name like `bash.execute` or `bash.execute:git *`",
            ));
        }
        if entry.contains('\0') {
            return Err(err("the entry contains a NUL byte; remove it"));
        }
        let trailing = entry.len() - entry.trim_end_matches('\\').len();
        if trailing % 2 == 1 {
            return Err(err(
                "the entry ends with a lone backslash, which escapes nothing; write `\\\\` for a literal backslash",
            ));
        }
        let (tool, arg) = match entry.split_once(':') {
            Some((t, a)) => (t, Some(a)),
            None => (entry, None),
        };
        if tool.is_empty() {
            return Err(err("the tool name before `:` is empty; write `bash.execute:<pattern>`"));
        }
        if arg.is_some_and(str::is_empty) {
            return Err(err(
                "the pattern after `:` is empty; write `bash.execute:git *`, or drop the `:` for the whole tool",
            ));
        }
        Ok(Rule {
            entry: entry.to_owned(),
            tool: tool.to_owned(),
            arg: arg.map(str::to_owned),
        })
    }

    fn tool_matches(&self, tool: &str) -> bool {
        fnmatch(&self.tool, tool)
    }

    /// Whether this is a rule about writes (`<tool>:>PATH`).
    fn is_write_rule(&self) -> bool {
        self.arg.as_deref().is_some_and(|a| a.starts_with('>'))
    }

    /// Whether this write rule matches a write of `target` (in its normal form) by `tool`.
    fn matches_write(&self, tool: &str, target: &str) -> bool {
        self.is_write_rule() && self.tool_matches(tool) && fnmatch(&self.entry, &format!("{tool}:>{target}"))
    }

    /// The literal text of the argument pattern before its first wildcard, escape or
    /// bracket (`git push*` → `git push`).
    fn literal_prefix(&self) -> &str {
        let arg = self.arg.as_deref().unwrap_or("");
        let end = arg.find(['*', '?', '[', '\\']).unwrap_or(arg.len());
        &arg[..end]
    }

    /// Whether this argument rule is about the command `word`: its literal prefix starts
    /// with `word ` (so `git push*` names git), or is `word` itself followed by a wildcard.
    fn names_command(&self, word: &str) -> bool {
        let prefix = self.literal_prefix();
        match prefix.strip_prefix(word) {
            Some(rest) => {
                rest.starts_with(' ') || (rest.is_empty() && prefix.len() < self.arg.as_deref().map_or(0, str::len))
            }
            None => false,
        }
    }

    /// Whether this argument rule matches `<tool>:<text>`. The text is also tried with a
    /// trailing space, so that `git *` covers a bare `git` (and `rm *` denies the `rm`
    /// that `xargs rm` runs with arguments from its input).
    fn matches(&self, tool: &str, text: &str) -> bool {
        if self.arg.is_none() || !self.tool_matches(tool) {
            return false;
        }
        let subject = format!("{tool}:{text}");
        fnmatch(&self.entry, &subject) || fnmatch(&self.entry, &format!("{subject} "))
    }
}

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
    allow: Vec<Rule>,
    /// Rules whose match puts the call to the person (see [`PermissionPolicy::with_ask`]).
    ask: Vec<Rule>,
    deny: Vec<Rule>,
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
            allow: allow
                .iter()
                .map(|e| Rule::parse(e.as_ref()))
                .collect::<Result<_, _>>()?,
            ask: Vec::new(),
            deny: deny.iter().map(|e| Rule::parse(e.as_ref())).collect::<Result<_, _>>()?,
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
        self.ask = ask.iter().map(|e| Rule::parse(e.as_ref())).collect::<Result<_, _>>()?;
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
            .decision
    }

    /// [`decide`](Self::decide) for arguments already parsed.
    pub fn decide_args(&self, tool_name: &str, args: &Map<String, Value>) -> Decision {
        self.evaluate(tool_name, &logged(tool_name, analyze_call_args(args, self.dialect)))
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
        self.evaluate(tool_name, &analyze_in(command, self.dialect)).decision
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
        self.evaluate(tool_name, &logged(tool_name, analyze_call_in(args_json, self.dialect)))
            .explanation
    }

    /// [`explain`](Self::explain) for arguments already parsed.
    pub fn explain_args(&self, tool_name: &str, args: &Map<String, Value>) -> Value {
        self.evaluate(tool_name, &logged(tool_name, analyze_call_args(args, self.dialect)))
            .explanation
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
            .refusal
    }

    fn evaluate(&self, tool: &str, analysis: &Analysis) -> Evaluation {
        let subjects: Vec<String> = analysis
            .parts
            .iter()
            .map(|p| format!("{tool}:{}", p.normalized_text))
            .collect();
        let opaque_subject = opaque_pattern(tool);
        let mut parts = Vec::new();
        // Each part's text, decision and deciding rule, for the refusal reasons.
        let mut part_checks: Vec<(String, Decision, Option<String>)> = Vec::new();
        let tool_deny = self.deny.iter().find(|r| r.arg.is_none() && r.tool_matches(tool));
        let tool_allow = self.allow.iter().find(|r| r.arg.is_none() && r.tool_matches(tool));
        let mut any_deny = tool_deny.map(|r| r.entry.clone());
        // What ask rules matched: the call is put to the person unless denied.
        let mut asked: Vec<RefusalReason> = self
            .ask
            .iter()
            .filter(|r| r.arg.is_none() && r.tool_matches(tool))
            .map(|r| RefusalReason::CallAsked { rule: r.entry.clone() })
            .take(1)
            .collect();
        let arg_asks: Vec<&Rule> = self
            .ask
            .iter()
            .filter(|r| r.arg.is_some() && !r.is_write_rule() && r.tool_matches(tool))
            .collect();
        let mut all_allowed = !analysis.parts.is_empty();
        // A deny rule that could not be checked: (rule, why).
        let mut unsure: Option<(String, String)> = None;
        let arg_denies: Vec<&Rule> = self
            .deny
            .iter()
            .filter(|r| r.arg.is_some() && r.tool_matches(tool))
            .collect();
        for (part, subject) in analysis.parts.iter().zip(&subjects) {
            let base = basename_form(part);
            let deny = self
                .deny
                .iter()
                .find(|r| r.matches(tool, &part.normalized_text) || base.as_ref().is_some_and(|b| r.matches(tool, b)));
            let allow = self.allow.iter().find(|r| r.matches(tool, &part.normalized_text));
            let expanding = part.args.iter().skip(1).any(|a| may_expand(a));
            let named_by = || {
                let word = part.command_word.as_str();
                let short = basename(word);
                arg_denies
                    .iter()
                    .find(|r| r.names_command(word) || r.names_command(short))
            };
            let unchecked = if deny.is_none() && expanding { named_by() } else { None };
            let ask = arg_asks
                .iter()
                .find(|r| r.matches(tool, &part.normalized_text) || base.as_ref().is_some_and(|b| r.matches(tool, b)))
                .or_else(|| {
                    let word = part.command_word.as_str();
                    let short = basename(word);
                    arg_asks
                        .iter()
                        .find(|r| expanding && (r.names_command(word) || r.names_command(short)))
                });
            if deny.is_none()
                && let Some(r) = ask
            {
                asked.push(RefusalReason::PartAsked {
                    part: part.normalized_text.clone(),
                    rule: r.entry.clone(),
                });
            }
            let (decision, rule, why) = match (deny, unchecked, allow) {
                (Some(d), _, _) => (Decision::Deny, Some(d.entry.clone()), None),
                (None, _, _) if ask.is_some() => (Decision::Ask, ask.map(|r| r.entry.clone()), None),
                (None, Some(d), _) => {
                    let why = format!(
                        "an argument may expand to text the deny rule `{}` would match, so the rule cannot be checked",
                        d.entry
                    );
                    if unsure.is_none() {
                        unsure = Some((d.entry.clone(), why.clone()));
                    }
                    (Decision::Ask, Some(d.entry.clone()), Some(why))
                }
                (None, None, Some(a)) => (Decision::Allow, Some(a.entry.clone()), None),
                (None, None, None) => (Decision::Ask, None, None),
            };
            if decision == Decision::Deny && any_deny.is_none() {
                any_deny = rule.clone();
            }
            all_allowed &= decision == Decision::Allow;
            part_checks.push((part.normalized_text.clone(), decision, rule.clone()));
            let mut entry =
                json!({"command": part.normalized_text, "subject": subject, "decision": decision, "rule": rule});
            if let Some(b) = &base {
                entry["basename_subject"] = json!(format!("{tool}:{b}"));
            }
            if let Some(why) = why {
                entry["reason"] = json!(why);
            }
            parts.push(entry);
        }
        let writes = self.check_writes(tool, analysis, tool_allow.is_some(), &mut any_deny, &mut unsure);
        for w in writes.iter().filter(|w| w.asked) {
            asked.push(RefusalReason::WriteAsked {
                target: w.target.clone(),
                rule: w.rule.clone().unwrap_or_default(),
            });
        }
        if analysis.is_opaque() && any_deny.is_none() {
            any_deny = self
                .deny
                .iter()
                .find(|r| r.matches(tool, "{unknown}"))
                .map(|r| r.entry.clone());
        }
        if analysis.is_opaque() {
            // An opaque command may run what an ask rule names.
            if let Some(r) = self
                .ask
                .iter()
                .find(|r| r.matches(tool, "{unknown}"))
                .or_else(|| arg_asks.first().copied())
            {
                asked.push(RefusalReason::CallAsked { rule: r.entry.clone() });
            }
        }
        if analysis.is_opaque()
            && any_deny.is_none()
            && unsure.is_none()
            && let Some(r) = arg_denies.first()
        {
            unsure = Some((
                r.entry.clone(),
                format!(
                    "the command is opaque and deny rules such as `{}` exist: what it runs could be denied",
                    r.entry
                ),
            ));
        }
        let opaque_allow = self
            .allow
            .iter()
            .find(|r| r.arg.as_deref() == Some("*") && r.tool_matches(tool))
            .map(|r| r.entry.clone());
        let unsure_reason;
        let mut refusal = Vec::new();
        let (decision, rule, reason) = if let Some(rule) = any_deny {
            // What the deny rules matched, and nothing else: a part merely not
            // allowed did not decide a denial.
            if let Some(r) = tool_deny {
                refusal.push(RefusalReason::CallDenied { rule: r.entry.clone() });
            }
            for (part, decision, rule) in &part_checks {
                if let (Decision::Deny, Some(rule)) = (decision, rule) {
                    refusal.push(RefusalReason::PartDenied {
                        part: part.clone(),
                        rule: rule.clone(),
                    });
                }
            }
            for w in writes.iter().filter(|w| w.decision == Decision::Deny) {
                refusal.push(RefusalReason::WriteDenied {
                    target: w.target.clone(),
                    rule: w.rule.clone().unwrap_or_default(),
                });
            }
            if refusal.is_empty() {
                refusal.push(RefusalReason::CallDenied { rule: rule.clone() });
            }
            (Decision::Deny, Some(rule), "a deny rule matched")
        } else if let Some(first) = asked.first() {
            let rule = first.rule().map(str::to_owned);
            refusal.extend(asked.iter().cloned());
            (Decision::Ask, rule, "an ask rule matched")
        } else if let Some((rule, why)) = unsure {
            refusal.push(RefusalReason::Unchecked {
                rule: rule.clone(),
                why: why.clone(),
            });
            unsure_reason = why;
            (Decision::Ask, Some(rule), unsure_reason.as_str())
        } else if let Some(r) = tool_allow {
            (
                Decision::Allow,
                Some(r.entry.clone()),
                "a tool-level allow rule matched",
            )
        } else if analysis.is_opaque() {
            match opaque_allow {
                Some(rule) => (
                    Decision::Allow,
                    Some(rule),
                    "the command is opaque and `<tool>:*` is allowed",
                ),
                None => {
                    let why = "the command is opaque: only a tool-level or `<tool>:*` rule allows it";
                    refusal.push(RefusalReason::Other { why: why.into() });
                    (Decision::Ask, None, why)
                }
            }
        } else if analysis.parts.is_empty() {
            let why = "the command runs nothing that a rule can name";
            refusal.push(RefusalReason::Other { why: why.into() });
            (Decision::Ask, None, why)
        } else if let Some(w) = writes.iter().find(|w| w.decision == Decision::Ask) {
            unsure_reason = w.reason.clone().unwrap_or_default();
            refusal.push(RefusalReason::Other {
                why: unsure_reason.clone(),
            });
            (Decision::Ask, None, unsure_reason.as_str())
        } else if all_allowed {
            (Decision::Allow, None, "every part matched an allow rule")
        } else {
            // Allow rules decide: name each part none of them matches.
            for (part, decision, rule) in &part_checks {
                if *decision == Decision::Ask && rule.is_none() {
                    refusal.push(RefusalReason::PartNotAllowed { part: part.clone() });
                }
            }
            (Decision::Ask, None, "some part matched no rule")
        };
        let opaque: Vec<&Opacity> = analysis.opaque.iter().collect();
        let value = json!({
            "tool": tool,
            "decision": decision,
            "rule": rule,
            "reason": reason,
            "opaque": opaque,
            "opaque_subject": if analysis.is_opaque() { Some(opaque_subject) } else { None },
            "parts": parts,
            "writes": writes.iter().map(WriteCheck::to_value).collect::<Vec<_>>(),
        });
        Evaluation {
            decision,
            explanation: value,
            refusal,
        }
    }
}

/// What [`PermissionPolicy::evaluate`] found: the decision, its explanation
/// for [`PermissionPolicy::explain`], and the reasons when it is not Allow.
struct Evaluation {
    decision: Decision,
    explanation: Value,
    refusal: Vec<RefusalReason>,
}

/// How one write (a redirection's target) was decided.
struct WriteCheck {
    target: String,
    subject: String,
    decision: Decision,
    rule: Option<String>,
    reason: Option<String>,
    /// Whether an ask rule decided it.
    asked: bool,
}

impl WriteCheck {
    fn to_value(&self) -> Value {
        let mut entry =
            json!({"target": self.target, "subject": self.subject, "decision": self.decision, "rule": self.rule});
        if let Some(why) = &self.reason {
            entry["reason"] = json!(why);
        }
        entry
    }
}

impl PermissionPolicy {
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
            if !self.allow.iter().any(|r| named(&r, &part.command)) {
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
                self.allow
                    .iter()
                    .any(|r| r.matches_write(tool, &target) && r.literal_prefix().len() > 1)
            };
            if writes.is_empty() || !writes.iter().all(explicit) {
                return false;
            }
        }
        true
    }

    /// Checks each write of `analysis` against the write rules: a deny rule that matches
    /// denies the command; a target that may expand cannot be checked while write deny
    /// rules exist (ask); a write the classifier rates dangerous or worse (a disk, a
    /// shell startup file, `~/.ssh`, `.git/config`, ...) needs a write allow rule, or a
    /// tool-level or `<tool>:*` one. Other writes need no rule. Returns one entry per
    /// write for the explanation.
    fn check_writes(
        &self,
        tool: &str,
        analysis: &Analysis,
        tool_allowed: bool,
        any_deny: &mut Option<String>,
        unsure: &mut Option<(String, String)>,
    ) -> Vec<WriteCheck> {
        let write_denies: Vec<&Rule> = self
            .deny
            .iter()
            .filter(|r| r.is_write_rule() && r.tool_matches(tool))
            .collect();
        let blanket = tool_allowed
            || self
                .allow
                .iter()
                .any(|r| r.arg.as_deref() == Some("*") && r.tool_matches(tool));
        let mut out = Vec::new();
        for redirect in analysis.redirects.iter().filter(|r| r.mode.writes()) {
            let target = normalize_path(&redirect.target);
            let subject = format!("{tool}:>{target}");
            let deny = write_denies.iter().find(|r| r.matches_write(tool, &target));
            let ask = self.ask.iter().find(|r| r.matches_write(tool, &target));
            let allow = self.allow.iter().find(|r| r.matches_write(tool, &target));
            let sensitive = write_class(&redirect.target).filter(|(c, _)| *c >= Class::Dangerous);
            let (decision, rule, reason) = if let Some(d) = deny {
                (Decision::Deny, Some(d.entry.clone()), None)
            } else if let Some(a) = ask {
                (Decision::Ask, Some(a.entry.clone()), None)
            } else if !redirect.literal && !write_denies.is_empty() {
                let why = format!(
                    "the write target `{}` may expand to a path the deny rule `{}` would match",
                    redirect.target, write_denies[0].entry
                );
                (Decision::Ask, Some(write_denies[0].entry.clone()), Some(why))
            } else if let Some(a) = allow {
                (Decision::Allow, Some(a.entry.clone()), None)
            } else if let Some((_, id)) = sensitive.filter(|_| !blanket) {
                let why = format!(
                    "the command writes `{}` ({id}), which needs a write rule such as `{tool}:>{target}`",
                    redirect.target
                );
                (Decision::Ask, None, Some(why))
            } else {
                (Decision::Allow, None, None)
            };
            if decision == Decision::Deny && any_deny.is_none() {
                *any_deny = rule.clone();
            }
            if decision == Decision::Ask && rule.is_some() && ask.is_none() && unsure.is_none() {
                *unsure = Some((rule.clone().unwrap_or_default(), reason.clone().unwrap_or_default()));
            }
            out.push(WriteCheck {
                target: redirect.target.clone(),
                subject,
                decision,
                rule,
                reason,
                asked: deny.is_none() && ask.is_some(),
            });
        }
        out
    }
}

/// The part's text with a path command word replaced by its basename (`/bin/rm x` →
/// `rm x`), for deny rules; `None` when the command word is not a path.
fn basename_form(part: &Part) -> Option<String> {
    let word = part.command_word.as_str();
    let (_, base) = word.rsplit_once('/')?;
    if base.is_empty() {
        return None;
    }
    let rest = &part.normalized_text[word.len().min(part.normalized_text.len())..];
    Some(format!("{base}{rest}"))
}

/// Whether an argument (quotes removed, expansions as written) may be changed by an
/// expansion: parameter, command or arithmetic expansion, globbing, brace or tilde
/// expansion. Quoted text with these characters counts too (the quotes are gone).
fn may_expand(arg: &str) -> bool {
    arg.contains(['$', '`', '*', '?', '[', '{']) || arg.starts_with('~') || arg.contains("<(") || arg.contains(">(")
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
