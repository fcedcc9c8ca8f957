//! Failing closed must not make ordinary commands opaque. The corpus's ordinary developer
//! commands (every command of a list, pipeline or compound starts with an everyday tool:
//! git, cargo, npm, make, grep, find, ls, cd, ...) are checked against the baseline in
//! `tests/data/permission_ordinary.jsonl`, recorded before the analysis was made to fail
//! closed by construction:
//!
//! - the share of them with an exact (not opaque) pattern must not drop, in the bash and
//!   in the unknown dialect;
//! - each one exact in the baseline keeps its pattern, and a fixed policy's decision on each
//!   of its parts stays the same.
//!
//! `PERMISSION_ORDINARY_WRITE=1` rewrites the baseline from the current analysis (only to
//! add commands; a changed line must be explained in the commit).

use bash_mcp::permission::{Dialect, PermissionPolicy, command_pattern_in};
use serde_json::{Value, json};

const TOOL: &str = "bash.execute";

/// Command names a developer types every day.
const EVERYDAY: &[&str] = &[
    "git", "cargo", "rustc", "rustup", "npm", "npx", "yarn", "pnpm", "node", "make", "cmake", "grep", "rg", "find",
    "fd", "ls", "cd", "pwd", "cat", "head", "tail", "less", "wc", "sort", "uniq", "diff", "echo", "printf", "mkdir",
    "rm", "cp", "mv", "touch", "chmod", "ln", "tar", "unzip", "curl", "wget", "python", "python3", "pip", "pytest",
    "go", "docker", "kubectl", "jq", "sed", "awk", "tee", "xargs", "test", "true", "false", "uv", "mvn", "gradle",
    "java", "gcc", "g++", "clang", "ssh", "du", "df", "ps", "which", "env", "time", "date",
];

/// The first word of each command of `text`, split at `&&`, `||`, `;`, `|`, `&` and
/// newlines outside quotes; `None` when the text has a construct other than those.
fn command_heads(text: &str) -> Option<Vec<String>> {
    let mut heads = Vec::new();
    let mut current = String::new();
    let (mut single, mut double) = (false, false);
    let mut at_start = true;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !single && !double && "&|;\n".contains(c) {
            at_start = true;
            continue;
        }
        if at_start && !c.is_whitespace() {
            if !current.is_empty() {
                heads.push(std::mem::take(&mut current));
            }
            at_start = false;
            current.push(c);
            while let Some(&n) = chars.peek() {
                if n.is_whitespace() || "&|;".contains(n) {
                    break;
                }
                current.push(n);
                chars.next();
            }
            heads.push(std::mem::take(&mut current));
            continue;
        }
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '(' | ')' | '{' | '}' | '`' if !single && !double => return None,
            _ => {}
        }
    }
    (!heads.is_empty()).then_some(heads)
}

fn ordinary(command: &str) -> bool {
    command_heads(command).is_some_and(|heads| heads.iter().all(|h| EVERYDAY.contains(&h.as_str())))
}

fn policy() -> PermissionPolicy {
    let allow = [
        "bash.execute:git *",
        "bash.execute:cargo *",
        "bash.execute:ls *",
        "bash.execute:cd *",
        "bash.execute:grep *",
        "bash.execute:npm test*",
        "bash.execute:make *",
        "bash.execute:find . -name *",
    ];
    let deny = ["bash.execute:rm *", "bash.execute:git push *"];
    PermissionPolicy::new(&allow, &deny).expect("the fixed policy is valid")
}

/// Pattern in the bash and unknown dialects and the per-part decisions of the fixed
/// policy (bash dialect).
fn observe(command: &str, policy: &PermissionPolicy) -> Value {
    let args = json!({ "command": command }).to_string();
    let explained = policy.explain(TOOL, &args);
    let parts: Vec<Value> = explained["parts"]
        .as_array()
        .map(|ps| ps.iter().map(|p| json!([p["command"], p["decision"]])).collect())
        .unwrap_or_default();
    json!({
        "command": command,
        "bash": command_pattern_in(TOOL, command, Dialect::Bash),
        "unknown": command_pattern_in(TOOL, command, Dialect::Unknown),
        "decision": explained["decision"],
        "parts": parts,
    })
}

