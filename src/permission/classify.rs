//! An advisory danger classifier over the executed parts of a command.
//!
//! Rules live in `data/classifier-rules.json`, embedded at build time and parsed once.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::fnmatch::{fnmatch, fnmatch_pathname};
use super::wrappers::basename;
use super::{Part, analyze};

/// How much damage a command can do. Ordered: `Safe < Dangerous < Catastrophic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// No rule matched.
    Safe,
    /// Privilege, destructive or hard-to-undo operations; or an opaque command.
    Dangerous,
    /// Unrecoverable damage to the system or the user's data.
    Catastrophic,
}

/// The classification of one executed part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PartClass {
    /// The part's normalized text.
    pub command: String,
    /// The worst class of the rules that matched it.
    pub class: Class,
    /// Ids of the rules that matched it.
    pub rules: Vec<String>,
}

/// The advisory classification of a whole command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Classification {
    /// The worst class over all parts and whole-command rules.
    pub class: Class,
    /// Ids of every rule that matched, without repeats.
    pub rules: Vec<String>,
    /// One sentence for a person: why, from the worst rule.
    pub hint: String,
    /// Each executed part.
    pub parts: Vec<PartClass>,
}

#[derive(Deserialize)]
struct RuleSet {
    rules: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    id: String,
    class: Class,
    hint: String,
    /// fnmatch patterns for the basename of the command word.
    #[serde(default)]
    commands: Vec<String>,
    /// Each group needs one argument matching one of its patterns.
    #[serde(default)]
    all: Vec<Vec<String>>,
    /// No argument may match any of these.
    #[serde(default)]
    none: Vec<String>,
    /// Some output redirection target must match one of these.
    #[serde(default)]
    writes: Vec<String>,
    /// Whole-command rule: an opaque part is fed by a command matching one of these.
    #[serde(default)]
    fed_by: Vec<String>,
    /// Whole-command rule: the command text with all whitespace removed matches.
    #[serde(default)]
    raw: Vec<String>,
    /// Match arguments with `FNM_PATHNAME` (`*` does not cross `/`).
    #[serde(default)]
    pathname: bool,
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let set: RuleSet = serde_json::from_str(include_str!("../../data/classifier-rules.json"))
        .unwrap_or_else(|e| panic!("data/classifier-rules.json is invalid: {e}"));
    set.rules
});

/// Forces parsing of the embedded rule set (tests call this to check the data file).
#[doc(hidden)]
pub fn rule_count() -> usize {
    RULES.len()
}

impl Rule {
    fn arg_matches(&self, pattern: &str, arg: &str) -> bool {
        if self.pathname {
            fnmatch_pathname(pattern, arg)
        } else {
            fnmatch(pattern, arg)
        }
    }

    fn matches_part(&self, part: &Part, args: &[String]) -> bool {
        if self.commands.is_empty() && self.writes.is_empty() {
            return false;
        }
        let name = basename(&part.command_word);
        if !self.commands.is_empty() && !self.commands.iter().any(|c| fnmatch(c, name)) {
            return false;
        }
        let all = self
            .all
            .iter()
            .all(|group| args.iter().any(|a| group.iter().any(|p| self.arg_matches(p, a))));
        let none = !args.iter().any(|a| self.none.iter().any(|p| self.arg_matches(p, a)));
        let writes = self.writes.is_empty()
            || part
                .writes
                .iter()
                .any(|w| self.writes.iter().any(|p| self.arg_matches(p, &trim_slashes(w))));
        all && none && writes
    }
}

fn trim_slashes(s: &str) -> String {
    let t = s.trim_end_matches('/');
    if t.is_empty() && !s.is_empty() {
        "/".to_owned()
    } else {
        t.to_owned()
    }
}

/// Classifies `command` as safe, dangerous or catastrophic, from the executed parts
/// (quoting, substitutions, wrappers and chaining do not hide a rule). Advisory only.
///
/// ```
/// use bash_mcp::permission::{Class, classify};
/// assert_eq!(classify("ls -la").class, Class::Safe);
/// assert_eq!(classify("git push --force").class, Class::Dangerous);
/// let c = classify("echo hi && 'rm' -r -f ~");
/// assert_eq!(c.class, Class::Catastrophic);
/// assert_eq!(serde_json::to_value(&c).unwrap()["class"], "catastrophic");
/// ```
pub fn classify(command: &str) -> Classification {
    let analysis = analyze(command);
    let mut overall = Class::Safe;
    let mut rule_ids: Vec<String> = Vec::new();
    let mut hint: Option<(Class, String)> = None;
    let mut note = |class: Class, id: &str, text: &str, overall: &mut Class, rule_ids: &mut Vec<String>| {
        *overall = (*overall).max(class);
        if !rule_ids.iter().any(|r| r == id) {
            rule_ids.push(id.to_owned());
        }
        if hint.as_ref().is_none_or(|(c, _)| class > *c) {
            hint = Some((class, text.to_owned()));
        }
    };
    let mut parts = Vec::new();
    for part in &analysis.parts {
        let args: Vec<String> = part.args.iter().skip(1).map(|a| trim_slashes(a)).collect();
        let mut class = Class::Safe;
        let mut ids = Vec::new();
        for rule in RULES.iter().filter(|r| r.matches_part(part, &args)) {
            class = class.max(rule.class);
            ids.push(rule.id.clone());
            note(rule.class, &rule.id, &rule.hint, &mut overall, &mut rule_ids);
        }
        parts.push(PartClass {
            command: part.normalized_text.clone(),
            class,
            rules: ids,
        });
    }
    let compact: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    for rule in RULES.iter() {
        let fed = analysis.opaque.iter().any(|o| {
            o.fed_by
                .iter()
                .any(|f| rule.fed_by.iter().any(|p| fnmatch(p, basename(f))))
        });
        let raw = rule.raw.iter().any(|p| fnmatch(p, &compact));
        if fed || raw {
            note(rule.class, &rule.id, &rule.hint, &mut overall, &mut rule_ids);
        }
    }
    if let Some(first) = analysis.opaque.first() {
        let text = format!("Opaque command: {}. Review it by hand.", first.reason);
        note(Class::Dangerous, "opaque", &text, &mut overall, &mut rule_ids);
    }
    let hint = hint.map_or_else(
        || "No rule matched. This classification is advisory only.".to_owned(),
        |(_, h)| h,
    );
    Classification {
        class: overall,
        rules: rule_ids,
        hint,
        parts,
    }
}
