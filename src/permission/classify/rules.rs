//! The rule set of `data/classifier-rules.json`: named sets of paths and names, and
//! rules that match a command's parts, its writes or the whole command.
//!
//! A pattern is a glob, or a named set written `@name` with optional text before and
//! after it (`of=@block-devices` matches `of=` followed by a block device). A set has
//! globs that match and globs that do not (`/dev/*/*` but not `/dev/shm/*`), so what
//! the rules say about a kind of thing is written once.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde::Deserialize;

use super::super::fnmatch::{fnmatch, fnmatch_pathname};
use super::Class;

/// Sets the code reads by name; the rule set must define them.
pub(super) const CODE_SETS: &[&str] = &[
    "system-dirs",
    "home",
    "downloaders",
    "shells",
    "interpreters",
    "file-destroyers",
    "system-accounts",
    "block-devices",
    "permission-changers",
    "extractors",
];

/// One glob, with its shape worked out once: most are a literal, `LITERAL*` or
/// `*LITERAL*`, matched without calling `fnmatch(3)`.
#[derive(Debug)]
pub(super) enum Glob {
    Exact(String),
    Prefix(String),
    Contains(String),
    Other(String),
}

impl Glob {
    fn new(pattern: String) -> Glob {
        let meta = |c: char| matches!(c, '*' | '?' | '[' | '\\');
        if !pattern.contains(meta) {
            return Glob::Exact(pattern);
        }
        if let Some(head) = pattern.strip_suffix('*')
            && !head.contains(meta)
        {
            return Glob::Prefix(head.to_owned());
        }
        if let Some(middle) = pattern.strip_prefix('*').and_then(|p| p.strip_suffix('*'))
            && !middle.contains(meta)
        {
            return Glob::Contains(middle.to_owned());
        }
        Glob::Other(pattern)
    }

    /// `fnmatch(pattern, subject)`, with `FNM_PATHNAME` when `pathname`.
    fn matches(&self, subject: &str, pathname: bool) -> bool {
        match self {
            Glob::Exact(p) => p == subject,
            Glob::Prefix(head) => subject
                .strip_prefix(head.as_str())
                .is_some_and(|rest| !pathname || !rest.contains('/')),
            Glob::Contains(middle) if !pathname => subject.contains(middle.as_str()),
            Glob::Contains(middle) => fnmatch_pathname(&format!("*{middle}*"), subject),
            Glob::Other(p) if pathname => fnmatch_pathname(p, subject),
            Glob::Other(p) => fnmatch(p, subject),
        }
    }
}

/// One pattern of a rule.
#[derive(Debug)]
pub(super) enum Pat {
    /// A glob.
    Glob(Glob),
    /// A named set, with the text around its name applied to each of its globs.
    Set { any: Vec<Glob>, except: Vec<Glob> },
}

impl Pat {
    fn matches(&self, subject: &str, pathname: bool) -> bool {
        match self {
            Pat::Glob(g) => g.matches(subject, pathname),
            Pat::Set { any, except } => {
                any.iter().any(|g| g.matches(subject, pathname)) && !except.iter().any(|g| g.matches(subject, pathname))
            }
        }
    }
}

/// Patterns of which any may match.
#[derive(Debug, Default)]
pub(super) struct Pats(Vec<Pat>);