fn corpus_ordinary() -> Vec<String> {
    include_str!("data/permission_corpus.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("corpus line is JSON")["command"]
                .as_str()
                .expect("command")
                .to_owned()
        })
        .filter(|c| ordinary(c))
        .fold(Vec::new(), |mut seen: Vec<String>, c| {
            if !seen.contains(&c) {
                seen.push(c);
            }
            seen
        })
}

fn baseline() -> Vec<Value> {
    include_str!("data/permission_ordinary.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("baseline line is JSON"))
        .collect()
}

fn exact(pattern: &Value) -> bool {
    pattern.as_str().is_some_and(|p| !p.ends_with("{unknown}"))
}

fn share(rows: &[Value], dialect: &str) -> (usize, usize) {
    (rows.iter().filter(|r| exact(&r[dialect])).count(), rows.len())
}

#[test]
fn selection_finds_everyday_compounds() {
    assert!(ordinary("cd src && cargo build --release"));
    assert!(ordinary("git status; git diff | head -n 20"));
    assert!(!ordinary("eval \"$X\""));
    assert!(!ordinary("(cd src && make)"));
    assert!(!ordinary("sudo rm -rf /"));
}

#[test]
fn ordinary_commands_stay_precise() {
    let policy = policy();
    let commands = corpus_ordinary();
    assert!(
        commands.len() >= 100,
        "only {} ordinary commands in the corpus",
        commands.len()
    );
    let now: Vec<Value> = commands.iter().map(|c| observe(c, &policy)).collect();
    if std::env::var_os("PERMISSION_ORDINARY_WRITE").is_some() {
        let text: String = now.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/permission_ordinary.jsonl"),
            text,
        )
        .expect("write the baseline");
        return;
    }
    let base = baseline();
    let mut failures = Vec::new();
    for b in &base {
        let command = b["command"].as_str().expect("command");
        let Some(n) = now.iter().find(|r| r["command"] == b["command"]) else {
            failures.push(format!("{command:?} is no longer an ordinary corpus command"));
            continue;
        };
        for dialect in ["bash", "unknown"] {
            if exact(&b[dialect]) && n[dialect] != b[dialect] {
                failures.push(format!(
                    "{command:?} ({dialect}): pattern was {} and is now {}",
                    b[dialect], n[dialect]
                ));
            }
        }
        if exact(&b["bash"]) && (n["parts"] != b["parts"] || n["decision"] != b["decision"]) {
            failures.push(format!(
                "{command:?}: the policy decided {} {} and now decides {} {}",
                b["decision"], b["parts"], n["decision"], n["parts"]
            ));
        }
    }
    // The same commands as the baseline, now; commands added to the corpus later are
    // reported beside them.
    let same: Vec<Value> = now
        .iter()
        .filter(|n| base.iter().any(|b| b["command"] == n["command"]))
        .cloned()
        .collect();
    for dialect in ["bash", "unknown"] {
        let (was, total_was) = share(&base, dialect);
        let (is, total) = share(&same, dialect);
        let (all, all_total) = share(&now, dialect);
        println!("{dialect}: with the commands added since, {all} of {all_total}");
        println!(
            "{dialect}: exact patterns for {is} of {total} ordinary commands ({:.1}%), baseline {was} of {total_was} ({:.1}%)",
            100.0 * is as f64 / total as f64,
            100.0 * was as f64 / total_was as f64
        );
        if is * total_was < was * total {
            failures.push(format!(
                "{dialect}: the share of exact patterns dropped from {was}/{total_was} to {is}/{total}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
