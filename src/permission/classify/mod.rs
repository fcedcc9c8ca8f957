//! An advisory danger classifier over the executed parts of a command.
//!
//! Rules live in `data/classifier-rules.json`, embedded at build time and parsed once
//! ([`rules`]). The parts of a command are walked in order, keeping what earlier parts
//! set (the working directory, variables); each part's arguments are read in every form
//! they may take ([`paths`], [`values`]) and matched against the rules, some of which
//! add a check in code ([`find`], [`modes`], [`download`], [`text`]).

mod download;
mod find;
mod modes;
mod paths;
mod rules;
mod text;
mod values;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::call::Call;
use super::redirect::{RedirectMode, normalize_path};
use super::wrappers::unwrap::basename;
use super::{Part, analyze};
use paths::{expand_braces, looks_like_path, next_directory, normalize_arg, normalize_target, reach};
use rules::{ArgForms, Check, Rule, in_set, rule_set};
use values::Env;

/// How much damage a command can do. Ordered: `Safe < Dangerous < Catastrophic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
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

/// Forces parsing of the embedded rule set (tests call this to check the data file).
#[doc(hidden)]
pub fn rule_count() -> usize {
    rule_set().rules.len()
}

/// The worst class of the write rules that the write target `target` matches, with the
/// rule's id; `None` when no write rule matches.
pub(crate) fn write_class(target: &str) -> Option<(Class, &'static str)> {
    let target = normalize_target(target);
    rule_set()
        .rules
        .iter()
        .filter(|r| r.is_write_rule() && r.matches_write(&target))
        .max_by_key(|r| r.class)
        .map(|r| (r.class, r.id.as_str()))
}

/// Whether the rule `id` is catastrophic.
pub(crate) fn is_catastrophic_rule(id: &str) -> bool {
    rule_set()
        .rules
        .iter()
        .any(|r| r.id == id && r.class == Class::Catastrophic)
}

/// Commands whose relative operands are files in the working directory, which a `cd`
/// before them in the same command sets.
const FILE_COMMANDS: &[&str] = &[
    "rm", "find", "chmod", "chown", "chgrp", "setfacl", "chattr", "mv", "cp", "shred", "rsync", "tee", "dd",
    "truncate", "unlink", "rmdir", "srm", "wipe",
];

/// At most this many ways of reading a command line are checked by a rule's code
/// check (one form for each argument).
const MAX_COMBINATIONS: usize = 8;

/// Classifies a tool call whose JSON arguments are `args_json`: its `command`, and when
/// the call is opaque (a risky variable in its `env`, a shell reading standard input) its
/// `stdin` too, which may then be read as code. Malformed arguments are classified as
/// an empty, opaque command.
///
/// ```
/// use bash_mcp::permission::{Class, classify_call};
/// let call = r#"{"command":"bash -c ls","env":{"BASH_ENV":"/dev/stdin"},"stdin":"rm -rf ~"}"#;
/// assert_eq!(classify_call(call).class, Class::Catastrophic);
/// assert_eq!(classify_call(r#"{"command":"cat","stdin":"rm -rf ~"}"#).class, Class::Safe);
/// ```
pub fn classify_call(args_json: &str) -> Classification {
    match super::call::object(args_json) {
        Ok(args) => classify_call_args(&args),
        Err(_) => classify(""),
    }
}

/// [`classify_call`] for arguments already parsed.
pub fn classify_call_args(args: &Map<String, Value>) -> Classification {
    let Ok(call) = Call::from_map(args) else {
        return classify("");
    };
    let mut c = classify(call.command);
    let analysis = call.analyze(super::Dialect::Unknown);
    for (id, opacity) in [
        ("hidden-code", analysis.opaque.iter().find(|o| o.hidden_code)),
        ("opaque", analysis.opaque.first()),
    ] {
        if let Some(o) = opacity
            && !c.rules.iter().any(|r| r == id)
        {
            c.rules.push(id.to_owned());
            c.class = c.class.max(Class::Dangerous);
            if c.class == Class::Dangerous && c.hint.starts_with("No rule matched") {
                c.hint = format!("Opaque command: {}. Review it by hand.", o.reason);
            }
        }
    }
    let stdin = call.stdin.and_then(|s| s.as_str());
    if let Some(text) = stdin
        && super::scan::size::too_large(text).is_none()
        && analysis.is_opaque()
    {
        let more = classify(text);
        if more.class > c.class {
            c.hint = more.hint;
        }
        c.class = c.class.max(more.class);
        for r in more.rules {
            if !c.rules.contains(&r) {
                c.rules.push(r);
            }
        }
        c.parts.extend(more.parts);
    }
    c
}