impl Pats {
    pub(super) fn matches(&self, subject: &str, pathname: bool) -> bool {
        self.0.iter().any(|p| p.matches(subject, pathname))
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A code check a rule adds to its patterns (`"check": "..."` in the data).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Check {
    /// Whole command: a function that calls itself at least twice in a pipeline or in
    /// the background, under any name.
    ForkBomb,
    /// Whole command: a file downloaded earlier in the command is run, sourced or given
    /// to an interpreter, or a download is the program an interpreter reads.
    DownloadThenRun,
    /// `find` whose starting points match `roots` deletes, truncates or shreds what it
    /// finds without a name test selecting it (`find ~ -delete`, `find / -exec rm {} +`).
    FindDestroysAll,
    /// `find` deletes, truncates or shreds what it finds (filtered or not).
    FindDestroys,
    /// `chmod` gives a mode that locks the owner out, exposes the files to others, or
    /// replaces every mode (`chmod -R 000`, `chmod 777`, `chmod -R 755`).
    ModeHarms,
    /// `chown`/`chgrp` gives the files to a system account (`root`, `nobody`, ...).
    OwnerIsSystemAccount,
    /// `setfacl` grants another user or group write access, or removes the owner's.
    AclHarms,
    /// An output option (`-o`, `--output`, `-out`, ...) names a block device
    /// (`sort -o /dev/sda`, `openssl enc -out /dev/sdb`).
    OutputToDevice,
}

impl Check {
    /// Whether the check is about the whole command rather than one part.
    pub(super) fn is_whole(self) -> bool {
        matches!(self, Check::ForkBomb | Check::DownloadThenRun)
    }
}

#[derive(Deserialize)]
struct RawSet {
    #[allow(dead_code)]
    about: String,
    any: Vec<String>,
    #[serde(default)]
    except: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReadOnly {
    ops: Vec<String>,
    #[serde(default)]
    unless: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: String,
    class: Class,
    hint: String,
    #[serde(default)]
    commands: Vec<String>,
    #[serde(default)]
    not_commands: Vec<String>,
    #[serde(default)]
    all: Vec<Vec<String>>,
    #[serde(default)]
    none: Vec<String>,
    #[serde(default)]
    writes: Vec<String>,
    #[serde(default)]
    truncates: bool,
    #[serde(default)]
    fed_by: Vec<String>,
    #[serde(default)]
    raw: Vec<String>,
    #[serde(default)]
    pathname: bool,
    #[serde(default)]
    long_options: Vec<String>,
    #[serde(default)]
    except_last: bool,
    #[serde(default)]
    last: Vec<String>,
    #[serde(default)]
    skip_first_operand: bool,
    #[serde(default)]
    read_only: Option<RawReadOnly>,
    #[serde(default)]
    piped_from: Vec<String>,
    #[serde(default)]
    check: Option<Check>,
    #[serde(default)]
    roots: Vec<String>,
    #[serde(default)]
    raw_args: Vec<String>,
}

#[derive(Deserialize)]
struct RawRuleSet {
    sets: HashMap<String, RawSet>,
    rules: Vec<RawRule>,
}

/// When a command that could write is only reading: one of `ops` is given and none of
/// `unless` (`sfdisk -l /dev/sda`, but not `sfdisk -l --delete /dev/sda`).
#[derive(Debug)]
pub(super) struct ReadOnly {
    ops: Pats,
    unless: Pats,
}

/// One rule (see the `about` of the data file for each field).
#[derive(Debug)]
pub(super) struct Rule {
    pub id: String,
    pub class: Class,
    pub hint: String,
    pub commands: Pats,
    not_commands: Pats,
    all: Vec<Pats>,
    pub none: Pats,
    writes: Pats,
    /// Only redirections that truncate (`>`, not `>>`) count for `writes`.
    pub truncates: bool,
    pub fed_by: Pats,
    pub raw: Pats,
    pub pathname: bool,
    long_options: Vec<String>,
    except_last: bool,
    last: Pats,
    skip_first_operand: bool,
    read_only: Option<ReadOnly>,
    pub piped_from: Pats,
    pub check: Option<Check>,
    pub roots: Pats,
    /// Some argument as written must match one of these for the rule to be checked: a
    /// cheap filter for rules that name every command (`output-to-device`).
    raw_args: Pats,
}

/// The loaded rule set.
pub(super) struct RuleSet {
    pub rules: Vec<Rule>,
    sets: HashMap<String, Pat>,
    /// The top-level names of `system-dirs` (`usr`, `etc`, ...).
    pub system_top: Vec<String>,
}

static RULE_SET: LazyLock<RuleSet> = LazyLock::new(|| {
    load(include_str!("../../../data/classifier-rules.json"))
        .unwrap_or_else(|e| panic!("data/classifier-rules.json is invalid: {e}"))
});

/// The embedded rule set.
pub(super) fn rule_set() -> &'static RuleSet {
    &RULE_SET
}

/// Whether `subject` is in the named set (one of [`CODE_SETS`]), its globs matched
/// with `FNM_PATHNAME` when `pathname`.
pub(super) fn in_set(name: &str, subject: &str, pathname: bool) -> bool {
    RULE_SET.sets.get(name).is_some_and(|s| s.matches(subject, pathname))
}

fn load(text: &str) -> Result<RuleSet, String> {
    let raw: RawRuleSet = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let compile = |patterns: &[String]| -> Result<Pats, String> {
        patterns
            .iter()
            .map(|p| pattern(p, &raw.sets, 0))
            .collect::<Result<_, _>>()
            .map(Pats)
    };
    let mut rules = Vec::new();
    for r in &raw.rules {
        let context = |e: String| format!("rule {}: {e}", r.id);
        rules.push(Rule {
            id: r.id.clone(),
            class: r.class,
            hint: r.hint.clone(),
            commands: compile(&r.commands).map_err(context)?,
            not_commands: compile(&r.not_commands).map_err(context)?,
            all: r
                .all
                .iter()
                .map(|g| compile(g))
                .collect::<Result<_, _>>()
                .map_err(context)?,
            none: compile(&r.none).map_err(context)?,
            writes: compile(&r.writes).map_err(context)?,
            truncates: r.truncates,
            fed_by: compile(&r.fed_by).map_err(context)?,
            raw: compile(&r.raw).map_err(context)?,
            pathname: r.pathname,
            long_options: r.long_options.clone(),
            except_last: r.except_last,
            last: compile(&r.last).map_err(context)?,
            skip_first_operand: r.skip_first_operand,
            read_only: match &r.read_only {
                Some(ro) => Some(ReadOnly {
                    ops: compile(&ro.ops).map_err(context)?,
                    unless: compile(&ro.unless).map_err(context)?,
                }),
                None => None,
            },
            piped_from: compile(&r.piped_from).map_err(context)?,
            check: r.check,
            roots: compile(&r.roots).map_err(context)?,
            raw_args: compile(&r.raw_args).map_err(context)?,
        });
    }
    let mut sets = HashMap::new();
    for name in raw.sets.keys() {
        sets.insert(name.clone(), pattern(&format!("@{name}"), &raw.sets, 0)?);
    }
    for name in CODE_SETS {
        if !sets.contains_key(*name) {
            return Err(format!("the set `{name}` the classifier's code reads is missing"));
        }
    }
    let system_top = raw.sets["system-dirs"]
        .any
        .iter()
        .filter_map(|d| d.strip_prefix('/'))
        .filter(|d| !d.is_empty() && !d.contains(['/', '*', '?', '[']))
        .map(str::to_owned)
        .collect();
    Ok(RuleSet {
        rules,
        sets,
        system_top,
    })
}

/// The pattern `text`: a glob, or `prefix@name suffix` naming a set.
fn pattern(text: &str, sets: &HashMap<String, RawSet>, depth: usize) -> Result<Pat, String> {
    Ok(match globs(text, sets, depth)? {
        (any, None) => Pat::Glob(Glob::new(any.into_iter().next().unwrap_or_default())),
        (any, Some(except)) => Pat::Set {
            any: any.into_iter().map(Glob::new).collect(),
            except: except.into_iter().map(Glob::new).collect(),
        },
    })
}

/// The globs of the pattern `text`: itself, or for `prefix@name suffix` each glob of the
/// set with the text around it, and the set's exceptions.
fn globs(
    text: &str,
    sets: &HashMap<String, RawSet>,
    depth: usize,
) -> Result<(Vec<String>, Option<Vec<String>>), String> {
    let Some((prefix, name, suffix)) = set_reference(text) else {
        return Ok((vec![text.to_owned()], None));
    };
    let set = sets.get(name).ok_or_else(|| format!("`{text}` names no set"))?;
    if depth > 4 {
        return Err(format!("sets nest too deep at `{text}`"));
    }
    let mut any = Vec::new();
    let mut except = Vec::new();
    for (from, into) in [(&set.any, &mut any), (&set.except, &mut except)] {
        for entry in from {
            // A set inside a set brings its globs, not its exceptions: nesting is for
            // plain lists.
            let (inner, _) = globs(entry, sets, depth + 1)?;
            into.extend(inner.into_iter().map(|g| format!("{prefix}{g}{suffix}")));
        }
    }
    Ok((any, Some(except)))
}

/// `prefix`, set name and `suffix` of `prefix@name suffix`, when `text` names a set: an
/// `@` followed by a lowercase letter (`*@*` is a glob).
fn set_reference(text: &str) -> Option<(&str, &str, &str)> {
    let at = text.find('@')?;
    let rest = &text[at + 1..];
    if !rest.starts_with(|c: char| c.is_ascii_lowercase()) {
        return None;
    }
    let end = rest
        .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    Some((&text[..at], &rest[..end], &rest[end..]))
}

/// The arguments of a part as rules see them: for each argument as written, the forms
/// it may take (a normalised path, each word of a brace list, each value of a variable).
pub(super) type ArgForms = [Vec<String>];

impl Rule {
    /// A rule about writes alone (no command): checked against every redirection.
    pub(super) fn is_write_rule(&self) -> bool {
        self.commands.is_empty() && !self.writes.is_empty()
    }

    /// Whether the write target `target` (in its normal form) matches one of `writes`.
    pub(super) fn matches_write(&self, target: &str) -> bool {
        self.writes.matches(target, self.pathname)
    }

    fn arg_matches(&self, pats: &Pats, arg: &str) -> bool {
        pats.matches(arg, self.pathname)
    }

    /// Whether the arguments as written (without the command word) pass the rule's
    /// `raw_args` filter.
    pub(super) fn may_match(&self, args: &[String]) -> bool {
        self.raw_args.is_empty() || args.iter().any(|a| self.raw_args.matches(a, false))
    }

    /// Whether matching this part rule reads the part's arguments or writes (`privilege`
    /// names `sudo` and nothing more).
    pub(super) fn reads_arguments(&self) -> bool {
        !(self.all.is_empty()
            && self.none.is_empty()
            && self.last.is_empty()
            && self.writes.is_empty()
            && self.read_only.is_none()
            && self.check.is_none())
    }

    /// Whether this part rule applies to a command named `name` (its basename): the
    /// first half of [`Rule::matches_part`], the same for every part of that name.
    pub(super) fn names(&self, name: &str) -> bool {
        if self.is_write_rule()
            || self.commands.is_empty()
            || !self.piped_from.is_empty()
            || self.check.is_some_and(Check::is_whole)
        {
            return false;
        }
        self.commands.matches(name, false) && !self.not_commands.matches(name, false)
    }

    /// Whether the part whose command this rule [`names`](Rule::names) matches, with the
    /// argument forms `args`, the part's writes `writes`, and `check` deciding the rule's
    /// code check.
    pub(super) fn matches_part(&self, args: &ArgForms, writes: &[String], check: impl FnOnce(&Rule) -> bool) -> bool {
        let expanded: Vec<Vec<String>>;
        let args = if self.long_options.is_empty() {
            args
        } else {
            expanded = args
                .iter()
                .map(|forms| {
                    forms
                        .iter()
                        .map(|a| expand_long_option(a, &self.long_options))
                        .collect()
                })
                .collect();
            &expanded
        };
        if !self.last.is_empty() {
            let Some(last) = args.last() else { return false };
            if args.len() < 2 || !last.iter().any(|a| self.arg_matches(&self.last, a)) {
                return false;
            }
        }
        let mut args: Vec<&Vec<String>> = if self.except_last {
            args[..args.len().saturating_sub(1)].iter().collect()
        } else {
            args.iter().collect()
        };
        if self.skip_first_operand
            && let Some(first) = args.iter().position(|forms| forms.iter().all(|a| !a.starts_with('-')))
        {
            args.remove(first);
        }
        let any = |pats: &Pats| args.iter().flat_map(|f| f.iter()).any(|a| self.arg_matches(pats, a));
        if !self.all.iter().all(any) || any(&self.none) {
            return false;
        }
        if let Some(ro) = &self.read_only
            && any(&ro.ops)
            && !any(&ro.unless)
        {
            return false;
        }
        if !self.writes.is_empty() && !writes.iter().any(|w| self.matches_write(w)) {
            return false;
        }
        self.check.is_none() || check(self)
    }
}

/// `--x[=v]` as the long option of `names` it abbreviates, when the prefix is unique.
fn expand_long_option(arg: &str, names: &[String]) -> String {
    let Some(body) = arg.strip_prefix("--") else {
        return arg.to_owned();
    };
    let (name, value) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    if name.is_empty() || names.iter().any(|n| n == name) {
        return arg.to_owned();
    }
    let mut candidates = names.iter().filter(|n| n.starts_with(name));
    match (candidates.next(), candidates.next()) {
        (Some(full), None) => match value {
            Some(v) => format!("--{full}={v}"),
            None => format!("--{full}"),
        },
        _ => arg.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_references_are_found_only_before_a_name() {
        assert_eq!(set_reference("of=@block-devices"), Some(("of=", "block-devices", "")));
        assert_eq!(set_reference("@home/[*]"), Some(("", "home", "/[*]")));
        assert_eq!(set_reference("*@*"), None);
        assert_eq!(set_reference("/dev/sd*"), None);
    }

    #[test]
    fn the_short_cuts_agree_with_fnmatch() {
        let patterns = [
            "abc", "ab*", "*b*", "*", "-o*", "*/dev/*", "/dev/sd*", "a?c", "[ab]*", "*.so*",
        ];
        let subjects = [
            "abc",
            "ab",
            "abd/e",
            "",
            "x/b/y",
            "-ofile",
            "/dev/sda",
            "/dev/sda/x",
            "a/c",
            "lib.so.6",
        ];
        for p in patterns {
            for s in subjects {
                let g = Glob::new(p.to_owned());
                assert_eq!(g.matches(s, false), fnmatch(p, s), "{p} {s}");
                assert_eq!(g.matches(s, true), fnmatch_pathname(p, s), "{p} {s} (pathname)");
            }
        }
    }

    #[test]
    fn a_set_matches_its_globs_but_not_its_exceptions() {
        let set = Pat::Set {
            any: vec![Glob::new("/dev/*/*".into())],
            except: vec![Glob::new("/dev/shm/*".into())],
        };
        assert!(set.matches("/dev/vg0/root", false));
        assert!(!set.matches("/dev/shm/x", false));
    }
}
