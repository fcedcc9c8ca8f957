//! Why a policy did not allow a call, as values: each reason is one of the
//! facts that decided it, so a message built from them is true for the rules
//! configured (a part is said to match no allow rule only when allow rules
//! are what refused the call).

use std::fmt;

/// One reason a call was denied or needs approval (see
/// [`PermissionPolicy::refusal_args`](crate::permission::PermissionPolicy::refusal_args)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefusalReason {
    /// A deny rule matched the call as a whole: a tool-level rule, or the
    /// one matching an opaque command (`<tool>:{unknown}`).
    CallDenied { rule: String },
    /// A deny rule matched an executed part.
    PartDenied { part: String, rule: String },
    /// A write rule denied a redirection's target.
    WriteDenied { target: String, rule: String },
    /// A deny rule applies but cannot be checked (an argument or a target
    /// may expand, or the command is opaque); `why` says which.
    Unchecked { rule: String, why: String },
    /// An executed part no allow rule matches, while allow rules decide.
    PartNotAllowed { part: String },
    /// An ask rule matched an executed part (or names its command word while
    /// an argument may expand).
    PartAsked { part: String, rule: String },
    /// An ask rule matched a redirection's target.
    WriteAsked { target: String, rule: String },
    /// An ask rule matched the call as a whole: a tool-level rule, or one an
    /// opaque command may run.
    CallAsked { rule: String },
    /// Any other reason the call is not allowed (an opaque command without
    /// a `<tool>:*` rule, a sensitive write, nothing a rule can name).
    Other { why: String },
}

impl fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefusalReason::CallDenied { rule } => write!(f, "the call matches the deny rule `{rule}`"),
            RefusalReason::PartDenied { part, rule } => write!(f, "`{part}` matches the deny rule `{rule}`"),
            RefusalReason::WriteDenied { target, rule } => {
                write!(f, "the write to `{target}` matches the deny rule `{rule}`")
            }
            RefusalReason::Unchecked { why, .. } | RefusalReason::Other { why } => f.write_str(why),
            RefusalReason::PartNotAllowed { part } => write!(f, "`{part}` matches no allow rule"),
            RefusalReason::PartAsked { part, rule } => write!(f, "`{part}` matches the ask rule `{rule}`"),
            RefusalReason::WriteAsked { target, rule } => {
                write!(f, "the write to `{target}` matches the ask rule `{rule}`")
            }
            RefusalReason::CallAsked { rule } => write!(f, "the call falls under the ask rule `{rule}`"),
        }
    }
}

impl RefusalReason {
    /// The rule this reason names, if any.
    pub fn rule(&self) -> Option<&str> {
        match self {
            RefusalReason::CallDenied { rule }
            | RefusalReason::PartDenied { rule, .. }
            | RefusalReason::WriteDenied { rule, .. }
            | RefusalReason::Unchecked { rule, .. }
            | RefusalReason::PartAsked { rule, .. }
            | RefusalReason::WriteAsked { rule, .. }
            | RefusalReason::CallAsked { rule } => Some(rule),
            RefusalReason::PartNotAllowed { .. } | RefusalReason::Other { .. } => None,
        }
    }
}

/// The reasons in one line, `; ` between them.
pub fn describe(reasons: &[RefusalReason]) -> String {
    reasons.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}