/// The forms of each argument of `part` (without the command word): variables and
/// substitutions expanded by `env`, brace lists expanded, and each form normalised
/// against the working directory `cwd`; `expanded` gets the forms before
/// normalisation, which option parsers read.
fn arg_forms(part: &Part, env: &mut Env, cwd: Option<&str>, expanded: &mut Vec<Vec<String>>) -> Vec<Vec<String>> {
    let mut forms = Vec::with_capacity(part.args.len());
    expanded.clear();
    for arg in part.args.iter().skip(1) {
        let words: Vec<String> = env.expand(arg).iter().flat_map(|w| expand_braces(w)).collect();
        forms.push(words.iter().map(|w| normalize_arg(w, cwd)).collect());
        expanded.push(words);
    }
    forms
}

/// Up to [`MAX_COMBINATIONS`] argument lists taking one form of each argument (the
/// first form of most: only arguments with several forms vary).
fn combinations(groups: &[Vec<String>]) -> Vec<Vec<String>> {
    let varying: Vec<usize> = (0..groups.len()).filter(|&k| groups[k].len() > 1).collect();
    let mut choice = vec![0usize; groups.len()];
    let mut out = Vec::new();
    loop {
        out.push(
            groups
                .iter()
                .zip(&choice)
                .filter_map(|(g, &c)| g.get(c).cloned())
                .collect(),
        );
        // The next choice, counting over the varying arguments.
        let mut carried = true;
        for &k in &varying {
            choice[k] += 1;
            if choice[k] < groups[k].len() {
                carried = false;
                break;
            }
            choice[k] = 0;
        }
        if carried || out.len() >= MAX_COMBINATIONS {
            return out;
        }
    }
}

/// What a part rule's code check needs.
struct Context<'a> {
    part: &'a Part,
    /// Normalised forms of each argument.
    forms: &'a ArgForms,
    /// Forms before normalisation.
    expanded: &'a [Vec<String>],
    /// The working directory the part runs in, when known.
    cwd: Option<&'a str>,
    /// What `find` does, for each way of reading its arguments: worked out once, for
    /// every rule that asks.
    find_effects: std::cell::OnceCell<Vec<find::Effect>>,
}

impl Context<'_> {
    fn find_effects(&self) -> &[find::Effect] {
        self.find_effects.get_or_init(|| {
            combinations(self.expanded)
                .iter()
                .map(|args| find::effect(args))
                .collect()
        })
    }
}

/// Whether the part rule `rule`'s code check holds for the part in `cx`.
fn check(rule: &Rule, cx: &Context) -> bool {
    let name = basename(&cx.part.command_word);
    let any = |f: &dyn Fn(&[String]) -> bool| combinations(cx.expanded).iter().any(|args| f(args));
    match rule.check {
        None => true,
        Some(Check::FindDestroysAll) => cx
            .find_effects()
            .iter()
            .any(|e| e.destroys_all && roots_match(rule, &e.roots, cx.forms, cx.cwd)),
        Some(Check::FindDestroys) => cx.find_effects().iter().any(|e| e.destroys),
        Some(Check::ModeHarms) => any(&|args| modes::mode_harms(args)),
        Some(Check::OwnerIsSystemAccount) => any(&|args| modes::owner_is_system_account(name, args)),
        Some(Check::AclHarms) => any(&|args| modes::acl_harms(args)),
        Some(Check::OutputToDevice) => output_to_device(cx.expanded),
        Some(Check::ForkBomb | Check::DownloadThenRun) => false,
    }
}

