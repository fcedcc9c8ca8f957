//! How a policy's rules decide one analysed call, as values: each part and
//! each write checked ([`PartCheck`], [`WriteCheck`]), then the call's
//! [`Verdict`] from them. Text and JSON are made from these at the edge
//! ([`Evaluation::explanation`]), never read back.

use serde::Serialize;
use serde_json::{Value, json};

use super::refusal::RefusalReason;
use super::rule::{Rule, Rules};
use crate::permission::Class;
use crate::permission::classify::write_class;
use crate::permission::pattern::opaque_pattern;
use crate::permission::redirect::normalize_path;
use crate::permission::wrappers::unwrap::basename;
use crate::permission::{Analysis, Opacity, Part};

/// The outcome of [`PermissionPolicy::decide`](super::PermissionPolicy::decide).
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

/// How the rules decided one part of a command.
pub(super) struct PartCheck {
    /// The part's text ([`Part::normalized_text`]).
    command: String,
    /// The text with a path command word cut to its basename (`/bin/rm x` → `rm x`).
    basename: Option<String>,
    decision: Decision,
    /// The rule that decided it.
    rule: Option<String>,
    /// Why the deny rule in `rule` could not be checked, when that decided it.
    unchecked: Option<String>,
    /// The ask rule that matched it, unless a deny rule did.
    asked: Option<String>,
}

/// How the rules decided one write (a redirection's target).
pub(super) struct WriteCheck {
    /// The target as written.
    target: String,
    /// The target in the normal form write rules match.
    normal: String,
    decision: Decision,
    rule: Option<String>,
    reason: Option<String>,
    /// Whether an ask rule decided it.
    asked: bool,
    /// Whether a deny rule could not be checked on it (the target may expand).
    unchecked: bool,
}

/// What decided the call: its decision, the rule and a sentence, and the
/// facts that refused it when it is not Allow.
pub(super) struct Verdict {
    pub decision: Decision,
    pub rule: Option<String>,
    pub reason: String,
    pub refusal: Vec<RefusalReason>,
}

impl Verdict {
    fn new(decision: Decision, rule: Option<String>, reason: impl Into<String>) -> Self {
        Verdict {
            decision,
            rule,
            reason: reason.into(),
            refusal: Vec::new(),
        }
    }

    fn refused(mut self, refusal: Vec<RefusalReason>) -> Self {
        self.refusal = refusal;
        self
    }
}

/// A call decided: the verdict and the checks of its parts and writes.
pub(super) struct Evaluation {
    pub verdict: Verdict,
    parts: Vec<PartCheck>,
    writes: Vec<WriteCheck>,
}

/// Decides `analysis`, run by `tool`, under `rules`.
pub(super) fn evaluate(rules: &Rules, tool: &str, analysis: &Analysis) -> Evaluation {
    let scope = Scope::new(rules, tool);
    let parts: Vec<PartCheck> = analysis.parts.iter().map(|p| scope.check_part(p)).collect();
    let writes = scope.check_writes(analysis);
    let verdict = scope.verdict(analysis, &parts, &writes);
    Evaluation { verdict, parts, writes }
}

/// The rules that apply to one tool, sorted by what they match.
struct Scope<'r> {
    rules: &'r Rules,
    tool: &'r str,
    tool_deny: Option<&'r Rule>,
    tool_allow: Option<&'r Rule>,
    tool_ask: Option<&'r Rule>,
    /// Argument ask rules (not write rules).
    arg_asks: Vec<&'r Rule>,
    /// Argument deny rules, write rules included.
    arg_denies: Vec<&'r Rule>,
}

impl<'r> Scope<'r> {
    fn new(rules: &'r Rules, tool: &'r str) -> Self {
        let tool_level = |r: &&Rule| r.arg.is_none() && r.tool_matches(tool);
        Scope {
            rules,
            tool,
            tool_deny: rules.deny.iter().find(tool_level),
            tool_allow: rules.allow.iter().find(tool_level),
            tool_ask: rules.ask.iter().find(tool_level),
            arg_asks: rules
                .ask
                .iter()
                .filter(|r| r.arg.is_some() && !r.is_write_rule() && r.tool_matches(tool))
                .collect(),
            arg_denies: rules
                .deny
                .iter()
                .filter(|r| r.arg.is_some() && r.tool_matches(tool))
                .collect(),
        }
    }

