//! A policy's rules: each entry parsed once, and how an entry matches a tool, a
//! part's text or a write.

use std::fmt;

use crate::permission::fnmatch::fnmatch;

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

/// One entry of a policy: `tool`, `tool-glob` or `tool:argpattern`.
#[derive(Clone, Debug)]
pub(super) struct Rule {
    /// The entry as written, which messages and explanations name.
    pub entry: String,
    tool: String,
    /// The argument pattern after the first `:`; `None` for a tool-level rule.
    pub arg: Option<String>,
}

impl Rule {
    pub(super) fn parse(entry: &str) -> Result<Rule, PolicyError> {
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

    pub(super) fn tool_matches(&self, tool: &str) -> bool {
        fnmatch(&self.tool, tool)
    }

    /// Whether this is a rule about writes (`<tool>:>PATH`).
    pub(super) fn is_write_rule(&self) -> bool {
        self.arg.as_deref().is_some_and(|a| a.starts_with('>'))
    }

    /// Whether this write rule matches a write of `target` (in its normal form) by `tool`.
    pub(super) fn matches_write(&self, tool: &str, target: &str) -> bool {
        self.is_write_rule() && self.tool_matches(tool) && fnmatch(&self.entry, &format!("{tool}:>{target}"))
    }

    /// The literal text of the argument pattern before its first wildcard, escape or
    /// bracket (`git push*` → `git push`).
    pub(super) fn literal_prefix(&self) -> &str {
        let arg = self.arg.as_deref().unwrap_or("");
        let end = arg.find(['*', '?', '[', '\\']).unwrap_or(arg.len());
        &arg[..end]
    }

    /// Whether this argument rule is about the command `word`: its literal prefix starts
    /// with `word ` (so `git push*` names git), or is `word` itself followed by a wildcard.
    pub(super) fn names_command(&self, word: &str) -> bool {
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
    pub(super) fn matches(&self, tool: &str, text: &str) -> bool {
        if self.arg.is_none() || !self.tool_matches(tool) {
            return false;
        }
        let subject = format!("{tool}:{text}");
        fnmatch(&self.entry, &subject) || fnmatch(&self.entry, &format!("{subject} "))
    }
}

/// The rules of a policy, by what a match does.
#[derive(Clone, Debug, Default)]
pub(super) struct Rules {
    pub allow: Vec<Rule>,
    /// Rules whose match puts the call to the person.
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
}