/// Options whose value is the file a program writes (`sort -o F`, `openssl -out F`,
/// `curl --output F`).
const OUTPUT_OPTIONS: &[&str] = &[
    "-o",
    "-O",
    "-out",
    "--out",
    "--output",
    "--outfile",
    "--output-file",
    "--output-document",
];

/// Whether an output option in `args` (the forms of each argument) names a block
/// device.
fn output_to_device(args: &[Vec<String>]) -> bool {
    let device = |v: &str| in_set("block-devices", &normalize_target(v), false);
    args.iter().enumerate().any(|(k, forms)| {
        forms.iter().any(|a| {
            if OUTPUT_OPTIONS.contains(&a.as_str()) {
                return args.get(k + 1).is_some_and(|next| next.iter().any(|v| device(v)));
            }
            match a.split_once('=') {
                Some((option, value)) if OUTPUT_OPTIONS.contains(&option) => device(value),
                // `-o/dev/sda`: a short option with its value attached.
                _ => a
                    .strip_prefix("-o")
                    .is_some_and(|v| v.starts_with("/dev/") && device(v)),
            }
        })
    })
}

/// Whether one of find's starting points (indices into `forms`; none means `.`)
/// matches the rule's `roots`.
fn roots_match(rule: &Rule, roots: &[usize], forms: &ArgForms, cwd: Option<&str>) -> bool {
    if roots.is_empty() {
        return rule.roots.matches(&normalize_arg(".", cwd), rule.pathname);
    }
    roots
        .iter()
        .filter_map(|&k| forms.get(k))
        .flatten()
        .any(|r| rule.roots.matches(r, rule.pathname))
}

/// Collects the classes and rules that matched, and the hint of the worst.
#[derive(Default)]
struct Findings {
    class: Option<Class>,
    rules: Vec<String>,
    hint: Option<(Class, String)>,
}

impl Findings {
    fn note(&mut self, class: Class, id: &str, text: &str) {
        self.class = Some(self.class.map_or(class, |c| c.max(class)));
        if !self.rules.iter().any(|r| r == id) {
            self.rules.push(id.to_owned());
        }
        if self.hint.as_ref().is_none_or(|(c, _)| class > *c) {
            self.hint = Some((class, text.to_owned()));
        }
    }
}

/// Said after the hint of a catastrophic part whose arguments expand: how the text
/// reaches what the rule names.
const EXPANSION_NOTE: &str = " A variable or substitution in it can expand to that (a variable the command \
never sets may be empty: `${VAR:?}` stops the shell instead).";

/// Classifies `command` as safe, dangerous or catastrophic, from the executed parts
/// (quoting, substitutions, wrappers and chaining do not hide a rule). A command whose
/// permission pattern is opaque (`{unknown}`) is never safe: at least dangerous, rule
/// `opaque`. Advisory only.
///
/// ```
/// use bash_mcp::permission::{Class, classify};
/// assert_eq!(classify("ls -la").class, Class::Safe);
/// assert_eq!(classify("git push --force").class, Class::Dangerous);
/// let c = classify("echo hi && 'rm' -r -f ~");
/// assert_eq!(c.class, Class::Catastrophic);
/// assert_eq!(serde_json::to_value(&c).unwrap()["class"], "catastrophic");
/// assert_eq!(classify("x=1; [[ y ]]").class, Class::Dangerous);
/// assert_eq!(classify("curl -s https://x | python3").class, Class::Catastrophic);
/// assert_eq!(classify("d=/; rm -rf $d").class, Class::Catastrophic);
/// ```
pub fn classify(command: &str) -> Classification {
    let analysis = analyze(command);
    let set = rule_set();
    let mut found = Findings::default();
    let mut parts = Vec::new();
    let mut env = Env::default();
    let mut assignments = analysis.assignments.iter().peekable();
    let mut expanded = Vec::new();
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, part) in analysis.parts.iter().enumerate() {
        while let Some(a) = assignments.next_if(|a| a.at <= i) {
            env.assign(a, false);
        }
        let name = basename(&part.command_word);
        let previous = i.checked_sub(1).map(|k| &analysis.parts[k]);
        // The rules for each command name are found once per call: a long list of the
        // same command matches every rule's names only once.
        let named = by_name
            .entry(name)
            .or_insert_with(|| (0..set.rules.len()).filter(|&k| set.rules[k].names(name)).collect());
        let raw = &part.args[1..];
        let candidates: Vec<usize> = named.iter().copied().filter(|&k| set.rules[k].may_match(raw)).collect();
        parts.push(classify_part(
            part,
            previous,
            &candidates,
            &mut env,
            &mut expanded,
            &mut found,
        ));
    }
    whole_command(command, &analysis, env, &mut found);
    let class = found.class.unwrap_or(Class::Safe);
    let hint = found.hint.map_or_else(
        || "No rule matched. This classification is advisory only.".to_owned(),
        |(_, h)| h,
    );
    Classification {
        class,
        rules: found.rules,
        hint,
        parts,
    }
}