    /// Checks one part: deny rules (also on its basename form), then ask rules,
    /// then deny rules it may sidestep through an expansion, then allow rules.
    fn check_part(&self, part: &Part) -> PartCheck {
        let tool = self.tool;
        let text = part.normalized_text.as_str();
        let base = basename_form(part);
        let on_part = |r: &Rule| r.matches(tool, text) || base.as_ref().is_some_and(|b| r.matches(tool, b));
        let expanding = part.args.iter().skip(1).any(|a| may_expand(a));
        let (word, short) = (part.command_word.as_str(), basename(&part.command_word));
        let names_word = |r: &Rule| r.names_command(word) || r.names_command(short);
        let deny = self.rules.deny.iter().find(|r| on_part(r));
        let allow = self.rules.allow.iter().find(|r| r.matches(tool, text));
        let unchecked = if deny.is_none() && expanding {
            self.arg_denies.iter().find(|r| names_word(r))
        } else {
            None
        };
        let ask = self
            .arg_asks
            .iter()
            .find(|r| on_part(r))
            .or_else(|| self.arg_asks.iter().find(|r| expanding && names_word(r)));
        let entry = |r: &Rule| Some(r.entry.clone());
        let (decision, rule, why) = match (deny, unchecked, allow) {
            (Some(d), _, _) => (Decision::Deny, entry(d), None),
            (None, _, _) if ask.is_some() => (Decision::Ask, ask.and_then(|r| entry(r)), None),
            (None, Some(d), _) => {
                let why = format!(
                    "an argument may expand to text the deny rule `{}` would match, so the rule cannot be checked",
                    d.entry
                );
                (Decision::Ask, entry(d), Some(why))
            }
            (None, None, Some(a)) => (Decision::Allow, entry(a), None),
            (None, None, None) => (Decision::Ask, None, None),
        };
        PartCheck {
            command: text.to_owned(),
            basename: base,
            decision,
            rule,
            unchecked: why,
            asked: ask.filter(|_| deny.is_none()).map(|r| r.entry.clone()),
        }
    }

    /// Checks each write of `analysis` against the write rules: a deny rule that
    /// matches denies the command; a target that may expand cannot be checked while
    /// write deny rules exist (ask); a write the classifier rates dangerous or worse
    /// (a disk, a shell startup file, `~/.ssh`, `.git/config`, ...) needs a write allow
    /// rule, or a tool-level or `<tool>:*` one. Other writes need no rule.
    fn check_writes(&self, analysis: &Analysis) -> Vec<WriteCheck> {
        let tool = self.tool;
        let write_denies: Vec<&Rule> = self
            .rules
            .deny
            .iter()
            .filter(|r| r.is_write_rule() && r.tool_matches(tool))
            .collect();
        let blanket = self.tool_allow.is_some() || self.opaque_allow().is_some();
        let mut out = Vec::new();
        for redirect in analysis.redirects.iter().filter(|r| r.mode.writes()) {
            let normal = normalize_path(&redirect.target);
            let deny = write_denies.iter().find(|r| r.matches_write(tool, &normal));
            let ask = self.rules.ask.iter().find(|r| r.matches_write(tool, &normal));
            let allow = self.rules.allow.iter().find(|r| r.matches_write(tool, &normal));
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
                    "the command writes `{}` ({id}), which needs a write rule such as `{tool}:>{normal}`",
                    redirect.target
                );
                (Decision::Ask, None, Some(why))
            } else {
                (Decision::Allow, None, None)
            };
            out.push(WriteCheck {
                target: redirect.target.clone(),
                unchecked: decision == Decision::Ask && rule.is_some() && ask.is_none(),
                asked: deny.is_none() && ask.is_some(),
                normal,
                decision,
                rule,
                reason,
            });
        }
        out
    }

    /// The `<tool>:*` allow rule, which allows opaque commands.
    fn opaque_allow(&self) -> Option<&'r Rule> {
        self.rules
            .allow
            .iter()
            .find(|r| r.arg.as_deref() == Some("*") && r.tool_matches(self.tool))
    }

    /// The deny rule that denies the call: the tool's own, a part's, a write's, or
    /// (for an opaque command) one matching `{unknown}`.
    fn denied_by(&self, analysis: &Analysis, parts: &[PartCheck], writes: &[WriteCheck]) -> Option<String> {
        self.tool_deny
            .map(|r| r.entry.clone())
            .or_else(|| {
                parts
                    .iter()
                    .find(|p| p.decision == Decision::Deny)
                    .and_then(|p| p.rule.clone())
            })
            .or_else(|| {
                writes
                    .iter()
                    .find(|w| w.decision == Decision::Deny)
                    .and_then(|w| w.rule.clone())
            })
            .or_else(|| {
                let unknown = analysis
                    .is_opaque()
                    .then(|| self.rules.deny.iter().find(|r| r.matches(self.tool, "{unknown}")))?;
                unknown.map(|r| r.entry.clone())
            })
    }

    /// What ask rules matched, in order: the tool's own, parts', writes', and for
    /// an opaque command one that matches `{unknown}` or any argument ask rule
    /// (an opaque command may run what it names).
    fn asked(&self, analysis: &Analysis, parts: &[PartCheck], writes: &[WriteCheck]) -> Vec<RefusalReason> {
        let mut asked: Vec<RefusalReason> = self
            .tool_ask
            .map(|r| RefusalReason::CallAsked { rule: r.entry.clone() })
            .into_iter()
            .collect();
        asked.extend(parts.iter().filter_map(|p| {
            let rule = p.asked.clone()?;
            Some(RefusalReason::PartAsked {
                part: p.command.clone(),
                rule,
            })
        }));
        asked.extend(writes.iter().filter(|w| w.asked).map(|w| RefusalReason::WriteAsked {
            target: w.target.clone(),
            rule: w.rule.clone().unwrap_or_default(),
        }));
        if analysis.is_opaque()
            && let Some(r) = self
                .rules
                .ask
                .iter()
                .find(|r| r.matches(self.tool, "{unknown}"))
                .or_else(|| self.arg_asks.first().copied())
        {
            asked.push(RefusalReason::CallAsked { rule: r.entry.clone() });
        }
        asked
    }

    /// A deny rule that could not be checked, and why: on a part's expansion, on a
    /// write's target, or because the command is opaque while argument deny rules
    /// apply.
    /// Asked for only when no deny rule matched.
    fn unsure(&self, analysis: &Analysis, parts: &[PartCheck], writes: &[WriteCheck]) -> Option<(String, String)> {
        let of_part = parts.iter().find_map(|p| Some((p.rule.clone()?, p.unchecked.clone()?)));
        let of_write = || {
            writes
                .iter()
                .find(|w| w.unchecked)
                .map(|w| (w.rule.clone().unwrap_or_default(), w.reason.clone().unwrap_or_default()))
        };
        let of_opaque = || {
            let r = self.arg_denies.first().filter(|_| analysis.is_opaque())?;
            Some((
                r.entry.clone(),
                format!(
                    "the command is opaque and deny rules such as `{}` exist: what it runs could be denied",
                    r.entry
                ),
            ))
        };
        of_part.or_else(of_write).or_else(of_opaque)
    }

    /// The call's verdict: deny wins, then ask rules, then deny rules that could
    /// not be checked, then a tool-level allow; an opaque command needs `<tool>:*`,
    /// a dangerous write its rule, and otherwise every part an allow rule.
    fn verdict(&self, analysis: &Analysis, parts: &[PartCheck], writes: &[WriteCheck]) -> Verdict {
        if let Some(rule) = self.denied_by(analysis, parts, writes) {
            return self.denial(rule, parts, writes);
        }
        let asked = self.asked(analysis, parts, writes);
        if let Some(first) = asked.first() {
            let rule = first.rule().map(str::to_owned);
            return Verdict::new(Decision::Ask, rule, "an ask rule matched").refused(asked);
        }
        if let Some((rule, why)) = self.unsure(analysis, parts, writes) {
            let refusal = vec![RefusalReason::Unchecked {
                rule: rule.clone(),
                why: why.clone(),
            }];
            return Verdict::new(Decision::Ask, Some(rule), why).refused(refusal);
        }
        let asked_because = |why: String| {
            let refusal = vec![RefusalReason::Other { why: why.clone() }];
            Verdict::new(Decision::Ask, None, why).refused(refusal)
        };
        if let Some(r) = self.tool_allow {
            Verdict::new(
                Decision::Allow,
                Some(r.entry.clone()),
                "a tool-level allow rule matched",
            )
        } else if analysis.is_opaque() {
            match self.opaque_allow() {
                Some(r) => Verdict::new(
                    Decision::Allow,
                    Some(r.entry.clone()),
                    "the command is opaque and `<tool>:*` is allowed",
                ),
                None => asked_because("the command is opaque: only a tool-level or `<tool>:*` rule allows it".into()),
            }
        } else if parts.is_empty() {
            asked_because("the command runs nothing that a rule can name".into())
        } else if let Some(w) = writes.iter().find(|w| w.decision == Decision::Ask) {
            asked_because(w.reason.clone().unwrap_or_default())
        } else if parts.iter().all(|p| p.decision == Decision::Allow) {
            Verdict::new(Decision::Allow, None, "every part matched an allow rule")
        } else {
            // Allow rules decide: name each part none of them matches.
            let refusal = parts
                .iter()
                .filter(|p| p.decision == Decision::Ask && p.rule.is_none())
                .map(|p| RefusalReason::PartNotAllowed {
                    part: p.command.clone(),
                })
                .collect();
            Verdict::new(Decision::Ask, None, "some part matched no rule").refused(refusal)
        }
    }

    /// A denial by `rule`, refused for what the deny rules matched and nothing
    /// else: a part merely not allowed did not decide it.
    fn denial(&self, rule: String, parts: &[PartCheck], writes: &[WriteCheck]) -> Verdict {
        let mut refusal: Vec<RefusalReason> = self
            .tool_deny
            .map(|r| RefusalReason::CallDenied { rule: r.entry.clone() })
            .into_iter()
            .collect();
        refusal.extend(parts.iter().filter(|p| p.decision == Decision::Deny).filter_map(|p| {
            Some(RefusalReason::PartDenied {
                part: p.command.clone(),
                rule: p.rule.clone()?,
            })
        }));
        refusal.extend(
            writes
                .iter()
                .filter(|w| w.decision == Decision::Deny)
                .map(|w| RefusalReason::WriteDenied {
                    target: w.target.clone(),
                    rule: w.rule.clone().unwrap_or_default(),
                }),
        );
        if refusal.is_empty() {
            refusal.push(RefusalReason::CallDenied { rule: rule.clone() });
        }
        Verdict::new(Decision::Deny, Some(rule), "a deny rule matched").refused(refusal)
    }
}