/// Classifies one part by `candidates`, the rules that name its command and may match
/// its arguments, and notes what matched in `found`; `previous` is the part before it
/// (what feeds `xargs`).
fn classify_part(
    part: &Part,
    previous: Option<&Part>,
    candidates: &[usize],
    env: &mut Env,
    expanded: &mut Vec<Vec<String>>,
    found: &mut Findings,
) -> PartClass {
    let set = rule_set();
    let name = basename(&part.command_word);
    // A wrapper's directory (`env -C / rm -rf *`) counts like a `cd` before it.
    let here = match &part.directory {
        Some(dir) => super::wrappers::chdir::join(
            env.cwd.as_deref(),
            &super::wrappers::chdir::Directory::Path(dir.clone()),
        )
        .map(|d| reach(&normalize_path(&d))),
        None => env.cwd.clone(),
    };
    let fed_by_xargs = part.wrappers.iter().any(|w| w == "xargs");
    let keeps_state = matches!(name, "cd" | "pushd" | "set");
    // The forms of the arguments are worked out only when something reads them.
    let reads = keeps_state || fed_by_xargs || candidates.iter().any(|&k| set.rules[k].reads_arguments());
    if !reads {
        let matched: Vec<&Rule> = candidates.iter().map(|&k| &set.rules[k]).collect();
        for rule in &matched {
            found.note(rule.class, &rule.id, &rule.hint);
        }
        return PartClass {
            command: part.normalized_text.clone(),
            class: matched.iter().map(|r| r.class).max().unwrap_or(Class::Safe),
            rules: matched.iter().map(|r| r.id.clone()).collect(),
        };
    }
    let cwd = here.as_deref().filter(|_| FILE_COMMANDS.contains(&name));
    let mut forms = arg_forms(part, env, cwd, expanded);
    let mut matched: Vec<&Rule> = Vec::new();
    if fed_by_xargs && let Some(feeder) = previous {
        if basename(&feeder.command_word) == "find" {
            // `find ~ -type f | xargs rm`: rm gets every name find prints.
            matched.extend(find_fed(part, feeder, env));
        } else {
            // `ls / | xargs rm -rf`: the paths the part before listed become arguments.
            let mut scratch = Vec::new();
            let listed = arg_forms(feeder, env, None, &mut scratch);
            forms.extend(listed.into_iter().filter(|f| f.iter().any(|a| looks_like_path(a))));
        }
    }
    keep_state(name, here.as_deref(), part, env, expanded);
    let writes: Vec<String> = part.writes.iter().map(|w| normalize_target(w)).collect();
    let cx = Context {
        part,
        forms: &forms,
        expanded,
        cwd,
        find_effects: std::cell::OnceCell::new(),
    };
    for &k in candidates.iter() {
        let rule = &set.rules[k];
        if rule.matches_part(&forms, &writes, |r| check(r, &cx)) {
            matched.push(rule);
        }
    }
    if name == "find" {
        matched.extend(find_changes(&cx));
    }
    noted(part, matched, found)
}