impl Evaluation {
    /// The evaluation as the JSON [`PermissionPolicy::explain`](super::PermissionPolicy::explain)
    /// returns: the verdict, the opacity, and each part and write with its rule.
    pub(super) fn explanation(&self, tool: &str, analysis: &Analysis) -> Value {
        let opaque: Vec<&Opacity> = analysis.opaque.iter().collect();
        json!({
            "tool": tool,
            "decision": self.verdict.decision,
            "rule": self.verdict.rule,
            "reason": self.verdict.reason,
            "opaque": opaque,
            "opaque_subject": if analysis.is_opaque() { Some(opaque_pattern(tool)) } else { None },
            "parts": self.parts.iter().map(|p| p.to_value(tool)).collect::<Vec<_>>(),
            "writes": self.writes.iter().map(|w| w.to_value(tool)).collect::<Vec<_>>(),
        })
    }
}

impl PartCheck {
    fn to_value(&self, tool: &str) -> Value {
        let subject = format!("{tool}:{}", self.command);
        let mut entry =
            json!({"command": self.command, "subject": subject, "decision": self.decision, "rule": self.rule});
        if let Some(b) = &self.basename {
            entry["basename_subject"] = json!(format!("{tool}:{b}"));
        }
        if let Some(why) = &self.unchecked {
            entry["reason"] = json!(why);
        }
        entry
    }
}

impl WriteCheck {
    fn to_value(&self, tool: &str) -> Value {
        let subject = format!("{tool}:>{}", self.normal);
        let mut entry =
            json!({"target": self.target, "subject": subject, "decision": self.decision, "rule": self.rule});
        if let Some(why) = &self.reason {
            entry["reason"] = json!(why);
        }
        entry
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