/// Follows what `cd`, `pushd` and `set` change for the parts after them: the directory
/// (from `here`, the part's own) and the positional parameters.
fn keep_state(name: &str, here: Option<&str>, part: &Part, env: &mut Env, expanded: &[Vec<String>]) {
    match name {
        "cd" | "pushd" => {
            let operand = expanded
                .iter()
                .find(|f| f.iter().all(|a| !a.starts_with('-') || a == "-"));
            let single = match operand {
                None => None,
                Some(f) if f.len() == 1 => Some(f[0].as_str()),
                Some(_) => Some("$unknown"),
            };
            env.cwd = next_directory(here, single);
        }
        "set" => env.set_positional(&part.args[1..]),
        _ => {}
    }
}

/// The class of `part` from the rules it `matched`, each noted in `found` (a
/// catastrophic one with a note when an argument may expand).
fn noted(part: &Part, matched: Vec<&Rule>, found: &mut Findings) -> PartClass {
    let mut class = Class::Safe;
    let mut ids = Vec::new();
    let expands = part.args.iter().skip(1).any(|a| a.contains(['$', '`']));
    for rule in matched {
        class = class.max(rule.class);
        if !ids.contains(&rule.id) {
            ids.push(rule.id.clone());
        }
        if rule.class == Class::Catastrophic && expands {
            found.note(rule.class, &rule.id, &format!("{}{EXPANSION_NOTE}", rule.hint));
        } else {
            found.note(rule.class, &rule.id, &rule.hint);
        }
    }
    PartClass {
        command: part.normalized_text.clone(),
        class,
        rules: ids,
    }
}

/// The rules that match what `find -exec chmod|chown|chgrp|setfacl ... {}` does to
/// every file under its starting points when no name test chooses them: the same as
/// the command given `-R` and each starting point (`find / -exec chmod 777 {} +` is
/// `chmod -R 777 /`).
fn find_changes(cx: &Context) -> Vec<&'static Rule> {
    let set = rule_set();
    let mut out = Vec::new();
    for effect in cx.find_effects() {
        out.extend(changes_of(cx, effect, set));
    }
    out
}

/// [`find_changes`] for one reading of find's arguments.
fn changes_of(cx: &Context, effect: &find::Effect, set: &'static rules::RuleSet) -> Vec<&'static Rule> {
    let mut out = Vec::new();
    let roots: Vec<String> = if effect.roots.is_empty() {
        vec![normalize_arg(".", cx.cwd)]
    } else {
        effect
            .roots
            .iter()
            .filter_map(|&k| cx.forms.get(k))
            .flatten()
            .cloned()
            .collect()
    };
    for words in &effect.changes_all {
        let Some(command) = words.first() else { continue };
        let name = basename(command);
        let mut expanded: Vec<Vec<String>> = vec![vec!["-R".to_owned()]];
        let mut forms: Vec<Vec<String>> = vec![vec!["-R".to_owned()]];
        for w in &words[1..] {
            if w == "{}" {
                expanded.push(roots.clone());
                forms.push(roots.clone());
            } else {
                expanded.push(vec![w.clone()]);
                forms.push(vec![normalize_arg(w, None)]);
            }
        }
        let synthetic = Part {
            command_word: command.clone(),
            args: std::iter::once(command.clone())
                .chain(expanded.iter().map(|f| f[0].clone()))
                .collect(),
            ..cx.part.clone()
        };
        let inner = Context {
            part: &synthetic,
            forms: &forms,
            expanded: &expanded,
            cwd: cx.cwd,
            find_effects: std::cell::OnceCell::new(),
        };
        for rule in set.rules.iter().filter(|r| r.names(name)) {
            if rule.matches_part(&forms, &[], |r| check(r, &inner)) {
                out.push(rule);
            }
        }
    }
    out
}

/// The find rules that match `part`, run by `xargs` on the names `feeder` (a `find`)
/// prints, when `part` deletes, truncates or shreds what it is given.
fn find_fed<'a>(part: &Part, feeder: &Part, env: &mut Env) -> Vec<&'a Rule> {
    if !in_set("file-destroyers", basename(&part.command_word), false) {
        return Vec::new();
    }
    let mut expanded = Vec::new();
    let cwd = env.cwd.clone();
    let forms = arg_forms(feeder, env, cwd.as_deref(), &mut expanded);
    let effect = combinations(&expanded)
        .iter()
        .map(|args| find::effect(args))
        .fold(find::Effect::default(), |a, b| find::Effect {
            roots: b.roots,
            destroys: a.destroys || b.outputs,
            destroys_all: a.destroys_all || b.outputs_all,
            outputs: false,
            outputs_all: false,
            changes_all: Vec::new(),
        });
    rule_set()
        .rules
        .iter()
        .filter(|r| match r.check {
            Some(Check::FindDestroysAll) => {
                effect.destroys_all && roots_match(r, &effect.roots, &forms, cwd.as_deref())
            }
            Some(Check::FindDestroys) => effect.destroys,
            _ => false,
        })
        .collect()
}

/// Rules about the whole command: writes, downloads run as code, fork bombs, pipelines
/// into interpreters, and opacity.
fn whole_command(command: &str, analysis: &super::Analysis, mut env: Env, found: &mut Findings) {
    let set = rule_set();
    // Every value a variable held at any point (`env` holds the last ones, and the
    // positional parameters), for redirections, which are not tied to a part.
    for a in &analysis.assignments {
        env.assign(a, true);
    }
    let mut targets: Vec<(String, RedirectMode)> = Vec::new();
    for r in analysis.redirects.iter().filter(|r| r.mode.writes()) {
        for form in env.expand(&r.target) {
            targets.push((normalize_target(&form), r.mode));
        }
    }
    for rule in set.rules.iter().filter(|r| r.is_write_rule()) {
        let hit = targets
            .iter()
            .any(|(t, mode)| (!rule.truncates || *mode == RedirectMode::Write) && rule.matches_write(t));
        if hit {
            found.note(rule.class, &rule.id, &rule.hint);
        }
    }
    let compact = std::cell::OnceCell::new();
    for rule in &set.rules {
        let fed = analysis
            .opaque
            .iter()
            .any(|o| !rule.fed_by.is_empty() && o.fed_by.iter().any(|f| rule.fed_by.matches(basename(f), false)));
        let raw = !rule.raw.is_empty()
            && rule
                .raw
                .matches(compact.get_or_init(|| text::without_whitespace(command)), false);
        let checked = match rule.check {
            // A fork bomb defines a function, which makes the command opaque; text that
            // only prints one (`echo ':(){ :|:& };:'`) is not.
            Some(Check::ForkBomb) => analysis.is_opaque() && text::has_fork_bomb(command),
            Some(Check::DownloadThenRun) => download::downloads_then_runs(analysis),
            _ => false,
        };
        // Walking each pipeline again costs a second analysis: only when a part the rule
        // names and a part it is piped from are both among the parts found.
        let piped = !rule.piped_from.is_empty()
            && analysis
                .parts
                .iter()
                .any(|p| rule.commands.matches(basename(&p.command_word), false))
            && analysis
                .parts
                .iter()
                .any(|p| rule.piped_from.matches(basename(&p.command_word), false))
            && text::piped_into(rule, command);
        if fed || raw || checked || piped {
            found.note(rule.class, &rule.id, &rule.hint);
        }
    }
    // An opaque command (the pattern is `{unknown}`) is never safe: what it runs is not
    // known, so at least dangerous.
    if let Some(first) = analysis.opaque.first() {
        let text = format!("Opaque command: {}. Review it by hand.", first.reason);
        found.note(Class::Dangerous, "opaque", &text);
    } else if analysis.parts.is_empty() {
        let text = "Opaque command: it runs nothing a rule can name. Review it by hand.";
        found.note(Class::Dangerous, "opaque", text);
    }
    if let Some(hidden) = analysis.opaque.iter().find(|o| o.hidden_code) {
        let text = format!(
            "Runs code the text does not show: {}. The binary's default gate refuses this.",
            hidden.reason
        );
        found.note(Class::Dangerous, "hidden-code", &text);
    }
}
